"""Time everything after embedding, as ratios to one dense pass ``X @ S.T`` measured in the same run.

(a) whole dataset: n = 50,000 images, N = 1,400 sentences, d = 512, C = 15:
    split + Ward + selection for the five describers (``lbee.explain_methods``),
    then the metrics of the five (``lbee.evaluate``);
(b) per class: 1,000 classes x 50 images, C = 5, the same sentence set, serial.

The baseline is the best of three passes of ``X @ S.T`` (float32, n x N) over the
same arrays; every figure is printed in seconds and as a ratio to it, so runs
on noisy machines compare. Goals: (a) <= 3x, metrics <= 2x, (b) <= 8x.
Random unit embeddings (no structure: see bench_ward.py for agreement with exact Ward).

Usage: python benchmarks/bench_analysis.py [--quick] [--ward auto|exact|kmeans|knn] [--skip-per-class]
"""

import argparse
import os
import platform
import resource
import time

import numpy as np

import lbee


def unit(x):
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def dense_pass(X, S):
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        X @ S.T
        best = min(best, time.perf_counter() - t0)
    return best


def describe_with_select_all(partition, index, method, params, sentences):
    """``lbee.core.explanation._describe`` as the lead's partition code will do it: one select_all per method."""
    from lbee.core.explanation import EasyCluster, Explanation, HardCluster
    from lbee.core.selection import select_all

    easy = [EasyCluster(g, p) for g, p in zip(partition.easy_groups, partition.easy_protos)]
    picked = select_all(
        method,
        index,
        partition.hard_protos,
        partition.easy_protos[partition.matches],
        params["k"],
        params["tau"],
        cluster_means=partition.hard_means,
        reference_mean=partition.reference_mean,
    )
    hard = [
        HardCluster(g, partition.hard_protos[i], int(partition.matches[i]), ids.tolist(), sc.tolist())
        for i, (g, (ids, sc)) in enumerate(zip(partition.hard_groups, picked))
    ]
    return Explanation(hard, easy, method, dict(params, method=method), sentences)


def per_class(Xc, S, n_classes, per, seed):
    from lbee.core.sentence_index import SentenceIndex

    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    index = SentenceIndex(S)  # built once, shared by every class
    for c in range(n_classes):
        sl = slice(c * per, (c + 1) * per)
        lbee.explain_methods(Xc[sl], index, confidence=rng.normal(size=per), n_clusters=5)
    return time.perf_counter() - t0


def main():
    try:
        from lbee.core.clustering import DEFAULT_WARD
    except ImportError:  # an older lbee
        DEFAULT_WARD = "exact"
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="10x smaller, for a smoke run")
    ap.add_argument("--ward", default=DEFAULT_WARD, help=f"Ward variant for (a) [default: {DEFAULT_WARD}]")
    ap.add_argument("--skip-per-class", action="store_true")
    args = ap.parse_args()
    scale = 10 if args.quick else 1
    rng = np.random.default_rng(0)
    n, N, d = 50_000 // scale, 1_400, 512
    X = unit(rng.normal(size=(n, d)).astype(np.float32))
    S = unit(rng.normal(size=(N, d)).astype(np.float32))
    phi = rng.normal(size=n)
    rel = rng.random((n, N)) < 0.05
    omega = (phi > -0.5).astype(float)
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"python {platform.python_version()}, lbee from {os.path.dirname(lbee.__file__)}"
    )
    base = dense_pass(X, S)
    print(f"baseline: one pass X @ S.T ({n} x {d} by {d} x {N}, float32): {base:.3f} s")

    t0 = time.perf_counter()
    exps = lbee.explain_methods(X, S, confidence=phi, n_clusters=15, ward=args.ward)
    t1 = time.perf_counter()
    for e in exps.values():
        lbee.evaluate(e, rel, omega)
    t2 = time.perf_counter()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(
        f"(a) n={n} N={N} d={d} C=15 ward={args.ward} (hard split {exps['tops'].params['n_hard']}): "
        f"split+Ward+selection (5 methods) {t1 - t0:.2f} s = {(t1 - t0) / base:.1f}x; "
        f"metrics (5 methods) {t2 - t1:.2f} s = {(t2 - t1) / base:.1f}x; process peak RSS {peak:.2f} GB"
    )
    if args.skip_per_class:
        return

    n_classes = 1000 // scale
    per = 50
    Xc = unit(rng.normal(size=(n_classes * per, d)).astype(np.float32))
    base_c = dense_pass(Xc, S)
    dt = per_class(Xc, S, n_classes, per, 1)
    print(
        f"(b) per class: {n_classes} classes x {per} images, C=5, 5 methods: {dt:.2f} s = "
        f"{dt / base_c:.1f}x its pass ({base_c:.3f} s); {dt / n_classes * 1000:.1f} ms per class"
    )
    try:
        import lbee.core.explanation as explanation
        from lbee.core.selection import select_all  # noqa: F401
    except ImportError:
        return
    if hasattr(explanation, "_describe"):
        original, explanation._describe = explanation._describe, describe_with_select_all
        try:
            dt = per_class(Xc, S, n_classes, per, 1)
        finally:
            explanation._describe = original
        print(
            f"(b') the same with one select_all per method (the lead's partition code): {dt:.2f} s = "
            f"{dt / base_c:.1f}x; {dt / n_classes * 1000:.1f} ms per class"
        )


if __name__ == "__main__":
    main()
