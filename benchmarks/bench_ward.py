"""Ward variants: speed of exact Ward and agreement of ward='kmeans' with it.

(1) exact Ward, scikit-learn (pdist + SciPy) against lbee's fast path (blocked
    BLAS distances + fastcluster) on the same split: time ratio, labels equal?
(2) structured data at n = 30,000 (hard split ~12,600 by a confidence split at
    a = 0.2): a mixture of anisotropic clusters on the sphere and SpotCheck-like
    attribute combinations tiled with noise; adjusted Rand index of
    ward='kmeans' (and 'knn') against exact Ward, C = 15, with exact Ward's own
    agreement after dropping 2% of the images as the yardstick of how stable
    the cut is (on structure-less data no two Ward runs agree). Two control
    sets show it: weakly separated clusters and uniform noise on the sphere.

Usage: python benchmarks/bench_ward.py [--quick]
"""

import argparse
import os
import platform
import time

import numpy as np
from _structured import anisotropic_sphere, spotcheck_like
from sklearn.cluster import AgglomerativeClustering
from sklearn.metrics import adjusted_rand_score

from lbee.core.clustering import ward_labels


def timed(f):
    t0 = time.perf_counter()
    out = f()
    return out, time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    args = ap.parse_args()
    n_speed, n_struct = (3000, 6000) if args.quick else (8000, 30000)
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"python {platform.python_version()}"
    )

    X, _ = anisotropic_sphere(n_speed, random_state=7)
    ref, t_ref = timed(lambda: AgglomerativeClustering(15, linkage="ward").fit_predict(X))
    new, t_new = timed(lambda: ward_labels(X, 15, method="exact"))
    print(
        f"(1) exact Ward, n={n_speed}, d=512: scikit-learn {t_ref:.2f} s, lbee {t_new:.2f} s = "
        f"{t_ref / t_new:.1f}x faster; labels identical: {bool(np.array_equal(ref, new))}"
    )

    rng = np.random.default_rng(0)

    def weak(n, random_state):  # clusters spread as far as they are apart
        return anisotropic_sphere(n, spread=0.5, random_state=random_state)

    def noise(n, random_state):  # no structure at all
        X = np.random.default_rng(random_state).normal(size=(n, 512))
        return (X / np.linalg.norm(X, axis=1, keepdims=True)).astype(np.float32), None

    for name, make in (
        ("anisotropic clusters", anisotropic_sphere),
        ("SpotCheck-like", spotcheck_like),
        ("weakly separated clusters", weak),
        ("structure-less noise", noise),
    ):
        X, _ = make(n_struct, random_state=1)
        hard = rng.normal(size=n_struct) < -0.2  # the hard side of a split at a = 0.2
        H = X[hard]
        exact, t_e = timed(lambda H=H: ward_labels(H, 15, method="exact"))
        km, t_k = timed(lambda H=H: ward_labels(H, 15, method="kmeans"))
        knn, t_n = timed(lambda H=H: ward_labels(H, 15, method="knn")) if make is not noise else (km, float("nan"))
        keep = np.random.default_rng(1).random(H.shape[0]) > 0.02
        again = ward_labels(H[keep], 15, method="exact")
        print(
            f"(2) {name}, n={n_struct}, hard split {H.shape[0]}: ARI vs exact: kmeans "
            f"{adjusted_rand_score(exact, km):.3f} ({t_k:.2f} s), knn {adjusted_rand_score(exact, knn):.3f} "
            f"({t_n:.2f} s); exact {t_e:.2f} s, exact vs exact without 2% "
            f"{adjusted_rand_score(exact[keep], again):.3f}"
        )


if __name__ == "__main__":
    main()
