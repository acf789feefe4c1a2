"""Per-image confidence φ and performance ω from model outputs (LBEE §3, app. D)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validation import check_choice

#: How φ is derived from class probabilities. 'auto' is the probability of the true class when the
#: predictions carry labels (LBEE §3: "if ground-truth for the target set is available, we can use model
#: performance to split the data"; a confident error has low entropy and would land in easy), else −entropy.
CONFIDENCE_KINDS = ("auto", "entropy", "max", "true_class")
#: The default of every run (RunSettings.confidence_from: API, CLI, YAML and service alike).
DEFAULT_CONFIDENCE = "auto"
#: Each concrete kind in words (the run's split criterion).
CONFIDENCE_WORDS = {"entropy": "−entropy", "max": "max probability", "true_class": "probability of the true class"}


def resolve_confidence(kind, has_labels):
    """The concrete kind that ``kind`` means: 'auto' is 'true_class' with labels, else 'entropy'.

    Parameters
    ----------
    kind : {'auto', 'entropy', 'max', 'true_class'}
    has_labels : bool
        Whether the images' true classes are known.

    Returns
    -------
    str
        One of 'entropy', 'max', 'true_class'.
    """
    check_choice(kind, "confidence", set(CONFIDENCE_KINDS))
    if kind != "auto":
        return kind
    return "true_class" if has_labels else "entropy"


def split_criterion(kind, has_labels, *, confidence_column=False):
    """One sentence: what φ of the easy / hard split is and why it was chosen.

    Parameters
    ----------
    kind : {'auto', 'entropy', 'max', 'true_class'}
        The kind asked for (the setting).
    has_labels : bool
    confidence_column : bool, default=False
        φ is the predictions table's own ``confidence`` column (no ``prob_<class>`` columns).

    Returns
    -------
    str
    """
    if confidence_column:
        why = "the predictions give no prob_<class> columns" + (
            ", so the labels cannot give the true class's probability" if has_labels else ""
        )
        return f"Split by the predictions' confidence column ({why})."
    chosen = resolve_confidence(kind, has_labels)
    words = CONFIDENCE_WORDS[chosen]
    if kind != "auto":
        return f"Split by the {words}, as asked (--confidence-from {kind})."
    if has_labels:
        return (
            f"Split by the {words}, because the images' labels are given: every error, confident or not, "
            "is hard. To split by the model's uncertainty instead: --confidence-from entropy."
        )
    return (
        f"Split by the model's {words} (its uncertainty), because the predictions carry no labels "
        "(a 'label' column would split by the probability of the true class)."
    )


def softmax(logits):
    """Row-wise softmax of (n, C) logits, in float64 (`scipy.special.softmax`, as the predictions reader)."""
    from scipy.special import softmax as row_softmax

    return row_softmax(np.asarray(logits, dtype=np.float64), axis=1)


def negative_entropy(probs):
    """−H(p) per row of (n, C) probabilities (higher = more confident)."""
    p = np.clip(np.asarray(probs, dtype=np.float64), 1e-12, 1.0)
    return (p * np.log(p)).sum(axis=1)


def confidence_from_probabilities(probs, kind=DEFAULT_CONFIDENCE, labels=None):
    """φ from class probabilities.

    Parameters
    ----------
    probs : array-like of shape (n, n_classes)
    kind : {'auto', 'entropy', 'max', 'true_class'}, default='auto'
        −entropy (unsupervised, the paper's default), the max probability, or
        the probability of the true class (needs ``labels``); 'auto' is the
        true class's probability when ``labels`` are given, else −entropy
        (`resolve_confidence`).
    labels : array-like of int, shape (n,), optional

    Returns
    -------
    ndarray of shape (n,)
    """
    kind = resolve_confidence(kind, labels is not None)
    p = np.asarray(probs, dtype=np.float64)
    if p.ndim != 2 or p.shape[0] == 0:
        raise ValueError(f"`probs` must be 2-D of shape (n, n_classes); received shape {p.shape}.")
    if not np.all(np.isfinite(p)):
        raise ValueError("`probs` contains NaN or inf; expected finite probabilities.")
    if kind == "entropy":
        return negative_entropy(p)
    if kind == "max":
        return p.max(axis=1)
    if labels is None:
        raise ValueError(  # describe has no --labels: the table's column, or labels= from Python (sweep 32bb N5)
            "confidence 'true_class' (--confidence-from true_class) needs the true labels: a 'label' column in the "
            "predictions table, or labels= from Python."
        )
    y = check_labels(labels, p.shape[0], p.shape[1])
    return p[np.arange(p.shape[0]), y]


@dataclass
class ModelScores:
    """φ and ω per image, with what they came from.

    Attributes
    ----------
    confidence : ndarray of shape (n,)
        φ, higher = easier.
    performance : ndarray of shape (n,)
        ω, higher = better: correctness when labels are known, else φ.
    probs : ndarray of shape (n, n_classes) or None
    labels, preds : ndarray of shape (n,) or None
    """

    confidence: np.ndarray
    performance: np.ndarray
    probs: np.ndarray | None = None
    labels: np.ndarray | None = None
    preds: np.ndarray | None = None

    def subset(self, rows):
        """The scores of ``rows`` (an int index array), in that order."""
        take = lambda v: None if v is None else v[rows]  # noqa: E731
        return ModelScores(
            self.confidence[rows], self.performance[rows], take(self.probs), take(self.labels), take(self.preds)
        )


def check_labels(labels, n, n_classes=None, name="labels"):
    """Return ``labels`` as int64 class indices of shape (n,).

    NaN, blank, non-integral, negative or (with ``n_classes``) out-of-range
    values raise ``ValueError`` naming ``name`` and the offending positions:
    a NaN must never become a class of its own.
    """
    raw = np.asarray(labels, dtype=object).reshape(-1) if not isinstance(labels, np.ndarray) else labels
    if raw.ndim != 1 or raw.shape[0] != n:
        raise ValueError(f"`{name}` must have shape ({n},), one class index per image; received shape {raw.shape}.")
    if raw.dtype.kind in "iu" or raw.dtype.kind == "f":  # fast path for numeric arrays
        f = raw.astype(np.float64)
        with np.errstate(invalid="ignore"):
            ok = np.isfinite(f) & (f == np.round(f)) & (f >= 0)
            if n_classes is not None:
                ok &= f < n_classes
        if ok.all():
            return f.astype(np.int64)
    from ..io.table_reader import parse_number

    out = np.empty(n, dtype=np.int64)
    bad = []
    for i, v in enumerate(raw.tolist()):
        f = parse_number(v)  # the tables' rule: "1_0" or "١" is no class index
        if not np.isfinite(f) or f != int(f) or f < 0 or (n_classes is not None and f >= n_classes):
            bad.append(i)
        else:
            out[i] = int(f)
    if bad:
        shown = [raw[i].item() if isinstance(raw[i], np.generic) else raw[i] for i in bad[:5]]
        rng = f"[0, {n_classes})" if n_classes is not None else "[0, ∞)"
        raise ValueError(
            f"`{name}` holds {len(bad)} invalid value(s) at row(s) {[i + 1 for i in bad[:5]]} "
            f"(1-based), e.g. {shown}; expected integer class indices in {rng} "
            "(a missing label cannot be a class)."
        )
    return out


def scores_from_probabilities(probs, *, kind=DEFAULT_CONFIDENCE, labels=None):
    """`ModelScores` from (n, C) probabilities and optional labels.

    Parameters
    ----------
    probs : array-like of shape (n, C)
    kind : {'auto', 'entropy', 'max', 'true_class'}, default='auto'
    labels : array-like of int, shape (n,), optional
        Class indices in [0, C); NaN or other values raise ``ValueError``.
    """
    probs = np.asarray(probs, dtype=np.float64)
    if labels is not None:
        if probs.ndim != 2:
            raise ValueError(f"`probs` must be 2-D of shape (n, n_classes); received shape {probs.shape}.")
        labels = check_labels(labels, probs.shape[0], probs.shape[1])
    phi = confidence_from_probabilities(probs, kind, labels)
    preds = probs.argmax(axis=1)
    if labels is not None:
        omega = (preds == labels).astype(np.float64)
    else:
        omega = negative_entropy(probs)
    return ModelScores(phi, omega, probs, labels, preds)


def class_names_from_table(table):
    """Class names from the ``prob_<class>`` columns of a predictions table, in column order (None if none)."""
    cols = [str(c) for c in table.columns if str(c).startswith("prob_")]
    return [c[len("prob_") :] for c in cols] or None


def scores_from_table(table, *, kind=DEFAULT_CONFIDENCE, id_column=None, probabilities="probabilities"):
    """`ModelScores` and image ids from a predictions table.

    The table has an id column (``id_column``, else the first of ``path``,
    ``image``, ``image_id``, ``id``) and either a ``confidence`` column or class
    probability columns named ``prob_<class>``; optional ``label`` and ``pred``
    (class names matching the ``prob_<class>`` columns, or integer class
    indices), and optional ``performance``. With a ``confidence`` column and
    no ``prob_<class>`` columns, that column is φ whatever ``kind`` says (next
    to probability columns it is ignored, with a warning). The table is validated by
    [`lbee.io.predictions.validate_predictions`][lbee.io.predictions.validate_predictions]: ids filled and unique, no
    missing cell, probabilities in [0, 1] summing to 1; every error names the
    file, row and column.

    Parameters
    ----------
    table : pandas.DataFrame
        Best read with `lbee.io.table_reader.read_table`, so messages name the file.
    kind : {'auto', 'entropy', 'max', 'true_class'}, default='auto'
        'auto': the true class's probability when the table has a ``label`` column, else −entropy.
    id_column : str, optional
    probabilities : {'probabilities', 'logits'}, default='probabilities'
        What the ``prob_<class>`` columns hold; ``'logits'`` applies a row-wise softmax.

    Returns
    -------
    ids : list of str
    scores : ModelScores
    """
    from ..io.predictions import validate_predictions

    pred = validate_predictions(table, id_column=id_column, probabilities=probabilities)
    labels = pred.labels
    if pred.probs is not None:
        scores = scores_from_probabilities(pred.probs, kind=kind, labels=labels)
        if pred.preds is not None:
            scores.preds = pred.preds
            if labels is not None:
                scores.performance = (scores.preds == labels).astype(np.float64)
    else:
        phi = pred.confidence
        preds = pred.preds
        omega = (preds == labels).astype(np.float64) if preds is not None and labels is not None else phi.copy()
        scores = ModelScores(phi, omega, None, labels, preds)
    if pred.performance is not None:
        scores.performance = pred.performance
    for name, arr in (("confidence", scores.confidence), ("performance", scores.performance)):
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"Derived {name} has NaN or inf values; check the predictions file.")
    return pred.ids, scores
