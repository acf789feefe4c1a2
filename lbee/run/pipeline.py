"""The one pipeline: loaded inputs -> φ / ω -> partition -> sentences -> output files.

Every command calls it: ``lbee describe`` and ``lbee report`` (:func:`run_model`),
``lbee demo`` and the SpotCheck benchmark (:func:`analyse` on a world in memory),
``lbee sweep`` (:mod:`lbee.run.inputs` then :func:`lbee.analyses.sweep.sensitivity_sweep`).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .._version import __version__
from ..io.cache import atomic_write_bytes
from .names import slug
from .result import DescribeResult, RunResult  # noqa: F401  (named from here too)
from .stored import load_explanations  # noqa: F401  (named from here too)


def _slicer_object(spec):
    from ..slicers import create_slicer

    if isinstance(spec, dict):
        ((name, opts),) = spec.items()
        return name, create_slicer(name, **(opts or {}))
    return spec, (None if spec == "ward" else create_slicer(spec))


def analyse(inputs, scores, settings, *, dataset="", model="", progress=False, n_jobs=1):
    """Steps 1–4 of LBEE on loaded inputs: the one analysis behind every command.

    Parameters
    ----------
    inputs : lbee.run.specs.RunInputs
    scores : lbee.run.specs.Scores
        φ and ω of the model.
    settings : RunSettings
    dataset, model : str
        Names recorded in the outputs.
    progress : bool, default=False
        Per class: a progress bar over classes.
    n_jobs : int, default=1
        Per class: worker processes.

    Returns
    -------
    RunResult
    """
    from ..core.explain import unassigned_hard
    from ..core.partition import Partition
    from .confirm import confirm_run, confirmation_plan
    from .identity import means_nothing
    from .join import join_groups

    tau = settings.resolved_tau(inputs.encoder_tau)
    index, methods = describe_plan(inputs, settings)
    if settings.per_class:
        return RunResult(
            {}, {}, _per_class(inputs, scores, settings, tau, progress, n_jobs), scores, settings, tau, inputs
        )
    results, objects = {}, {}
    texts, added = list(inputs.sentences), {}
    plan = confirmation_plan(inputs, scores, settings)  # held-out images (lbee.run.confirm)
    for spec in settings.slicers:
        name, obj = _slicer_object(spec)
        part = Partition(
            a=settings.a,
            n_clusters=settings.n_clusters_for(plan.n_hard_discovery),  # fewer for a small hard split
            n_easy_clusters=settings.easy_clusters,
            slicer="ward" if obj is None else obj,
            ward=settings.ward,
        )
        try:
            if scores.split is not None:
                part.fit(inputs.embeddings, hard=scores.split[0], easy=scores.split[1], held_out=plan.mask)
            else:
                part.fit(inputs.embeddings, confidence=scores.confidence, held_out=plan.mask)
            # one hypothesis per failure (lbee.core.hypotheses), by descriptions: not when they mean nothing (random
            # weights: trial 40's merged groups left 27 of a failure's 57 hard images in no hypothesis)
            unmerged = index.grammar is not None and means_nothing(inputs.encoder)
            if index.grammar is not None and not unmerged:
                part.merge(index, tau=tau, k=settings.k)
            exps = part.describe_methods(index, methods, k=settings.k, tau=tau, sentences=inputs.sentences)
            # tested on the held-out images, and ranked
            confirmed = confirm_run(plan, part, exps, index, tau, scores.performance, inputs.relevance)
            merged = part.hypotheses_ is not None  # join describes its groups afresh: remember the merging
            if settings.join:  # the user's word that some of the groups shown are one failure (lbee.run.join)
                join_groups(part, settings.join, next(iter(exps.values())).hard_clusters)
                exps = part.describe_methods(index, methods, k=settings.k, tau=tau, sentences=inputs.sentences)
                confirmed = confirm_run(plan, part, exps, index, tau, scores.performance, inputs.relevance)
        except ValueError as exc:
            raise ValueError(f"slicer {name!r}: {exc}" if len(settings.slicers) > 1 else str(exc)) from None
        if obj is not None:
            objects[name] = obj
        record_clusters_formed(exps, part, merged, unmerged=unmerged)
        extra = {"dataset": dataset, "model": model, "slicer": name, **scores.extra, **confirmed}
        extra.setdefault("performance", scores.performance_desc)  # what ω is (−entropy without labels), said with it
        unassigned = unassigned_hard(part, exps)
        if len(unassigned):  # hard images in no hypothesis: hard, in no group (stored for the report and service)
            extra["unassigned_hard"] = unassigned.tolist()
        if "compose" in exps:
            _share_sentences(exps["compose"], texts, added)
        results[name] = DescribeResult(
            exps,
            list(inputs.image_ids),
            np.asarray(scores.confidence, dtype=np.float64),
            np.asarray(scores.performance, dtype=np.float64),
            texts,
            inputs.encoder,
            inputs.sentence_set,
            list(inputs.failures),
            inputs.image_paths,
            extra,
            part,
        )
    for r in results.values():
        for e in r.explanations.values():
            e.params["n_sentences"] = len(texts)
        if inputs.sentence_conditions is not None:  # each sentence's conditions, written with the run
            from ..grammar import format_conditions

            conds = list(inputs.sentence_conditions) + [added[t] for t in texts[len(inputs.sentences) :]]
            r.extra["sentence_conditions"] = [format_conditions(c) for c in conds]
    relevance = inputs.relevance
    if relevance is not None and added:
        relevance = _composed_columns(
            inputs, relevance, [added[t] for t in texts[len(inputs.sentences) :]], results, index, tau
        )
    return RunResult(results, objects, None, scores, settings, tau, inputs, texts, relevance)


def _composed_columns(inputs, relevance, new, results, index, tau):
    """Γ of the run's sentences: the given Γ (the set's) and the columns of the conjunctions 'compose' wrote.

    The one rule of :func:`lbee.io.relevance.compose_columns` (the AND of the
    columns of each condition's sentence), as ``lbee evaluate`` applies it to
    a Γ file: the same Γ gives the same metrics. Only when a condition has no
    sentence of its own in the set are the columns the composed relevance of
    the encoder's atoms (pseudo ground truth), and the notes say so.
    """
    from ..io.relevance import compose_columns

    try:
        extra_rel = compose_columns(relevance, inputs.sentence_conditions, new, source=inputs.relevance_source)
        how = "composed from the columns of their conditions' sentences in "
    except ValueError:
        part = next(iter(results.values())).partition
        _, extra_rel = part.composed_relevance(index, new, tau=tau)
        how = "the composed relevance of their atoms (pseudo ground truth), the rest is "
    said = "the sentence" if len(new) == 1 else f"the {len(new)} sentences"  # not "the 1 sentences" (trial 27)
    inputs.notes.append(f"Relevance (Γ) of {said} 'compose' wrote is {how}" + inputs.relevance_source + ".")
    return np.concatenate([np.asarray(relevance, dtype=bool), extra_rel], axis=1)


def _share_sentences(exp, texts, added):
    """Point a 'compose' explanation's sentences into the run's list ``texts`` (appending what it lacks)."""
    where = {t: i for i, t in enumerate(texts)}
    n_base = exp.params["n_base_sentences"]
    for c in exp.hard_clusters:
        ids = []
        for s, d in zip(c.sentences, c.details or [None] * len(c.sentences)):
            text = exp.sentence_texts[s]
            if text not in where:
                where[text] = len(texts)
                texts.append(text)
            if s >= n_base:
                added[text] = d["conditions"]
            ids.append(where[text])
        c.sentences = ids
    exp.sentence_texts = texts


def describe_plan(inputs, settings):
    """The sentence index and the describers of a run.

    With a grammar's sentence set the index carries each sentence's
    conditions, and 'compose' leads the default describers (all of
    ``METHODS``); otherwise the describers are the settings'.
    """
    from ..core.selection import COMPOSE, METHODS
    from ..core.sentence_index import SentenceIndex

    methods = list(settings.methods)
    if inputs.sentence_conditions is None:
        if COMPOSE in methods:
            raise ValueError(
                f"method 'compose' needs a grammar's sentence set (lbee sentences generate GRAMMAR, or "
                f"--sentences spotcheck.grammar); {inputs.sentence_set!r} has no conditions."
            )
        return SentenceIndex(inputs.sentence_embeddings), methods
    index = SentenceIndex(inputs.sentence_embeddings, conditions=inputs.sentence_conditions, grammar=inputs.grammar)
    if tuple(methods) == tuple(METHODS):
        methods = [COMPOSE, *methods]
    return index, methods


def _per_class(inputs, scores, settings, tau, progress, n_jobs):
    from ..analyses.per_class import explain_per_class

    s = scores.model_scores
    if s is None or s.labels is None:
        from .preflight import PER_CLASS_NEEDS_LABELS

        raise ValueError(f"{PER_CLASS_NEEDS_LABELS}.")
    if s.preds is None and s.probs is None:
        raise ValueError("per_class needs predicted classes: 'pred' or 'prob_<class>' columns.")
    return explain_per_class(
        inputs.embeddings,
        inputs.sentence_embeddings,
        labels=s.labels,
        preds=s.preds,
        probs=s.probs,
        split=settings.per_class,
        methods=list(settings.methods),
        n_clusters=settings.n_clusters,
        n_easy_clusters=settings.easy_clusters,
        k=settings.k,
        tau=tau,
        a=settings.a,
        relevance=inputs.relevance,
        o=settings.o,
        class_names=scores.class_names,
        sentences=inputs.sentences,
        n_jobs=n_jobs,
        progress=progress,
        images_per_group=settings.images_per_group_per_class,
    )


def run_model(ds, model, inputs, *, device=None, progress=False, n_jobs=1):
    """φ / ω of one model of ``ds``, then :func:`analyse`.

    Returns
    -------
    RunResult
    """
    from .scores import model_scores

    scores = model_scores(ds, model, inputs, device=device, progress=progress)
    return analyse(
        inputs, scores, ds.settings, dataset=ds.name, model=model_name(model), progress=progress, n_jobs=n_jobs
    )


def model_name(model):
    """The name a model is shown under (the SpotCheck world's own classifier when None)."""
    return model.name if model is not None else "EC classifier"


def record_clusters_formed(explanations, part, merged=None, unmerged=False):
    """Record in each explanation's ``params`` the clusters formed beside those asked for.

    ``merged``: whether the slicer's groups were merged into hypotheses (default: whether ``part`` holds them);
    ``unmerged``: whether a merging was left out because the sentences mean nothing (``params['unmerged']``).

    Warns (once per partition) when they were capped or are tiny (:func:`lbee.core.clustering.cluster_notes`).
    """
    from ..core.clustering import warn_cluster_notes

    merged = getattr(part, "hypotheses_", None) is not None if merged is None else merged
    for e in explanations.values():
        e.params["n_hard_clusters_formed"] = len(e.hard_clusters)
        e.params["n_easy_clusters_formed"] = len(e.easy_clusters)
        if getattr(part, "joined_", None):
            e.params["joined"] = part.joined_
        if merged:  # the slicer's groups became one hypothesis per failure: say how many it made
            e.params["n_slicer_groups"] = len(part.slicer_groups_)
        if unmerged:
            e.params["unmerged"] = True
    if explanations:  # merged hypotheses: judge the slicer's groups, which --clusters made
        sizes = [len(g) for g in part.slicer_groups_] if merged else None
        warn_cluster_notes(next(iter(explanations.values())), stacklevel=3, group_sizes=sizes)


def write_run(run, out_dir):
    """Write a :class:`RunResult`: the main slicer into ``out_dir``, the others into ``out_dir/slicer_<name>``.

    Per-class runs write ``per_class.json`` and the per-class CSV tables.

    Returns
    -------
    list of Path
        The folders written.
    """
    out = Path(out_dir)
    if run.per_class is not None:
        write_per_class_outputs(
            run.per_class,
            out,
            image_ids=run.inputs.image_ids,
            sentences=run.inputs.sentences,
            sentence_set=run.inputs.sentence_set,
        )
        return [out]
    folders = []
    for i, (name, result) in enumerate(run.results.items()):
        folder = out if i == 0 else out / f"slicer_{slug(name)}"  # lbee.run.names
        write_outputs(result, folder)
        folders.append(folder)
    return folders


def assignments_table(result):
    """DataFrame (image, split, cluster, confidence, performance); cluster is -1 for neutral images."""
    import pandas as pd

    exp = next(iter(result.explanations.values()))
    split, cluster = exp.split_and_group(len(result.image_ids))
    return pd.DataFrame(
        {
            "image": result.image_ids,
            "split": split,
            "cluster": cluster,
            "confidence": result.confidence,
            "performance": result.performance,
        }
    )


def write_outputs(result, out_dir):
    """Write ``explanation.json``, ``assignments.parquet`` and ``report.md`` into ``out_dir``."""
    from ..core.explanation_payload import PAYLOAD_FORMAT, compact_payload, content_digest, rows_digest
    from .outputs import assignments_digest
    from .text import render_markdown

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    payload = {
        "lbee_version": __version__,
        "encoder": result.encoder,
        "sentence_set": result.sentence_set,
        "sentences": result.sentences,
        "images": result.image_ids,
        "rows_sha256": rows_digest(list(result.image_ids), list(result.sentences)),  # an edit is refused on reading
        "skipped_images": [{"path": p, "reason": r} for p, r in result.failures],
        "params": next(iter(result.explanations.values())).params,
        # The clustering once, prototypes as float32 (lbee.core.explanation_payload.compact_payload); read by
        # load_explanations, which also reads the older one-full-copy-per-method files.
        **compact_payload(result.explanations),
        **result.extra,
    }
    payload["format"] = PAYLOAD_FORMAT  # the digests below are required from this format on
    table = assignments_table(result)
    payload["assignments_sha256"] = assignments_digest(table)  # ω for lbee evaluate: an edit is refused on reading
    # any edit is refused on reading; digested as the reader will see it (int keys become strings, tuples lists)
    payload["content_sha256"] = content_digest(json.loads(json.dumps(payload)))
    atomic_write_bytes(out / "explanation.json", json.dumps(payload, separators=(",", ":")).encode())
    import io

    buf = io.BytesIO()
    table.to_parquet(buf, index=False)
    atomic_write_bytes(out / "assignments.parquet", buf.getvalue())
    atomic_write_bytes(out / "report.md", render_markdown(result).encode())
    return out


def write_per_class_outputs(result, out_dir, *, image_ids, sentences, sentence_set):
    """Write ``per_class.json`` (every class's explanations), ``per_class_metrics.csv``, ``per_class_summary.csv``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    payload = {
        "lbee_version": __version__,
        "sentence_set": sentence_set,
        "sentences": list(sentences),
        "images": list(image_ids),
        "class_names": result.class_names,
        "skipped": {str(c): why for c, why in result.skipped.items()},
        "classes": {
            str(c): {m: {k: v for k, v in e.to_dict().items() if k != "sentences"} for m, e in exps.items()}
            for c, exps in result.explanations.items()
        },
    }
    atomic_write_bytes(out / "per_class.json", json.dumps(payload).encode())
    atomic_write_bytes(out / "per_class_metrics.csv", result.metrics.to_csv(index=False).encode())
    atomic_write_bytes(out / "per_class_summary.csv", result.summary().to_csv(index=False).encode())
    return out
