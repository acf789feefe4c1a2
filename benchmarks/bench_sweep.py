"""Time `lbee.analyses.sweep.sensitivity_sweep` with the default grids, and the C sweep with and without the Ward cache.

n = 8,000 images (d = 512), N = 1,410 sentences, Γ with 5% density, all five
describers; K = 1,2,3,5,10, C = 1,5,10,15,20,30, o = 0 ... 1 (7 values).
Usage: python benchmarks/bench_sweep.py
"""

import os
import platform
import time

import numpy as np

import lbee.analyses.sweep
from lbee.analyses.sweep import sensitivity_sweep


def main():
    rng = np.random.default_rng(0)
    n, d, N = 8000, 512, 1410
    X = rng.normal(size=(n, d)).astype(np.float32)
    S = rng.normal(size=(N, d)).astype(np.float32)
    phi = rng.normal(size=n)
    omega = (phi > -0.5).astype(float)
    rel = rng.random((n, N)) < 0.05
    args = dict(relevance=rel, performance=omega, confidence=phi)
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"python {platform.python_version()}; n = {n:,}, N = {N}, d = {d}"
    )
    t0 = time.perf_counter()
    table = sensitivity_sweep(X, S, **args)
    print(f"default sweep (K, C, o; {len(table)} rows): {time.perf_counter() - t0:.1f} s")
    t0 = time.perf_counter()
    sensitivity_sweep(X, S, K=[], o=[], **args)
    print(f"C sweep alone, Ward trees cached: {time.perf_counter() - t0:.1f} s")
    original = lbee.analyses.sweep._prepare
    lbee.analyses.sweep._prepare = lambda *a, ward_memory=None, **k: original(*a, **k)  # no tree cache
    t0 = time.perf_counter()
    sensitivity_sweep(X, S, K=[], o=[], **args)
    print(f"C sweep alone, Ward from scratch per C: {time.perf_counter() - t0:.1f} s")
    lbee.analyses.sweep._prepare = original


if __name__ == "__main__":
    main()
