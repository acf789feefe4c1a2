"""``lbee.explain``: the LBEE split–cluster–match–select pipeline (SPEC §2–3)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._validation import as_unit_rows, check_choice, check_positive_int, check_real
from .clustering import WARD_METHODS, match_easy, prototypes, ward_labels
from .selection import METHODS, select_sentences
from .sentence_index import SentenceIndex
from .split import resolve_split

DEFAULT_TAU = 0.25  # calibrated for CLIP (LBEE footnote 2)


@dataclass
class EasyCluster:
    """An easy cluster: member ``indices`` into the n images and its unit ``prototype`` (d,)."""

    indices: np.ndarray
    prototype: np.ndarray

    def to_dict(self):
        return {"indices": self.indices.tolist(), "prototype": self.prototype.tolist()}


@dataclass
class HardCluster:
    """A hard cluster with the sentences chosen for it.

    Attributes
    ----------
    indices : ndarray of int, shape (n_members,)
        Members, as indices into the n images.
    prototype : ndarray of shape (d,)
        Renormalised mean of the members' unit embeddings.
    easy_cluster : int
        Index into ``Explanation.easy_clusters`` of the most similar easy prototype.
    sentences : list of int
        Chosen sentences (indices into the N sentences), best first.
    scores : list of float
        The method's score of each chosen sentence.
    """

    indices: np.ndarray
    prototype: np.ndarray
    easy_cluster: int
    sentences: list = field(default_factory=list)
    scores: list = field(default_factory=list)

    def to_dict(self):
        return {
            "indices": self.indices.tolist(),
            "prototype": self.prototype.tolist(),
            "easy_cluster": int(self.easy_cluster),
            "sentences": [int(s) for s in self.sentences],
            "scores": [float(s) for s in self.scores],
        }


@dataclass
class Explanation:
    """The result of :func:`lbee.explain`.

    Attributes
    ----------
    hard_clusters : list of HardCluster
    easy_clusters : list of EasyCluster
    method : str
    params : dict
        The parameters the explanation was computed with.
    sentence_texts : list of str or None
        The N sentences, when they were given.
    """

    hard_clusters: list
    easy_clusters: list
    method: str
    params: dict = field(default_factory=dict)
    sentence_texts: list | None = None

    @property
    def selected(self):
        """Sorted list of int: R_S, the union of every hard cluster's sentences."""
        return sorted({int(s) for c in self.hard_clusters for s in c.sentences})

    def cluster_sentences(self, i):
        """The sentences of hard cluster ``i`` as text (or indices when no text was given)."""
        ids = self.hard_clusters[i].sentences
        if self.sentence_texts is None:
            return list(ids)
        return [self.sentence_texts[s] for s in ids]

    def to_dict(self):
        """A JSON-serialisable dict; :meth:`from_dict` round-trips it."""
        return {
            "method": self.method,
            "params": dict(self.params),
            "hard_clusters": [c.to_dict() for c in self.hard_clusters],
            "easy_clusters": [c.to_dict() for c in self.easy_clusters],
            "selected": self.selected,
            "sentences": None if self.sentence_texts is None else list(self.sentence_texts),
        }

    @classmethod
    def from_dict(cls, data):
        """Rebuild an :class:`Explanation` from :meth:`to_dict` output."""
        if not isinstance(data, dict):
            raise TypeError(f"`data` must be a dict from Explanation.to_dict(); received {type(data).__name__}.")
        missing = {"method", "hard_clusters", "easy_clusters"} - set(data)
        if missing:
            raise ValueError(f"`data` lacks the key(s) {sorted(missing)}; is it an Explanation.to_dict() result?")
        easy = [EasyCluster(np.asarray(c["indices"], dtype=np.int64), np.asarray(c["prototype"], dtype=np.float64))
                for c in data["easy_clusters"]]
        hard = [HardCluster(np.asarray(c["indices"], dtype=np.int64), np.asarray(c["prototype"], dtype=np.float64),
                            int(c["easy_cluster"]), [int(s) for s in c["sentences"]],
                            [float(s) for s in c["scores"]])
                for c in data["hard_clusters"]]
        return cls(hard, easy, data["method"], dict(data.get("params", {})), data.get("sentences"))


