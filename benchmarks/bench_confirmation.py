"""Confirmation on held-out images (issue 33): its false-confirmation rate under label noise, and its cost.

World: the spotcheck grammar's atom sentences as axes, n = 3,000 images with random attributes, and **no planted
failure**: the model errs on 10 % of the images at random (label noise only), so no statement is true and any
confirmed statement is a false discovery. Per seed (20 seeds), one run of the pipeline (``lbee.run.analyse``,
describers compose, tops, fpdiff, C = 8, K = 2) with the default ``confirm`` (a held-out share, every statement
tested, q-values over all of them), and the same run with ``confirm=0`` as the baseline.

Prints the share of seeds where some statement confirmed at q <= 0.05 alone (issue 33's definition) and by the
run's rule (also at least twice as often) (goal: <= 5 %, i.e. no statement confirms in >= 95 % of the seeds), the
same for a planted failure as a check of power (goal: every seed), and the total
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
    false_runs, n_statements, n_false = {"confirmed": 0, "significant": 0}, 0, {"confirmed": 0, "significant": 0}
    planted_found = {"confirmed": 0, "confirmed_at_q": 0}
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
        n_statements += len(conf["statements"])
        for rule in false_runs:  # the run's rule, and q alone (issue 33's definition) beside it
            confirmed = [s for s in conf["statements"] if s[rule]]
            false_runs[rule] += bool(confirmed)
            n_false[rule] += len(confirmed)
        inputs, scores, _ = grammar_world(n=args.n, seed=seed)
        _, conf = timed(inputs, scores, DEFAULT_CONFIRM_FRACTION)
        for rule in planted_found:
            planted_found[rule] += bool(conf["groups"]) and conf["groups"][0][rule]
    print(f"label noise only, {args.seeds} seeds, n = {args.n}, held out {DEFAULT_CONFIRM_FRACTION:g}:")
    for rule, said in (("significant", f"at q <= {CONFIRM_Q:g} alone"), ("confirmed", "by the run's rule")):
        print(
            f"  runs with a statement confirmed {said}: {false_runs[rule]} / {args.seeds} "
            f"({false_runs[rule] / args.seeds:.0%}; goal <= 5 %); statements confirmed {n_false[rule]} of "
            f"{n_statements}"
        )
    for rule, said in (("confirmed_at_q", f"at q <= {CONFIRM_Q:g} alone"), ("confirmed", "by the run's rule")):
        print(f"planted failure, same seeds: first hypothesis confirmed {said} in {planted_found[rule]} / {args.seeds}")
    print(
        f"time with confirmation {with_c:.1f} s, without {without:.1f} s: ratio {with_c / without:.2f}x (goal <= 1.5x)"
    )


if __name__ == "__main__":
    main()
