"""Cluster once, describe many times: LBEE's Steps 1–3 as a public, reusable step (SPEC §3.1–3.2).

A :class:`Partition` holds the easy / hard split, the hard groups (Ward
clusters of the hard split, or the groups of another slicer), the Ward clusters
of the easy split, their prototypes and each hard group's easy twin. Every
describer (Step 4, :mod:`lbee.core.selection`) works on the same partition, so
``explain_methods``, sensitivity sweeps and per-class runs cluster once and
call :meth:`Partition.describe` per method and per K.

Parameters and fitted facts are kept apart, scikit-learn style: what was asked
for (``n_clusters``) is a parameter; what was found (``n_hard_clusters_``,
``n_hard_``, ``n_easy_``) ends in an underscore.
"""

from __future__ import annotations

import numpy as np

from .._validation import as_unit_rows, check_choice, check_positive_int, check_real
from .clustering import DEFAULT_WARD, WARD_METHODS, match_easy, prototypes, ward_labels
from .explanation import EasyCluster, Explanation, HardCluster
from .selection import CLIP_TAU, METHODS, select_all
from .sentence_index import SentenceIndex
from .split import resolve_split

DEFAULT_A = 0.2  # split margin (LBEE app. D)
DEFAULT_N_CLUSTERS = 15  # C for a whole dataset (LBEE app. D)
DEFAULT_N_CLUSTERS_PER_CLASS = 5  # C per class (LBEE app. D)
DEFAULT_K = 3  # sentences per hard cluster (LBEE §5)


def as_sentence_index(sentence_embeddings):
    """A :class:`SentenceIndex` over ``sentence_embeddings`` (a prebuilt index is returned as is)."""
    if isinstance(sentence_embeddings, SentenceIndex):
        return sentence_embeddings
    return SentenceIndex(as_unit_rows(sentence_embeddings, "sentence_embeddings"))


