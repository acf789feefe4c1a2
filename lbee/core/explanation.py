"""What ``lbee.explain`` returns: hard and easy clusters with their sentences.

Reading one back checks it (`lbee.core.explanation_checks`); a run's ``explanation.json`` is
`lbee.core.explanation_payload`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..typing import ArrayLike, FloatArray, IntArray
from .explanation_checks import (
    check_explanation_ranges,
    check_partition,
)
from .explanation_payload import PAYLOAD_FORMAT, compact_payload, validate_explanation_payload

if TYPE_CHECKING:
    import pandas as pd


@dataclass
class EasyCluster:
    """An easy cluster: member ``indices`` into the n images and its unit ``prototype`` (d,)."""

    indices: IntArray
    prototype: FloatArray

    def to_dict(self) -> dict[str, Any]:
        return {"indices": self.indices.tolist(), "prototype": self.prototype.tolist()}

    def __repr__(self) -> str:
        return f"EasyCluster({len(self.indices)} images)"


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

    indices: IntArray
    prototype: FloatArray
    easy_cluster: int
    sentences: list[int] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)
    #: 'compose': per sentence, its conditions and the shares of hard / easy / twin images it holds for (in memory).
    details: list[Any] = field(default_factory=list, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "indices": self.indices.tolist(),
            "prototype": self.prototype.tolist(),
            "easy_cluster": int(self.easy_cluster),
            "sentences": [int(s) for s in self.sentences],
            "scores": [float(s) for s in self.scores],
        }

    def __repr__(self) -> str:
        return (
            f"HardCluster({len(self.indices)} images, easy_cluster={int(self.easy_cluster)}, "
            f"sentences={[int(s) for s in self.sentences]})"
        )


@dataclass
class Explanation:
    """The result of [`lbee.explain`][lbee.explain].

    Attributes
    ----------
    hard_clusters : list of HardCluster
    easy_clusters : list of EasyCluster
    method : str
    params : dict
        The parameters the explanation was computed with.
    sentence_texts : list of str or None
        The N sentences, when they were given.
    confidence : ndarray of shape (n,) or None
        φ of the n images when [`lbee.explain`][lbee.explain] was given it, for
        [`assignments`][lbee.Explanation.assignments]. Kept in memory only: [`to_dict`][lbee.Explanation.to_dict] does
        not store
        it (``explanation.json`` has ``assignments.parquet`` beside it).
    image_ids : list or None
        Row labels of the images (the DataFrame index with ``lbee.explain(data=df, ...)``); in memory only.
    unassigned : ndarray of int or None
        Hard images in no hard cluster (merged hypotheses keep what their description picks out); in memory, and
        in a run's ``explanation.json`` as ``unassigned_hard``.
    """

    hard_clusters: list[HardCluster]
    easy_clusters: list[EasyCluster]
    method: str
    params: dict[str, Any] = field(default_factory=dict)
    sentence_texts: list[str] | None = None
    confidence: FloatArray | None = field(default=None, repr=False, compare=False)
    image_ids: list[Any] | None = field(default=None, repr=False, compare=False)
    unassigned: IntArray | None = field(default=None, repr=False, compare=False)

    def __repr__(self) -> str:
        sizes = ", ".join(str(len(c.indices)) for c in self.hard_clusters[:8])
        more = ", ..." if len(self.hard_clusters) > 8 else ""
        return (
            f"Explanation(method={self.method!r}, {len(self.hard_clusters)} hard clusters (sizes {sizes}{more}), "
            f"{len(self.easy_clusters)} easy clusters, {len(self.selected)} sentences selected)"
        )

    def _sentence_text(self, s: int) -> str:
        return self.sentence_texts[s] if self.sentence_texts is not None else f"sentence {int(s)}"

    def to_pandas(self) -> pd.DataFrame:
        """One row per hard cluster: ``group``, ``size``, ``easy_cluster``, ``sentences``, ``scores``.

        ``sentences`` are texts, best first. For one row per image use [`assignments`][lbee.Explanation.assignments].

        Returns
        -------
        pandas.DataFrame
        """
        import pandas as pd

        return pd.DataFrame(
            {
                "group": np.arange(len(self.hard_clusters), dtype=np.int64),
                "size": [len(c.indices) for c in self.hard_clusters],
                "easy_cluster": [int(c.easy_cluster) for c in self.hard_clusters],
                "sentences": [[self._sentence_text(s) for s in c.sentences] for c in self.hard_clusters],
                "scores": [list(map(float, c.scores)) for c in self.hard_clusters],
            }
        )

    def assignments(
        self,
        confidence: ArrayLike | None = None,
        performance: ArrayLike | None = None,
        *,
        image_ids: list[Any] | None = None,
    ) -> pd.DataFrame:
        """One row per image: ``split`` (hard / easy / neutral), ``group``, ``phi`` and ``omega``.

        ``group`` is the hard-cluster index for hard images, the easy-cluster index for easy ones, -1 for neutral.

        φ and ω are not part of an explanation's file: pass them, or φ is the
        ``confidence`` that [`lbee.explain`][lbee.explain] was given (else NaN); ω is NaN
        when not passed.

        Parameters
        ----------
        confidence, performance : array-like of shape (n,), optional
        image_ids : list of length n, optional
            The index of the table (default: ``self.image_ids``, else 0..n-1).

        Returns
        -------
        pandas.DataFrame
        """
        import pandas as pd

        n = self.params.get("n_images")
        members = [np.asarray(c.indices) for c in self.hard_clusters] + [
            np.asarray(c.indices) for c in self.easy_clusters
        ]
        if n is None:
            n = 1 + max((int(m.max()) for m in members if m.size), default=-1)
        n = int(n)
        top = max((int(m.max()) for m in members if m.size), default=-1)
        if top >= n:
            raise ValueError(
                f"the explanation refers to image {top} but has n_images={n} (params); expected "
                f"image indices in [0, {n})."
            )
        phi = self.confidence if confidence is None else confidence
        columns: dict[str, FloatArray] = {}
        for name, values in (("phi", phi), ("omega", performance)):
            if values is None:
                columns[name] = np.full(n, np.nan)
                continue
            arr: FloatArray = np.asarray(values, dtype=np.float64).reshape(-1)
            if arr.shape[0] != n:
                raise ValueError(
                    f"`{'confidence' if name == 'phi' else 'performance'}` has {arr.shape[0]} values; "
                    f"expected {n}, one per image of the explanation."
                )
            columns[name] = arr
        split, group = self.split_and_group(n)
        index = image_ids if image_ids is not None else self.image_ids
        return pd.DataFrame(
            {"split": split, "group": group, **columns},
            index=pd.Index(index if index is not None else np.arange(n), name="image"),
        )

    def split_and_group(self, n: int) -> tuple[np.ndarray[Any, np.dtype[np.object_]], IntArray]:
        """Each image's split and group, from the clusters.

        Parameters
        ----------
        n : int
            Number of images.

        Returns
        -------
        split : ndarray of object, shape (n,)
            'hard', 'easy' or 'neutral'.
        group : ndarray of int, shape (n,)
            The cluster within its split; -1 for neutral images and for hard images in no hard cluster
            (``unassigned``).
        """
        split = np.full(n, "neutral", dtype=object)
        group = np.full(n, -1, dtype=np.int64)
        if self.unassigned is not None and len(self.unassigned):
            split[np.asarray(self.unassigned, dtype=np.int64)] = "hard"
        for j, e in enumerate(self.easy_clusters):
            split[e.indices] = "easy"
            group[e.indices] = j
        for i, h in enumerate(self.hard_clusters):
            split[h.indices] = "hard"
            group[h.indices] = i
        return split, group

    def _repr_html_(self) -> str:
        """A compact table of the hard clusters and their sentences (Jupyter)."""
        from html import escape

        rows = []
        for i, c in enumerate(self.hard_clusters):
            sents = "<br>".join(escape(str(self._sentence_text(s))) for s in c.sentences)
            rows.append(
                f"<tr><td>{i}</td><td>{len(c.indices)}</td><td>{int(c.easy_cluster)}</td>"
                f"<td style='text-align:left'>{sents}</td></tr>"
            )
        head = (
            f"<p><b>Explanation</b> · {escape(self.method)} · {len(self.hard_clusters)} hard clusters, "
            f"{len(self.easy_clusters)} easy, {len(self.selected)} sentences selected</p>"
        )
        return (
            head + "<table><tr><th>group</th><th>images</th><th>easy twin</th><th>sentences (best first)</th>"
            "</tr>" + "".join(rows) + "</table>"
        )

    @property
    def selected(self) -> list[int]:
        """Sorted list of int: R_S, the union of every hard cluster's sentences."""
        return sorted({int(s) for c in self.hard_clusters for s in c.sentences})

    def harm_order(self, performance: ArrayLike) -> list[int]:
        """The hard clusters, most harmful first: the order the CLI, ``report.md`` and the HTML report show them in.

        Harm is (1 − mean ω) × size: with a 0/1 correctness ω, the error rate times the size; ties go to the larger,
        then the lower-numbered cluster.

        Parameters
        ----------
        performance : array-like of shape (n,)
            ω of the n images (1 right, 0 wrong; or a score where higher is better).

        Returns
        -------
        list of int
            Indices into ``hard_clusters``.
        """
        return harm_order(self.hard_clusters, performance, self.params.get("n_images"))

    def cluster_sentences(self, i: int) -> list[Any]:
        """The sentences of hard cluster ``i`` as text (or indices when no text was given)."""
        ids = self.hard_clusters[i].sentences
        if self.sentence_texts is None:
            return list(ids)
        return [self.sentence_texts[s] for s in ids]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict; [`from_dict`][lbee.core.explanation.Explanation.from_dict] round-trips it."""
        return {
            "method": self.method,
            "params": dict(self.params),
            "hard_clusters": [c.to_dict() for c in self.hard_clusters],
            "easy_clusters": [c.to_dict() for c in self.easy_clusters],
            "selected": self.selected,
            "sentences": None if self.sentence_texts is None else list(self.sentence_texts),
        }

    @classmethod
    def from_dict(
        cls, data: Any, *, n_images: int | None = None, n_sentences: int | None = None, source: str = "data"
    ) -> Explanation:
        """Rebuild an `Explanation` from `to_dict` output, validating it.

        A file may have been edited, truncated or produced by something else:
        structure, types and ranges are checked and any problem raises
        ``ValueError`` (``TypeError`` when ``data`` is not a dict) naming the
        field, e.g. ``data.hard_clusters[2].indices[5]``.

        Parameters
        ----------
        data : dict
        n_images, n_sentences : int, optional
            Upper bounds (exclusive) for image and sentence indices, when the
            loader knows them; the length of ``sentences`` bounds sentence
            indices when texts are included. Indices are always non-negative
            integers below 2**62; without ``n_images``, a whole-dataset
            explanation's ``params['n_images']`` bounds its image indices (a
            per-class one, with ``params['label']``, indexes the whole run).
            Clusters must form a partition: no empty hard cluster, no image in
            two clusters of a side or in both a hard and an easy cluster.
        source : str, default='data'
            How messages name ``data`` (a file path, for loaders).

        Returns
        -------
        Explanation
        """
        from .explanation_checks import explanation_from_dict

        return explanation_from_dict(cls, data, n_images=n_images, n_sentences=n_sentences, source=source)


def harm_order(hard_clusters: Sequence[HardCluster], performance: ArrayLike, n: int | None = None) -> list[int]:
    """Indices of ``hard_clusters``, most harmful first ((1 − mean ω) × size; `Explanation.harm_order`)."""
    omega = np.asarray(performance, dtype=float)
    most = max((int(np.max(c.indices)) for c in hard_clusters if len(c.indices)), default=-1)
    if omega.ndim != 1 or omega.shape[0] <= most or omega.shape[0] != (n or omega.shape[0]):
        said = f"shape ({n},)" if n else f"at least {most + 1} of them"  # n: the explanation's images
        raise ValueError(f"`performance` has shape {omega.shape}; expected one ω per image, {said}.")
    sizes = [len(c.indices) for c in hard_clusters]
    risk = [(1.0 - float(omega[np.asarray(c.indices)].mean())) * k if k else 0.0 for c, k in zip(hard_clusters, sizes)]
    return sorted(range(len(hard_clusters)), key=lambda i: (-risk[i], -sizes[i], i))


# The checks and the file payload live in their own modules; their names stay importable from here.
__all__ = [
    "PAYLOAD_FORMAT",
    "EasyCluster",
    "Explanation",
    "HardCluster",
    "check_explanation_ranges",
    "check_partition",
    "compact_payload",
    "validate_explanation_payload",
]
