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
    panels: list = field(default_factory=list)  # extra self-contained, already escaped <section>s (e.g. sensitivity)

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


def cluster_views(run, slicer, exps, thumbs, star, n_thumbs, n_easy_thumbs):
    """Per hard group of ``slicer``: thumbnails, twin thumbnails, size, error rate and sentences per method."""
    first = next(iter(exps.values()))
    binary = set(np.unique(run.performance).tolist()) <= {0.0, 1.0}
    views = []
    for i, c in enumerate(first.hard_clusters):
        idx = np.asarray(c.indices)
        # Show the least confident members first: the clearest failures.
        order = idx[np.argsort(run.confidence[idx], kind="stable")]
        thumbs_hard = _thumbs(run, order[:n_thumbs], thumbs)
        twin = first.easy_clusters[c.easy_cluster].indices if first.easy_clusters else np.array([], int)
        twin = np.asarray(twin)
        twin = twin[np.argsort(-run.confidence[twin], kind="stable")][:n_easy_thumbs]
        methods = []
        for m, e in exps.items():
            hc = e.hard_clusters[i]
            methods.append({"name": m, "sentences": [
                {"text": run.sentences[s], "in_star": None if star is None else s in star,
                 "coverage": None if run.relevance is None or not idx.size else float(run.relevance[idx, s].mean())}
                for s in hc.sentences]})
        omega = run.performance[idx]
        views.append({
            "index": i, "size": int(idx.size),
            "error_rate": float(1 - omega.mean()) if binary else None,
            "mean_performance": float(omega.mean()),
            "mean_confidence": float(run.confidence[idx].mean()),
            "easy_twin": int(c.easy_cluster),
            "thumbs": thumbs_hard, "twin_thumbs": _thumbs(run, twin, thumbs), "methods": methods,
        })
    return views


def _thumbs(run, indices, thumbs):
    out = []
    for j in indices:
        j = int(j)
        uri = None
        if run.thumbnail_sources is not None and thumbs is not None:
            uri = thumbs.data_uri(run.thumbnail_sources[j])
        out.append({"id": run.image_ids[j], "uri": uri, "confidence": float(run.confidence[j])})
    return out


def _environment():
    from jinja2 import Environment, PackageLoader, select_autoescape

    env = Environment(loader=PackageLoader("lbee.reports", "templates"), autoescape=select_autoescape(["html", "j2"]),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["value"] = lambda x: f"{x:.4g}" if isinstance(x, float) else x
    env.filters["num"] = lambda x, d=3: "–" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{x:.{d}f}"
    return env


def render_report(run, *, thumbs=None, n_thumbs=8, n_easy_thumbs=4, slicer_objects=None):
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

    Returns
    -------
    str
    """
    star = run.failure_set()
    rows = run.metrics(star)
    chart = metric_bars(rows) if rows else None
    columns, t1_rows, t1_total = table1_rows(run, star)
    primary = next(iter(run.explanations))
    first = next(iter(run.explanations[primary].values()))
    coords, plane_label = _plane_coords(run, slicer_objects)
    plane = None
    if coords is not None:
        plane = plane_plot(coords, run.confidence, [c.indices for c in first.hard_clusters],
                           f"{plane_label}; hard groups of '{primary}' outlined")
    sweep = None
    if run.sweep is not None and len(run.sweep):
        from ..analyses.sweep import sweep_figure

        _pyplot()
        sweep = _png_uri(sweep_figure(run.sweep))
    sections = [{"slicer": s, "clusters": cluster_views(run, s, exps, thumbs, star, n_thumbs, n_easy_thumbs)}
                for s, exps in run.explanations.items()]
    n = len(run.image_ids)
    p = first.params
    summary = {"n_images": n, "n_hard": p.get("n_hard"), "n_easy": p.get("n_easy"),
               "n_neutral": None if p.get("n_hard") is None else n - p["n_hard"] - p.get("n_easy", 0),
               "mean_performance": float(np.mean(run.performance)), "n_skipped": len(run.failures),
               "n_sentences": len(run.sentences), "n_failure_sentences": None if star is None else len(star)}
    return _environment().get_template("report.html.j2").render(
        run=run, version=__version__, summary=summary, rows=rows, chart=chart, columns=columns,
        t1_rows=t1_rows, t1_total=t1_total, plane=plane, plane_label=plane_label, sections=sections, sweep=sweep,
        has_relevance=star is not None)


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
    """A :class:`lbee.reports.html.ReportRun` of an analysed EC: exact Γ, its test renders as thumbnails."""
    result = analysis.result
    p = next(iter(result.explanations.values())).params
    notes = [f"True blindspot {i}: {d}" for i, d in enumerate(ec.describe_blindspots())]
    notes.append(f"Hard clusters as blindspot hypotheses: DR = {analysis.dr:.2f}, FDR = {analysis.fdr:.2f}")
    params = {"encoder": result.encoder.get("encoder"), "sentence set": result.sentence_set, "a": p["a"],
              "C (hard clusters)": p["n_clusters"], "K (sentences per cluster)": p["k"], "τ": p["tau"], "o": o,
              "φ": "probability of the true class", "ω": "correctness", "EC seed": ec.seed}
    return ReportRun(dataset=dataset, model=f"square classifier (seed {ec.seed})",
                     explanations={"ward": result.explanations}, sentences=result.sentences,
                     image_ids=result.image_ids, confidence=result.confidence, performance=result.performance,
                     thumbnail_sources=list(ec.images["test"]), relevance=analysis.relevance,
                     relevance_source="ground truth (SpotCheck attributes)", params=params, o=o,
                     embeddings=analysis.embeddings, notes=notes)
