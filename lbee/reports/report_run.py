"""The `lbee.reports.page.ReportRun` of a run-layer result, built in one place.

What ``lbee report``, ``lbee describe --html`` and a run folder's ``images.parquet`` show.
"""

from __future__ import annotations

from .layout import image_links
from .page import ReportRun


def report_run_of(run, ds, model, *, page_dir=None, index_href=None, links=True):
    """The `lbee.reports.page.ReportRun` of a run-layer result, built in this one place.

    What ``lbee report`` and ``lbee describe --html`` show.

    Parameters
    ----------
    run : lbee.run.pipeline.RunResult
        A whole-dataset run (``run.per_class`` is None); ``run.inputs`` holds the
        `lbee.run.specs.RunInputs`.
    ds : lbee.run.specs.DatasetSpec
    model : lbee.run.specs.ModelSpec or None
    page_dir : path-like, optional
        The folder the page is written to: thumbnails link to the full images relative to it.
    index_href : str, optional
        Link back to the batch's index page.
    links : bool, default=True
        Thumbnails link to the full image files. ``lbee serve`` writes pages without them: a link would spell out
        the server's folders and cannot open on a client.

    Returns
    -------
    ReportRun
    """
    from ..run.identity import encoder_note, encoder_words, random_weights_banner, weights_words
    from ..run.join import alike_groups
    from ..run.pipeline import model_name
    from ..run.text import unassigned_line

    inputs, st, scores = run.inputs, ds.settings, run.scores
    explanations = {name: r.explanations for name, r in run.results.items()}
    first = next(iter(run.main.explanations.values()))
    params = {
        "encoder": encoder_words(inputs.encoder),
        "weights": weights_words(inputs.encoder),
        "sentence set": inputs.sentence_set,
        "methods": ", ".join(next(iter(explanations.values()))),  # what ran: compose joins a grammar's set
        "slicers": ", ".join(explanations),
        "a": st.a,
        "C (hard clusters)": _clusters_words(run.main.explanations, st),
        "K (sentences per cluster)": st.k,
        "similarity threshold τ": run.tau,
        "confidence φ": scores.confidence_desc,
        "easy / hard split": scores.extra.get("split_criterion", f"confidence at mean ± {st.a} s.d."),
        "performance ω": scores.performance_desc,
    }
    if run.relevance is not None:  # the severity of the failure sentences: it means nothing without Γ
        params["o (failure-sentence severity)"] = st.o
    labels, preds = labels_and_predictions(scores)
    blindspots = []
    ec = inputs.spotcheck
    if ec is not None:
        blindspots = list(zip(ec.blindspot_sentences(), ec.blindspot_indices("test")))  # in the grammar's words
    return ReportRun(
        dataset=ds.name,
        model=model_name(model),
        explanations=explanations,
        sentences=run.sentences or inputs.sentences,
        image_ids=inputs.image_ids,
        confidence=scores.confidence,
        performance=scores.performance,
        thumbnail_sources=inputs.thumbnails,
        relevance=run.relevance if run.relevance is not None else inputs.relevance,
        relevance_source=inputs.relevance_source,
        params=params,
        o=st.o,
        embeddings=inputs.embeddings,
        failures=inputs.failures,
        # no confirmation note: the overview's "Not tested on held-out images" says it (trial 35 read it twice)
        notes=inputs.notes
        + [n for n in (unassigned_line(first),) if n]
        + alike_groups(run.main),  # the terminal's hint, in the files that are shared (trial 33)
        labels=labels,
        preds=preds,
        class_names=scores.class_names,
        blindspots=blindspots,
        image_links=image_links(inputs.image_paths, page_dir) if links else None,
        index_href=index_href,
        group_order=(ds.report or {}).get("group_order", "risk"),
        banner=random_weights_banner(inputs.encoder),
        encoder_note=encoder_note(inputs.encoder),
        confirmations={name: r.extra["confirmation"] for name, r in run.results.items() if "confirmation" in r.extra},
        hypotheses={name: r.extra["hypotheses"] for name, r in run.results.items() if "hypotheses" in r.extra},
    )


def labels_and_predictions(scores):
    """Each image's label and predicted class, shape (n,) each, when the predictions carry labels; else (None, None)."""
    ms = scores.model_scores
    if ms is None or ms.labels is None:
        return None, None
    return ms.labels, ms.preds if ms.preds is not None else (None if ms.probs is None else ms.probs.argmax(axis=1))


def _clusters_words(explanations, settings):
    """``15``, ``5 (by default for 51 hard images)``, or ``15 asked, 15 formed, merged into 5 hypotheses (...)``."""
    p = next(iter(explanations.values())).params
    asked = p.get("n_clusters", settings.n_clusters)
    if settings.clusters is None and asked != settings.n_clusters:  # the default, lowered for a small hard split
        asked = f"{asked} (the default for {p.get('n_hard')} hard images; {settings.n_clusters} from 150 on)"
    made, formed, joined = p.get("n_slicer_groups"), p.get("n_hard_clusters_formed"), p.get("joined") or ()
    # --join: the user's word that some groups are one failure
    from ..run.join import joined_words

    said = f", with groups {joined_words(joined)} joined: {formed} groups"
    before = None if formed is None else formed + sum(len(e) - 1 for e in joined)
    if made is not None and before is not None and made != before:
        text = f"{asked} asked, {made} formed, merged into {before} hypotheses (the groups one description covers)"
        return text + (said if joined else "")
    if p.get("unmerged"):  # lbee.run.pipeline: no merging by descriptions that mean nothing
        asked = f"{asked}, not merged into hypotheses (the sentences mean nothing)"
    return f"{asked}{said}" if joined else asked
