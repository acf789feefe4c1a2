"""Blindspot metrics (SpotCheck §3.2) and Domino's precision@k.

Hypotheses and blindspots are index arrays into the n images (a boolean mask of
length n is accepted too). Hypotheses are ordered, most important first.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from .._validation import check_positive_int, check_real
from ..typing import ArrayLike, FloatArray

__all__ = [
    "blindspot_precision",
    "blindspot_recall",
    "discovery_rate",
    "false_discovery_rate",
    "precision_at_k",
    "failure_analysis",
    "prototype_precision_at_k",
]


def _as_index_set(group: ArrayLike, name: str) -> set[int]:
    arr = np.asarray(group)
    if arr.ndim != 1:
        raise ValueError(f"`{name}` must be a 1-D index array or boolean mask; received shape {arr.shape}.")
    if arr.dtype == bool:
        arr = np.flatnonzero(arr)
    elif arr.size and arr.dtype.kind not in "iu":
        if arr.dtype.kind == "f" and np.all(arr == np.round(arr)):
            arr = arr.astype(np.int64)
        else:
            raise TypeError(f"`{name}` must hold integer indices; received dtype {arr.dtype}.")
    return set(int(i) for i in arr)


def _as_groups(groups: Iterable[ArrayLike], name: str) -> list[set[int]]:
    if isinstance(groups, np.ndarray) and groups.ndim == 1 and groups.dtype != object:
        raise TypeError(f"`{name}` must be a list of index arrays; received a single 1-D array.")
    return [_as_index_set(g, f"{name}[{i}]") for i, g in enumerate(groups)]


def _lambda(value: float, name: str) -> float:
    out = check_real(value, name, minimum=0.0)
    if out > 1:
        raise ValueError(f"`{name}` must be in [0, 1]; received {out}.")
    return out


def _precision(h: set[int], b: set[int]) -> float:
    return len(h & b) / len(h) if h else 0.0


def _recall(hyps: list[set[int]], b: set[int], lambda_p: float) -> float:
    if not b:
        raise ValueError("A true blindspot is empty; every blindspot needs at least one image.")
    covered: set[int] = set().union(*[h for h in hyps if _precision(h, b) >= lambda_p]) if hyps else set()
    return len(covered & b) / len(b)


def _dr(hyps: list[set[int]], blinds: list[set[int]], lambda_p: float, lambda_r: float) -> float:
    if not blinds:
        raise ValueError("`blindspots` is empty; expected at least one true blindspot.")
    return sum(_recall(hyps, b, lambda_p) >= lambda_r for b in blinds) / len(blinds)


def blindspot_precision(hypothesis: ArrayLike, blindspot: ArrayLike) -> float:
    """BP(ĥ, b) = |ĥ ∩ b| / |ĥ| (0 for an empty hypothesis).

    Parameters
    ----------
    hypothesis, blindspot : array-like of int (or bool mask)
        Image indices.

    Returns
    -------
    float
    """
    return _precision(_as_index_set(hypothesis, "hypothesis"), _as_index_set(blindspot, "blindspot"))


def blindspot_recall(hypotheses: Iterable[ArrayLike], blindspot: ArrayLike, lambda_p: float = 0.8) -> float:
    """BR(Ψ̂, b) = |(∪ {ĥ : BP(ĥ, b) ≥ λ_p}) ∩ b| / |b|.

    Parameters
    ----------
    hypotheses : list of array-like of int
        Ψ̂.
    blindspot : array-like of int
        b (non-empty).
    lambda_p : float, default=0.8

    Returns
    -------
    float
    """
    return _recall(
        _as_groups(hypotheses, "hypotheses"), _as_index_set(blindspot, "blindspot"), _lambda(lambda_p, "lambda_p")
    )


def discovery_rate(
    hypotheses: Iterable[ArrayLike], blindspots: Iterable[ArrayLike], lambda_p: float = 0.8, lambda_r: float = 0.8
) -> float:
    """DR: the fraction of true blindspots b with BR(Ψ̂, b) ≥ λ_r.

    Parameters
    ----------
    hypotheses : list of array-like of int
        Ψ̂, ordered.
    blindspots : list of array-like of int
        Ψ, the true blindspots.
    lambda_p, lambda_r : float, default=0.8

    Returns
    -------
    float
    """
    return _dr(
        _as_groups(hypotheses, "hypotheses"),
        _as_groups(blindspots, "blindspots"),
        _lambda(lambda_p, "lambda_p"),
        _lambda(lambda_r, "lambda_r"),
    )


def false_discovery_rate(
    hypotheses: Iterable[ArrayLike], blindspots: Iterable[ArrayLike], lambda_p: float = 0.8, lambda_r: float = 0.8
) -> float:
    """FDR over the shortest prefix of Ψ̂ that reaches the full DR.

    With u the smallest prefix length such that DR(Ψ̂[:u]) = DR(Ψ̂), FDR is the
    fraction of ĥ in Ψ̂[:u] with max_b BP(ĥ, b) < λ_p. NaN when DR = 0. When
    the empty prefix already reaches the DR (only possible with λ_r = 0), no
    hypothesis is a discovery and FDR is 0 (the usual convention for V/R with R = 0).

    Returns
    -------
    float
    """
    hyps = _as_groups(hypotheses, "hypotheses")
    blinds = _as_groups(blindspots, "blindspots")
    lambda_p, lambda_r = _lambda(lambda_p, "lambda_p"), _lambda(lambda_r, "lambda_r")
    full = _dr(hyps, blinds, lambda_p, lambda_r)
    if full == 0:
        return float("nan")
    u = next(u for u in range(0, len(hyps) + 1) if _dr(hyps[:u], blinds, lambda_p, lambda_r) == full)
    if u == 0:
        return 0.0
    false = sum(max(_precision(h, b) for b in blinds) < lambda_p for h in hyps[:u])
    return false / u


def precision_at_k(slice_scores: ArrayLike, true_slices: ArrayLike, k: int = 10) -> FloatArray:
    """Domino's precision@k of predicted slices against true slices.

    Parameters
    ----------
    slice_scores : array-like of shape (n_samples, n_predicted_slices)
        Each column scores how strongly an example belongs to a predicted slice.
    true_slices : array-like of bool, shape (n_samples, n_true_slices)
    k : int, default=10
        Examples considered per predicted slice (all of them when k > n_samples).

    Returns
    -------
    ndarray of shape (n_true_slices,)
        For each true slice, the best over predicted slices of the fraction of
        that predicted slice's k highest-scored examples (ties: lower index first)
        that belong to the true slice.
    """
    scores = np.asarray(slice_scores, dtype=np.float64)
    truth = np.asarray(true_slices)
    if scores.ndim == 1:
        scores = scores[:, None]
    if truth.ndim == 1:
        truth = truth[:, None]
    if scores.ndim != 2 or truth.ndim != 2 or scores.shape[0] != truth.shape[0]:
        raise ValueError(
            f"`slice_scores` (shape {scores.shape}) and `true_slices` (shape {truth.shape}) must be 2-D with the "
            "same number of rows (one per example)."
        )
    if scores.shape[0] == 0 or scores.shape[1] == 0 or truth.shape[1] == 0:
        raise ValueError(f"`slice_scores` {scores.shape} and `true_slices` {truth.shape} must be non-empty.")
    if not np.all(np.isfinite(scores)):
        raise ValueError("`slice_scores` contains NaN or inf; expected finite scores.")
    if truth.dtype != bool:
        if np.all((truth == 0) | (truth == 1)):
            truth = truth.astype(bool)
        else:
            raise TypeError(f"`true_slices` must be boolean (or 0/1); received dtype {truth.dtype}.")
    k = check_positive_int(k, "k")
    top = np.argsort(-scores, axis=0, kind="stable")[:k]  # (k', m̂)
    # hits[j, t] = fraction of predicted slice j's top-k in true slice t
    hits = np.stack([truth[top[:, j]].mean(axis=0) for j in range(scores.shape[1])])
    best: FloatArray = hits.max(axis=0)
    return best


def failure_analysis(
    hypotheses: Iterable[ArrayLike], blindspots: Iterable[ArrayLike], lambda_p: float = 0.8, lambda_r: float = 0.8
) -> list[dict[str, Any]]:
    """Why uncovered blindspots were missed (SpotCheck app. F).

    For each true blindspot with BR < λ_r, the fractions of its images that are
    *not returned* (in no hypothesis), *found* (in a hypothesis that belongs to
    it), *merged* (in a hypothesis whose images mostly lie in some true
    blindspot) or *impure* (every hypothesis holding it is mostly outside all
    blindspots). Each image is counted in the first category that applies.

    Returns
    -------
    list of dict
        One per uncovered blindspot: ``blindspot`` (its index) and the four fractions.
    """
    hyps = _as_groups(hypotheses, "hypotheses")
    blinds = _as_groups(blindspots, "blindspots")
    lambda_p, lambda_r = _lambda(lambda_p, "lambda_p"), _lambda(lambda_r, "lambda_r")
    union: set[int] = set().union(*blinds)
    out = []
    for m, b in enumerate(blinds):
        if _recall(hyps, b, lambda_p) >= lambda_r:
            continue
        counts = {"not_returned": 0, "found": 0, "merged": 0, "impure": 0}
        for i in b:
            holding = [h for h in hyps if i in h]
            if not holding:
                counts["not_returned"] += 1
            elif any(_precision(h, b) >= lambda_p for h in holding):
                counts["found"] += 1
            elif any(_precision(h, union) >= lambda_p for h in holding):
                counts["merged"] += 1
            else:
                counts["impure"] += 1
        out.append({"blindspot": m, **{k: v / len(b) for k, v in counts.items()}})
    return out


def prototype_precision_at_k(prototypes: Any, embeddings: ArrayLike, true_partitions: Any, k: int = 10) -> float:
    """The LBEE paper's comparison protocol (its app. B, after FACTS / Domino).

    Prototypes fitted on one set (the union of easy and hard prototypes) are
    compared with the images of another set: each image is assigned to its
    nearest prototype, each prototype ranks its assigned images by cosine
    similarity (then the others), and precision@k is averaged over the
    ground-truth partitions.

    Parameters
    ----------
    prototypes : Explanation or array-like of shape (m, d)
        An explanation fitted on set A (its easy and hard prototypes are used), or the prototypes.
    embeddings : array-like of shape (n, d)
        Images of set B.
    true_partitions : array-like of bool, shape (n, t), or list of index arrays
        Ground-truth partitions of set B (e.g. the bias-conflicting class–context groups).
    k : int, default=10

    Returns
    -------
    float
        Mean precision@k over the partitions.
    """
    from .._validation import as_unit_rows
    from .explanation import Explanation

    if isinstance(prototypes, Explanation):
        prototypes = np.stack([c.prototype for c in prototypes.easy_clusters + prototypes.hard_clusters])
    P = as_unit_rows(prototypes, "prototypes")
    E = as_unit_rows(embeddings, "embeddings")
    if P.shape[1] != E.shape[1]:
        raise ValueError(f"`embeddings` has d={E.shape[1]} but the prototypes have d={P.shape[1]}.")
    n = E.shape[0]
    truth = true_partitions
    if isinstance(truth, (list, tuple)):
        mask = np.zeros((n, len(truth)), bool)
        for j, g in enumerate(truth):
            mask[np.asarray(g, dtype=np.int64), j] = True
        truth = mask
    sim = E @ P.T
    assigned = sim.argmax(1)
    # images assigned to a prototype outrank every other image for it (cosine lies in [-1, 1])
    scores = sim - 3.0 * (assigned[:, None] != np.arange(P.shape[0])[None, :])
    return float(precision_at_k(scores, truth, k).mean())
