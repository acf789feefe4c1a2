"""The specifications of a run (a dataset and its models) and what loading them gives.

One `DatasetSpec` describes a run's inputs whichever way they came (a
``lbee describe`` command line, a ``lbee report`` YAML entry, ``lbee demo``, a
service job): images with an encoder, precomputed embeddings, a SpotCheck
world, plus one or more `ModelSpec` (a predictions table, a predictions
folder for segmentation, or a checkpoint). `RunInputs` is what every
model of a dataset shares once loaded, `Scores` one model's φ and ω.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

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
        Fail on the first unreadable image, or a predictions row that names no
        image of the run, instead of skipping it with a warning.
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


def probabilities_kind(ds):
    """What the ``prob_<class>`` columns of ``ds``'s predictions tables hold: ``'logits'`` or ``'probabilities'``."""
    return "logits" if ds.logits else "probabilities"


def input_paths(ds):
    """Every file or folder that ``ds`` and its models read, as given: what replacing a run must never delete.

    Parameters
    ----------
    ds : DatasetSpec

    Returns
    -------
    list of Path
        Images (folder or manifest), embeddings, masks, sensitivity, a SpotCheck or RIVAL10 folder (and class
        map), Γ files, a sentence file, and each model's predictions, weights and local checkpoint.
    """
    paths = [ds.images, ds.sensitivity, ds.image_embeddings, ds.sentence_embeddings, ds.masks]
    for source in (ds.spotcheck, ds.rival10):
        if isinstance(source, dict):
            paths += [source.get("path"), source.get("class_map")]
    if isinstance(ds.relevance, dict):
        paths += list(ds.relevance.values())
    if ds.sentence_set and Path(ds.sentence_set).is_file():
        paths.append(ds.sentence_set)
    for m in ds.models:
        paths += [m.predictions, m.weights, m.model if m.model and Path(m.model).is_file() else None]
    return [Path(p) for p in paths if isinstance(p, (str, Path))]
