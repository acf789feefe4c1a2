"""``lbee spotcheck bench``: many ECs, one table of means and 95% intervals. Resumable."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from ..io.cache import atomic_write_bytes


def mean_ci(values):
    """Mean and half-width of a 95% normal interval over the finite values (NaN when none)."""
    v = np.asarray([x for x in values if x is not None and np.isfinite(x)], dtype=float)
    if v.size == 0:
        return float("nan"), float("nan"), 0
    half = 1.96 * v.std(ddof=1) / math.sqrt(v.size) if v.size > 1 else float("nan")
    return float(v.mean()), float(half), int(v.size)


def run_benchmark(n_ecs, out_dir, *, encoder, first_seed=0, progress=None, log=None, with_slicers=True,
                  **ec_kwargs):
    """Run ``n_ecs`` ECs (seeds first_seed..), one JSON per EC in ``out_dir/ecs``; done ECs are skipped."""
    import time

    from ._analysis import analyze_ec
    from ._ec import make_ec

    out = Path(out_dir)
    (out / "ecs").mkdir(parents=True, exist_ok=True)
    records = []
    seeds = range(first_seed, first_seed + n_ecs)
    for seed in (progress(seeds) if progress else seeds):
        path = out / "ecs" / f"ec_{seed:04d}.json"
        if path.exists():
            try:
                records.append(json.loads(path.read_text()))
                continue
            except json.JSONDecodeError:
                pass  # a damaged record is recomputed
        t0 = time.perf_counter()
        try:
            ec = make_ec(seed, log=log, **ec_kwargs)
        except RuntimeError as exc:
            if log:
                log(f"EC {seed}: skipped ({exc})")
            continue
        t1 = time.perf_counter()
        analysis = analyze_ec(ec, encoder, with_slicers=with_slicers)
        rec = {"seed": seed, "blindspots": ec.describe_blindspots(), "n_blindspots": len(ec.blindspots),
               "generate_and_train_s": t1 - t0, "analysis_s": time.perf_counter() - t1, **analysis.summary()}
        atomic_write_bytes(path, json.dumps(rec, indent=1).encode())
        records.append(rec)
    return records


def summarize(records):
    """Rows (metric, method, mean, ci95, n) over the EC records."""
    rows = []
    slicer_names = list(records[0].get("slicers", {})) if records else []
    if not slicer_names:
        slicer_names = ["ward"]
    for name in slicer_names:
        for metric in ("DR", "FDR", "fit_s"):
            vals = [r["slicers"][name][metric] if "slicers" in r else r.get(metric) for r in records]
            m, h, n = mean_ci(vals)
            label = "ward (LBEE split-and-cluster)" if name == "ward" else name
            rows.append({"metric": metric if metric != "fit_s" else "fit time (s)", "method": label, "mean": m,
                         "ci95": h, "n": n})
    methods = list(records[0]["scores"]) if records else []
    for metric in ("AHR", "ACR", "TPR", "JI"):
        for meth in methods:
            m, h, n = mean_ci([r["scores"][meth][metric] for r in records])
            rows.append({"metric": metric, "method": meth, "mean": m, "ci95": h, "n": n})
    for meth in methods:
        m, h, n = mean_ci([r["description_accuracy"][meth] for r in records])
        rows.append({"metric": "description accuracy", "method": meth, "mean": m, "ci95": h, "n": n})
    fails = [f for r in records for f in r["failure_analysis"]]
    for cat in ("not_returned", "found", "merged", "impure"):
        m, h, n = mean_ci([f[cat] for f in fails])
        rows.append({"metric": f"uncovered: {cat}", "method": "ward (LBEE split-and-cluster)", "mean": m,
                     "ci95": h, "n": n})
    return rows


def write_tables(rows, out_dir):
    """``bench.csv`` and ``bench.md`` in ``out_dir``; returns the Markdown text."""
    import pandas as pd

    out = Path(out_dir)
    table = pd.DataFrame(rows)
    table.to_csv(out / "bench.csv", index=False)
    lines = ["| metric | method | mean | 95% CI ± | n |", "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['metric']} | {r['method']} | {r['mean']:.3f} | {r['ci95']:.3f} | {r['n']} |")
    md = "\n".join(lines) + "\n"
    (out / "bench.md").write_text(md)
    return md
