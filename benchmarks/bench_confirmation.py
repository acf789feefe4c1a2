"""Confirmation on held-out images (issue 33): its false-confirmation rate under label noise, and its cost.

World: the spotcheck grammar's atom sentences as axes, n = 3,000 images with random attributes, and **no planted
failure**: the model errs on 10 % of the images at random (label noise only), so no statement is true and any
confirmed statement is a false discovery. Per seed (20 seeds), one run of the pipeline (``lbee.run.analyse``,
describers compose, tops, fpdiff, C = 8, K = 2) with the default ``confirm`` (a held-out share, every statement
tested, q-values over all of them), and the same run with ``confirm=0`` as the baseline.

Prints the share of seeds where some statement confirmed at q <= 0.05 (goal: <= 5 %, i.e. no statement confirms
in >= 95 % of the seeds), the same for a planted failure as a check of power (goal: every seed), and the total
time with confirmation as a ratio to the time without it, measured in the same run (goal: <= 1.5x); one
untimed run first (imports, caches), and the order of the two runs alternates between seeds.

The world is built by ``grammar_world`` of ``tests/test_confirmation.py`` (imported from there, so the test and
the benchmark measure the same thing).

Usage: python benchmarks/bench_confirmation.py [--seeds 20] [--n 3000]
"""

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from test_confirmation import grammar_world  # noqa: E402

from lbee.core.confirmation import CONFIRM_Q, DEFAULT_CONFIRM_FRACTION  # noqa: E402
from lbee.run.pipeline import analyse  # noqa: E402
from lbee.run.settings import RunSettings  # noqa: E402

METHODS = ("compose", "tops", "fpdiff")


def timed(inputs, scores, confirm):
    settings = RunSettings(methods=METHODS, clusters=8, k=2, confirm=confirm)
    t0 = time.perf_counter()
    result = analyse(inputs, scores, settings).main
    return time.perf_counter() - t0, result.extra["confirmation"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--n", type=int, default=3000)
    args = ap.parse_args()
    with_c = without = 0.0
    false_runs, n_statements, n_false = 0, 0, 0
    planted_found = 0
    timed(*grammar_world(n=args.n, seed=-1 % 2**32, failure=None)[:2], DEFAULT_CONFIRM_FRACTION)  # imports, caches
    for seed in range(args.seeds):
        inputs, scores, _ = grammar_world(n=args.n, seed=seed, failure=None, noise_rate=0.1)
        if seed % 2:  # alternate which runs first
            t_off, _ = timed(inputs, scores, 0.0)
            t_on, conf = timed(inputs, scores, DEFAULT_CONFIRM_FRACTION)
        else:
            t_on, conf = timed(inputs, scores, DEFAULT_CONFIRM_FRACTION)
            t_off, _ = timed(inputs, scores, 0.0)
        without, with_c = without + t_off, with_c + t_on
        confirmed = [s for s in conf["statements"] if s["confirmed"]]
        false_runs += bool(confirmed)
        n_statements += len(conf["statements"])
        n_false += len(confirmed)
        inputs, scores, _ = grammar_world(n=args.n, seed=seed)
        _, conf = timed(inputs, scores, DEFAULT_CONFIRM_FRACTION)
        planted_found += bool(conf["groups"]) and conf["groups"][0]["confirmed"]
    print(f"label noise only, {args.seeds} seeds, n = {args.n}, held out {DEFAULT_CONFIRM_FRACTION:g}:")
    print(
        f"  runs with a statement confirmed at q <= {CONFIRM_Q:g}: {false_runs} / {args.seeds} "
        f"({false_runs / args.seeds:.0%}; goal <= 5 %); statements confirmed {n_false} of {n_statements}"
    )
    print(f"planted failure, same seeds: first hypothesis confirmed in {planted_found} / {args.seeds}")
    print(
        f"time with confirmation {with_c:.1f} s, without {without:.1f} s: ratio {with_c / without:.2f}x (goal <= 1.5x)"
    )


if __name__ == "__main__":
    main()
