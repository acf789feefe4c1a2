"""Step 4 of LBEE: choose K sentences per hard cluster.

Each describer returns its sentences ranked by its own score, ties broken by
lower sentence index.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from .._validation import check_choice, check_positive_int, check_real
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
#: Why a describer gave a group no sentence, as the terminal says it (a twenty-seventh user saw "(no sentence)" for
#: every group of SetDiff, with no reason). The prototype describers other than SetDiff always give K.
NO_SENTENCE = {
    "setdiff": "(no sentence: SetDiff keeps only sentences the easy twin does not hold, and the twin holds every "
    "one of the group's candidates, by τ or among its K most similar; the other describers contrast by degree)",
    "compose": "(no statement: no condition of the grammar holds for enough of the group)",
}


def resolve_tau(tau: float | None = None, encoder_tau: float | None = None) -> float:
    """The τ a run uses: ``tau`` when given, else the encoder's declared τ, else the CLIP value.

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


#: Up to this k, `_kth_smallest` takes k passes of ``argmin`` (~16x faster than a partial sort of 320 rows of 1,410).
_FEW_PASSES = 8


def _kth_smallest(values: FloatArray, k: int) -> FloatArray:
    """Each row's k-th smallest value, repeats counted: ``np.partition(values, k - 1, axis=1)[:, k - 1]``.

    For a small k, the k - 1 smallest of each row are set aside one ``argmin`` at a time (a NaN, which the
    partial sort places last, takes the sort).
    """
    low: FloatArray = values.min(axis=1)
    if k == 1 and not np.isnan(low).any():
        return low
    if k > _FEW_PASSES or np.isnan(low).any():
        kth: FloatArray = np.partition(values, k - 1, axis=1)[:, k - 1]
        return kth
    work, rows = values.copy(), np.arange(values.shape[0])
    for _ in range(k - 1):
        work[rows, work.argmin(axis=1)] = np.inf
    low = work.min(axis=1)
    return low


def _best_rows(scores: FloatArray, k: int, allowed: npt.NDArray[np.bool_] | None = None) -> list[Selection]:
    """`_best` of every row of ``scores`` (C, N) among its ``allowed`` columns (default all): the same selections.

    One partial sort over all rows finds each row's k-th best value; a row with exactly k candidates at or
    above it (no tie at the k-th) and more than k allowed columns is ordered in one stable sort of all such
    rows; the others go through `_best`.
    """
    c, n = scores.shape
    if c == 0:
        return []
    k = max(int(k), 0)
    if not 0 < k < n:
        return [_best(scores[i], k, None if allowed is None else np.flatnonzero(allowed[i])) for i in range(c)]
    neg = -scores
    if allowed is not None:
        neg[~allowed] = np.inf
    kth = _kth_smallest(neg, k)
    mask = neg <= kth[:, None]
    clean = mask.sum(axis=1) == k  # no tie at the k-th value: the top k are the mask's columns
    if allowed is not None:  # a row with k candidates or fewer goes through `_best`
        clean &= allowed.sum(axis=1) > k
    out: list[Selection | None] = [None] * c
    rows = np.flatnonzero(clean)
    if rows.size:
        cols = np.nonzero(mask[rows])[1].reshape(rows.size, k)  # ascending within each row
        order = np.argsort(np.take_along_axis(neg[rows], cols, axis=1), axis=1, kind="stable")
        chosen = np.take_along_axis(cols, order, axis=1)
        values = np.take_along_axis(scores[rows], chosen, axis=1)
        for r, ids, vals in zip(rows.tolist(), chosen, values):
            out[r] = (ids, vals)
    for r in np.flatnonzero(~clean).tolist():
        out[r] = _best(scores[r], k, None if allowed is None else np.flatnonzero(allowed[r]))
    return out  # type: ignore[return-value]


def _top_or_above_rows(sims: FloatArray, k: int, tau: float) -> npt.NDArray[np.bool_]:
    """Per row of ``sims`` (C, N): the mask of its ``k`` most similar sentences and those strictly above ``tau``."""
    mask = sims > tau
    for i, (top, _) in enumerate(_best_rows(sims, k)):
        mask[i, top] = True
    return mask


