"""``lbee report CONFIG.yaml``: run every dataset × model × slicer × method and write the reports.

Per dataset (and model, when a dataset has several) the output folder holds
``report.html`` (self-contained), ``explanation.json`` (one more per extra
slicer), ``assignments.parquet``, ``metrics.csv`` and ``metrics.json``; the
output root holds ``index.html`` with the metrics of every run. A failing
dataset or model is recorded and the batch goes on; failures are listed at the
end (and on the index page).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..io.cache import atomic_write_bytes
from .html import ReportRun, render_index, render_report
from .config import load_report_config


@dataclass
class BatchResult:
    """What a batch produced.

    Attributes
    ----------
    reports : list of dict
        One per successful run: ``dataset``, ``model``, ``folder``, ``rows`` (metrics).
    failures : list of (str, str)
        (dataset or dataset/model, message).
    index : Path
    """

    reports: list = field(default_factory=list)
    failures: list = field(default_factory=list)
    index: Path | None = None


def slug(name):
    """A file-system-safe folder name for a dataset or model name."""
    s = re.sub(r"[^A-Za-z0-9._-]+", "_", str(name)).strip("._")
    return s or "unnamed"


@dataclass
class _Inputs:
    """What every model of a dataset shares."""

    embeddings: np.ndarray
    sentence_embeddings: np.ndarray
    sentences: list
    image_ids: list
    image_paths: list | None
    thumbnails: list | None
    labels: np.ndarray | None
    relevance: np.ndarray | None
    relevance_source: str
    tau: float
    encoder: dict
    sentence_set: str
    failures: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    spotcheck: object = None


def _relevance(settings, ids, sents):
    rel = settings["relevance"]
    if rel is None:
        return None, "none"
    from ..io.relevance import load_relevance

    (kind, path), = rel.items()
    label = "ground truth" if kind == "ground_truth" else "VQA pseudo ground truth"
    return load_relevance(path, ids, sents), f"{label}: {path.name}"


def _spotcheck_inputs(ds, out_dir, device, log):
    from ..encoders import create_encoder
    from ..spotcheck import (CorruptECError, ExperimentalConfiguration, make_ec, relevance_matrix,
                            spotcheck_sentences)

    st = ds.settings
    if st["sentences"] != "spotcheck" or st["encoder"] != "spotcheck":
        raise ValueError(f"dataset {ds.name!r}: a SpotCheck world is described with its own encoder and sentences "
                         f"(encoder: spotcheck, sentences: spotcheck); received encoder {st['encoder']!r}, "
                         f"sentences {st['sentences']!r}.")
    if "path" in ds.spotcheck:
        ec = ExperimentalConfiguration.load(ds.spotcheck["path"])
    else:
        ec_dir, seed = out_dir / "ec", ds.spotcheck["seed"]
        ec = None
        if (ec_dir / "ec.json").exists():  # a rerun reuses the world it made, unless it is corrupt
            try:
                ec = ExperimentalConfiguration.load(ec_dir)
            except CorruptECError:
                ec = None
        if ec is None or ec.seed != seed:
            log(f"  generating SpotCheck world (seed {seed}) ...")
            ec = make_ec(seed)
            ec.save(ec_dir)
    if ec.model is None:
        raise ValueError(f"dataset {ds.name!r}: the EC has no trained model (model.pt).")
    enc = create_encoder("spotcheck", device=device)
    images = ec.images["test"]
    sents = spotcheck_sentences()
    texts = [s for s, _, _ in sents]
    ids = [f"test/{i:05d}" for i in range(len(images))]
    rel, source = None, "none"
    if st["relevance"] == "ground_truth":
        rel, source = relevance_matrix(ec.attributes["test"], [c for _, c, _ in sents]), \
            "ground truth (SpotCheck attributes)"
    elif st["relevance"] is not None:
        rel, source = _relevance(st, ids, texts)
    notes = [f"True blindspot {i}: {d}" for i, d in enumerate(ec.describe_blindspots())]
    return _Inputs(enc.encode_arrays(images), enc.encode_text(texts), texts, ids, None, list(images),
                   ec.true_labels("test"), rel, source, enc.default_tau, enc.identity(), "spotcheck",
                   notes=notes, spotcheck=ec)


def _image_inputs(ds, cache_dir, device, progress):
    from ..encoders.embedding import embed_images, embed_sentences
    from ..io.images import discover_images
    from ..io.sentences import load_sentence_set

    st = ds.settings
    sset = load_sentence_set(st["sentences"])
    sents = list(sset.sentences)
    imgs = discover_images(ds.images)
    failures = []
    if ds.image_embeddings is not None:
        emb = np.load(ds.image_embeddings)
        if emb.ndim != 2 or emb.shape[0] != len(imgs.paths):
            raise ValueError(f"image_embeddings {ds.image_embeddings.name!r} has shape {emb.shape}; expected "
                             f"({len(imgs.paths)}, d), one row per image of {str(ds.images)!r}.")
        ok = np.ones(len(imgs.paths), bool)
        encoder_id, tau, enc = {"encoder": "precomputed", "image_embeddings": str(ds.image_embeddings)}, 0.25, None
    else:
        from ..encoders import create_encoder

        enc = create_encoder(st["encoder"], device=device)
        res = embed_images(enc, imgs.paths, cache_dir=cache_dir, batch_size=st["batch_size"],
                           num_workers=st["num_workers"], progress=progress)
        emb, ok, failures, encoder_id, tau = res.embeddings, res.ok, res.failures, enc.identity(), enc.default_tau
    if ds.sentence_embeddings is not None:
        sen = np.load(ds.sentence_embeddings)
        if sen.ndim != 2 or sen.shape[0] != len(sents):
            raise ValueError(f"sentence_embeddings has shape {sen.shape}; expected ({len(sents)}, d) for the "
                             f"{len(sents)} sentences of {sset.name!r}.")
    elif enc is not None:
        sen = embed_sentences(enc, sents, cache_dir=cache_dir)
    else:
        raise ValueError("image_embeddings needs sentence_embeddings too (the same joint space).")
    ids = [i for i, good in zip(imgs.ids, ok) if good]
    paths = [p for p, good in zip(imgs.paths, ok) if good]
    labels = None if imgs.labels is None else np.asarray(imgs.labels)[ok]
    rel, source = _relevance(st, ids, sents)
    return _Inputs(emb, sen, sents, ids, paths, paths, labels, rel, source, tau, encoder_id, sset.name,
                   failures=failures)


def _model_scores(ds, model, inputs, device, progress):
    """(φ, ω, description of φ, description of ω, ModelScores or None, class names or None) for one model."""
    from ..scoring.confidence import class_names_from_table, scores_from_probabilities, scores_from_table
    from ..io.images import read_table
    from ..run.pipeline import align_scores

    kind = ds.settings["confidence"]
    names = None
    if ds.settings["task"] == "segmentation":
        return _segmentation_scores(ds, model, inputs, device, progress)
    if model is None:  # the SpotCheck world's own classifier
        from ..spotcheck import predict

        probs, _ = predict(inputs.spotcheck.model, inputs.spotcheck.images["test"])
        scores = scores_from_probabilities(probs, kind=kind, labels=inputs.labels)
    elif model.predictions is not None:
        table = read_table(model.predictions)
        table_ids, scores = scores_from_table(table, kind=kind)
        names = class_names_from_table(table)
        paths = inputs.image_paths or inputs.image_ids
        scores = scores.subset(align_scores(inputs.image_ids, paths, table_ids))
    else:
        from ..scoring.classifier import default_transform, load_classifier, predict_probabilities

        net = load_classifier(model.model, model.weights, num_classes=model.num_classes)
        probs, ran = predict_probabilities(net, inputs.image_paths, transform=default_transform(model.image_size),
                                           batch_size=ds.settings["batch_size"], device=device, progress=progress)
        if not ran.all():
            raise ValueError(f"the model could not read {int((~ran).sum())} image(s) the encoder read.")
        scores = scores_from_probabilities(probs, kind=kind, labels=inputs.labels)
    if scores.probs is not None and scores.labels is not None:
        unknown = np.unique(scores.labels[(scores.labels < 0) | (scores.labels >= scores.probs.shape[1])])
        if unknown.size:
            raise ValueError(f"labels contain class(es) {unknown[:5].tolist()} absent from the predictions "
                             f"({scores.probs.shape[1]} classes).")
    omega = "correctness" if scores.labels is not None else "−entropy (no labels)"
    phi = {"entropy": "−entropy", "max": "max probability", "true_class": "probability of the true class"}[kind]
    return scores.confidence, scores.performance, phi, omega, scores, names


def _segmentation_scores(ds, model, inputs, device, progress):
    """φ by ``split_by`` and ω = mIoU (with masks) for a segmentation model (predictions folder or module)."""
    from ..scoring.segmentation import MASK_SUFFIXES, match_files, predict_segmentation, scores_from_folders

    st = ds.settings
    if model.predictions is not None:
        if not model.predictions.is_dir():
            raise ValueError(f"segmentation predictions {str(model.predictions)!r} must be a folder of per-image "
                             ".npy outputs.")
        scores = scores_from_folders(inputs.image_ids, model.predictions, ds.masks, ignore_index=st["ignore_index"])
    else:
        from ..scoring.classifier import load_classifier

        masks = match_files(ds.masks, inputs.image_ids, MASK_SUFFIXES, "mask") if ds.masks else None
        scores = predict_segmentation(load_classifier(model.model, model.weights), inputs.image_paths, masks=masks,
                                      device=device, ignore_index=st["ignore_index"], progress=progress)
    phi_desc = {"entropy": "−mean pixel entropy", "pixel_accuracy": "pixel accuracy", "miou": "mIoU"}
    return (scores.confidence(st["split_by"]), scores.performance("miou"), phi_desc[st["split_by"]],
            "per-image mIoU" if ds.masks else "−mean pixel entropy (no masks)", None, None)


def _slicer(spec):
    from ..slicers import create_slicer

    if isinstance(spec, dict):
        (name, opts), = spec.items()
        return name, create_slicer(name, **(opts or {}))
    return spec, (None if spec == "ward" else create_slicer(spec))


def _run_model(ds, model, inputs, out, device, progress, thumbs):
    from ..core.explanation import explain_methods
    from ..run.pipeline import DescribeResult, write_outputs

    st = ds.settings
    phi, omega, phi_desc, omega_desc, scores, class_names = _model_scores(ds, model, inputs, device, progress)
    tau = inputs.tau if st["tau"] is None else st["tau"]
    if st["per_class"]:
        return _run_per_class(ds, model, inputs, out, scores, class_names, phi, omega, tau, thumbs, progress)
    explanations, objects = {}, {}
    for spec in st["slicers"]:
        name, obj = _slicer(spec)
        try:
            explanations[name] = explain_methods(
                inputs.embeddings, inputs.sentence_embeddings, methods=st["methods"], confidence=phi,
                a=st["a"], n_clusters=st["clusters"], n_easy_clusters=st["easy_clusters"], k=st["k"], tau=tau,
                slicer="ward" if obj is None else obj, sentences=inputs.sentences, ward=st["ward"])
        except ValueError as exc:
            raise ValueError(f"slicer {name!r}: {exc}") from None
        if obj is not None:
            objects[name] = obj
    out.mkdir(parents=True, exist_ok=True)
    for i, (name, exps) in enumerate(explanations.items()):
        result = DescribeResult(exps, inputs.image_ids, phi, omega, inputs.sentences, inputs.encoder,
                                inputs.sentence_set, inputs.failures, inputs.image_paths,
                                {"dataset": ds.name, "model": model.name if model else "EC classifier",
                                 "slicer": name})
        if i == 0:
            write_outputs(result, out)
        else:
            extra = out / f"slicer_{slug(name)}"
            write_outputs(result, extra)
    params = {"encoder": inputs.encoder.get("encoder", ""), "sentence set": inputs.sentence_set,
              "methods": ", ".join(st["methods"]), "slicers": ", ".join(explanations), "a": st["a"],
              "C (hard clusters)": st["clusters"], "K (sentences per cluster)": st["k"], "τ": tau, "o": st["o"],
              "φ": phi_desc, "ω": omega_desc}
    run = ReportRun(dataset=ds.name, model=model.name if model else "EC classifier", explanations=explanations,
                    sentences=inputs.sentences, image_ids=inputs.image_ids, confidence=phi, performance=omega,
                    thumbnail_sources=inputs.thumbnails, relevance=inputs.relevance,
                    relevance_source=inputs.relevance_source, params=params, o=st["o"],
                    embeddings=inputs.embeddings, failures=inputs.failures, notes=inputs.notes)
    if st["sweep"]:
        from ..analyses.sweep import DEFAULT_C, DEFAULT_K, DEFAULT_O, sensitivity_sweep

        grid = st["sweep"] if isinstance(st["sweep"], dict) else {}
        run.sweep = sensitivity_sweep(
            inputs.embeddings, inputs.sentence_embeddings, relevance=inputs.relevance, performance=omega,
            confidence=phi, K=grid.get("K", DEFAULT_K), C=grid.get("C", DEFAULT_C), o=grid.get("o", DEFAULT_O),
            methods=st["methods"], k=st["k"], n_clusters=st["clusters"], tau=tau, a=st["a"], o_default=st["o"],
            ward=st["ward"])
        atomic_write_bytes(out / "sweep.csv", run.sweep.to_csv(index=False).encode())
    rows = run.metrics()
    atomic_write_bytes(out / "report.html", render_report(run, thumbs=thumbs, n_thumbs=st["thumbnails"],
                                                          slicer_objects=objects).encode("utf-8"))
    import pandas as pd

    atomic_write_bytes(out / "metrics.csv", pd.DataFrame(rows).to_csv(index=False).encode())
    atomic_write_bytes(out / "metrics.json", json.dumps(rows, indent=1).encode())
    first = next(iter(explanations.values()))
    n_hard = next(iter(first.values())).params["n_hard"]
    return rows, len(inputs.image_ids), n_hard


def _run_per_class(ds, model, inputs, out, scores, class_names, phi, omega, tau, thumbs, progress=False):
    """One dataset × model analysed class by class: per-class files and a per-class HTML page."""
    from .html import render_per_class_report
    from ..analyses.per_class import explain_per_class
    from ..run.pipeline import write_per_class_outputs

    st = ds.settings
    if scores is None or scores.labels is None:
        raise ValueError("per_class needs true labels: a 'label' column in the manifest or the predictions.")
    if scores.preds is None and scores.probs is None:
        raise ValueError("per_class needs predicted classes: 'pred' or 'prob_<class>' columns.")
    res = explain_per_class(inputs.embeddings, inputs.sentence_embeddings, labels=scores.labels,
                            preds=scores.preds, probs=scores.probs, split=st["per_class"], methods=st["methods"],
                            n_clusters=st["clusters"], n_easy_clusters=st["easy_clusters"], k=st["k"], tau=tau,
                            a=st["a"], relevance=inputs.relevance, o=st["o"], class_names=class_names,
                            sentences=inputs.sentences, progress=progress)
    write_per_class_outputs(res, out, image_ids=inputs.image_ids, sentences=inputs.sentences,
                            sentence_set=inputs.sentence_set)
    split = {"errors": "hard = false positives ∪ false negatives, easy = true positives",
             "probability": f"class probability at μ ± {st['a']}σ"}[st["per_class"]]
    params = {"encoder": inputs.encoder.get("encoder", ""), "sentence set": inputs.sentence_set,
              "methods": ", ".join(st["methods"]), "per-class split": split, "C (hard clusters per class)":
              st["clusters"], "K (sentences per cluster)": st["k"], "τ": tau, "o": st["o"], "ω": "correctness"}
    run = ReportRun(dataset=ds.name, model=model.name if model else "EC classifier", explanations={},
                    sentences=inputs.sentences, image_ids=inputs.image_ids, confidence=phi, performance=omega,
                    thumbnail_sources=inputs.thumbnails, relevance=inputs.relevance,
                    relevance_source=inputs.relevance_source, params=params, o=st["o"], failures=inputs.failures,
                    notes=inputs.notes)
    html = render_per_class_report(run, res, thumbs=thumbs, n_classes=st["classes_shown"],
                                   n_thumbs=st["thumbnails"])
    atomic_write_bytes(out / "report.html", html.encode("utf-8"))
    summary = res.summary()
    rows = []
    if inputs.relevance is not None:  # means over classes, for the index page
        rows = [{"slicer": "per class", "method": r["method"], **{k: float(r[k]) for k in ("ACR", "AHR", "TPR", "JI")}}
                for r in summary.to_dict("records")]
    atomic_write_bytes(out / "metrics.csv", summary.to_csv(index=False).encode())
    atomic_write_bytes(out / "metrics.json", json.dumps(rows, indent=1).encode())
    n_hard = int(res.metrics.drop_duplicates("class")["n_hard"].sum())
    return rows, len(inputs.image_ids), n_hard


def run_report(config_path, *, output=None, cache_dir=None, device=None, progress=False, log=None):
    """Run a report config.

    Parameters
    ----------
    config_path : path-like
        The YAML file (see :mod:`lbee.reports.config`).
    output : path-like, optional
        Overrides the config's ``output``.
    cache_dir : path-like, optional
        Embedding and thumbnail cache (overrides the config's ``cache_dir``).
    device : str, optional
    progress : bool, default=False
    log : callable, optional
        Receives one line per step.

    Returns
    -------
    BatchResult

    Raises
    ------
    lbee.reports.config.ConfigError
        When the file as a whole is unusable. Problems of single datasets are
        returned in ``BatchResult.failures`` instead.
    """
    from .thumbnails import ThumbnailCache

    log = log or (lambda msg: None)
    cfg = load_report_config(config_path)
    root = Path(output) if output else cfg.output
    root.mkdir(parents=True, exist_ok=True)
    cache = cache_dir or cfg.cache_dir
    thumbs = ThumbnailCache(cache)
    result = BatchResult()
    entries = []
    for ds in cfg.datasets:
        if ds.error:
            result.failures.append((ds.name, ds.error))
            log(f"[{ds.name}] skipped: {ds.error}")
            continue
        log(f"[{ds.name}]")
        ds_dir = root / slug(ds.name)
        try:
            inputs = _spotcheck_inputs(ds, ds_dir, device, log) if ds.spotcheck is not None else \
                _image_inputs(ds, cache, device, progress)
        except Exception as exc:  # one dataset's failure must not stop the batch
            result.failures.append((ds.name, f"{type(exc).__name__}: {exc}" if not isinstance(exc, ValueError)
                                    else str(exc)))
            log(f"[{ds.name}] failed: {exc}")
            continue
        models = ds.models or [None]
        for model in models:
            label = ds.name if len(models) == 1 else f"{ds.name} / {model.name}"
            out = ds_dir if len(models) == 1 else ds_dir / slug(model.name)
            try:
                rows, n, n_hard = _run_model(ds, model, inputs, out, device, progress, thumbs)
            except Exception as exc:
                msg = str(exc) if isinstance(exc, (ValueError, FileNotFoundError)) else f"{type(exc).__name__}: {exc}"
                result.failures.append((label, msg))
                log(f"[{label}] failed: {msg}")
                continue
            name = model.name if model else "EC classifier"
            result.reports.append({"dataset": ds.name, "model": name, "folder": out, "rows": rows})
            href = f"{out.relative_to(root).as_posix()}/report.html"
            entries.append({"dataset": ds.name, "model": name, "href": href,
                            "rows": rows, "n_images": n, "n_hard": n_hard})
            log(f"[{label}] wrote {out / 'report.html'}")
    result.index = root / "index.html"
    atomic_write_bytes(result.index, render_index(entries, result.failures).encode("utf-8"))
    return result
