"""What ``lbee.explain`` returns: hard and easy clusters with their sentences (SPEC §2)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


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
