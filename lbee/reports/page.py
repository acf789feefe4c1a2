"""The page model of an HTML report: what one run shows (`ReportRun`) and the views built from it.

Everything here is data (dicts, strings, data URIs of CSV files); turning it
into HTML is `lbee.reports.html`.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field

import numpy as np

from ..core.evaluation import failure_sentences, metric_rows
from .browse import browse_view

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
        [`lbee.analyses.sweep.sensitivity_sweep`][lbee.analyses.sweep.sensitivity_sweep] output, drawn as Fig. 6 / Fig.
        10.
    panels : list of str
        Extra self-contained, already escaped ``<section>`` blocks (e.g. the sensitivity panel).
    labels, preds : ndarray of int, shape (n,), or None
        True and predicted classes (classification): each group shows its label → prediction confusion.
    class_names : list of str or None
    blindspots : list of (str, ndarray of int)
        Known true blindspots (SpotCheck): description and member indices; each group shows the one it covers.
    image_links : list of str or None
        Per image a link to the full image (an absolute file URI; the demo links its own renders relative to its
        folder); None: thumbnails are not links.
    index_href : str or None
        Link back to the batch's index page.
    group_order : {'risk', 'size'}, default='risk'
        Hard groups sorted by error rate × size (risk: 1 − mean ω times size) or by size alone. When the
        run confirmed its statements on held-out images, 'risk' keeps the run's order instead: confirmed
        hypotheses first, then the others, each most harmful first.
    confirmations : dict of str to dict
        Per slicer, the run's ``confirmation`` record (``explanation.json``).
    banner : str or None
        A warning shown above everything (`lbee.run.identity.RANDOM_WEIGHTS_BANNER`).
    description_scores : dict of str to float
        Per method, the SpotCheck description score (a column of the metrics table when given).
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
    banner: str | None = None
    #: a note under the banner, on what the encoder saw (`lbee.run.identity.encoder_note`)
    encoder_note: str | None = None
    #: per slicer, the run's ``confirmation`` record (`lbee.run.confirm.confirm_run`); its groups' order is kept
    confirmations: dict = field(default_factory=dict)
    #: per slicer, the run's merged ``hypotheses`` records (``explanation.json``), where it merged its groups
    hypotheses: dict = field(default_factory=dict)
    #: per method, the SpotCheck description score (known blindspots only; the terminal prints it beside the metrics)
    description_scores: dict = field(default_factory=dict)

    def failure_set(self):
        """S*_β as a set of sentence indices; None without relevance."""
        if self.relevance is None:
            return None
        return set(failure_sentences(self.relevance, self.performance, self.o).tolist())

    def metrics(self, star=None):
        """Rows (slicer, method, ACR, AHR, TPR, JI, n_failure_sentences); empty without relevance.

        ``star`` is S*_β when the caller already has it (`failure_set`).
        """
        if self.relevance is None:
            return []
        return metric_rows(self.explanations, self.relevance, self.performance, self.o, star)


def plane_coords(run, slicer_objects):
    """The 2-D plane of the page and its label: the run's, PlaneSpot's, or a PCA of the embeddings (None, '')."""
    ps = slicer_objects.get("planespot") if slicer_objects else None
    if run.plane is not None:
        return np.asarray(run.plane, dtype=np.float64), run.plane_label or "2-D plane"
    if ps is not None and getattr(ps, "embedding_", None) is not None:
        plane = np.asarray(ps.embedding_, dtype=np.float64)
        held = (run.confirmations.get("planespot") or {}).get("held_out")
        if held and len(plane) < len(run.image_ids):  # fitted on the discovery images: held-out ones not drawn
            full = np.full((len(run.image_ids), plane.shape[1]), np.nan)
            full[np.setdiff1d(np.arange(len(run.image_ids)), held)] = plane
            plane = full
        return plane, "PlaneSpot 2-D plane"
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
        rows.append(
            {
                "sentence": run.sentences[n],
                "in_star": None if star is None else n in star,
                "marks": marks,
                "hits": sum(1 for x in marks if x),
            }
        )
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
    return [
        {
            "label": _class_name(run, uniq[o, 0]),
            "pred": _class_name(run, uniq[o, 1]),
            "count": int(counts[o]),
            "correct": bool(uniq[o, 0] == uniq[o, 1]),
            "share": float(counts[o] / idx.size),
        }
        for o in order
    ]


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


def cluster_views(
    run, slicer, exps, thumbs, star, n_thumbs, n_easy_thumbs, *, extras=False, short=None, page_groups=None
):
    """Per hard group of ``slicer``: thumbnails, twin thumbnails, size, error rate and sentences per method.

    With ``extras``, each view also has its anchor, the label → prediction
    confusion, the φ histogram spec, a CSV of its members and the true
    blindspot it covers; the views are then sorted by ``run.group_order``.
    """
    from ..run.confirm_text import group_verdict, verdict_words
    from ..run.text import FEW_IMAGES, confirmation_lines, first_method
    from ..run.untested import singles_out_nothing, untested_statement_lines
    from .marks import held_out_mark, held_out_state, leading_text
    from .vega import phi_histogram_spec, spec_json

    first = next(iter(exps.values()))
    binary = set(np.unique(run.performance).tolist()) <= {0.0, 1.0}
    conf = run.confirmations.get(slicer) or {}
    tested = {s["text"]: held_out_state(s, conf) for s in conf.get("statements", ())}
    short = short or short_names(run.image_ids)
    anchor = slug(slicer)
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
        leading = leading_text(conf, i)
        for m, e in exps.items():
            hc = e.hard_clusters[i]
            methods.append(
                {
                    "name": m,
                    "sentences": [
                        {
                            "text": run.sentences[s],
                            "in_star": None if star is None else s in star,
                            "confirmed": held_out_mark(tested.get(run.sentences[s]), run.sentences[s], leading),
                            "coverage": None
                            if run.relevance is None or not idx.size
                            else float(run.relevance[idx, s].mean()),
                        }
                        for s in hc.sentences
                    ],
                }
            )
        omega = run.performance[idx]
        view = {
            "index": i,
            "size": int(idx.size),
            "anchor": f"g-{anchor}-{i}",
            "error_rate": float(1 - omega.mean()) if binary else None,
            "mean_performance": float(omega.mean()),
            "mean_confidence": float(run.confidence[idx].mean()),
            "easy_twin": int(c.easy_cluster),
            "thumbs": thumbs_hard,
            "twin_thumbs": _thumbs(run, twin, thumbs, short),
            "methods": methods,
            "confirmation": confirmation_lines(conf, i),
            "confirmed": bool(conf.get("groups") and i < len(conf["groups"]) and conf["groups"][i]["confirmed"]),
            "verdict": group_verdict(conf, i),  # one verdict, in the terminal's and the JSON's words (trial 26)
            "verdict_words": verdict_words(group_verdict(conf, i)),
            "misdescribed": _misdescribed(conf, i),  # said in the group's summary line, not only inside (trial 31)
            # a run that tested nothing: how many of the images its statement holds for are hard (as the terminal)
            "untested": untested_statement_lines(
                {"confirmation": conf, "hypotheses": run.hypotheses.get(slicer)}, first.params, i
            ),
        }
        view["stray"] = singles_out_nothing(view["untested"])  # "What fails" says so beside its sentence (trial 32)
        view["few"] = idx.size < FEW_IMAGES and not view["confirmed"]  # as the terminal folds it, not red (trial 41)
        if extras:
            view["confusion"] = _confusion(run, idx)
            view["hist"] = spec_json(phi_histogram_spec(run.confidence, idx, twin_all))
            view["csv"] = members_csv_uri(run, idx, short)
            view["csv_name"] = f"{anchor}_group_{i}.csv"
            view["blindspot"] = _blindspot_cover(run, idx)
            lead = first_method(exps)[0]  # the describer the terminal says to read first, then the others
            ranked = sorted(exps.items(), key=lambda item: item[0] != lead)
            top = next(
                (int(m.hard_clusters[i].sentences[0]) for _, m in ranked if len(m.hard_clusters[i].sentences)), None
            )
            choices = [int(s) for _, m in ranked for s in m.hard_clusters[i].sentences]  # every describer's
            # the page's budget is shared by every group on it: every section's (sweep 24: per class, 109 MB)
            n_page = page_groups or len(first.hard_clusters)
            browse = browse_view(run, order, top, view["anchor"], short, choices, n_page)
            view["member_order"], view["browse"] = order.tolist(), browse
        views.append(view)
    if run.group_order == "size":
        views.sort(key=lambda v: (-v["size"], v["index"]))
    else:  # the order the terminal and report.md show (lbee.run.text.group_order); per class too
        from ..run.text import group_order

        views = [views[i] for i in group_order(first.hard_clusters, run.performance, conf)]
    return views


def slug(name):
    """``name`` as an HTML anchor / file-name part (letters, digits, ``_`` and ``-``)."""
    import re

    return re.sub(r"[^A-Za-z0-9_-]+", "-", str(name)).strip("-") or "s"


def _thumbs(run, indices, thumbs, short=None):
    out = []
    for j in indices:
        j = int(j)
        uri = None
        if run.thumbnail_sources is not None and thumbs is not None:
            uri = thumbs.data_uri(run.thumbnail_sources[j])
        out.append(
            {
                "id": run.image_ids[j],
                "name": short[j] if short else run.image_ids[j],
                "uri": uri,
                "index": j,
                "href": None if run.image_links is None else run.image_links[j],
                "confidence": float(run.confidence[j]),
            }
        )
    return out


def spotcheck_report_run(ec, analysis, *, dataset="SpotCheck world", o=0.2):
    """A `ReportRun` of an analysed EC: exact Γ, its test renders as thumbnails.

    Groups show the true blindspot they cover and their label → prediction
    confusion (the square classifier is binary, so the prediction follows from
    the label and the correctness ω). When the image ids are the EC's saved
    renders (``ec/images/test/NNNNN.png``, as ``lbee demo`` names them), the
    thumbnails link to them, relative to the page in the demo's output folder.
    """
    from ..run.identity import encoder_words, random_weights_banner, weights_words

    result = analysis.result
    p = next(iter(result.explanations.values())).params
    # the analysed test images: all of them ('lbee' protocol) or the positives ('paper' protocol)
    rows = np.arange(len(ec.images["test"])) if analysis.rows is None else np.asarray(analysis.rows)
    memb = ec.membership("test")[rows].copy()
    memb[result.extra.get("confirmation", {}).get("held_out") or []] = False  # groups are found on the rest
    notes = [f"True blindspot {i}: {d}" for i, d in enumerate(ec.blindspot_sentences())]  # the terminal's words
    notes.append(f"Hard groups as blindspot hypotheses: DR = {analysis.dr:.2f}, FDR = {analysis.fdr:.2f}")
    from ..run.text import unassigned_line

    notes += [n for n in (unassigned_line(next(iter(result.explanations.values()))),) if n]
    params = {
        "encoder": encoder_words(result.encoder),
        "weights": weights_words(result.encoder),
        "sentence set": result.sentence_set,
        "a": p["a"],
        "C (hard clusters)": p["n_clusters"],
        "K (sentences per cluster)": p["k"],
        "similarity threshold τ": p["tau"],
        "o": o,
        "confidence φ": result.extra.get("confidence", "probability of the true class"),
        "performance ω": "correctness",
        "EC seed": ec.seed,
        "protocol": analysis.protocol,
    }
    labels = np.asarray(ec.true_labels("test")[rows], dtype=np.int64)
    correct = np.asarray(result.performance) >= 0.5
    preds = np.where(correct, labels, 1 - labels)
    ids = [str(i) for i in result.image_ids]
    links = ids if all(i.startswith("ec/images/test/") for i in ids) else None
    return ReportRun(
        dataset=dataset,
        model=f"square classifier (seed {ec.seed})",
        explanations={"ward": result.explanations},
        sentences=result.sentences,
        image_ids=result.image_ids,
        confidence=result.confidence,
        performance=result.performance,
        thumbnail_sources=list(ec.images["test"][rows]),
        relevance=analysis.relevance,
        relevance_source="ground truth (SpotCheck attributes)",
        params=params,
        o=o,
        embeddings=analysis.embeddings,
        notes=notes,
        labels=labels,
        preds=preds,
        class_names=["no square", "square"],
        blindspots=[(d, np.flatnonzero(memb[:, j])) for j, d in enumerate(ec.describe_blindspots())],
        image_links=links,
        banner=random_weights_banner(result.encoder),
        confirmations={"ward": result.extra["confirmation"]} if "confirmation" in result.extra else {},
        hypotheses={"ward": result.extra["hypotheses"]} if "hypotheses" in result.extra else {},
        description_scores=dict(analysis.description_score),
    )


def _misdescribed(conf, i):
    """Why hard group ``i``'s statement does not describe it ("its statement holds for 3 of its 32 images"), or None."""
    groups = (conf or {}).get("groups") or ()
    why = groups[i].get("not_a_failure") if i < len(groups) else None
    return why if isinstance(why, str) and why.startswith("its statement holds for") else None
