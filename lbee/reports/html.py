"""A self-contained HTML report of one run (dataset × model), and the index page over runs.

The page shows the run's parameters and data summary; the metrics (a table and
Fig. 2-style bar charts of ACR / AHR / TPR / JI per method); the paper's Table 1
view (sentences × methods, ✓ / ✗ for S*_β and + for a retained sentence, green
when it is a true failure sentence); per hard cluster a strip of thumbnails with
a few of its easy twin beside, its size and error rate, and each method's
sentences side by side; and a 2-D plane (PlaneSpot's, or a PCA of the
embeddings) coloured by confidence with the hard clusters outlined.

Everything is inlined (thumbnails and charts as ``data:`` URIs), so the file can
be mailed or archived on its own. Only shown images get a thumbnail, so the page
stays small for any dataset size. Every user-supplied string goes through
Jinja2's autoescaping.
"""

from __future__ import annotations

import base64
import io

import numpy as np

from .._version import __version__
from ..core.evaluation import METRIC_WORDS, failure_sentences
from ..run.text import FEW_IMAGES, first_method
from .browse import browse_thumbs
from .page import (
    METRIC_NAMES,
    ReportRun,
    cluster_views,
    members_csv_uri,
    plane_coords,
    short_names,
    slug,
    spotcheck_report_run,
    table1_rows,
)


def _png_uri(fig):
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def metric_bars(rows):
    """Fig. 2-style bars: one panel per metric, one bar per (slicer, method). Returns a PNG data URI."""
    plt = _pyplot()
    labels = [r["method"] if r["slicer"] in ("ward", "per class") else f"{r['method']}·{r['slicer']}" for r in rows]
    fig, axes = plt.subplots(1, 4, figsize=(12, 2.8), sharey=True)
    colors = plt.get_cmap("tab10")(np.arange(len(rows)) % 10)
    for ax, metric in zip(axes, METRIC_NAMES):
        vals = [0.0 if r[metric] is None or np.isnan(r[metric]) else r[metric] for r in rows]
        ax.bar(range(len(rows)), vals, color=colors)
        ax.set_title(metric)
        ax.set_xticks(range(len(rows)), labels, rotation=45, ha="right", fontsize=8)
        ax.set_ylim(0, 1)
        ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return _png_uri(fig)


def plane_plot(coords, confidence, groups, label):
    """Scatter of the 2-D plane coloured by φ with each hard group's convex hull outlined and numbered."""
    from scipy.spatial import ConvexHull, QhullError

    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 5.2))
    sc = ax.scatter(
        coords[:, 0],
        coords[:, 1],
        c=confidence,
        s=4 if len(coords) < 5000 else 1,
        cmap="viridis",
        rasterized=True,
        linewidths=0,
    )
    fig.colorbar(sc, ax=ax, label="confidence")
    for i, g in enumerate(groups):
        pts = coords[g]
        if len(pts) >= 3:
            try:
                hull = ConvexHull(pts)
                ring = np.r_[hull.vertices, hull.vertices[:1]]
                ax.plot(pts[ring, 0], pts[ring, 1], color="crimson", lw=1.2)
            except QhullError:  # collinear points: no area to outline
                pass
        cx, cy = pts.mean(axis=0)
        ax.text(cx, cy, str(i), color="crimson", fontsize=9, fontweight="bold", ha="center", va="center")
    ax.set_title(label, fontsize=10)
    ax.set_xticks([])
    ax.set_yticks([])
    fig.tight_layout()
    return _png_uri(fig)


