"""Plain-text views of a run: the Markdown report and the terminal table."""

from __future__ import annotations

import numpy as np


def _fmt(x):
    return "nan" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{x:.3f}"


def render_markdown(result, metrics=None, n_examples=5):
    """``report.md``: per hard cluster its size, mean confidence, example images and each method's sentences."""
    exps = result.explanations
    first = next(iter(exps.values()))
    p = first.params
    lines = [
        "# lbee report", "",
        f"- encoder: `{result.encoder.get('encoder')}` {result.encoder.get('model', '')} "
        f"({result.encoder.get('weights', '')})",
        f"- sentence set: `{result.sentence_set}` ({len(result.sentences)} sentences)",
        f"- images: {p['n_images']} embedded ({p['n_hard']} hard, {p['n_easy']} easy), "
        f"{len(result.failures)} skipped",
        f"- a={p['a']}, clusters={p['n_clusters']}, easy clusters={p['n_easy_clusters']}, k={p['k']}, "
        f"tau={p['tau']}", "",
    ]
    if metrics:
        lines += ["## Metrics", "", "| method | AHR | ACR | TPR | JI | |S*| |", "|---|---|---|---|---|---|"]
        for m, s in metrics.items():
            lines.append(f"| {m} | {_fmt(s['AHR'])} | {_fmt(s['ACR'])} | {_fmt(s['TPR'])} | {_fmt(s['JI'])} | "
                         f"{s['n_failure_sentences']} |")
        lines.append("")
    methods = list(exps)
    lines += ["## Hard clusters", ""]
    for i, c in enumerate(first.hard_clusters):
        idx = c.indices
        err = 1.0 - float(np.mean(result.performance[idx])) if set(np.unique(result.performance)) <= {0.0, 1.0} \
            else None
        lines.append(f"### Hard cluster {i} ({len(idx)} images, mean confidence "
                     f"{np.mean(result.confidence[idx]):.3f}" + (f", error rate {err:.2f}" if err is not None else "")
                     + f", easy twin {c.easy_cluster})")
        lines.append("")
        shown = [result.image_ids[j] for j in idx[:n_examples]]
        lines.append("Examples: " + ", ".join(f"`{s}`" for s in shown))
        lines.append("")
        lines.append("| rank | " + " | ".join(methods) + " |")
        lines.append("|---|" + "---|" * len(methods))
        for r in range(max(len(exps[m].hard_clusters[i].sentences) for m in methods)):
            cells = []
            for m in methods:
                sent = exps[m].cluster_sentences(i)
                cells.append(str(sent[r]).replace("|", "\\|") if r < len(sent) else "")
            lines.append(f"| {r + 1} | " + " | ".join(cells) + " |")
        lines.append("")
    if result.failures:
        lines += ["## Skipped images", ""] + [f"- `{p}`: {r}" for p, r in result.failures] + [""]
    return "\n".join(lines)


def terminal_table(result, width=38):
    """A compact table of hard clusters x methods (each method's top sentence)."""
    exps = result.explanations
    methods = list(exps)
    first = next(iter(exps.values()))

    def cut(s):
        s = str(s)
        return s if len(s) <= width else s[: width - 1] + "…"

    header = f"{'cluster':>7} {'size':>5}  " + "  ".join(f"{m:<{width}}" for m in methods)
    rows = [header, "-" * len(header)]
    for i, c in enumerate(first.hard_clusters):
        tops = [exps[m].cluster_sentences(i) for m in methods]
        rows.append(f"{i:>7} {len(c.indices):>5}  " + "  ".join(f"{cut(t[0] if t else ''):<{width}}" for t in tops))
    return "\n".join(rows)
