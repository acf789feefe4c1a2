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
from dataclasses import dataclass, field

import numpy as np

from .._version import __version__
from ..core.evaluation import failure_sentences, score_explanation

METRIC_NAMES = ("ACR", "AHR", "TPR", "JI")


@dataclass
class ReportRun:
    """Everything one HTML report shows.

    Attributes
    ----------
    dataset, model : str
        Names shown in the title and the index.
    explanations : dict of str to dict of str to Explanation
        Per slicer ('ward', 'domino', ...), per method. Cluster indices point into the n images.
    sentences : list of str
        The N sentences.
    image_ids : list of str
        One per image (n).
    thumbnail_sources : list or None
        Per image a file path or an (H, W, 3) uint8 array to draw thumbnails from.
    confidence, performance : ndarray of shape (n,)
        φ and ω.
    relevance : ndarray of bool, shape (n, N), or None
        Γ, when known.
    relevance_source : str
        'ground truth', 'VQA: <file>', 'none', ...
    params : dict
        Shown as the run's parameters.
    o : float
        Severity for S*_β.
    plane : ndarray of shape (n, 2) or None
        2-D coordinates; None: a PCA of ``embeddings``.
    plane_label : str
    embeddings : ndarray of shape (n, d) or None
        For the PCA plane.
    failures : list of (str, str)
        Skipped images and why.
    notes : list of str
        Extra lines for the summary (e.g. SpotCheck's true blindspots).
    sweep : pandas.DataFrame or None
        :func:`lbee.analyses.sweep.sensitivity_sweep` output, drawn as Fig. 6 / Fig. 10.
    panels : list of str
        Extra self-contained, already escaped ``<section>`` blocks (e.g. the sensitivity panel).
    labels, preds : ndarray of int, shape (n,), or None
        True and predicted classes (classification): each group shows its label → prediction confusion.
    class_names : list of str or None
    blindspots : list of (str, ndarray of int)
        Known true blindspots (SpotCheck): description and member indices; each group shows the one it covers.
    image_links : list of str or None
        Per image a link to the full image (relative to the page, or a URI); None: thumbnails are not links.
    index_href : str or None
        Link back to the batch's index page.
    group_order : {'risk', 'size'}, default='risk'
        Hard groups sorted by error rate × size (risk: 1 − mean ω times size) or by size alone.
    """

    dataset: str
    model: str
    explanations: dict
    sentences: list
    image_ids: list
    confidence: np.ndarray
    performance: np.ndarray
    thumbnail_sources: list | None = None
    relevance: np.ndarray | None = None
    relevance_source: str = "none"
    params: dict = field(default_factory=dict)
    o: float = 0.2
    plane: np.ndarray | None = None
    plane_label: str = ""
    embeddings: np.ndarray | None = None
    failures: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    sweep: object = None
    panels: list = field(default_factory=list)
    labels: np.ndarray | None = None
    preds: np.ndarray | None = None
    class_names: list | None = None
    blindspots: list = field(default_factory=list)
    image_links: list | None = None
    index_href: str | None = None
    group_order: str = "risk"

    def failure_set(self):
        """S*_β as a set of sentence indices; None without relevance."""
        if self.relevance is None:
            return None
        return set(failure_sentences(self.relevance, self.performance, self.o).tolist())

    def metrics(self, star=None):
        """Rows (slicer, method, ACR, AHR, TPR, JI, n_failure_sentences); empty without relevance.

        ``star`` is S*_β when the caller already has it (:meth:`failure_set`).
        """
        if self.relevance is None:
            return []
        star = self.failure_set() if star is None else star
        return [{"slicer": s, "method": m, **score_explanation(e, self.relevance, star)}
                for s, exps in self.explanations.items() for m, e in exps.items()]


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
    sc = ax.scatter(coords[:, 0], coords[:, 1], c=confidence, s=4 if len(coords) < 5000 else 1, cmap="viridis",
                    rasterized=True, linewidths=0)
    fig.colorbar(sc, ax=ax, label="confidence φ")
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


