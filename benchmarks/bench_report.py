"""HTML report at 50,000 images: render time, page size, thumbnail cache effect.

n = 50,000 images (d = 512 unit embeddings, 32 px in-memory renders as
thumbnail sources), N = 1,410 sentences, Γ with 5% density, 4 methods, C = 15
hard groups (drawn from 2,500 hard and 2,500 easy images so that Ward stays
out of the timing). The first render makes the thumbnails, the second reads
them from the cache. The page inlines the Vega libraries (a fixed ~0.9 MB) and
draws at most 5,000 points on the interactive map. Usage:
python benchmarks/bench_report.py [n ...]   (default: 20000 50000)
"""

import os
import platform
import tempfile
import time

import numpy as np

from lbee import explain_methods
from lbee.reports.html import ReportRun, render_report
from lbee.reports.thumbnails import ThumbnailCache


def main(n=50_000):
    rng = np.random.default_rng(0)
    d, N = 512, 1410
    X = rng.normal(size=(n, d)).astype(np.float32)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    S = rng.normal(size=(N, d)).astype(np.float32)
    phi = rng.normal(size=n)
    hard = np.zeros(n, bool)
    easy = np.zeros(n, bool)
    hard[np.argsort(phi)[:2500]] = True
    easy[np.argsort(-phi)[:2500]] = True
    exps = explain_methods(
        X,
        S,
        methods=["tops", "setdiff", "pdiff", "fpdiff"],
        hard=hard,
        easy=easy,
        n_clusters=15,
        sentences=[f"sentence {i}" for i in range(N)],
    )
    sources = [np.full((32, 32, 3), i % 251, np.uint8) for i in range(n)]
    rel = rng.random((n, N)) < 0.05
    run = ReportRun(
        "bench",
        "random",
        {"ward": exps},
        [f"sentence {i}" for i in range(N)],
        [f"img_{i:05d}.png" for i in range(n)],
        phi,
        (phi > -0.5).astype(float),
        thumbnail_sources=sources,
        relevance=rel,
        embeddings=X,
    )
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"python {platform.python_version()}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for attempt in ("first render", "second render"):
            thumbs = ThumbnailCache(tmp)
            t0 = time.perf_counter()
            html = render_report(run, thumbs=thumbs)
            dt = time.perf_counter() - t0
            print(
                f"n = {n}, {attempt}: {dt:5.1f} s, page {len(html.encode()) / 2**20:.2f} MiB, thumbnails made "
                f"{thumbs.n_generated}, from cache {thumbs.n_cached}"
            )


if __name__ == "__main__":
    import sys

    for size in [int(a) for a in sys.argv[1:]] or [20_000, 50_000]:
        main(size)