class Partition:
    """The split and the clusters every describer shares (LBEE Steps 1–3).

    Parameters
    ----------
    a : float, default=0.2
        Split margin in standard deviations of φ (SPEC §3.1).
    n_clusters : int, default=15
        Hard clusters C^h asked for; Ward forms ``min(n_clusters, n_hard)``.
    n_easy_clusters : int, optional
        Easy clusters C^e asked for, default ``n_clusters``.
    slicer : 'ward' or slicer object, default='ward'
        Where the hard groups come from: Ward on the hard split
        (:class:`lbee.slicers.WardSlicer`), or any slicer of
        :mod:`lbee.slicers` (fitted on these images, or unfitted: then fitted
        here with the split as its error signal).
    ward : str, default=lbee.core.clustering.DEFAULT_WARD
        The Ward variant (see :func:`lbee.core.clustering.ward_labels`), for
        both sides.
    memory : joblib.Memory, optional
        Caches the Ward trees, so that partitions of the same data at other
        ``n_clusters`` cut the same tree (sensitivity sweeps).

    Attributes
    ----------
    embeddings_ : ndarray of shape (n, d)
        The unit image embeddings.
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

    def __init__(self, *, a=DEFAULT_A, n_clusters=DEFAULT_N_CLUSTERS, n_easy_clusters=None, slicer="ward",
                 ward=DEFAULT_WARD, memory=None):
        self.a = a
        self.n_clusters = n_clusters
        self.n_easy_clusters = n_easy_clusters
        self.slicer = slicer
        self.ward = ward
        self.memory = memory

    def _slicer(self):
        from ..slicers import WardSlicer

        if isinstance(self.slicer, str):
            check_choice(self.slicer, "slicer", {"ward"})
            return WardSlicer(n_clusters=self.n_clusters, ward=self.ward, memory=self.memory)
        if not callable(getattr(self.slicer, "hard_groups", None)):
            raise TypeError(
                f"`slicer` must be 'ward' or a slicer object (lbee.slicers) with a `hard_groups` method; "
                f"received {type(self.slicer).__name__}."
            )
        return self.slicer

    def fit(self, image_embeddings, *, confidence=None, hard=None, easy=None):
        """Split the images, form the hard and easy groups and match them.

        Parameters
        ----------
        image_embeddings : array-like of shape (n, d)
            Image embeddings in the joint space (renormalised to unit rows).
        confidence : array-like of shape (n,), optional
            φ, higher = easier. Splits at μ ± aσ.
        hard, easy : array-like of bool, shape (n,), optional
            Explicit split masks, an alternative to ``confidence``.

        Returns
        -------
        self
        """
        images = as_unit_rows(image_embeddings, "image_embeddings")
        n_clusters = check_positive_int(self.n_clusters, "n_clusters")
        n_easy = n_clusters if self.n_easy_clusters is None else \
            check_positive_int(self.n_easy_clusters, "n_easy_clusters")
        a = check_real(self.a, "a", minimum=0.0)
        check_choice(self.ward, "ward", set(WARD_METHODS))
        hard_mask, easy_mask = resolve_split(images.shape[0], confidence=confidence, hard=hard, easy=easy, a=a)
        groups = self._slicer().hard_groups(images, confidence=confidence, hard=hard_mask)
        groups = [g for g in (np.asarray(g, dtype=np.int64) for g in groups) if g.size]
        if not groups:
            raise ValueError("`slicer` returned no non-empty hard group.")
        easy_idx = np.flatnonzero(easy_mask)
        labels = ward_labels(images[easy_idx], n_easy, self.memory, method=self.ward)
        c_e = int(labels.max()) + 1
        self.embeddings_ = images
        self.hard_mask_, self.easy_mask_ = hard_mask, easy_mask
        self.hard_groups_ = groups
        self.hard_prototypes_, self.hard_means_ = _group_prototypes(images, groups)
        self.easy_groups_ = [easy_idx[labels == j] for j in range(c_e)]
        self.easy_prototypes_, _ = prototypes(images[easy_idx], labels, c_e)
        self.matches_ = match_easy(self.hard_prototypes_, self.easy_prototypes_)
        self.reference_mean_ = images.mean(axis=0)
        self.n_hard_, self.n_easy_ = int(hard_mask.sum()), int(easy_mask.sum())
        self.n_hard_clusters_, self.n_easy_clusters_ = len(groups), c_e
        self.n_easy_clusters_asked_ = n_easy
        return self

    def _check_fitted(self):
        if not hasattr(self, "embeddings_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError("This Partition is not fitted yet; call `fit` (or use lbee.partition(...)).")

    @property
    def params(self):
        """The parameters and split sizes recorded in every :class:`Explanation` of this partition."""
        self._check_fitted()
        return {"a": float(self.a), "n_clusters": int(self.n_clusters),
                "n_easy_clusters": int(self.n_easy_clusters_asked_),
                "slicer": self.slicer if isinstance(self.slicer, str) else type(self.slicer).__name__,
                "ward": self.ward, "n_images": int(self.embeddings_.shape[0]),
                "n_hard": self.n_hard_, "n_easy": self.n_easy_}

    def describe(self, sentence_embeddings, method="fpdiff", *, k=DEFAULT_K, tau=CLIP_TAU, sentences=None):
        """Choose K sentences for every hard group against its easy twin (Step 4, SPEC §3.3).

        Parameters
        ----------
        sentence_embeddings : array-like of shape (N, d) or SentenceIndex
            Sentence embeddings in the joint space; a prebuilt
            :class:`lbee.core.sentence_index.SentenceIndex` is reused.
        method : {'tops', 'setdiff', 'pdiff', 'fpdiff', 'domino'}, default='fpdiff'
        k : int, default=3
        tau : float or None, default=lbee.core.selection.CLIP_TAU
            Threshold of SetDiff / FPDiff; None means the CLIP value (pass the
            encoder's ``default_tau`` for another encoder).
        sentences : list of str of length N, optional
            Sentence texts, kept for readable output.

        Returns
        -------
        Explanation
        """
        self._check_fitted()
        check_choice(method, "method", set(METHODS))
        index = as_sentence_index(sentence_embeddings)
        k, tau, sentences = check_describe_args(index, self.embeddings_, k, tau, sentences)
        chosen = select_all(method, index, self.hard_prototypes_, self.easy_prototypes_[self.matches_], k, tau,
                            cluster_means=self.hard_means_, reference_mean=self.reference_mean_)
        easy = [EasyCluster(g, p) for g, p in zip(self.easy_groups_, self.easy_prototypes_)]
        hard = [HardCluster(g, self.hard_prototypes_[i], int(self.matches_[i]), ids.tolist(), scores.tolist())
                for i, (g, (ids, scores)) in enumerate(zip(self.hard_groups_, chosen))]
        params = dict(self.params, k=k, tau=tau, n_sentences=int(index.n_sentences), method=method)
        return Explanation(hard, easy, method, params, sentences)

    def describe_methods(self, sentence_embeddings, methods=METHODS, **kwargs):
        """:meth:`describe` for several methods over one sentence index; dict of method -> Explanation."""
        if isinstance(methods, str):
            methods = [methods]
        if not methods:
            raise ValueError(f"`methods` is empty; expected one or more of {list(METHODS)}.")
        for m in methods:
            check_choice(m, "methods", set(METHODS))
        index = as_sentence_index(sentence_embeddings)
        return {m: self.describe(index, m, **kwargs) for m in methods}


def _group_prototypes(images, groups):
    labels = np.concatenate([np.full(len(g), i) for i, g in enumerate(groups)])
    members = images[np.concatenate(groups)]
    return prototypes(members, labels, len(groups))


def check_describe_args(index, image_embeddings, k, tau, sentences):
    """Validated (k, τ, sentence texts) for describing ``image_embeddings`` with ``index``."""
    k = check_positive_int(k, "k")
    tau = CLIP_TAU if tau is None else check_real(tau, "tau")
    d = np.shape(image_embeddings)[1] if np.ndim(image_embeddings) == 2 else None
    if d is not None and index.embeddings.shape[1] != d:
        raise ValueError(
            f"`sentence_embeddings` has dimension d={index.embeddings.shape[1]} but `image_embeddings` has d={d}; "
            "both must come from the same joint encoder."
        )
    if sentences is not None:
        sentences = [str(s) for s in sentences]
        if len(sentences) != index.n_sentences:
            raise ValueError(
                f"`sentences` has {len(sentences)} entries but `sentence_embeddings` has {index.n_sentences} rows."
            )
    return k, tau, sentences


def partition(image_embeddings, *, confidence=None, hard=None, easy=None, a=DEFAULT_A, n_clusters=DEFAULT_N_CLUSTERS,
              n_easy_clusters=None, slicer="ward", ward=DEFAULT_WARD, memory=None):
    """Split and cluster once; describe many times with :meth:`Partition.describe`.

    Parameters are those of :class:`Partition` and :meth:`Partition.fit`.

    Returns
    -------
    Partition
        Fitted.

    Examples
    --------
    >>> part = lbee.partition(X, confidence=phi, n_clusters=10)         # doctest: +SKIP
    >>> exps = {m: part.describe(S, m, k=3) for m in ("tops", "fpdiff")}  # doctest: +SKIP
    """
    return Partition(a=a, n_clusters=n_clusters, n_easy_clusters=n_easy_clusters, slicer=slicer, ward=ward,
                     memory=memory).fit(image_embeddings, confidence=confidence, hard=hard, easy=easy)
