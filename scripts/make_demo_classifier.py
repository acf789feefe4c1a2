"""Train the demo world's square classifier and write it as shipped weights (lbee/weights/).

``lbee demo`` renders its world (seed 0 by default) and, instead of training
the classifier for 12 epochs, loads ``lbee/weights/demo_classifier_seed<S>.pt``
after checking its sha256, that it was trained on exactly the rendered training
images and labels, and the blindspot gate (``lbee.spotcheck._ec.SHIPPED_CLASSIFIERS``).
This script makes that file: ``make_ec(seed, train=True)`` on the CPU with
2 torch threads (the thread count changes the trained bits; 2 is what a
2-core machine trains with, so the shipped weights are the ones ``lbee demo``
trained there before they shipped). Every candidate make_ec tries ships,
the ones the blindspot gate rejects too, so that ``lbee demo`` rejects them
from their weights instead of training them. It prints the entries to put in
``SHIPPED_CLASSIFIERS``, and whether the new weights equal the files they replace.

    python scripts/make_demo_classifier.py [--seed 0] [--threads 2] [--out lbee/weights]

A few minutes on 2 CPU cores.
"""

import argparse
import time
from pathlib import Path

import torch

from lbee.spotcheck._classifier import verification_failure
from lbee.spotcheck._ec import WEIGHTS_DIR, make_ec, write_shipped_classifier


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0, help="make_ec's random_state (lbee demo --seed).")
    ap.add_argument("--threads", type=int, default=2, help="torch threads for training (changes the bits).")
    ap.add_argument("--out", type=Path, default=WEIGHTS_DIR, help="folder for the weights file.")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    entries = {}

    def ship(ec):
        # every candidate ships, rejected ones too: lbee demo then rejects them from their weights, untrained
        path = args.out / f"demo_classifier_seed{ec.seed}.pt"
        old = torch.load(path, map_location="cpu", weights_only=True)["state_dict"] if path.is_file() else None
        entries[ec.seed] = write_shipped_classifier(ec, path)
        v = ec.verification
        verdict = "passed" if v["passed"] else f"rejected ({verification_failure(v)})"
        print(f"EC seed {ec.seed}: {verdict}; wrote {path} ({path.stat().st_size / 1024:.0f} KiB)")
        if old is not None:
            new = ec.model.state_dict()
            same = old.keys() == new.keys() and all(torch.equal(old[k], new[k]) for k in new)
            diff = 0.0 if same else max(float((old[k].float() - new[k].float()).abs().max()) for k in new if k in old)
            print(
                "  the new weights are bitwise equal to the file they replace"
                if same
                else f"  the new weights differ from the file they replace (max |difference| {diff:.3g})"
            )

    log = lambda m: print(f"[{time.perf_counter() - t0:6.1f} s] {m}", flush=True)  # noqa: E731
    ec = make_ec(args.seed, train=True, log=log, on_candidate=ship)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {time.perf_counter() - t0:.0f} s")
    print(f"lbee demo --seed {args.seed} uses EC seed {ec.seed}. SHIPPED_CLASSIFIERS (lbee/spotcheck/_ec.py):")
    for seed, entry in entries.items():
        print(f"    {seed}: {entry!r},")


if __name__ == "__main__":
    main()
