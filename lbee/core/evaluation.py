"""LBEE evaluation: failure sentences S*_β and AHR / ACR / TPR / JI (the LBEE paper's metrics)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .._blas import one_blas_thread
from .._validation import as_bool_matrix, as_float_vector, check_real
from ..typing import ArrayLike, BoolArray, FloatArray, IntArray

if TYPE_CHECKING:
    from .explanation import Explanation

DEFAULT_O = 0.2  # severity: β = o·std(ω) (LBEE app. D)
#: The metrics in words, for every place that shows them (terminal, HTML report, the demo); 1 is best for all.
METRIC_WORDS = {
    "AHR": "average hit rate: the share of each group's sentences that are failure sentences (true where the model "
    "fails)",
    "ACR": "average coverage: how much of its group each chosen sentence is true of",
    "TPR": "the share of all failure sentences that some group found",
    "JI": "the overlap (Jaccard index) of the sentences found with the failure sentences",
}


def check_relevance(relevance: ArrayLike, performance: ArrayLike) -> tuple[BoolArray, FloatArray]:
    """Validated (Γ as bool (n, N), ω as float (n,)); ``ValueError`` / ``TypeError`` name what is wrong."""
    omega = as_float_vector(performance, "performance")
    rel = np.asarray(relevance)
    if rel.ndim != 2:
        raise ValueError(f"`relevance` must be 2-D of shape (n_images, n_sentences); received shape {rel.shape}.")
    if rel.shape[0] != omega.shape[0]:
        raise ValueError(
            f"`relevance` has {rel.shape[0]} rows but `performance` has {omega.shape[0]} values; "
            "expected one row per image."
        )
    return as_bool_matrix(rel, "relevance", rel.shape), omega


_BLOCK_ROWS = 256  # rows of Γ converted to float at a time (256 x 1,400 float64: 2.9 MB, stays in cache)


def _hardness(rel: BoolArray, omega: FloatArray) -> tuple[FloatArray, IntArray]:
    """ω^n and |X_n| of a checked boolean Γ, in row blocks: Γ is never converted to float whole.

    Per block, ``ω_block @ Γ_block`` on one BLAS thread gives the sums and a
    column sum the counts (exact integers in float64).
    """
    n_img, n_sent = rel.shape
    sums = np.zeros(n_sent)
    counts = np.zeros(n_sent)
    with one_blas_thread():
        for i0 in range(0, n_img, _BLOCK_ROWS):
            block = rel[i0 : i0 + _BLOCK_ROWS].astype(np.float64)
            sums += omega[i0 : i0 + _BLOCK_ROWS] @ block
            counts += block.sum(axis=0)
    n_relevant: IntArray = np.rint(counts).astype(np.int64)
    hardness = np.full(n_sent, np.nan)
    hit = n_relevant > 0
    hardness[hit] = sums[hit] / n_relevant[hit]
    return hardness, n_relevant


def sentence_hardness(relevance: ArrayLike, performance: ArrayLike) -> tuple[FloatArray, IntArray]:
    """ω^n: mean performance over the images each sentence is relevant to.

    Parameters
    ----------
    relevance : array-like of bool, shape (n_images, n_sentences)
        Γ.
    performance : array-like of shape (n_images,)
        ω, higher = better.

    Returns
    -------
    hardness : ndarray of shape (n_sentences,)
        NaN for a sentence relevant to no image.
    counts : ndarray of int, shape (n_sentences,)
        |X_n|.
    """
    rel, omega = check_relevance(relevance, performance)
    return _hardness(rel, omega)


def checked_failure_sentences(rel: BoolArray, omega: FloatArray, o: float) -> IntArray:
    """`failure_sentences` of a checked boolean Γ, float ω and o, without the checks (a loop over classes)."""
    hardness, counts = _hardness(rel, omega)
    beta = o * omega.std()
    with np.errstate(invalid="ignore"):
        failing = (counts > 0) & (hardness < omega.mean() - beta)
    return np.flatnonzero(failing)


def failure_sentences(relevance: ArrayLike, performance: ArrayLike, o: float = DEFAULT_O) -> IntArray:
    """The failure sentences S*_β: those whose images perform worse than average by more than β = o·std(ω).

    Parameters
    ----------
    relevance : array-like of bool, shape (n_images, n_sentences)
        Γ, whether sentence n is true of image m.
    performance : array-like of shape (n_images,)
        ω per image, higher = better.
    o : float, default=0.2
        Severity: β = o · std(ω) (ddof=0).

    Returns
    -------
    ndarray of int
        Sorted sentence indices; a sentence relevant to no image is never included.
    """
    o = check_real(o, "o", minimum=0.0)
    rel, omega = check_relevance(relevance, performance)
    return checked_failure_sentences(rel, omega, o)


def evaluate(
    explanation: Explanation, relevance: ArrayLike, performance: ArrayLike, o: float = DEFAULT_O
) -> dict[str, float]:
    """Score an explanation against relevance Γ and performance ω (the LBEE paper's metrics).

    Parameters
    ----------
    explanation : Explanation
    relevance : array-like of bool, shape (n_images, n_sentences)
    performance : array-like of shape (n_images,)
    o : float, default=0.2
        Severity: a sentence is a failure sentence when the model's mean
        performance on the images it is true of is below the overall mean by
        more than o standard deviations of the performance.

    Raises
    ------
    ValueError
        When Γ's columns are not the explanation's N sentences
        (``params['n_sentences']``, else its sentence texts), an index is out
        of Γ's range, or the clusters are not a partition (an empty hard
        cluster, an image in two clusters or both hard and easy).

    Returns
    -------
    dict
        ``AHR`` (average hit rate: the share of each group's sentences that are
        failure sentences), ``ACR`` (average coverage: how much of its group
        each chosen sentence is true of), ``TPR`` (the share of all failure
        sentences that some group found; NaN when there is no failure
        sentence), ``JI`` (the overlap of the sentences found with the failure
        sentences; NaN when both are empty) and ``n_failure_sentences``.
    """
    from .explanation import Explanation

    if not isinstance(explanation, Explanation):
        raise TypeError(f"`explanation` must be an lbee.Explanation; received {type(explanation).__name__}.")
    rel, omega = check_relevance(relevance, performance)
    n_sent = rel.shape[1]
    expected = explanation.params.get("n_sentences")
    if expected is None and explanation.sentence_texts is not None:
        expected = len(explanation.sentence_texts)
    if expected is not None and int(expected) != n_sent:
        base = explanation.params.get("n_base_sentences")
        composed = (  # a twenty-sixth user's Γ over the set's 101 sentences, for a run with compose's 102nd
            f" The run's sentences are the set's {int(base)} and {int(expected) - int(base)} that 'compose' wrote: "
            "score a run of lbee.audit with result.metrics(), or pass result.relevance (Γ over result.sentences, "
            "the composed columns included)."
            if base is not None and int(base) == n_sent
            else ""
        )
        raise ValueError(
            f"`relevance` has {n_sent} sentence columns but the explanation was computed over "
            f"{int(expected)} sentences; expected Γ of shape (n_images, {int(expected)}), one column "
            "per sentence of the same set, in the same order." + composed
        )
    from .explanation_checks import check_partition

    check_partition(explanation.hard_clusters, explanation.easy_clusters, "`explanation`")
    for c in explanation.hard_clusters:
        if len(c.sentences) and max(c.sentences) >= n_sent:
            raise ValueError(
                f"`relevance` has {n_sent} sentence columns but the explanation refers to sentence "
                f"{max(c.sentences)}; expected the same sentence set."
            )
        if c.indices.size and c.indices.max() >= rel.shape[0]:
            raise ValueError(
                f"`relevance` has {rel.shape[0]} image rows but the explanation refers to image "
                f"{int(c.indices.max())}; expected the same images."
            )
    o = check_real(o, "o", minimum=0.0)
    return score_explanation(explanation, rel, set(checked_failure_sentences(rel, omega, o).tolist()))


def score_explanation(explanation: Explanation, relevance: BoolArray, star: set[int]) -> dict[str, float]:
    """AHR / ACR / TPR / JI of a checked explanation against a known S* (a set of int).

    [`evaluate`][lbee.evaluate] without its checks, for loops that score several methods
    against one S* (per-class analysis, sweeps).
    """
    return score_explanations({"_": explanation}, relevance, star)["_"]


def score_explanations(
    explanations: dict[str, Explanation], relevance: BoolArray, star: set[int]
) -> dict[str, dict[str, float]]:
    """`score_explanation` for several explanations of one partition: each hard cluster's Γ read once.

    The describers of one partition share its hard clusters; a cluster's mean relevance per sentence, shape
    (N,), is computed once and each describer's ACR reads its sentences' entries (the same numbers as reading
    them one explanation at a time).
    """
    rel = relevance
    column_means: dict[bytes, FloatArray] = {}
    out = {}
    for name, explanation in explanations.items():
        hr, cr = [], []
        for c in explanation.hard_clusters:
            r = [int(s) for s in c.sentences]
            if not r:
                hr.append(0.0)
                cr.append(0.0)
                continue
            hr.append(len(set(r) & star) / len(r))
            if not c.indices.size:
                cr.append(0.0)
                continue
            key = np.asarray(c.indices).tobytes()
            if key not in column_means:  # `mean` without its Python wrapper: the same numbers, less overhead
                column_means[key] = np.add.reduce(rel[c.indices], axis=0, dtype=np.float64) / c.indices.size
            cr.append(float(np.add.reduce(column_means[key].take(r)) / len(r)))
        selected = set(explanation.selected)
        inter = len(selected & star)
        union = len(selected | star)
        out[name] = {
            "AHR": float(np.mean(hr)) if hr else float("nan"),
            "ACR": float(np.mean(cr)) if cr else float("nan"),
            "TPR": inter / len(star) if star else float("nan"),
            "JI": inter / union if union else float("nan"),
            "n_failure_sentences": len(star),
        }
    return out


def metric_rows(
    explanations: dict[str, dict[str, Explanation]],
    relevance: ArrayLike,
    performance: ArrayLike,
    o: float | None,
    star: set[int] | None = None,
) -> list[dict[str, Any]]:
    """The metric rows of a run: per slicer and describer, ``slicer``, ``method`` and `score_explanation`'s.

    Parameters
    ----------
    explanations : dict of str to dict of str to Explanation
        Per slicer, its describers' explanations (all of one partition of the n images).
    relevance : array-like of bool, shape (n, N)
        Γ over every sentence the explanations index.
    performance : array-like of shape (n,)
    o : float or None
        Severity of S*_β (None: `DEFAULT_O`).
    star : set of int, optional
        S*_β when the caller already has it (of the same Γ, ω and ``o``).

    Returns
    -------
    list of dict
    """
    rel, omega = check_relevance(relevance, performance)
    if star is None:
        star = set(
            checked_failure_sentences(rel, omega, DEFAULT_O if o is None else check_real(o, "o", minimum=0.0)).tolist()
        )
    return [
        {"slicer": s, "method": m, **scores}
        for s, exps in explanations.items()
        for m, scores in score_explanations(exps, rel, star).items()
    ]