def _plane_coords(run, slicer_objects):
    ps = slicer_objects.get("planespot") if slicer_objects else None
    if run.plane is not None:
        return np.asarray(run.plane, dtype=np.float64), run.plane_label or "2-D plane"
    if ps is not None and getattr(ps, "embedding_", None) is not None:
        return np.asarray(ps.embedding_, dtype=np.float64), "PlaneSpot 2-D plane"
    if run.embeddings is None or len(run.embeddings) < 3:
        return None, ""
    from sklearn.decomposition import PCA

    return PCA(n_components=2, random_state=0).fit_transform(run.embeddings), "PCA of the image embeddings"


def table1_rows(run, star, max_rows=60):
    """The paper's Table 1: sentences in any R_S or in S*, with a mark per method."""
    columns = [(s, m) for s, exps in run.explanations.items() for m in exps]
    selected = {(s, m): set(e.selected) for s, exps in run.explanations.items() for m, e in exps.items()}
    shown = set().union(*selected.values()) | (star or set())
    rows = []
    for n in shown:
        marks = []
        for col in columns:
            if n in selected[col]:
                marks.append("tp" if star is not None and n in star else ("fp" if star is not None else "in"))
            else:
                marks.append("")
        rows.append({"sentence": run.sentences[n], "in_star": None if star is None else n in star,
                     "marks": marks, "hits": sum(1 for x in marks if x)})
    rows.sort(key=lambda r: (not r["in_star"], -r["hits"], r["sentence"]))
    return [f"{m}" if s == "ward" else f"{m}·{s}" for s, m in columns], rows[:max_rows], len(rows)


def short_names(image_ids):
    """Image ids without the folder prefix they all share (``a/b/x.png``, ``a/b/c/y.png`` -> ``x.png``, ``c/y.png``)."""
    ids = [str(i) for i in image_ids]
    parts = [i.replace("\\", "/").split("/") for i in ids]
    if not parts:
        return []
    common = 0
    shortest = min(len(p) for p in parts) - 1  # never strip the file name itself
    while common < shortest and all(p[common] == parts[0][common] for p in parts):
        common += 1
    return ["/".join(p[common:]) for p in parts]


def _class_name(run, c):
    c = int(c)
    names = run.class_names
    return str(names[c]) if names is not None and 0 <= c < len(names) else str(c)


def _confusion(run, idx, top=5):
    """The most frequent (label → prediction) pairs of a group: list of dict, None without labels/predictions."""
    if run.labels is None or run.preds is None or not idx.size:
        return None
    pairs = np.stack([np.asarray(run.labels)[idx], np.asarray(run.preds)[idx]], axis=1)
    uniq, counts = np.unique(pairs, axis=0, return_counts=True)
    order = np.lexsort((uniq[:, 1], uniq[:, 0], -counts))[:top]
    return [{"label": _class_name(run, uniq[o, 0]), "pred": _class_name(run, uniq[o, 1]), "count": int(counts[o]),
             "correct": bool(uniq[o, 0] == uniq[o, 1]), "share": float(counts[o] / idx.size)} for o in order]


def _blindspot_cover(run, idx, lambda_p=0.8):
    """Which true blindspot a group covers: the one with the highest precision BP = |g ∩ b| / |g|."""
    if not run.blindspots or not idx.size:
        return None
    members = set(idx.tolist())
    best = None
    for j, (desc, b) in enumerate(run.blindspots):
        b = np.asarray(b, dtype=np.int64)
        inter = len(members.intersection(b.tolist()))
        bp = inter / idx.size
        share = inter / b.size if b.size else 0.0
        if best is None or bp > best["precision"]:
            best = {"index": j, "description": desc, "precision": bp, "recall": share}
    best["covers"] = best["precision"] >= lambda_p
    return best


