"""Wall time of `lbee demo` by phase, as shares of the whole and as a ratio to one embedding pass.

Runs `lbee demo` in a subprocess, as a user does, and timestamps each of its
progress lines (stderr) as it arrives: start-up (imports) until the first line,
rendering the world, the square classifier (the shipped weights checked and
gated, or training), embedding + clustering + describing, the counterfactual check (fresh renders of each
hypothesis's statement), writing the outputs.
Each demo gets an empty embedding cache (as on a fresh clone).
In the same run it embeds the demo's 2,000 test images with the SpotCheck
encoder (median of 3 passes after a warm-up) and gives the demo's wall time
as a multiple of that pass, so runs on machines of other speed or load compare.

Usage: python benchmarks/bench_demo.py [--seeds 0 1 2] [--retrain]
  --retrain  also runs `lbee demo --retrain` for each seed (the classifier trained, as for a seed without
             shipped weights)
"""

import argparse
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

STEP = re.compile(r"^\[\s*[\d.]+ s\] (.*)$")
#: a progress line starting with one of these opens that phase (a rejected candidate re-renders: phases add up)
PHASES = [
    ("rendering", "rendering the world"),
    ("checking the shipped", "classifier: shipped weights, gate"),
    ("the shipped square classifier", "classifier: training"),
    ("training", "classifier: training"),
    ("embedding", "embedding, clustering, describing"),
    ("counterfactual", "counterfactual check"),
    ("writing", "writing the outputs"),
]


def run_demo(seed, out, extra=()):
    """Wall time (s) of `lbee demo`, seconds per phase (in order of first appearance), and its stdout."""
    lbee = Path(sys.executable).with_name("lbee")
    phases, phase = {}, "start-up"
    with open(Path(out) / "stdout.txt", "w") as stdout:
        t0 = last = time.perf_counter()
        proc = subprocess.Popen(
            [str(lbee), "demo", "--seed", str(seed), "--out", str(Path(out) / "demo"), *extra],
            stdout=stdout,
            stderr=subprocess.PIPE,
            text=True,
            # an empty embedding cache, as on a fresh clone
            env={**os.environ, "LBEE_CACHE_DIR": str(Path(out) / "cache")},
        )
        for line in proc.stderr:
            m = STEP.match(line.strip())
            if not m:
                continue
            label = next((name for prefix, name in PHASES if m.group(1).startswith(prefix)), None)
            if label is not None and label != phase:
                now = time.perf_counter()
                phases[phase] = phases.get(phase, 0.0) + now - last
                phase, last = label, now
        if proc.wait() != 0:
            raise SystemExit(f"lbee demo --seed {seed} {' '.join(extra)} failed (exit {proc.returncode})")
        end = time.perf_counter()
    phases[phase] = phases.get(phase, 0.0) + end - last
    return end - t0, phases, (Path(out) / "stdout.txt").read_text()


def embedding_pass(folder, repeats=3):
    """Median seconds of one pass of the SpotCheck encoder over the demo's test images (and their number)."""
    from PIL import Image

    from lbee.encoders import create_encoder

    files = sorted((Path(folder) / "ec" / "images" / "test").glob("*.png"))
    images = np.stack([np.asarray(Image.open(f).convert("RGB")) for f in files])
    enc = create_encoder("spotcheck")
    enc.encode_arrays(images[:64])  # warm-up: first-call allocations
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        enc.encode_arrays(images)
        times.append(time.perf_counter() - t)
    return float(np.median(times)), len(images)


def same_run(a, b):
    """Whether two demo folders hold the same world, classifier, predictions and report."""
    import pandas as pd
    import torch

    ma, mb = (torch.load(Path(x) / "ec" / "model.pt", map_location="cpu", weights_only=True) for x in (a, b))
    checks = {
        "world (ec metadata)": pd.read_parquet(Path(a) / "ec" / "metadata.parquet").equals(
            pd.read_parquet(Path(b) / "ec" / "metadata.parquet")
        ),
        "classifier (bitwise)": ma.keys() == mb.keys() and all(torch.equal(ma[k], mb[k]) for k in ma),
        "predictions": pd.read_csv(Path(a) / "inputs" / "predictions.csv").equals(
            pd.read_csv(Path(b) / "inputs" / "predictions.csv")
        ),
        "report.md": (Path(a) / "report.md").read_text() == (Path(b) / "report.md").read_text(),
    }
    return ", ".join(f"{name} {'same' if ok else 'DIFFERENT'}" for name, ok in checks.items())


def substance(stdout):
    """The lines that say which world and which model the demo ran on, and its DR / FDR."""
    keep = ("  model accuracy", "  [", "Test set:", "Hard clusters as blindspot hypotheses")
    return [line.rstrip() for line in stdout.splitlines() if line.startswith(keep)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--retrain", action="store_true", help="also run `lbee demo --retrain` for each seed")
    args = ap.parse_args()
    import torch

    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}, torch "
        f"{torch.__version__} ({torch.get_num_threads()} threads); load average {os.getloadavg()[0]:.1f}"
    )
    for seed in args.seeds:
        with tempfile.TemporaryDirectory() as tmp:
            outs = []
            for extra in [()] + ([("--retrain",)] if args.retrain else []):
                out = Path(tmp) / ("retrain" if extra else "default")
                out.mkdir()
                load0 = os.getloadavg()[0]
                wall, phases, stdout = run_demo(seed, out, extra)
                unit, n = embedding_pass(out / "demo")
                peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20
                print(
                    f"\nlbee demo --seed {seed} {' '.join(extra)}: {wall:.1f} s wall = {wall / unit:.1f} x one "
                    f"embedding pass of its {n:,} test images ({unit:.2f} s, median of 3); load average "
                    f"{load0:.1f} -> {os.getloadavg()[0]:.1f}; peak RSS of a child so far {peak:.2f} GiB"
                )
                for name, secs in phases.items():
                    print(f"  {name:<36} {secs:6.1f} s {100 * secs / wall:5.1f} %")
                for line in substance(stdout):
                    print(f"  | {line.strip()}")
                outs.append(out / "demo")
            if len(outs) == 2:
                print("  default vs --retrain: " + same_run(*outs))


if __name__ == "__main__":
    main()