def describer_queries(
    method: str,
    hard_prototypes: ArrayLike,
    easy_prototypes: ArrayLike | None,
    *,
    cluster_means: ArrayLike | None = None,
    reference_mean: ArrayLike | None = None,
) -> FloatArray:
    """The rows `select_all` scores against the sentences for ``method``, in one C-contiguous float64 array.

    'domino': the hard clusters' mean differences with all images, shape (C, d); 'tops' without easy
    prototypes: the hard prototypes (C, d); otherwise ``[hard; easy]``, shape (2C, d), the same bytes for the four
    prototype describers, so that `SentenceIndex.similarities` reuses one product (and a batch of classes can be
    scored in one product: `lbee.analyses.per_class`).
    """
    hard = np.atleast_2d(np.asarray(hard_prototypes, dtype=np.float64))
    if method == "domino":
        if cluster_means is None or reference_mean is None:
            raise ValueError("`method='domino'` needs `cluster_means` (C, d) and `reference_mean` (d,).")
        diffs = np.atleast_2d(np.asarray(cluster_means, dtype=np.float64)) - np.asarray(reference_mean)[None, :]
        return np.ascontiguousarray(diffs, dtype=np.float64)
    if easy_prototypes is None:
        if method == "tops":
            return np.ascontiguousarray(hard)
        raise ValueError(f"`method={method!r}` needs the easy prototypes (C, d).")
    easy = np.atleast_2d(np.asarray(easy_prototypes, dtype=np.float64))
    return np.ascontiguousarray(np.concatenate([hard, easy]), dtype=np.float64)


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
    queries = describer_queries(
        method, hard, easy_prototypes, cluster_means=cluster_means, reference_mean=reference_mean
    )
    # The four prototype describers score the same [hard; easy] rows: the index keeps the last product.
    sims = index.similarities(queries, reuse=True)
    if queries.shape[0] == c:  # 'domino', or 'tops' without easy prototypes
        return select_from_scores(method, sims, None, k, tau)
    return select_from_scores(method, sims[:c], sims[c:], k, tau)


def select_from_scores(
    method: str, hard_scores: FloatArray, easy_scores: FloatArray | None, k: int, tau: float
) -> list[Selection]:
    """`select_all`'s selections from the scores it reads: row i of each array decides cluster i alone.

    Parameters
    ----------
    method : str
        One of `METHODS`.
    hard_scores : ndarray of shape (C, N)
        Each hard cluster's query scored against the sentences (Domino's: its mean difference).
    easy_scores : ndarray of shape (C, N) or None
        Row i: hard cluster i's easy twin; None for 'domino' (and 'tops', which does not read it).
    k : int
    tau : float

    Returns
    -------
    list of (ndarray of int, ndarray of float)
        Since a row depends on its own scores only, the rows of several partitions can be stacked and
        selected in one call (`lbee.analyses.per_class` does, a batch of classes at a time).
    """
    v_h, v_e = hard_scores, easy_scores
    if method in ("domino", "tops"):
        return _best_rows(v_h, k)
    if v_e is None:
        raise ValueError(f"`method={method!r}` needs the easy twins' scores (C, N).")
    if method == "pdiff":
        return _best_rows(v_h - v_e, k)
    if method == "setdiff":
        return _best_rows(v_h, k, ~_top_or_above_rows(v_e, k, tau))
    return _best_rows(v_h - v_e, k, _top_or_above_rows(v_h, k, tau))  # fpdiff


def check_methods(methods: str | Sequence[str]) -> list[str]:
    """``methods`` (one name or several) as a list of describer names; an empty or unknown one raises."""
    names = [methods] if isinstance(methods, str) else list(methods)
    if not names:
        raise ValueError(f"`methods` is empty; expected one or more of {list(DESCRIBERS)}.")
    for m in names:
        check_choice(m, "methods", set(DESCRIBERS))
    return names


def check_describe_args(
    index: SentenceIndex, image_embeddings: Any, k: int, tau: float | None, sentences: Sequence[Any] | None
) -> tuple[int, float, list[str] | None]:
    """Validated (k, τ, sentence texts) for describing ``image_embeddings`` with ``index``."""
    k = check_positive_int(k, "k")
    if k > index.n_sentences:  # every group would get every sentence: a seventh user's k=100 of 44 passed unsaid
        import warnings

        warnings.warn(
            f"`k` is {k} but there are {index.n_sentences} sentences: each group gets all of them, ranked.",
            UserWarning,
            stacklevel=3,
        )
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
