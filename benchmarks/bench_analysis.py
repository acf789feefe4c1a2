"""Time everything after embedding: split, Ward, selection for all methods, metrics.

(a) whole dataset: n = 50,000 images, N = 1,400 sentences, d = 512, C = 15;
(b) per class: 1,000 classes x 50 images, C = 5, the same sentence set.
Random unit embeddings; prints the times.
Usage: python benchmarks/bench_analysis.py [--quick] [--ward exact|knn]
"""

import argparse
import platform
import time

import numpy as np

import lbee


def unit(x):
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="10x smaller, for a smoke run")
    ap.add_argument("--ward", choices=["exact", "knn"], default="exact", help="Ward variant for (a)")
    args = ap.parse_args()
    scale = 10 if args.quick else 1
    rng = np.random.default_rng(0)
    n, N, d = 50_000 // scale, 1_400, 512
    X = unit(rng.normal(size=(n, d)).astype(np.float32))
    S = unit(rng.normal(size=(N, d)).astype(np.float32))
    phi = rng.normal(size=n)
    rel = rng.random((n, N)) < 0.05
    omega = (phi > -0.5).astype(float)
    print(f"machine: {platform.processor() or platform.machine()}, python {platform.python_version()}")

    t0 = time.perf_counter()
    exps = lbee.explain_methods(X, S, confidence=phi, n_clusters=15, ward=args.ward)
    t1 = time.perf_counter()
    for e in exps.values():
        lbee.evaluate(e, rel, omega)
    t2 = time.perf_counter()
    print(f"(a) n={n} N={N} d={d} C=15, ward={args.ward}: split+Ward+selection (5 methods) {t1 - t0:.1f} s, "
          f"metrics (5 methods) {t2 - t1:.1f} s")

    n_classes = 1000 // scale
    per = 50
    Xc = unit(rng.normal(size=(n_classes * per, d)).astype(np.float32))
    from lbee.core.sentence_index import SentenceIndex

    t0 = time.perf_counter()
    index = SentenceIndex(S)  # built once, shared by every class
    for c in range(n_classes):
        sl = slice(c * per, (c + 1) * per)
        lbee.explain_methods(Xc[sl], index, confidence=rng.normal(size=per), n_clusters=5)
    t1 = time.perf_counter()
    print(f"(b) per class: {n_classes} classes x {per} images, C=5: {t1 - t0:.1f} s "
          f"({(t1 - t0) / n_classes * 1000:.0f} ms per class, 5 methods each)")


if __name__ == "__main__":
    main()