def members_csv_uri(run, idx, short):
    """A ``data:text/csv`` URI with one row per member of a group: image, φ, ω (and label, prediction)."""
    import csv
    from urllib.parse import quote

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    has_cls = run.labels is not None
    w.writerow(["image", "phi", "omega"] + (["label", "prediction"] if has_cls else []))
    for j in idx.tolist():
        row = [run.image_ids[j], f"{run.confidence[j]:.6g}", f"{run.performance[j]:.6g}"]
        if has_cls:
            row += [_class_name(run, run.labels[j]), "" if run.preds is None else _class_name(run, run.preds[j])]
        w.writerow(row)
    return "data:text/csv;charset=utf-8," + quote(buf.getvalue())


def _risk(view):
    """Error rate × size (1 − mean ω when ω is not a 0/1 correctness)."""
    err = view["error_rate"] if view["error_rate"] is not None else 1.0 - view["mean_performance"]
    return err * view["size"]


def cluster_views(run, slicer, exps, thumbs, star, n_thumbs, n_easy_thumbs, *, extras=False, short=None):
    """Per hard group of ``slicer``: thumbnails, twin thumbnails, size, error rate and sentences per method.

    With ``extras``, each view also has its anchor, the label → prediction
    confusion, the φ histogram spec, a CSV of its members and the true
    blindspot it covers; the views are then sorted by ``run.group_order``.
    """
    from .vega import phi_histogram_spec, spec_json

    first = next(iter(exps.values()))
    binary = set(np.unique(run.performance).tolist()) <= {0.0, 1.0}
    short = short or short_names(run.image_ids)
    anchor = _slug(slicer)
    views = []
    for i, c in enumerate(first.hard_clusters):
        idx = np.asarray(c.indices, dtype=np.int64)
        # Show the least confident members first: the clearest failures.
        order = idx[np.argsort(run.confidence[idx], kind="stable")]
        thumbs_hard = _thumbs(run, order[:n_thumbs], thumbs, short)
        twin_all = first.easy_clusters[c.easy_cluster].indices if first.easy_clusters else np.array([], int)
        twin_all = np.asarray(twin_all, dtype=np.int64)
        twin = twin_all[np.argsort(-run.confidence[twin_all], kind="stable")][:n_easy_thumbs]
        methods = []
        for m, e in exps.items():
            hc = e.hard_clusters[i]
            methods.append({"name": m, "sentences": [
                {"text": run.sentences[s], "in_star": None if star is None else s in star,
                 "coverage": None if run.relevance is None or not idx.size else float(run.relevance[idx, s].mean())}
                for s in hc.sentences]})
        omega = run.performance[idx]
        view = {
            "index": i, "size": int(idx.size), "anchor": f"g-{anchor}-{i}",
            "error_rate": float(1 - omega.mean()) if binary else None,
            "mean_performance": float(omega.mean()),
            "mean_confidence": float(run.confidence[idx].mean()),
            "easy_twin": int(c.easy_cluster),
            "thumbs": thumbs_hard, "twin_thumbs": _thumbs(run, twin, thumbs, short), "methods": methods,
        }
        if extras:
            view["confusion"] = _confusion(run, idx)
            view["hist"] = spec_json(phi_histogram_spec(run.confidence, idx, twin_all))
            view["csv"] = members_csv_uri(run, idx, short)
            view["csv_name"] = f"{anchor}_group_{i}.csv"
            view["blindspot"] = _blindspot_cover(run, idx)
        view["risk"] = _risk(view)
        views.append(view)
    if extras:
        if run.group_order == "size":
            views.sort(key=lambda v: (-v["size"], v["index"]))
        else:
            views.sort(key=lambda v: (-v["risk"], -v["size"], v["index"]))
    return views


def _slug(name):
    import re

    return re.sub(r"[^A-Za-z0-9_-]+", "-", str(name)).strip("-") or "s"


