"""Per-image confidence φ and performance ω from model outputs (LBEE §3, app. D)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validation import check_choice

CONFIDENCE_KINDS = ("entropy", "max", "true_class")


def softmax(logits):
    """Row-wise softmax of (n, C) logits."""
    z = np.asarray(logits, dtype=np.float64)
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def negative_entropy(probs):
    """−H(p) per row of (n, C) probabilities (higher = more confident)."""
    p = np.clip(np.asarray(probs, dtype=np.float64), 1e-12, 1.0)
    return (p * np.log(p)).sum(axis=1)


def confidence_from_probabilities(probs, kind="entropy", labels=None):
    """φ from class probabilities.

    Parameters
    ----------
    probs : array-like of shape (n, n_classes)
    kind : {'entropy', 'max', 'true_class'}, default='entropy'
        −entropy (unsupervised, the paper's default), the max probability, or
        the probability of the true class (needs ``labels``).
    labels : array-like of int, shape (n,), optional

    Returns
    -------
    ndarray of shape (n,)
    """
    check_choice(kind, "confidence", set(CONFIDENCE_KINDS))
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
        raise ValueError("`confidence='true_class'` needs labels (a 'label' column or --labels).")
    y = np.asarray(labels).astype(np.int64)
    if y.shape != (p.shape[0],) or y.min() < 0 or y.max() >= p.shape[1]:
        raise ValueError(f"`labels` must be {p.shape[0]} class indices in [0, {p.shape[1]}).")
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
        return ModelScores(self.confidence[rows], self.performance[rows], take(self.probs), take(self.labels),
                           take(self.preds))


def scores_from_probabilities(probs, *, kind="entropy", labels=None):
    """:class:`ModelScores` from (n, C) probabilities and optional labels."""
    probs = np.asarray(probs, dtype=np.float64)
    phi = confidence_from_probabilities(probs, kind, labels)
    preds = probs.argmax(axis=1)
    if labels is not None:
        labels = np.asarray(labels).astype(np.int64)
        omega = (preds == labels).astype(np.float64)
    else:
        omega = negative_entropy(probs)
    return ModelScores(phi, omega, probs, labels, preds)


def class_names_from_table(table):
    """Class names from the ``prob_<class>`` columns of a predictions table, in column order (None if none)."""
    cols = [str(c) for c in table.columns if str(c).startswith("prob_")]
    return [c[len("prob_"):] for c in cols] or None


def scores_from_table(table, *, kind="entropy", id_column=None):
    """:class:`ModelScores` and image ids from a predictions table.

    The table has an id column (``id_column``, else the first of ``path``,
    ``image``, ``image_id``, ``id``) and either a ``confidence`` column or class
    probability columns named ``prob_<class>``; optional ``label`` and ``pred``
    (integer class indices), and optional ``performance``.

    Returns
    -------
    ids : list of str
    scores : ModelScores
    """
    cols = list(table.columns)
    if id_column is None:
        id_column = next((c for c in ("path", "image", "image_id", "id") if c in cols), None)
        if id_column is None:
            raise ValueError(f"Predictions need an image id column ('path', 'image', 'image_id' or 'id'); "
                             f"found columns {cols}.")
    elif id_column not in cols:
        raise ValueError(f"Predictions lack the id column {id_column!r}; found columns {cols}.")
    ids = [str(v) for v in table[id_column]]
    prob_cols = [c for c in cols if str(c).startswith("prob_")]
    labels = table["label"].to_numpy() if "label" in cols else None
    if labels is not None:
        labels = labels.astype(np.int64)
    if prob_cols:
        probs = table[prob_cols].to_numpy(dtype=np.float64)
        scores = scores_from_probabilities(probs, kind=kind, labels=labels)
        if "pred" in cols:
            scores.preds = table["pred"].to_numpy().astype(np.int64)
            if labels is not None:
                scores.performance = (scores.preds == labels).astype(np.float64)
    elif "confidence" in cols:
        phi = table["confidence"].to_numpy(dtype=np.float64)
        if not np.all(np.isfinite(phi)):
            bad = int(np.sum(~np.isfinite(phi)))
            raise ValueError(f"Predictions column 'confidence' has {bad} NaN or inf value(s); expected finite.")
        preds = table["pred"].to_numpy().astype(np.int64) if "pred" in cols else None
        omega = (preds == labels).astype(np.float64) if preds is not None and labels is not None else phi.copy()
        scores = ModelScores(phi, omega, None, labels, preds)
    else:
        raise ValueError(f"Predictions need a 'confidence' column or class probability columns 'prob_<class>'; "
                         f"found columns {cols}.")
    if "performance" in cols:
        scores.performance = table["performance"].to_numpy(dtype=np.float64)
    for name, arr in (("confidence", scores.confidence), ("performance", scores.performance)):
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"Derived {name} has NaN or inf values; check the predictions file.")
    return ids, scores