class _Partition:
    """Split and clusters shared by every describer (computed once for ``method="all"``)."""

    def __init__(self, images, hard_groups, easy_mask, n_easy_clusters, ward_kw=None):
        self.images = images
        self.hard_groups = hard_groups
        self.hard_protos, self.hard_means = _group_prototypes(images, hard_groups)
        easy_idx = np.flatnonzero(easy_mask)
        labels = ward_labels(images[easy_idx], n_easy_clusters, **(ward_kw or {}))
        c_e = int(labels.max()) + 1
        self.easy_groups = [easy_idx[labels == j] for j in range(c_e)]
        self.easy_protos, _ = prototypes(images[easy_idx], labels, c_e)
        self.matches = match_easy(self.hard_protos, self.easy_protos)
        self.reference_mean = images.mean(axis=0)


def _group_prototypes(images, groups):
    labels = np.concatenate([np.full(len(g), i) for i, g in enumerate(groups)])
    members = images[np.concatenate(groups)]
    return prototypes(members, labels, len(groups))


def _hard_groups(images, hard_mask, n_clusters, slicer, confidence, ward_kw=None):
    if isinstance(slicer, str):
        check_choice(slicer, "slicer", {"ward"})
        hard_idx = np.flatnonzero(hard_mask)
        labels = ward_labels(images[hard_idx], n_clusters, **(ward_kw or {}))
        return [hard_idx[labels == i] for i in range(int(labels.max()) + 1)]
    groups = getattr(slicer, "hard_groups", None)
    if not callable(groups):
        raise TypeError(
            f"`slicer` must be 'ward' or a slicer object (lbee.slicers) with a `hard_groups` method; "
            f"received {type(slicer).__name__}."
        )
    result = [np.asarray(g, dtype=np.int64) for g in groups(images, confidence=confidence, hard=hard_mask)]
    result = [g for g in result if g.size]
    if not result:
        raise ValueError("`slicer` returned no non-empty hard group.")
    return result


def _prepare(image_embeddings, sentence_embeddings, confidence, hard, easy, a, n_clusters,
             n_easy_clusters, k, tau, slicer, sentences, ward="exact", ward_memory=None):
    images = as_unit_rows(image_embeddings, "image_embeddings")
    # A prebuilt SentenceIndex is reused as is (per-class loops over one sentence set).
    index = sentence_embeddings if isinstance(sentence_embeddings, SentenceIndex) else None
    sent = index.embeddings if index is not None else as_unit_rows(sentence_embeddings, "sentence_embeddings")
    if images.shape[1] != sent.shape[1]:
        raise ValueError(
            f"`sentence_embeddings` has dimension d={sent.shape[1]} but `image_embeddings` has d={images.shape[1]}; "
            "both must come from the same joint encoder."
        )
    n_clusters = check_positive_int(n_clusters, "n_clusters")
    n_easy_clusters = n_clusters if n_easy_clusters is None else check_positive_int(n_easy_clusters, "n_easy_clusters")
    check_positive_int(k, "k")
    tau = DEFAULT_TAU if tau is None else check_real(tau, "tau")
    a = check_real(a, "a", minimum=0.0)
    if sentences is not None:
        sentences = [str(s) for s in sentences]
        if len(sentences) != sent.shape[0]:
            raise ValueError(
                f"`sentences` has {len(sentences)} entries but `sentence_embeddings` has {sent.shape[0]} rows."
            )
    hard_mask, easy_mask = resolve_split(images.shape[0], confidence=confidence, hard=hard, easy=easy, a=a)
    check_choice(ward, "ward", set(WARD_METHODS))
    ward_kw = {"memory": ward_memory, "method": ward}
    groups = _hard_groups(images, hard_mask, n_clusters, slicer, confidence, ward_kw)
    partition = _Partition(images, groups, easy_mask, n_easy_clusters, ward_kw)
    params = {"a": a, "n_clusters": n_clusters, "n_easy_clusters": n_easy_clusters, "k": int(k), "tau": tau,
              "slicer": slicer if isinstance(slicer, str) else type(slicer).__name__, "ward": ward,
              "n_images": int(images.shape[0]), "n_sentences": int(sent.shape[0]),
              "n_hard": int(hard_mask.sum()), "n_easy": int(easy_mask.sum())}
    return partition, index or SentenceIndex(sent), params, sentences