def _thumbs(run, indices, thumbs, short=None):
    out = []
    for j in indices:
        j = int(j)
        uri = None
        if run.thumbnail_sources is not None and thumbs is not None:
            uri = thumbs.data_uri(run.thumbnail_sources[j])
        out.append({"id": run.image_ids[j], "name": short[j] if short else run.image_ids[j], "uri": uri,
                    "index": j, "href": None if run.image_links is None else run.image_links[j],
                    "confidence": float(run.confidence[j])})
    return out


def _environment():
    from jinja2 import Environment, PackageLoader, select_autoescape

    env = Environment(loader=PackageLoader("lbee.reports", "templates"), autoescape=select_autoescape(["html", "j2"]),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["slug"] = _slug
    env.filters["value"] = lambda x: f"{x:.4g}" if isinstance(x, float) else x
    env.filters["num"] = lambda x, d=3: "–" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{x:.{d}f}"
    return env


def render_report(run, *, thumbs=None, n_thumbs=8, n_easy_thumbs=4, slicer_objects=None, max_points=5000,
                  cache_dir=None):
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
    sections = [{"slicer": s, "anchor": f"groups-{_slug(s)}",
                 "clusters": cluster_views(run, s, exps, thumbs, star, n_thumbs, n_easy_thumbs, extras=True,
                                           short=short)}
                for s, exps in run.explanations.items()]
    coords, plane_label = _plane_coords(run, slicer_objects)
    plane = plane_points = None
    if coords is not None:
        shown = {t["index"]: t["uri"] for c in sections[0]["clusters"] for t in c["thumbs"] if t["uri"]}
        spec, plane_points = plane_spec(coords, run.confidence, [c.indices for c in first.hard_clusters],
                                        short, thumbs=shown, max_points=max_points,
                                        label=f"{plane_label}; hard groups of '{primary}' numbered")
        plane = spec_json(spec)
    anchors = {c["index"]: c["anchor"] for c in sections[0]["clusters"]}
    n = len(run.image_ids)
    p = first.params
    summary = {"n_images": n, "n_hard": p.get("n_hard"), "n_easy": p.get("n_easy"),
               "n_neutral": None if p.get("n_hard") is None else n - p["n_hard"] - p.get("n_easy", 0),
               "mean_performance": float(np.mean(run.performance)), "n_skipped": len(run.failures),
               "n_sentences": len(run.sentences), "n_failure_sentences": None if star is None else len(star)}
    return _environment().get_template("report.html.j2").render(
        run=run, version=__version__, summary=summary, rows=rows, chart=chart, columns=columns,
        t1_rows=t1_rows, t1_total=t1_total, plane=plane, plane_label=plane_label, plane_points=plane_points,
        sections=sections, sweep=sweep, has_relevance=star is not None, anchors=anchors, primary=primary,
        phi_help=PHI_HELP, vega_js=vega_bundle(cache_dir) if (chart or plane or sections) else None)


def render_index(entries, failures, title="lbee reports"):
    """The index page: one row per (dataset, model, slicer, method) with its metrics, links, failures.

    Parameters
    ----------
    entries : list of dict
        ``dataset``, ``model``, ``href`` (relative link) and ``rows`` (metric rows as in ReportRun.metrics()),
        plus ``n_images`` and ``n_hard``.
    failures : list of (str, str)
        (dataset or dataset/model, message).
    """
    return _environment().get_template("index.html.j2").render(entries=entries, failures=failures, title=title,
                                                              version=__version__)


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
    rows = [{"slicer": "per class", "method": r["method"], **{k: float(r[k]) for k in METRIC_NAMES}}
            for r in summary.to_dict("records")] if has_rel else []
    chart = metric_bars(rows) if rows else None
    methods = list(dict.fromkeys(metrics["method"]))
    first = metrics[metrics["method"] == methods[0]]
    names = result.class_names

    def name(c):
        return names[c] if names is not None and c < len(names) else str(c)

    table = []
    for r in first.sort_values(["n_hard", "class"], ascending=[False, True]).to_dict("records"):
        per_method = metrics[metrics["class"] == r["class"]].set_index("method")
        table.append({"label": int(r["class"]), "name": name(int(r["class"])), "n_images": int(r["n_images"]),
                      "n_hard": int(r["n_hard"]), "n_easy": int(r["n_easy"]),
                      "tpr": {m: float(per_method.loc[m, "TPR"]) for m in methods} if has_rel else None})
    shown = []
    for entry in table[:n_classes]:
        c = entry["label"]
        exps = result.explanations[c]
        members = np.unique(np.concatenate([cl.indices for e in exps.values()
                                            for cl in (*e.hard_clusters, *e.easy_clusters)]))
        star = None
        if run.relevance is not None:
            star = set(failure_sentences(run.relevance[members], run.performance[members], run.o).tolist())
        shown.append({**entry, "clusters": cluster_views(run, "ward", exps, thumbs, star, n_thumbs, n_easy_thumbs)})
    skipped = [(name(c), why) for c, why in result.skipped.items()]
    return _environment().get_template("per_class.html.j2").render(
        run=run, version=__version__, rows=rows, chart=chart, methods=methods, table=table, shown=shown,
        skipped=skipped, has_relevance=has_rel, n_classes=len(table))


def spotcheck_report_run(ec, analysis, *, dataset="SpotCheck world", o=0.2):
    """A :class:`lbee.reports.html.ReportRun` of an analysed EC: exact Γ, its test renders as thumbnails.

    Groups show the true blindspot they cover and their label → prediction
    confusion (the square classifier is binary, so the prediction follows from
    the label and the correctness ω). When the image ids are the EC's saved
    renders (``ec/images/test/NNNNN.png``, as ``lbee demo`` names them), the
    thumbnails link to them, relative to the page in the demo's output folder.
    """
    result = analysis.result
    p = next(iter(result.explanations.values())).params
    # the analysed test images: all of them ('lbee' protocol) or the positives ('paper' protocol)
    rows = np.arange(len(ec.images["test"])) if analysis.rows is None else np.asarray(analysis.rows)
    memb = ec.membership("test")[rows]
    notes = [f"True blindspot {i}: {d}" for i, d in enumerate(ec.describe_blindspots())]
    notes.append(f"Hard clusters as blindspot hypotheses: DR = {analysis.dr:.2f}, FDR = {analysis.fdr:.2f}")
    params = {"encoder": result.encoder.get("encoder"), "sentence set": result.sentence_set, "a": p["a"],
              "C (hard clusters)": p["n_clusters"], "K (sentences per cluster)": p["k"], "τ": p["tau"], "o": o,
              "φ": result.extra.get("confidence", "probability of the true class"), "ω": "correctness", "EC seed": ec.seed,
              "protocol": analysis.protocol}
    labels = np.asarray(ec.true_labels("test")[rows], dtype=np.int64)
    correct = np.asarray(result.performance) >= 0.5
    preds = np.where(correct, labels, 1 - labels)
    ids = [str(i) for i in result.image_ids]
    links = ids if all(i.startswith("ec/images/test/") for i in ids) else None
    return ReportRun(dataset=dataset, model=f"square classifier (seed {ec.seed})",
                     explanations={"ward": result.explanations}, sentences=result.sentences,
                     image_ids=result.image_ids, confidence=result.confidence, performance=result.performance,
                     thumbnail_sources=list(ec.images["test"][rows]), relevance=analysis.relevance,
                     relevance_source="ground truth (SpotCheck attributes)", params=params, o=o,
                     embeddings=analysis.embeddings, notes=notes, labels=labels, preds=preds,
                     class_names=["no square", "square"],
                     blindspots=[(d, np.flatnonzero(memb[:, j])) for j, d in enumerate(ec.describe_blindspots())],
                     image_links=links)
