"""What a run reads: the dataset and model specifications, and loading them into arrays.

One :class:`DatasetSpec` describes a run's inputs whichever way they came (a
``lbee describe`` command line, a ``lbee report`` YAML entry, ``lbee demo``):
images with an encoder, precomputed embeddings, a SpotCheck world, plus one or
more :class:`ModelSpec` (a predictions table, a predictions folder for
segmentation, or a checkpoint). :func:`load_inputs` embeds and reads what every
model of a dataset shares; :func:`model_scores` computes one model's φ and ω.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..io.arrays import load_npy
from .settings import RunSettings


@dataclass
class ModelSpec:
    """One model of a dataset: precomputed ``predictions`` or a ``model`` spec (with ``weights``).

    ``model=None`` and ``predictions=None`` together mean the SpotCheck world's
    own classifier.
    """

    name: str
    predictions: Path | None = None
    model: str | None = None
    weights: Path | None = None
    num_classes: int | None = None
    image_size: int = 224


@dataclass
class DatasetSpec:
    """The inputs of a run.

    Attributes
    ----------
    name : str
    images : Path, optional
        A folder (recursive) or a manifest with a ``path`` column.
    spotcheck : dict, optional
        ``{"seed": N}`` or ``{"path": EC folder}``: a SpotCheck world.
    rival10 : dict, optional
        ``{"path": ROOT, "split": "test"}``: a RIVAL10 split with its exact
        attribute relevance (RIVAL10 §3).
    sensitivity : Path, optional
        A ``lbee sensitivity`` run (folder or ``sensitivity.csv``): φ for
        ``split_by`` irfs / saliency, and a panel on the HTML page.
    image_embeddings, sentence_embeddings : Path, optional
        Precomputed (n, d) / (N, d) ``.npy``; image rows follow ``images``, or
        the first model's predictions table when there are no images.
    masks : Path, optional
        Segmentation ground-truth label maps.
    models : list of ModelSpec
    settings : RunSettings
    encoder : str
    sentence_set : str
        A built-in sentence set name or a sentence file (the texts are
        ``RunInputs.sentences``).
    relevance : dict, optional
        ``{"ground_truth": path}`` or ``{"vqa": path}``, or ``"ground_truth"``
        (SpotCheck's exact Γ).
    batch_size, num_workers : int
        Image decoding and encoding.
    strict : bool
        Fail on the first unreadable image instead of skipping it.
    logits : bool
        The ``prob_<class>`` columns of the predictions tables hold logits: a
        softmax makes them probabilities.
    report : dict
        Presentation options of ``lbee report`` (thumbnails, classes_shown, sweep).
    line : int
        Line of the YAML entry (0 when not from a file).
    error : str, optional
        Set when the entry cannot run (the batch reports it and goes on).
    """

    name: str
    images: Path | None = None
    spotcheck: dict | None = None
    rival10: dict | None = None
    sensitivity: Path | None = None
    image_embeddings: Path | None = None
    sentence_embeddings: Path | None = None
    masks: Path | None = None
    models: list = field(default_factory=list)
    settings: RunSettings = field(default_factory=RunSettings)
    encoder: str = "open_clip"
    sentence_set: str = "conditions"
    relevance: object = None
    batch_size: int = 64
    num_workers: int = 2
    strict: bool = False
    logits: bool = False
    report: dict = field(default_factory=dict)
    line: int = 0
    error: str | None = None


@dataclass
class RunInputs:
    """What every model of a dataset shares: embeddings, sentences, ids, labels and Γ."""

    embeddings: np.ndarray
    sentence_embeddings: np.ndarray
    sentences: list
    image_ids: list
    image_paths: list | None
    thumbnails: list | None
    labels: np.ndarray | None
    relevance: np.ndarray | None
    relevance_source: str
    encoder_tau: float | None
    encoder: dict
    sentence_set: str
    failures: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    spotcheck: object = None
    #: a grammar's sentence set: each sentence's conjunction and the grammar ('compose', merging)
    sentence_conditions: list | None = None
    grammar: object = None


@dataclass
class Scores:
    """One model's φ and ω over a dataset's images, with what they mean."""

    confidence: np.ndarray
    performance: np.ndarray
    confidence_desc: str
    performance_desc: str
    model_scores: object = None  # lbee.scoring.confidence.ModelScores, classification only
    class_names: list | None = None
    extra: dict = field(default_factory=dict)
    split: tuple | None = None  # explicit (hard, easy) boolean masks instead of the μ ± aσ rule on φ


def _prob_kind(ds):
    return "logits" if ds.logits else "probabilities"


def provenance_tau(ds, image_prov, sentence_prov, sentences, encoder, encoder_tau):
    """The provenance rule for a run's embeddings (:mod:`lbee.io.provenance`); returns the encoder's τ.

    Embeddings of two encoders, or sentence embeddings of another sentence
    list, are refused; τ comes from the encoder used now, else from the
    files' provenance; with bare files and no τ in the settings, a warning
    names the CLIP τ assumed.
    """
    from ..core.selection import CLIP_TAU
    from ..io.provenance import check_pair, warn_assumed_tau

    declared = check_pair(image_prov, sentence_prov, sentences=sentences,
                          encoder_identity=None if encoder is None else encoder.identity())
    if encoder is not None:
        return encoder_tau
    bare = [name for name, path, prov in (("image_embeddings", ds.image_embeddings, image_prov),
                                          ("sentence_embeddings", ds.sentence_embeddings, sentence_prov))
            if path is not None and prov is None]
    if declared is None and bare and ds.settings.tau is None:
        warn_assumed_tau(CLIP_TAU, " and ".join(f"{n} {Path(getattr(ds, n)).name!r}" for n in bare))
    return declared


def _relevance(ds, ids, sents):
    rel = ds.relevance
    if rel is None:
        return None, "none"
    from ..io.relevance import load_relevance

    (kind, path), = rel.items()
    label = "ground truth" if kind == "ground_truth" else "VQA pseudo ground truth"
    return load_relevance(path, ids, sents), f"{label}: {Path(path).name}"


def _spotcheck_inputs(ds, out_dir, device, log):
    from ..encoders import create_encoder
    from ..spotcheck import CorruptECError, ExperimentalConfiguration, make_ec

    if ds.encoder != "spotcheck":
        raise ValueError(f"dataset {ds.name!r}: a SpotCheck world is described with its own encoder "
                         f"(encoder: spotcheck); received encoder {ds.encoder!r}.")
    if "path" in ds.spotcheck:
        ec = ExperimentalConfiguration.load(ds.spotcheck["path"])
    else:
        seed = ds.spotcheck["seed"]
        ec_dir = None if out_dir is None else Path(out_dir) / "ec"
        ec = None
        if ec_dir is not None and (ec_dir / "ec.json").exists():  # a rerun reuses its world unless corrupt
            try:
                ec = ExperimentalConfiguration.load(ec_dir)
            except CorruptECError:
                ec = None
        if ec is None or ec.seed != seed:
            log(f"  generating SpotCheck world (seed {seed}) ...")
            ec = make_ec(seed, log=log)
            if ec_dir is not None:
                ec.save(ec_dir)
    return spotcheck_inputs(ds, ec, create_encoder("spotcheck", device=device))


def spotcheck_inputs(ds, ec, encoder):
    """:class:`RunInputs` of a SpotCheck world in memory: its test renders, sentences and exact Γ.

    Parameters
    ----------
    ds : DatasetSpec
        ``relevance`` is ``"ground_truth"`` (exact Γ), a Γ file, or None.
    ec : lbee.spotcheck.ExperimentalConfiguration
    encoder : Encoder
        The SpotCheck encoder.
    """
    from ..encoders.embedding import embed_sentences
    from ..io.sentences import load_sentence_set
    from ..spotcheck import relevance_matrix, spotcheck_sentences

    if ec.model is None:
        raise ValueError(f"dataset {ds.name!r}: the EC has no trained model (model.pt).")
    enc = encoder
    images = ec.images["test"]
    if ds.sentence_set in (None, "spotcheck"):  # the hand-written set of the SpotCheck world
        sents = spotcheck_sentences()
        texts, conds, grammar, name = [s for s, _, _ in sents], [c for _, c, _ in sents], None, "spotcheck"
    else:  # a grammar's set over the world's attributes (the demo's and the bench's: 'spotcheck.grammar')
        sset = load_sentence_set(ds.sentence_set)
        if sset.conditions is None:
            raise ValueError(f"dataset {ds.name!r}: a SpotCheck world needs the sentences of a grammar over its "
                             f"attributes (e.g. 'spotcheck.grammar'); {ds.sentence_set!r} has no conditions.")
        texts, conds, grammar, name = list(sset.sentences), list(sset.conditions), sset.grammar, sset.name
    ids = [f"test/{i:05d}" for i in range(len(images))]
    rel, source = None, "none"
    if ds.relevance == "ground_truth":
        rel, source = spotcheck_relevance(ec.attributes["test"], conds, grammar), \
            "ground truth (SpotCheck attributes)"
    elif ds.relevance is not None:
        rel, source = _relevance(ds, ids, texts)
    notes = [f"True blindspot {i}: {d}" for i, d in enumerate(ec.describe_blindspots())]
    return RunInputs(enc.encode_arrays(images), embed_sentences(enc, texts), texts, ids,
                     None, list(images), ec.true_labels("test"), rel, source, enc.default_tau, enc.identity(), name,
                     notes=notes, spotcheck=ec, sentence_conditions=None if grammar is None else conds,
                     grammar=grammar)


def spotcheck_relevance(attributes, conditions, grammar=None):
    """Exact Γ (n, N) of sentences with conditions on SpotCheck renders (presences implied by attributes counted).

    An absent object keeps default attribute values in the world, so "a blue
    circle" needs "circle present" spelled out: the grammar's
    :meth:`~lbee.grammar.Grammar.implied` adds it.
    """
    from ..spotcheck import relevance_matrix

    full = [grammar.implied(c) for c in conditions] if grammar is not None else list(conditions)
    return relevance_matrix(attributes, full)


def _precomputed_ids(ds):
    """Image ids of precomputed embeddings without images: the first model's predictions table, in row order."""
    from ..io.images import read_table
    from ..scoring.confidence import scores_from_table

    model = ds.models[0] if ds.models else None
    if model is None or model.predictions is None or Path(model.predictions).is_dir():
        raise ValueError("precomputed image embeddings without images need a predictions table (rows in the "
                         "same order).")
    ids, _ = scores_from_table(read_table(model.predictions), kind=ds.settings.confidence_from,
                               probabilities=_prob_kind(ds))
    return list(ids)


def _image_inputs(ds, cache_dir, device, progress, log=lambda msg: None):
    from ..io.sentences import load_sentence_set

    rival = None
    if ds.rival10 is not None:
        from ..rival10 import load_rival10

        rival = load_rival10(ds.rival10["path"], ds.rival10.get("split", "test"),
                             class_map=ds.rival10.get("class_map"))
        sset_name, sents = "rival10", list(rival.sentences)
    else:
        sset = load_sentence_set(ds.sentence_set)
        sset_name, sents = sset.name, list(sset.sentences)
    conditions, grammar = (None, None) if rival is not None else (sset.conditions, sset.grammar)
    failures, enc = [], None
    if rival is not None:
        ids, paths, labels = list(rival.ids), [str(p) for p in rival.paths], np.asarray(rival.labels)
    elif ds.images is not None:
        from ..io.images import discover_images

        imgs = discover_images(ds.images)
        ids, paths, labels = list(imgs.ids), list(imgs.paths), imgs.labels
    else:
        if ds.image_embeddings is None:
            raise ValueError(f"dataset {ds.name!r} needs images (a folder or manifest) or precomputed image "
                             "embeddings.")
        ids, paths, labels = _precomputed_ids(ds), None, None
    from ..io.provenance import load_embeddings

    image_prov = sentence_prov = None
    if ds.image_embeddings is not None:
        emb, image_prov = load_embeddings(ds.image_embeddings, "image_embeddings", kind="image_embeddings")
        if emb.ndim != 2 or emb.shape[0] != len(ids):
            where = f"image of {str(ds.images)!r}" if ds.images is not None else "row of the predictions table"
            raise ValueError(f"image_embeddings {Path(ds.image_embeddings).name!r} has shape {emb.shape}; expected "
                             f"({len(ids)}, d), one row per {where}.")
        ok = np.ones(len(ids), bool)
        encoder_id, encoder_tau = {"encoder": "precomputed", "image_embeddings": str(ds.image_embeddings)}, None
        if image_prov is not None:  # the encoder travels with the embeddings
            encoder_id = dict(image_prov["encoder"], image_embeddings=str(ds.image_embeddings))
    else:
        from ..encoders import create_encoder, encoder_caveat
        from ..encoders.embedding import embed_images

        if (caveat := encoder_caveat(ds.encoder, ds.images)) is not None:
            import warnings

            warnings.warn(caveat, UserWarning, stacklevel=2)
        enc = create_encoder(ds.encoder, device=device)
        res = embed_images(enc, paths, cache_dir=cache_dir, batch_size=ds.batch_size, num_workers=ds.num_workers,
                           progress=progress, strict=ds.strict)
        emb, ok, failures, encoder_id, encoder_tau = res.embeddings, res.ok, res.failures, enc.identity(), \
            enc.default_tau
        # what was computed and what was reused: a rerun (or a resumed service job) reads its log truthfully
        log(f"  images: {res.n_encoded} embedded, {int(ok.sum()) - res.n_encoded} read from the embedding cache, "
            f"{len(failures)} unreadable")
    if ds.sentence_embeddings is not None:
        sen, sentence_prov = load_embeddings(ds.sentence_embeddings, "sentence_embeddings", kind="sentence_embeddings")
        if sen.ndim != 2 or sen.shape[0] != len(sents):
            raise ValueError(f"sentence_embeddings has shape {sen.shape}; expected ({len(sents)}, d) for the "
                             f"{len(sents)} sentences of {sset_name!r}.")
    elif enc is not None:
        from ..encoders.embedding import embed_sentences

        sen = embed_sentences(enc, sents, cache_dir=cache_dir)
    else:
        raise ValueError("image_embeddings needs sentence_embeddings too (the same joint space).")
    encoder_tau = provenance_tau(ds, image_prov, sentence_prov, sents, enc, encoder_tau)
    ids = [i for i, good in zip(ids, ok) if good]
    paths = None if paths is None else [p for p, good in zip(paths, ok) if good]
    labels = None if labels is None else np.asarray(labels)[ok]
    if rival is not None and ds.relevance in (None, "ground_truth"):  # the attribute labels: exact Γ
        rel, source = np.asarray(rival.relevance)[ok], "ground truth (RIVAL10 attribute labels)"
    else:
        rel, source = _relevance(ds, ids, sents)
    return RunInputs(emb, sen, sents, ids, paths, paths, labels, rel, source, encoder_tau, encoder_id, sset_name,
                     failures=failures, sentence_conditions=None if conditions is None else list(conditions),
                     grammar=grammar)


def preflight(ds, models=None):
    """Check what can be checked without computing: model specs, sentence set, manifest, predictions, sensitivity.

    Runs before any embedding, so a bad label in a predictions table is reported
    in a second, not after minutes of work. Raises ``ValueError`` naming the file.

    Parameters
    ----------
    ds : DatasetSpec
    models : list of ModelSpec, optional
        The models whose predictions tables are read (default: all of ``ds``;
        ``[]`` checks the dataset alone).
    """
    from ..io.images import discover_images, read_table
    from ..io.sentences import load_sentence_set
    from ..scoring.classifier import check_model_spec
    from ..scoring.confidence import scores_from_table

    for model in ds.models if models is None else models:
        if model is not None and model.model is not None:
            check_model_spec(model.model)  # a typo in a model spec fails now, not after the images are embedded
    sents = imgs = None
    if ds.spotcheck is None and ds.rival10 is None:
        sents = load_sentence_set(ds.sentence_set).sentences
    if ds.images is not None:
        imgs = discover_images(ds.images)
    _preflight_arrays(ds, sents, imgs)
    if ds.settings.task == "classification":
        for model in ds.models if models is None else models:
            if model is not None and model.predictions is not None and not Path(model.predictions).is_dir():
                scores_from_table(read_table(model.predictions), kind=ds.settings.confidence_from,
                                  probabilities=_prob_kind(ds))
    if ds.settings.split_by in ("irfs", "saliency"):
        if ds.sensitivity is None:
            raise ValueError(f"split_by {ds.settings.split_by!r} needs a sensitivity run (`lbee sensitivity`).")
        if not Path(ds.sensitivity).exists():
            raise ValueError(f"sensitivity {str(ds.sensitivity)!r} does not exist.")


def _preflight_arrays(ds, sents, imgs):
    """Shapes of the precomputed ``.npy`` embeddings, from their headers (nothing is loaded)."""
    shapes = {}
    for field_, rows, what in (("image_embeddings", None if imgs is None else len(imgs.ids), "image"),
                               ("sentence_embeddings", None if sents is None else len(sents), "sentence")):
        path = getattr(ds, field_)
        if path is None or Path(path).suffix.lower() != ".npy" or not Path(path).is_file():
            continue  # other forms and missing files are reported by the loaders
        arr = load_npy(path, field_, mmap=True)
        if arr.ndim != 2 or arr.dtype.kind not in "fiu":
            raise ValueError(f"{field_} {str(path)!r} holds a {arr.ndim}-D {arr.dtype} array; expected a 2-D "
                             f"real array (one row per {what}).")
        if rows is not None and arr.shape[0] != rows:
            raise ValueError(f"{field_} {str(path)!r} has shape {arr.shape}; expected ({rows}, d), one row per "
                             f"{what} of the dataset.")
        shapes[field_] = arr.shape
    if len(shapes) == 2 and shapes["image_embeddings"][1] != shapes["sentence_embeddings"][1]:
        raise ValueError(f"image_embeddings has dimension {shapes['image_embeddings'][1]} but sentence_embeddings "
                         f"{shapes['sentence_embeddings'][1]}; they must share one joint space.")
    from ..io.provenance import check_pair, read_provenance

    provs = {f: read_provenance(getattr(ds, f), f) for f in shapes}  # sidecars only: the digests are checked on load
    check_pair(provs.get("image_embeddings"), provs.get("sentence_embeddings"), sentences=sents)


def load_inputs(ds, *, cache_dir=None, device=None, progress=False, out_dir=None, log=None):
    """Embed and read what every model of ``ds`` shares.

    Parameters
    ----------
    ds : DatasetSpec
    cache_dir : path-like, optional
        Embedding cache.
    device : str, optional
    progress : bool, default=False
    out_dir : path-like, optional
        Where a generated SpotCheck world is saved (and reused on rerun).
    log : callable, optional
        Receives one line per step.

    Returns
    -------
    RunInputs
    """
    log = log or (lambda msg: None)
    if ds.spotcheck is not None:
        return _spotcheck_inputs(ds, out_dir, device, log)
    return _image_inputs(ds, cache_dir, device, progress, log)


def align_scores(image_ids, image_paths, table_ids, *, source="the predictions file"):
    """Row of the predictions table for each image (:class:`lbee.io.matching.IdMatcher`'s rule).

    An id equal to the image's id or path matches; a shorter or longer one
    (a bare file name, an absolute path) only when it fits exactly one image
    of the run; otherwise ``ValueError`` names the colliding images. Images
    without a row raise; table rows that match no image are reported as a
    warning with their count and the first few ids.
    """
    from ..io.matching import match_table_rows, report_unmatched

    rows, unmatched = match_table_rows(table_ids, image_ids, image_paths, source=source)
    missing = [iid for iid, r in zip(image_ids, rows) if r < 0]
    if missing:
        raise ValueError(f"{len(missing)} image(s) have no row in {source}, first: {missing[:3]}; "
                         "ids must match the manifest 'path' values, the paths relative to the folder, or file names.")
    report_unmatched(len(unmatched), len(table_ids), what="image of the run", source=source, examples=unmatched)
    return rows


_PHI = {"entropy": "−entropy", "max": "max probability", "true_class": "probability of the true class"}


def model_scores(ds, model, inputs, *, device=None, progress=False):
    """One model's φ (by ``settings.confidence_from``) and ω over the images of ``inputs``.

    Parameters
    ----------
    ds : DatasetSpec
    model : ModelSpec or None
        None: the SpotCheck world's own classifier.
    inputs : RunInputs

    Returns
    -------
    Scores
    """
    from ..scoring.confidence import class_names_from_table, scores_from_probabilities, scores_from_table

    st = ds.settings
    if st.task == "segmentation":
        return _segmentation_scores(ds, model, inputs, device, progress)
    kind = st.confidence_from
    names = None
    if model is None or (model.predictions is None and model.model is None):  # the SpotCheck world's classifier
        if inputs.spotcheck is None:
            raise ValueError(f"dataset {ds.name!r} needs the model's outputs: predictions or a model.")
        from ..spotcheck import predict

        probs, _ = predict(inputs.spotcheck.model, inputs.spotcheck.images["test"])
        scores = scores_from_probabilities(probs, kind=kind, labels=inputs.labels)
    elif model.predictions is not None:
        from ..io.images import read_table

        if Path(model.predictions).is_dir():
            raise ValueError(f"{str(model.predictions)!r} is a folder; classification expects a CSV/parquet "
                             "predictions table (a folder of per-image outputs is for task segmentation).")
        table = read_table(model.predictions)
        table_ids, scores = scores_from_table(table, kind=kind, probabilities=_prob_kind(ds))
        names = class_names_from_table(table)
        if inputs.image_paths is None:  # precomputed embeddings: rows are already in table order
            if len(table_ids) != len(inputs.image_ids):
                raise ValueError(f"the predictions table has {len(table_ids)} rows; expected "
                                 f"{len(inputs.image_ids)}, one per embedding row.")
        else:
            scores = scores.subset(align_scores(inputs.image_ids, inputs.image_paths, table_ids,
                                                source=f"predictions {str(model.predictions)!r}"))
        if inputs.labels is not None:
            scores = with_manifest_labels(scores, inputs.labels, names, performance_column="performance" in table,
                                          source=f"the manifest {str(ds.images)!r}")
    else:
        from ..scoring.classifier import default_transform, load_classifier, predict_probabilities

        if inputs.labels is not None and np.asarray(inputs.labels).dtype == object:
            raise ValueError(f"the manifest {str(ds.images)!r} gives class names as labels; a model's classes are "
                             "output indices: give integer labels (or predictions with prob_<class> columns).")
        net = load_classifier(model.model, model.weights, num_classes=model.num_classes)
        probs, ran = predict_probabilities(net, inputs.image_paths, transform=default_transform(model.image_size),
                                           batch_size=ds.batch_size, num_workers=ds.num_workers, device=device,
                                           progress=progress)
        if not ran.all():
            raise ValueError(f"the model could not read {int((~ran).sum())} image(s) the encoder read.")
        scores = scores_from_probabilities(probs, kind=kind, labels=inputs.labels)
    if scores.probs is not None and scores.labels is not None:
        unknown = np.unique(scores.labels[(scores.labels < 0) | (scores.labels >= scores.probs.shape[1])])
        if unknown.size:
            raise ValueError(f"labels contain class(es) {unknown[:5].tolist()} absent from the predictions "
                             f"({scores.probs.shape[1]} classes).")
    omega = "correctness" if scores.labels is not None else "−entropy (no labels)"
    phi, phi_desc = scores.confidence, _PHI[kind]
    if st.split_by in ("irfs", "saliency"):
        from ..analyses.sensitivity_outputs import confidence_from_sensitivity

        if ds.sensitivity is None:
            raise ValueError(f"split_by {st.split_by!r} takes φ from a region-sensitivity run: give its folder "
                             "(`lbee sensitivity ... --out DIR`) as sensitivity.")
        table = Path(ds.sensitivity)
        if table.is_dir():
            table = table / ("sensitivity.csv" if st.split_by == "irfs" else "saliency.csv")
        phi = confidence_from_sensitivity(table, inputs.image_ids, kind=st.split_by)
        phi_desc = "iRFS averaged over σ (low: leans on the background)" if st.split_by == "irfs" else \
            "GradCAM / object-mask IoU (low: evidence off the object)"
    return Scores(phi, scores.performance, phi_desc, omega, scores, names)


def with_manifest_labels(scores, labels, class_names, *, performance_column=False, source="the manifest"):
    """The manifest's labels on a predictions table's scores (which had been read without them).

    Labels that are class names take their indices from the ``prob_<class>``
    columns; without those columns they are refused, naming the fix. When the
    table has its own ``label`` column it wins, with a warning if the two
    disagree. ω becomes correctness unless the table gives ``performance``.
    """
    from ..io.table_reader import logger
    from ..scoring.confidence import check_labels

    labels = np.asarray(labels)
    n_classes = None if scores.probs is None else scores.probs.shape[1]
    if labels.dtype == object:
        if not class_names:
            raise ValueError(f"{source}: 'label' holds class names (e.g. {labels[:3].tolist()}) but the predictions "
                             "have no prob_<class> columns to give them indices; use integer labels, or "
                             "prob_<class> columns.")
        lookup = {str(c): k for k, c in enumerate(class_names)}
        bad = sorted({str(v) for v in labels if str(v) not in lookup})
        if bad:
            raise ValueError(f"{source}: label(s) {bad[:5]} are not among the classes of the prob_<class> columns "
                             f"({', '.join(class_names[:8])}{', ...' if len(class_names) > 8 else ''}).")
        labels = np.asarray([lookup[str(v)] for v in labels], dtype=np.int64)
    labels = check_labels(labels, len(scores.confidence), n_classes, name="manifest labels")
    if scores.labels is not None:
        differ = int(np.sum(scores.labels != labels))
        if differ:
            logger.warning("%s and the predictions' 'label' column disagree on %d image(s); the predictions' "
                           "labels are used.", source, differ)
        return scores
    scores.labels = labels
    preds = scores.preds if scores.preds is not None else (None if scores.probs is None else scores.probs.argmax(1))
    if preds is not None and not performance_column:
        scores.preds = preds
        scores.performance = (preds == labels).astype(np.float64)
    return scores


def _segmentation_scores(ds, model, inputs, device, progress):
    """φ by ``split_by`` and ω = mIoU (with masks) for a segmentation model (predictions folder or module)."""
    from ..scoring.segmentation import MASK_SUFFIXES, match_files, predict_segmentation, scores_from_folders

    st = ds.settings
    if inputs.image_paths is None:
        raise ValueError("task segmentation reads the images (to match predictions and masks by name); "
                         "precomputed image embeddings without images are for classification.")
    if model is None:
        raise ValueError(f"dataset {ds.name!r}: segmentation needs a predictions folder or a model.")
    if model.predictions is not None:
        if not Path(model.predictions).is_dir():
            raise ValueError(f"segmentation predictions {str(model.predictions)!r} must be a folder of per-image "
                             ".npy outputs.")
        scores = scores_from_folders(inputs.image_ids, model.predictions, ds.masks, ignore_index=st.ignore_index)
    else:
        from ..scoring.classifier import load_classifier

        masks = match_files(ds.masks, inputs.image_ids, MASK_SUFFIXES, "mask") if ds.masks else None
        scores = predict_segmentation(load_classifier(model.model, model.weights), inputs.image_paths, masks=masks,
                                      device=device, ignore_index=st.ignore_index, progress=progress)
    phi_desc = {"entropy": "−mean pixel entropy", "pixel_accuracy": "pixel accuracy", "miou": "mIoU"}
    extra = {"task": "segmentation", "split_by": st.split_by,
             "performance_metric": "miou" if ds.masks else "entropy"}
    return Scores(scores.confidence(st.split_by), scores.performance("miou"), phi_desc[st.split_by],
                  "per-image mIoU" if ds.masks else "−mean pixel entropy (no masks)", None, None, extra)
