"""Cluster once, describe many times: LBEE's Steps 1–3 as a public, reusable step.

A [`Partition`][lbee.Partition] holds the easy / hard split, the hard groups (Ward
clusters of the hard split, or the groups of another slicer), the Ward clusters
of the easy split, their prototypes and each hard group's easy twin. Every
describer (Step 4, `lbee.core.selection`) works on the same partition, so
``explain_methods``, sensitivity sweeps and per-class runs cluster once and
call [`Partition.describe`][lbee.Partition.describe] per method and per K.

Parameters and fitted facts are kept apart, scikit-learn style: what was asked
for (``n_clusters``) is a parameter; what was found (``n_hard_clusters_``,
``n_hard_``, ``n_easy_``) ends in an underscore.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._validation import as_bool_vector, check_choice, check_positive_int, check_real
from ..typing import ArrayLike, BoolArray, FloatArray, IntArray
from .clustering import DEFAULT_WARD, WARD_METHODS, match_easy, prototypes, ward_hard_groups, ward_labels
from .explanation import EasyCluster, Explanation, HardCluster
from .rows import UnitRows
from .selection import (
    CLIP_TAU,
    COMPOSE,
    DESCRIBERS,
    METHODS,
    check_describe_args,
    check_methods,
    describer_queries,
    select_all,
)
from .sentence_index import SentenceIndex, as_sentence_index
from .split import resolve_split

DEFAULT_A = 0.2  # split margin (LBEE app. D)
DEFAULT_N_CLUSTERS = 15  # C for a whole dataset (LBEE app. D)
DEFAULT_N_CLUSTERS_PER_CLASS = 5  # C per class (LBEE app. D)
DEFAULT_K = 3  # sentences per hard cluster (LBEE §5)


class Partition:
    """The split and the clusters every describer shares (LBEE Steps 1–3).

    Parameters
    ----------
    a : float, default=0.2
        Split margin in standard deviations of φ (the LBEE paper's first step).
    n_clusters : int, default=15
        Hard clusters C^h asked for; Ward forms ``min(n_clusters, n_hard)``.
    n_easy_clusters : int, optional
        Easy clusters C^e asked for, default ``n_clusters``.
    slicer : 'ward' or slicer object, default='ward'
        Where the hard groups come from: Ward on the hard split
        ([`lbee.slicers.WardSlicer`][lbee.slicers.WardSlicer]), or any slicer of
        `lbee.slicers` (fitted on these images, or unfitted: then fitted
        here with the split as its error signal).
    ward : str, default='auto'
        The Ward variant (see `lbee.core.clustering.ward_labels`), for
        both sides.
    memory : joblib.Memory, optional
        Caches the Ward trees, so that partitions of the same data at other
        ``n_clusters`` cut the same tree (sensitivity sweeps).

    Attributes
    ----------
    embeddings_ : lbee.core.rows.UnitRows of shape (n, d)
        The unit image embeddings, read in row blocks from the array given (a memory-mapped ``.npy`` stays
        on disk); ``np.asarray(part.embeddings_)`` materialises them (float64).
    hard_mask_, easy_mask_ : ndarray of bool, shape (n,)
    hard_groups_ : list of ndarray of int
        Members of each hard group (indices into the n images), in the
        slicer's order.
    easy_groups_ : list of ndarray of int
    hard_prototypes_ : ndarray of shape (C^h, d)
    hard_means_ : ndarray of shape (C^h, d)
        Plain (not renormalised) means, for Domino's describer.
    easy_prototypes_ : ndarray of shape (C^e, d)
    matches_ : ndarray of int, shape (C^h,)
        The easy twin of each hard group.
    reference_mean_ : ndarray of shape (d,)
        Plain mean of all n images.
    n_hard_, n_easy_ : int
        Images in each split.
    n_hard_clusters_, n_easy_clusters_ : int
        Clusters actually formed.
    """

    # learned by fit (and merge)
    embeddings_: UnitRows
    hard_mask_: BoolArray
    easy_mask_: BoolArray
    hard_groups_: list[IntArray]
    easy_groups_: list[IntArray]
    slicer_groups_: list[IntArray]
    hard_prototypes_: FloatArray
    hard_means_: FloatArray
    easy_prototypes_: FloatArray
    matches_: IntArray
    reference_mean_: FloatArray
    hypotheses_: list[Any] | None
    joined_: list[list[int]] | None

    def __init__(
        self,
        *,
        a: float = DEFAULT_A,
        n_clusters: int = DEFAULT_N_CLUSTERS,
        n_easy_clusters: int | None = None,
        slicer: Any = "ward",
        ward: str = DEFAULT_WARD,
        memory: Any = None,
    ) -> None:
        self.a = a
        self.n_clusters = n_clusters
        self.n_easy_clusters = n_easy_clusters
        self.slicer = slicer
        self.ward = ward
        self.memory = memory

    def _hard_groups(self, images: UnitRows, confidence: ArrayLike | None, hard: BoolArray) -> list[IntArray]:
        """The slicer's hard groups: LBEE's Ward clusters of the hard split for 'ward', else the object's."""
        if isinstance(self.slicer, str):
            check_choice(self.slicer, "slicer", {"ward"})
            return ward_hard_groups(
                images, self.n_clusters, self.memory, method=self.ward, confidence=confidence, hard=hard
            )[1]
        if not callable(getattr(self.slicer, "hard_groups", None)):
            raise TypeError(
                f"`slicer` must be 'ward' or a slicer object (lbee.slicers) with a `hard_groups` method; "
                f"received {type(self.slicer).__name__}."
            )
        # another slicer gets the unit rows as an in-memory array
        groups: list[IntArray] = self.slicer.hard_groups(np.asarray(images), confidence=confidence, hard=hard)
        # a hard group holds hard images only: a slicer's slice (Domino's, with its own n_slices) spans the easy
        # split too, and an image in a hard and an easy group makes an explanation no reader accepts
        mask = np.asarray(hard, dtype=bool)
        kept = [np.asarray(g, dtype=np.int64)[mask[np.asarray(g, dtype=np.int64)]] for g in groups]
        return [g for g in kept if len(g)]

    def fit(
        self,
        image_embeddings: ArrayLike,
        *,
        confidence: ArrayLike | None = None,
        hard: ArrayLike | None = None,
        easy: ArrayLike | None = None,
        held_out: ArrayLike | None = None,
    ) -> Partition:
        """Split the images, form the hard and easy groups and match them.

        Parameters
        ----------
        image_embeddings : array-like of shape (n, d)
            Image embeddings in the joint space (renormalised to unit rows).
        confidence : array-like of shape (n,), optional
            φ, higher = easier. Splits at μ ± aσ.
        hard, easy : array-like of bool, shape (n,), optional
            Explicit split masks, an alternative to ``confidence``.
        held_out : array-like of bool, shape (n,), optional
            Images kept for confirmation (`lbee.core.confirmation`): split with the rest (one threshold),
            then left out of both splits, so the slicer, the groups and the describers never see them.

        Returns
        -------
        self
        """
        images = UnitRows(image_embeddings, "image_embeddings")  # read in row blocks, never copied whole
        n_clusters = check_positive_int(self.n_clusters, "n_clusters")
        n_easy = (
            n_clusters if self.n_easy_clusters is None else check_positive_int(self.n_easy_clusters, "n_easy_clusters")
        )
        a = check_real(self.a, "a", minimum=0.0)
        check_choice(self.ward, "ward", set(WARD_METHODS))
        hard_mask, easy_mask = resolve_split(images.shape[0], confidence=confidence, hard=hard, easy=easy, a=a)
        if held_out is None:
            groups = self._hard_groups(images, confidence, hard_mask)
        else:  # the slicer sees the discovery images only; its groups index into all n
            keep = ~as_bool_vector(held_out, "held_out", images.shape[0])
            hard_mask, easy_mask, rows = hard_mask & keep, easy_mask & keep, np.flatnonzero(keep)
            phi = None if confidence is None else np.asarray(confidence, dtype=np.float64)[rows]
            found = self._hard_groups(images.subset(rows), phi, hard_mask[rows])
            groups = [rows[np.asarray(g, dtype=np.int64)] for g in found]
        groups = [g for g in (np.asarray(g, dtype=np.int64) for g in groups) if g.size]
        if not groups:
            raise ValueError("`slicer` returned no non-empty hard group.")
        easy_idx = np.flatnonzero(easy_mask)
        labels = ward_labels(images.subset(easy_idx), n_easy, self.memory, method=self.ward)
        c_e = int(labels.max()) + 1
        self.embeddings_ = images
        self.hard_mask_, self.easy_mask_ = hard_mask, easy_mask
        self.easy_groups_ = [easy_idx[labels == j] for j in range(c_e)]
        self.easy_prototypes_, _ = prototypes(images.subset(easy_idx), labels, c_e)
        self.reference_mean_ = images.mean(axis=0)
        self.n_hard_, self.n_easy_ = int(hard_mask.sum()), int(easy_mask.sum())
        self.n_easy_clusters_ = c_e
        self.n_easy_clusters_asked_ = n_easy
        self.slicer_groups_ = groups
        self.hypotheses_ = None
        self.joined_ = None
        self._set_hard_groups(groups)
        return self

    def _set_hard_groups(self, groups: Sequence[ArrayLike]) -> None:
        self.hard_groups_ = [np.asarray(g, dtype=np.int64) for g in groups]
        self.hard_prototypes_, self.hard_means_ = _group_prototypes(self.embeddings_, self.hard_groups_)
        self.matches_ = match_easy(self.hard_prototypes_, self.easy_prototypes_)
        self.n_hard_clusters_ = len(self.hard_groups_)
        self._searches: dict[tuple[int, float], Any] = {}

    def _search(self, index: SentenceIndex, tau: float) -> Any:
        """The 'compose' search over ``index`` (a grammar's sentence set), built once per index and τ."""
        from .atoms import literal_probabilities
        from .compose import ComposeSearch

        if index.conditions is None or index.grammar is None:
            raise ValueError(
                "method 'compose' needs a grammar's sentence set: sentences with their conditions "
                "(lbee sentences generate GRAMMAR, or a SentenceIndex with conditions= and grammar=)."
            )
        key = (id(index), float(tau))
        if key not in self._searches:
            lits = literal_probabilities(self.embeddings_, index.embeddings, index.conditions, tau, index.grammar)
            easy, hard = np.flatnonzero(self.easy_mask_), np.flatnonzero(self.hard_mask_)
            self._searches = {key: ComposeSearch(lits, index.grammar, easy, hard)}
        return self._searches[key]

    def composed_relevance(
        self,
        sentence_embeddings: ArrayLike | SentenceIndex,
        conditions: list[dict[Any, Any]],
        *,
        tau: float | None = CLIP_TAU,
    ) -> tuple[FloatArray, BoolArray]:
        """Composed relevance of conjunctions on the partition's images (`lbee.core.atoms.composed_relevance`).

        Returns
        -------
        probabilities : ndarray of shape (n, len(conditions))
        relevance : ndarray of bool, shape (n, len(conditions))
        """
        from .atoms import composed_relevance

        self._check_fitted()
        index = as_sentence_index(sentence_embeddings)
        search = self._search(index, CLIP_TAU if tau is None else tau)
        out: tuple[FloatArray, BoolArray] = composed_relevance(search.literals, conditions, index.grammar)
        return out

    def merge(
        self, sentence_embeddings: ArrayLike | SentenceIndex, *, tau: float | None = CLIP_TAU, k: int = DEFAULT_K
    ) -> Partition:
        """One hypothesis per failure: merge the hard groups that are pieces of one, rank by error concentration.

        See `lbee.core.hypotheses`. The slicer's groups stay in ``slicer_groups_``; ``hard_groups_`` become the
        merged ones, most concentrated first, and ``hypotheses_`` holds their descriptions and statistics.

        Parameters
        ----------
        sentence_embeddings : SentenceIndex
            A grammar's sentence set (with ``conditions`` and ``grammar``).
        tau : float
            The encoder's threshold (atom calibration).
        k : int, default=3

        Returns
        -------
        self
        """
        from .hypotheses import one_hypothesis_per_failure

        self._check_fitted()
        index = as_sentence_index(sentence_embeddings)
        search = self._search(index, CLIP_TAU if tau is None else tau)
        hyps, _ = one_hypothesis_per_failure(search, self.slicer_groups_, self.hard_mask_, k=k)
        searches = self._searches
        self._set_hard_groups([h.indices for h in hyps])
        self._searches = searches
        self.hypotheses_ = hyps
        return self

    def join(self, groups: Sequence[Sequence[int]]) -> Partition:
        """Join hard groups (``groups``: lists of ``hard_groups_`` numbers) into one each; returns self.

        Pieces of one failure that the clustering cut apart: `lbee.core.joining.joined_groups`.
        """
        from .joining import joined_groups

        self._check_fitted()
        joined, entries = joined_groups(self.hard_groups_, groups)
        searches = self._searches
        self._set_hard_groups(joined)
        self._searches = searches
        self.hypotheses_ = None  # the merged hypotheses no longer match the groups: described afresh
        self.joined_ = [list(e) for e in entries]
        return self

    def _check_fitted(self) -> None:
        if not hasattr(self, "embeddings_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError("This Partition is not fitted yet; call `fit` (or use lbee.partition(...)).")

    @property
    def params(self) -> dict[str, Any]:
        """The parameters and split sizes recorded in every [`Explanation`][lbee.Explanation] of this partition."""
        self._check_fitted()
        return {
            "a": float(self.a),
            "n_clusters": int(self.n_clusters),
            "n_easy_clusters": int(self.n_easy_clusters_asked_),
            "slicer": self.slicer if isinstance(self.slicer, str) else type(self.slicer).__name__,
            "ward": self.ward,
            "n_images": int(self.embeddings_.shape[0]),
            "n_hard": self.n_hard_,
            "n_easy": self.n_easy_,
        }

    def describe(
        self,
        sentence_embeddings: ArrayLike | SentenceIndex,
        method: str = "fpdiff",
        *,
        k: int = DEFAULT_K,
        tau: float | None = CLIP_TAU,
        sentences: Sequence[str] | None = None,
    ) -> Explanation:
        """Choose K sentences for every hard group against its easy twin (the LBEE paper's fourth step).

        Parameters
        ----------
        sentence_embeddings : array-like of shape (N, d) or SentenceIndex
            Sentence embeddings in the joint space; a prebuilt
            `lbee.core.sentence_index.SentenceIndex` is reused.
        method : {'fpdiff', 'tops', 'setdiff', 'pdiff', 'domino'}, default='fpdiff'
        k : int, default=3
        tau : float or None, default=0.25
            Threshold of SetDiff / FPDiff; None means the CLIP value (pass the
            encoder's ``default_tau`` for another encoder).
        sentences : list of str of length N, optional
            Sentence texts, kept for readable output.

        Returns
        -------
        Explanation
        """
        self._check_fitted()
        check_choice(method, "method", set(DESCRIBERS))
        index = as_sentence_index(sentence_embeddings)
        k, tau_, texts = check_describe_args(index, self.embeddings_, k, tau, sentences)
        if method == COMPOSE:
            return self._compose(index, k, tau_, texts)
        chosen = select_all(
            method,
            index,
            self.hard_prototypes_,
            self.easy_prototypes_[self.matches_],
            k,
            tau_,
            cluster_means=self.hard_means_,
            reference_mean=self.reference_mean_,
        )
        return self.explanation(method, chosen, index.n_sentences, k, tau_, texts)

    def explanation(
        self, method: str, chosen: Sequence[Any], n_sentences: int, k: int, tau: float, texts: list[str] | None
    ) -> Explanation:
        """The `Explanation` of ``method`` from its selections ``chosen``: (ids, scores) per hard group, in order."""
        easy = [EasyCluster(g, p) for g, p in zip(self.easy_groups_, self.easy_prototypes_)]
        hard = [
            HardCluster(g, self.hard_prototypes_[i], int(self.matches_[i]), ids.tolist(), scores.tolist())
            for i, (g, (ids, scores)) in enumerate(zip(self.hard_groups_, chosen))
        ]
        params = dict(self.params, k=k, tau=tau, n_sentences=int(n_sentences), method=method)
        return Explanation(hard, easy, method, params, texts)

    def describer_queries(self, methods: Sequence[str] = METHODS) -> list[FloatArray]:
        """The distinct rows `describe` scores for ``methods`` ('compose' aside): several partitions score at once."""
        self._check_fitted()
        if not len(self.hard_groups_):
            return []
        blocks: dict[bytes, FloatArray] = {}
        for m in methods:
            if m in METHODS:
                q = describer_queries(
                    m,
                    self.hard_prototypes_,
                    self.easy_prototypes_[self.matches_],
                    cluster_means=self.hard_means_,
                    reference_mean=self.reference_mean_,
                )
                blocks.setdefault(q.tobytes(), q)
        return list(blocks.values())

    def _compose(self, index: SentenceIndex, k: int, tau: float, sentences: list[str] | None) -> Explanation:
        """The 'compose' describer (`lbee.core.compose`): sentences the grammar renders, appended when new."""
        from .compose_describer import compose_explanation

        return compose_explanation(self, self._search(index, tau), index, k, tau, sentences)

    def describe_methods(
        self, sentence_embeddings: ArrayLike | SentenceIndex, methods: str | Sequence[str] = METHODS, **kwargs: Any
    ) -> dict[str, Explanation]:
        """`describe` for several methods over one sentence index; dict of method -> Explanation."""
        index = as_sentence_index(sentence_embeddings)
        return {m: self.describe(index, m, **kwargs) for m in check_methods(methods)}


def _group_prototypes(images: UnitRows, groups: Sequence[IntArray]) -> tuple[FloatArray, FloatArray]:
    labels = np.concatenate([np.full(len(g), i) for i, g in enumerate(groups)])
    members = images.subset(np.concatenate(groups))
    return prototypes(members, labels, len(groups))


def partition(
    image_embeddings: ArrayLike,
    *,
    confidence: ArrayLike | None = None,
    hard: ArrayLike | None = None,
    easy: ArrayLike | None = None,
    a: float = DEFAULT_A,
    n_clusters: int = DEFAULT_N_CLUSTERS,
    n_easy_clusters: int | None = None,
    slicer: Any = "ward",
    ward: str = DEFAULT_WARD,
    memory: Any = None,
) -> Partition:
    """Split and cluster once; describe many times with [`Partition.describe`][lbee.Partition.describe].

    Parameters are those of [`Partition`][lbee.Partition] and [`Partition.fit`][lbee.Partition.fit].

    Returns
    -------
    Partition
        Fitted.

    Examples
    --------
    >>> part = lbee.partition(X, confidence=phi, n_clusters=10)         # doctest: +SKIP
    >>> exps = {m: part.describe(S, m, k=3) for m in ("tops", "fpdiff")}  # doctest: +SKIP
    """
    return Partition(
        a=a, n_clusters=n_clusters, n_easy_clusters=n_easy_clusters, slicer=slicer, ward=ward, memory=memory
    ).fit(image_embeddings, confidence=confidence, hard=hard, easy=easy)