def _environment():
    from jinja2 import Environment, PackageLoader

    env = Environment(
        loader=PackageLoader("lbee.reports", "templates"),
        autoescape=True,  # every template, whatever its suffix (sweep 32s B3: a .j2 macro left raw elsewhere)
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["slug"] = slug
    env.filters["value"] = lambda x: f"{x:.4g}" if isinstance(x, float) else x
    env.filters["num"] = lambda x, d=3: "–" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{x:.{d}f}"
    return env


def render_report(
    run, *, thumbs=None, n_thumbs=8, n_easy_thumbs=4, slicer_objects=None, max_points=5000, cache_dir=None
):
    """The HTML text of one run's report.

    Parameters
    ----------
    run : ReportRun
    thumbs : ThumbnailCache, optional
        Without it, images are listed by name only.
    n_thumbs, n_easy_thumbs : int
        Thumbnails per hard group and per easy twin.
    slicer_objects : dict of str to slicer, optional
        Fitted slicers; PlaneSpot's ``embedding_`` becomes the 2-D plane.
    max_points : int, default=5000
        Points drawn on the interactive map (every hard-group member first, then a random sample).
    cache_dir : path-like, optional
        Where the inlined Vega bundle is cached (default: the lbee cache folder).

    Returns
    -------
    str
    """
    from .vega import PHI_HELP, metric_bars_spec, plane_spec, spec_json, vega_bundle

    star = run.failure_set()
    changed_before = thumbs.n_changed if thumbs is not None else 0
    rows = run.metrics(star)
    chart = spec_json(metric_bars_spec(rows)) if rows else None
    columns, t1_rows, t1_total = table1_rows(run, star)
    primary = next(iter(run.explanations))
    first = next(iter(run.explanations[primary].values()))
    short = short_names(run.image_ids)
    sweep = None
    if run.sweep is not None and len(run.sweep):
        from ..analyses.sweep import sweep_figure

        _pyplot()
        sweep = _png_uri(sweep_figure(run.sweep))
    from ..run.text import confirmed_statements_lines
    from ..run.untested import untested_reason
    from .finding_images import finding_views
    from .other_images import OTHER_MAX_ROWS, OTHER_SETS, other_views

    # every browser on the page shares its budget: each group's, and each slicer's sets of other images
    n_page = sum(len(next(iter(exps.values())).hard_clusters) + len(OTHER_SETS) for exps in run.explanations.values())
    sections = [
        {
            "slicer": s,
            "anchor": f"groups-{slug(s)}",
            "clusters": cluster_views(
                run, s, exps, thumbs, star, n_thumbs, n_easy_thumbs, extras=True, short=short, page_groups=n_page
            ),
            # every confirmed statement, strongest first, each beyond the stronger ones (the terminal's list)
            "statements": statement_list(
                confirmed_statements_lines(run.confirmations.get(s), every=True, meaningless=run.banner is not None)
            ),
            "others": other_views(run, s, exps, short, slug(s), page_groups=n_page),
            "findings": finding_views(run, s, short, slug(s), page_groups=n_page),
        }
        for s, exps in run.explanations.items()
    ]
    browse_thumbs_json = browse_thumbs(run, sections, thumbs)
    changed = changed_images_line(thumbs.n_changed - changed_before if thumbs is not None else 0)
    coords, plane_label = plane_coords(run, slicer_objects)
    plane = plane_points = None
    if coords is not None:
        shown = {t["index"]: t["uri"] for c in sections[0]["clusters"] for t in c["thumbs"] if t["uri"]}
        spec, plane_points = plane_spec(
            coords,
            run.confidence,
            [c.indices for c in first.hard_clusters],
            short,
            thumbs=shown,
            max_points=max_points,
            label=f"{plane_label}; hard groups of '{primary}' numbered",
        )
        plane = spec_json(spec)
    anchors = {c["index"]: c["anchor"] for c in sections[0]["clusters"]}
    n = len(run.image_ids)
    p = first.params
    summary = {
        "n_images": n,
        "n_hard": p.get("n_hard"),
        "n_easy": p.get("n_easy"),
        "n_neutral": None if p.get("n_hard") is None else n - p["n_hard"] - p.get("n_easy", 0),
        "n_held_out": len((run.confirmations.get(primary) or {}).get("held_out") or ()),
        "mean_performance": float(np.mean(run.performance)),
        "n_skipped": len(run.failures),
        "n_sentences": len(run.sentences),
        # compose's own sentences are appended to the set: said apart (a twenty-first user gave 135, read 136)
        "n_composed": len(run.sentences)
        - min(int(e.params.get("n_base_sentences", len(run.sentences))) for e in run.explanations[primary].values()),
        "n_failure_sentences": None if star is None else len(star),
        # said where the groups are listed, not only among the run's notes (trial 25: a lead read as a finding)
        "untested": untested_reason(run.confirmations.get(primary)),
    }
    return (
        _environment()
        .get_template("report.html.j2")
        .render(
            run=run,
            version=__version__,
            summary=summary,
            rows=rows,
            metric_words=METRIC_WORDS,
            chart=chart,
            columns=columns,
            t1_rows=t1_rows,
            t1_total=t1_total,
            plane=plane,
            plane_label=plane_label,
            plane_points=plane_points,
            sections=sections,
            sweep=sweep,
            has_relevance=star is not None,
            anchors=anchors,
            primary=primary,
            order_words=_order_words(run, primary),
            few_images=FEW_IMAGES,  # smaller groups are folded, as the terminal folds them
            lead=first_method(run.explanations[primary])[0],  # the describer the terminal says to read first
            phi_help=PHI_HELP,
            browse_thumbs=browse_thumbs_json,
            other_max=OTHER_MAX_ROWS,
            vega_js=vega_bundle(cache_dir) if (chart or plane or sections) else None,
            changed_images=changed,
        )
    )


def changed_images_line(n_changed):
    """What a report says (and warns, once) of images whose files changed after the run read them; None if none.

    A job's image folder swapped while it ran gave a report of the first folder's groups with the second's
    pictures (sweep 32r): those images now have no thumbnail, and the page says why.
    """
    if not n_changed:
        return None
    import warnings

    said = (
        f"{n_changed} image file(s) changed on disk after lbee read them: they are shown without thumbnails "
        "(the analysis used the images as they were read). Run it again to see the files as they are now."
    )
    warnings.warn(said, UserWarning, stacklevel=3)
    return said


def statement_list(lines):
    """`lbee.run.text.confirmed_statements_lines` as the page lays them out (None when there are none).

    ``head``: the first line; ``own``: the statements that add a failure of their own, numbered by the list
    (their "N. " dropped); ``notes``: the lines between; ``companions``: those that go with a stronger one.
    """
    import re

    if not lines:
        return None
    out = {"head": lines[0], "own": [], "notes": [], "companions": []}
    for line in lines[1:]:
        if line.startswith("    "):
            out["companions"].append(line.strip())
        elif re.match(r"\d+\. ", line):
            out["own"].append(line.split(". ", 1)[1])
        else:
            out["notes"].append(line)
    return out


def _order_words(run, slicer):
    """How the page orders the groups, in the heading's words (as the terminal's `lbee.run.text.order_line`)."""
    if run.group_order == "size":
        return "largest first"
    if (run.confirmations.get(slicer) or {}).get("status") == "done":
        return "confirmed on held-out images first, then the most harmful"
    return "most harmful first"


def render_index(entries, failures, title="lbee reports"):
    """The index page: one row per (dataset, model, slicer, method) with its metrics, links, failures.

    Parameters
    ----------
    entries : list of dict
        ``dataset``, ``model``, ``href`` (relative link) and ``rows`` (metric rows as in ReportRun.metrics()),
        plus ``n_images`` and ``n_hard``, and ``folder``: the run folder, whose findings the index lists first.
    failures : list of (str, str)
        (dataset or dataset/model, message).
    """
    from .findings_cell import run_findings

    entries = [{**e, "findings": run_findings(e["folder"]) if e.get("folder") else None} for e in entries]
    return (
        _environment()
        .get_template("index.html.j2")
        .render(entries=entries, failures=failures, title=title, version=__version__)
    )


def render_per_class_report(run, result, *, thumbs=None, n_classes=12, n_thumbs=8, n_easy_thumbs=4):
    """The HTML text of a per-class run: averages, a table of classes, hard groups of the classes with most errors.

    Parameters
    ----------
    run : ReportRun
        The dataset's arrays (``explanations`` is not used).
    result : lbee.analyses.per_class.PerClassResult
    n_classes : int
        Classes shown with their hard groups, those with the most hard images first.
    """
    metrics = result.metrics
    has_rel = "TPR" in metrics.columns
    summary = result.summary()
    rows = (
        [
            {"slicer": "per class", "method": r["method"], **{k: float(r[k]) for k in METRIC_NAMES}}
            for r in summary.to_dict("records")
        ]
        if has_rel
        else []
    )
    chart = metric_bars(rows) if rows else None
    methods = list(dict.fromkeys(metrics["method"]))
    first = metrics[metrics["method"] == methods[0]]
    names = result.class_names

    def name(c):
        return names[c] if names is not None and c < len(names) else str(c)

    table = []
    for r in first.sort_values(["n_hard", "class"], ascending=[False, True]).to_dict("records"):
        per_method = metrics[metrics["class"] == r["class"]].set_index("method")
        table.append(
            {
                "label": int(r["class"]),
                "name": name(int(r["class"])),
                "n_images": int(r["n_images"]),
                "n_hard": int(r["n_hard"]),
                "n_easy": int(r["n_easy"]),
                "tpr": {m: float(per_method.loc[m, "TPR"]) for m in methods} if has_rel else None,
            }
        )
    shown = []
    n_page = sum(len(next(iter(result.explanations[e["label"]].values())).hard_clusters) for e in table[:n_classes])
    for entry in table[:n_classes]:
        c = entry["label"]
        exps = result.explanations[c]
        members = np.unique(
            np.concatenate([cl.indices for e in exps.values() for cl in (*e.hard_clusters, *e.easy_clusters)])
        )
        star = None
        if run.relevance is not None:
            star = set(failure_sentences(run.relevance[members], run.performance[members], run.o).tolist())
        # with extras: each group's members CSV, label -> prediction table and browser, as the whole-run page's
        views = cluster_views(
            run, f"class-{c}", exps, thumbs, star, n_thumbs, n_easy_thumbs, extras=True, page_groups=n_page
        )
        shown.append({**entry, "clusters": views})
    skipped = [(name(c), why) for c, why in result.skipped.items()]
    return (
        _environment()
        .get_template("per_class.html.j2")
        .render(
            run=run,
            browse_thumbs=browse_thumbs(run, shown, thumbs),  # the browsers' thumbnails, each image once
            version=__version__,
            rows=rows,
            metric_words=METRIC_WORDS,
            chart=chart,
            methods=methods,
            table=table,
            shown=shown,
            skipped=skipped,
            has_relevance=has_rel,
            n_classes=len(table),
        )
    )


# The page model lives in lbee.reports.page; its names stay importable from here.
__all__ = [
    "METRIC_NAMES",
    "ReportRun",
    "cluster_views",
    "members_csv_uri",
    "metric_bars",
    "plane_plot",
    "render_index",
    "render_per_class_report",
    "render_report",
    "short_names",
    "spotcheck_report_run",
    "table1_rows",
]
