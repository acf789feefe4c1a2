"""Step 4 of LBEE: choose K sentences per hard cluster (SPEC §3.3).

Each describer returns its sentences ranked by its own score, ties broken by
lower sentence index.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._validation import check_positive_int, check_real
from ..typing import ArrayLike, FloatArray, IntArray

if TYPE_CHECKING:
    from .sentence_index import SentenceIndex

#: One cluster's sentences (indices, best first) and their scores.
Selection = tuple[IntArray, FloatArray]

METHODS = ("tops", "setdiff", "pdiff", "fpdiff", "domino")
#: Every describer: the prototype ones above and "compose", which needs a grammar's sentence set (lbee.core.compose).
DESCRIBERS = ("compose", *METHODS)
COMPOSE = "compose"
CLIP_TAU = 0.25  # τ calibrated for CLIP (LBEE footnote 2)


def resolve_tau(tau: float | None = None, encoder_tau: float | None = None) -> float:
    """The τ a run uses: ``tau`` when given, else the encoder's declared τ, else the CLIP value (SPEC §3.3).

    Parameters
    ----------
    tau : float, optional
        An explicit threshold.
    encoder_tau : float, optional
        The encoder's ``default_tau``.

    Returns
    -------
    float
    """
    if tau is not None:
        return float(tau)
    return CLIP_TAU if encoder_tau is None else float(encoder_tau)


def select_sentences(
    method: str,
    index: SentenceIndex,
    hard_prototype: ArrayLike,
    easy_prototype: ArrayLike | None,
    k: int,
    tau: float,
    *,
    cluster_mean: ArrayLike | None = None,
    reference_mean: ArrayLike | None = None,
) -> Selection:
    """Sentences describing one hard cluster against its easy twin.

    Parameters
    ----------
    method : str
        'tops', 'setdiff', 'pdiff', 'fpdiff' or 'domino'.
    index : SentenceIndex
        The sentence set (N sentences).
    hard_prototype, easy_prototype : ndarray of shape (d,)
        Unit prototypes of the hard cluster and of its matched easy cluster.
    k : int
        Sentences kept (fewer if fewer candidates exist).
    tau : float
        Similarity threshold of SetDiff / FPDiff.
    cluster_mean, reference_mean : ndarray of shape (d,), optional
        Plain means used by ``'domino'`` (m_i and m).

    Returns
    -------
    sentences : ndarray of int, shape (<= k,)
        Best first.
    scores : ndarray of float, shape (<= k,)
        The method's ranking score of each returned sentence.

    Notes
    -----
    One cluster of `select_all`: the similarities are exact (dense,
    float64), top-k and ``> tau`` are read off them, and a product of the same
    prototypes is reused across describers (see ``SentenceIndex.similarities``).
    """
    hard = np.asarray(hard_prototype, dtype=np.float64)[None, :]
    easy = None if easy_prototype is None else np.asarray(easy_prototype, dtype=np.float64)[None, :]
    means = None if cluster_mean is None else np.asarray(cluster_mean, dtype=np.float64)[None, :]
    return select_all(method, index, hard, easy, k, tau, cluster_means=means, reference_mean=reference_mean)[0]


def _best(scores: FloatArray, k: int, candidates: IntArray | None = None) -> Selection:
    """The ``k`` best of ``candidates`` (sorted ascending; default all) by ``scores``, ties by lower index, in O(N).

    A partial sort finds the k-th best value; only the candidates at or above
    it are sorted (stably), so the result equals a full stable sort's first k.
    """
    vals = scores if candidates is None else scores[candidates]
    neg = -vals
    if 0 < k < vals.size:
        kth = np.partition(neg, k - 1)[k - 1]
        sub = np.flatnonzero(neg <= kth)
        order = sub[np.argsort(neg[sub], kind="stable")[:k]]
    else:
        order = np.argsort(neg, kind="stable")[: max(k, 0)]
    chosen = order if candidates is None else candidates[order]
    return chosen, scores[chosen]


def _top_or_above(sims: FloatArray, k: int, tau: float) -> IntArray:
    """Sorted union of the ``k`` most similar sentences and those strictly above ``tau`` (one row of sims)."""
    top, _ = _best(sims, k)
    mask = sims > tau
    mask[top] = True
    return np.flatnonzero(mask)


def select_all(
    method: str,
    index: SentenceIndex,
    hard_prototypes: ArrayLike,
    easy_prototypes: ArrayLike | None,
    k: int,
    tau: float,
    *,
    cluster_means: ArrayLike | None = None,
    reference_mean: ArrayLike | None = None,
) -> list[Selection]:
    """`select_sentences` for every hard cluster of one explanation, in one product.

    All the queries a method needs (hard prototypes, their easy twins, or
    Domino's mean differences) are scored against the sentences in one
    matrix product (on one BLAS thread when small; 'tops', 'setdiff', 'pdiff'
    and 'fpdiff' share it through the index, which keeps recent products of
    the same prototypes); top-k and ``> tau`` are then read off those exact
    scores, which gives what the FAISS queries of
    ``SentenceIndex.top_k`` / ``above`` give (same sentences, ties by lower
    index, same scores up to floating-point rounding of the product).

    Parameters
    ----------
    method : str
        'tops', 'setdiff', 'pdiff', 'fpdiff' or 'domino'.
    index : SentenceIndex
    hard_prototypes : ndarray of shape (C, d)
        Unit prototypes of the hard clusters.
    easy_prototypes : ndarray of shape (C, d)
        Row i is the unit prototype of hard cluster i's matched easy cluster.
    k : int
    tau : float
    cluster_means : ndarray of shape (C, d), optional
        Plain means of the hard clusters (``'domino'``).
    reference_mean : ndarray of shape (d,), optional
        Plain mean of all images (``'domino'``).

    Returns
    -------
    list of (ndarray of int, ndarray of float)
        Per hard cluster, its sentences (best first) and their scores.
    """
    if method not in METHODS:
        raise ValueError(f"`method` must be one of {list(METHODS)}; received {method!r}.")
    hard = np.atleast_2d(np.asarray(hard_prototypes, dtype=np.float64))
    c = hard.shape[0]
    if c == 0:
        return []
    k = min(int(k), index.n_sentences)
    if method == "domino":
        if cluster_means is None or reference_mean is None:
            raise ValueError("`method='domino'` needs `cluster_means` (C, d) and `reference_mean` (d,).")
        diffs = np.atleast_2d(np.asarray(cluster_means, dtype=np.float64)) - np.asarray(reference_mean)[None, :]
        sims = index.similarities(diffs)
        return [_best(sims[i], k) for i in range(c)]
    if easy_prototypes is None:
        if method == "tops":
            sims = index.similarities(hard, reuse=True)
            return [_best(sims[i], k) for i in range(c)]
        raise ValueError(f"`method={method!r}` needs the easy prototypes (C, d).")
    easy = np.atleast_2d(np.asarray(easy_prototypes, dtype=np.float64))
    # The four prototype describers score the same [hard; easy] rows: the index keeps the last product.
    sims = index.similarities(np.concatenate([hard, easy]), reuse=True)
    v_h, v_e = sims[:c], sims[c:]
    if method == "tops":
        return [_best(v_h[i], k) for i in range(c)]
    out = []
    for i in range(c):
        if method == "pdiff":
            out.append(_best(v_h[i] - v_e[i], k))
        elif method == "setdiff":
            easy_set = np.zeros(index.n_sentences, dtype=bool)
            easy_set[_top_or_above(v_e[i], k, tau)] = True
            out.append(_best(v_h[i], k, np.flatnonzero(~easy_set)))
        else:  # fpdiff
            out.append(_best(v_h[i] - v_e[i], k, _top_or_above(v_h[i], k, tau)))
    return out


def check_describe_args(
    index: SentenceIndex, image_embeddings: Any, k: int, tau: float | None, sentences: Sequence[Any] | None
) -> tuple[int, float, list[str] | None]:
    """Validated (k, τ, sentence texts) for describing ``image_embeddings`` with ``index``."""
    k = check_positive_int(k, "k")
    threshold = CLIP_TAU if tau is None else check_real(tau, "tau")
    d = np.shape(image_embeddings)[1] if np.ndim(image_embeddings) == 2 else None
    if d is not None and index.embeddings.shape[1] != d:
        raise ValueError(
            f"`sentence_embeddings` has dimension d={index.embeddings.shape[1]} but `image_embeddings` has d={d}; "
            "both must come from the same joint encoder."
        )
    texts = None
    if sentences is not None:
        texts = [str(s) for s in sentences]
        if len(texts) != index.n_sentences:
            raise ValueError(
                f"`sentences` has {len(texts)} entries but `sentence_embeddings` has {index.n_sentences} rows."
            )
    return k, threshold, texts