def _describe(partition, index, method, params, sentences):
    check_choice(method, "method", set(METHODS))
    easy = [EasyCluster(g, p) for g, p in zip(partition.easy_groups, partition.easy_protos)]
    hard = []
    for i, group in enumerate(partition.hard_groups):
        j = int(partition.matches[i])
        ids, scores = select_sentences(
            method, index, partition.hard_protos[i], partition.easy_protos[j], params["k"], params["tau"],
            cluster_mean=partition.hard_means[i], reference_mean=partition.reference_mean,
        )
        hard.append(HardCluster(group, partition.hard_protos[i], j, ids.tolist(), scores.tolist()))
    return Explanation(hard, easy, method, dict(params, method=method), sentences)


def explain(image_embeddings, sentence_embeddings, *, confidence=None, hard=None, easy=None, a=0.2,
            method="fpdiff", n_clusters=15, n_easy_clusters=None, k=3, tau=0.25, slicer="ward",
            sentences=None, ward="exact"):
    """Find hard clusters of images and the sentences that describe them.

    Parameters
    ----------
    image_embeddings : array-like of shape (n, d)
        Image embeddings in the joint space (renormalised to unit rows).
    sentence_embeddings : array-like of shape (N, d) or SentenceIndex
        Sentence embeddings in the same space (renormalised to unit rows). A
        prebuilt :class:`lbee.core.sentence_index.SentenceIndex` is reused as is,
        which saves its set-up in loops over classes.
    confidence : array-like of shape (n,), optional
        φ, higher = easier (pass −entropy for entropy). Splits at μ ± aσ.
    hard, easy : array-like of bool, shape (n,), optional
        Explicit split masks, an alternative to ``confidence``.
    a : float, default=0.2
        Split margin in standard deviations of φ.
    method : {'tops', 'setdiff', 'pdiff', 'fpdiff', 'domino'}, default='fpdiff'
        The describer (SPEC §3.3).
    n_clusters : int, default=15
        Hard clusters; the effective number is ``min(n_clusters, n_hard)``.
    n_easy_clusters : int, optional
        Easy clusters, default ``n_clusters``; effective ``min(., n_easy)``.
    k : int, default=3
        Sentences kept per hard cluster.
    tau : float or None, default=0.25
        Similarity threshold of SetDiff / FPDiff; None means the CLIP default 0.25
        (pass the encoder's ``default_tau`` for another encoder).
    slicer : 'ward' or slicer object, default='ward'
        'ward' clusters the hard split; a slicer from :mod:`lbee.slicers`
        (fitted on these images, or unfitted: then fitted here with the split as
        its error signal) supplies the hard groups, most important first. The
        easy side is still Ward-clustered and every describer works on them.
    sentences : list of str of length N, optional
        Sentence texts, kept for readable output.
    ward : {'exact', 'knn'}, default='exact'
        Exact Ward (SPEC §3.2), or the approximate option for very large
        splits: merges restricted to a 15-nearest-neighbour graph (see
        :func:`lbee.core.clustering.ward_labels`).

    Returns
    -------
    Explanation
    """
    partition, index, params, sentences = _prepare(
        image_embeddings, sentence_embeddings, confidence, hard, easy, a, n_clusters, n_easy_clusters, k, tau,
        slicer, sentences, ward)
    return _describe(partition, index, method, params, sentences)


def explain_methods(image_embeddings, sentence_embeddings, *, methods=METHODS, **kwargs):
    """Run several describers over one split and clustering.

    Same parameters as :func:`explain`, with ``methods`` (a list of method names)
    instead of ``method``. Clustering is computed once.

    Returns
    -------
    dict of str to Explanation
    """
    if isinstance(methods, str):
        methods = [methods]
    if not methods:
        raise ValueError(f"`methods` is empty; expected one or more of {list(METHODS)}.")
    for m in methods:
        check_choice(m, "methods", set(METHODS))
    defaults = dict(confidence=None, hard=None, easy=None, a=0.2, n_clusters=15, n_easy_clusters=None, k=3,
                    tau=0.25, slicer="ward", sentences=None, ward="exact")
    unknown = set(kwargs) - set(defaults)
    if unknown:
        raise TypeError(f"explain_methods() got unexpected keyword argument(s) {sorted(unknown)}.")
    defaults.update(kwargs)
    partition, index, params, sentences = _prepare(image_embeddings, sentence_embeddings, **defaults)
    return {m: _describe(partition, index, m, params, sentences) for m in methods}
