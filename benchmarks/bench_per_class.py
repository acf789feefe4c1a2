"""ImageNet-scale per-class analysis: 1,000 classes over 50,000 embedded images.

n = 50,000 unit embeddings (d = 512) in 1,000 classes of 50, N = 1,410 sentences,
top-1 predictions with 25% errors (a confusion with a random class), Γ with 5%
density; `lbee.analyses.per_class.explain_per_class` with the ImageNet error split, C = 5,
all five describers and the metrics per class, once serial and once on 2 processes.
Times are printed in seconds and as ratios to one dense pass ``X @ S.T``
(float32, 50,000 x 1,410) measured in the same run (goal: serial <= 4x).
The timed runs are not traced; the Python-heap peak comes from a third, traced run.
With --cpu, both the pass and the serial run are timed in CPU seconds on one BLAS thread: a steadier
ratio on a machine shared with other work (the parallel run is then skipped).
Usage: python benchmarks/bench_per_class.py [--quick] [--cpu]
"""

import argparse
import os
import platform
import time
import tracemalloc

import numpy as np

from lbee.analyses.per_class import explain_per_class


def unit(x):
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="10x fewer classes, for a smoke run")
    ap.add_argument("--cpu", action="store_true", help="CPU seconds on one BLAS thread (steadier when shared)")
    args = ap.parse_args()
    clock = time.process_time if args.cpu else time.perf_counter
    if args.cpu:
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
    # imports the call makes on first use (pandas, SciPy's distances, fastcluster): paid once per process, not timed
    import fastcluster  # noqa: F401
    import pandas  # noqa: F401
    import scipy.spatial  # noqa: F401

    n_classes = 100 if args.quick else 1000
    per, N, d = 50, 1410, 512
    n = n_classes * per
    rng = np.random.default_rng(0)
    centres = unit(rng.normal(size=(n_classes, d)))
    labels = np.repeat(np.arange(n_classes), per)
    X = unit(centres[labels] + 0.8 * rng.normal(size=(n, d)) / np.sqrt(d) * 8).astype(np.float32)
    S = unit(rng.normal(size=(N, d))).astype(np.float32)
    preds = np.where(rng.random(n) < 0.25, rng.integers(0, n_classes, n), labels)
    rel = rng.random((n, N)) < 0.05
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"python {platform.python_version()}"
    )
    print(f"n = {n:,} images, {n_classes} classes, N = {N} sentences, d = {d}, C = 5, 5 describers + metrics")
    best = float("inf")
    for _ in range(3):
        t0 = clock()
        X @ S.T
        best = min(best, clock() - t0)
    unit_ = "CPU s, one BLAS thread" if args.cpu else "s"
    print(f"baseline: one pass X @ S.T: {best:.3f} {unit_}")
    for jobs in (1,) if args.cpu else (1, 2):
        t0 = clock()
        res = explain_per_class(X, S, labels=labels, preds=preds, n_clusters=5, relevance=rel, n_jobs=jobs)
        dt = clock() - t0
        print(
            f"n_jobs={jobs}: {dt:6.1f} s total = {dt / best:.1f}x the pass, "
            f"{1000 * dt / len(res.explanations):5.1f} ms per class, {len(res.skipped)} skipped"
        )
    # memory in a run of its own: tracing every allocation slows the Python-level work several-fold
    tracemalloc.start()
    explain_per_class(X, S, labels=labels, preds=preds, n_clusters=5, relevance=rel, n_jobs=1)
    print(f"python-heap peak of the serial run: {tracemalloc.get_traced_memory()[1] / 2**20:,.0f} MiB")
    tracemalloc.stop()
    print(res.summary().to_string(index=False, float_format=lambda x: f"{x:.3f}"))


if __name__ == "__main__":
    main()
