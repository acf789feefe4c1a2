"""Step 2 of LBEE: Ward clustering of a split and cluster prototypes (the algorithms: `lbee.core.ward`).

Four ways to compute Ward (``ward_labels(method=...)``):

- ``'exact'``: Ward on all pairs. Distances come from blocked BLAS products
  (float64) into a condensed matrix, the tree from ``fastcluster`` (or SciPy's
  nearest-neighbour chain when ``fastcluster`` is missing); labels equal
  ``sklearn.cluster.AgglomerativeClustering(linkage="ward")``'s, numbering
  included. O(n²) memory: 20,000 images need 1.6 GB.
- ``'kmeans'``: Ward for large splits. The split is reduced to 64 dimensions
  (PCA), cut into a few hundred k-means cells (FAISS, fixed seed), and exact
  Ward runs on the cells' full-dimensional means weighted by their sizes; every
  image takes its cell's label. Ward's merge cost between two groups depends
  only on their sizes and means, so this *is* Ward under the one constraint
  that a cell is never split.
- ``'knn'``: scikit-learn's structured Ward on a nearest-neighbour graph.
- ``'auto'`` (default): ``'exact'`` up to `AUTO_WARD_THRESHOLD` images,
  ``'kmeans'`` above.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..typing import ArrayLike, FloatArray, IntArray
from .rows import UnitRows
from .ward import (
    condensed_distances,
    cut_tree_labels,
    exact_linkage,
    group_sums,
    kmeans_cells,
    kmeans_tree,
    weighted_ward_linkage,
)

if TYPE_CHECKING:
    from .explanation import Explanation

WARD_METHODS = ("auto", "exact", "kmeans", "knn")
DEFAULT_WARD = "auto"
# Above this many images 'auto' switches from exact Ward to k-means cells + weighted Ward (see
# benchmarks/bench_ward.py: at 4,000 images exact Ward takes ~1 s on 2 cores and needs 64 MB of distances,
# and the two agree to ARI >= 0.95 on structured data from a few thousand images on).
AUTO_WARD_THRESHOLD = 4000
#: Hard groups whose median size is below this are warned about as too small to describe a failure mode.
TINY_GROUP = 5


class ClusterCountWarning(UserWarning):
    """More clusters asked for than a split has images, or groups too small to describe (LBEE Step 2)."""


def capped_clusters_message(asked: int, n: int, side: str = "hard", option: str = "n_clusters (CLI --clusters)") -> str:
    """The one wording of "C was capped at the split size" (library, CLI, config and service)."""
    return (
        f"{asked} {side} clusters were asked for but the {side} split has {n} image(s): {n} cluster(s) were "
        f"formed, one image each, and a one-image group is not a failure mode; ask for fewer with {option}."
    )


def cluster_notes(explanation: Explanation, group_sizes: Sequence[int] | None = None) -> list[str]:
    """Warnings about what an explanation's clustering became, from its clusters and ``params``.

    Says when the easy clusters asked for exceed the easy split (the hard side
    is warned about by [`lbee.slicers.WardSlicer`][lbee.slicers.WardSlicer] as it clusters), and
    when the hard groups are tiny (median below `TINY_GROUP` images),
    with the number of clusters to try instead.

    ``group_sizes``: the sizes of the groups the number of clusters made, when the explanation's hard
    clusters are something else (hypotheses merged from them). Then tiny groups are not warned about: the
    merging joins the pieces of a failure whatever their number, and a trial's user read "5 of 9 hard clusters
    have fewer than 5 images" beside "merged into 2 hypotheses" as a contradiction.

    Returns
    -------
    list of str
    """
    p = explanation.params
    notes: list[str] = []
    asked_e, n_easy = p.get("n_easy_clusters"), p.get("n_easy")
    if asked_e is not None and n_easy is not None and int(asked_e) > int(n_easy):
        notes.append(
            capped_clusters_message(int(asked_e), int(n_easy), "easy", "n_easy_clusters (CLI --easy-clusters)")
        )
    sizes = np.array([len(c.indices) for c in explanation.hard_clusters])
    if group_sizes is None and sizes.size > 1 and np.median(sizes) < TINY_GROUP:
        n_hard = int(sizes.sum())
        twins = {int(c.easy_cluster) for c in explanation.hard_clusters}
        same = ", all matched to the same easy cluster" if len(twins) == 1 else ""
        better = max(1, n_hard // (2 * TINY_GROUP))
        small = sizes[sizes < TINY_GROUP]
        head = (
            f"{small.size} of {sizes.size} hard clusters ({n_hard} hard images) have fewer than {TINY_GROUP} images "
            f"(sizes {sizes.min()}–{sizes.max()}, median {np.median(sizes):g}){same}: their sentences describe a "
            "few images, not a failure mode."
        )
        if better < sizes.size:  # fewer clusters would make groups worth describing
            notes.append(
                f"{head} Ask for about {better} {'cluster' if better == 1 else 'clusters'} (--clusters, "
                "n_clusters in a config or the library), or a smaller split margin (--a) to put more images in "
                "the hard split."
            )
        else:  # as few clusters as that already: a large group beside stray images
            notes.append(f"{head} Read the larger groups first: the small ones hold stray images.")
    return notes


def warn_cluster_notes(explanation: Explanation, stacklevel: int = 2, group_sizes: Sequence[int] | None = None) -> None:
    """`cluster_notes` as `ClusterCountWarning` warnings."""
    for note in cluster_notes(explanation, group_sizes):
        warnings.warn(note, ClusterCountWarning, stacklevel=stacklevel + 1)


def ward_labels(
    embeddings: FloatArray | UnitRows,
    n_clusters: int,
    memory: Any = None,
    *,
    method: str = DEFAULT_WARD,
    n_neighbors: int = 15,
    n_cells: int | None = None,
    random_state: int = 0,
) -> IntArray:
    """Ward agglomerative clustering labels.

    Parameters
    ----------
    embeddings : ndarray or lbee.core.rows.UnitRows of shape (n_samples, d)
        Unit rows. A `UnitRows` of more than one block is read in blocks by 'kmeans'
        (never copied whole); 'exact' and 'knn' materialise it.
    n_clusters : int
        Requested clusters; the effective number is ``min(n_clusters, n_samples)``.
    memory : joblib.Memory or str, optional
        Caches the full Ward tree (the linkage matrix of 'exact', or the cells
        and their tree of 'kmeans'), so that cutting the same data at another
        ``n_clusters`` (a sweep over C) does not rebuild it. Labels are the same.
    method : {'auto', 'exact', 'kmeans', 'knn'}, default='auto'
        'exact' is Ward on all pairs (O(n²) memory and time). 'kmeans' is Ward
        on a few hundred k-means cells weighted by their sizes (see the module
        docstring); 'knn' restricts merges to a ``n_neighbors`` graph
        (scikit-learn's structured Ward). 'auto' is 'exact' up to
        `AUTO_WARD_THRESHOLD` images and 'kmeans' above.
    n_neighbors : int, default=15
        Graph degree for ``method='knn'``.
    n_cells : int, optional
        Cells of ``method='kmeans'``; default ``max(256, 16 * n_clusters)``
        (capped at ``n_samples``).
    random_state : int, default=0
        Seed of the k-means cells.

    Returns
    -------
    labels : ndarray of int, shape (n_samples,)
        Labels in ``range(min(n_clusters, n_samples))``. For 'exact' they equal
        ``sklearn.cluster.AgglomerativeClustering(linkage="ward")``'s,
        numbering included; 'kmeans' numbers its clusters the same way on the
        cell tree.
    """
    if method not in WARD_METHODS:
        raise ValueError(f"`ward` must be one of {list(WARD_METHODS)}; received {method!r}.")
    n = embeddings.shape[0]
    c = min(int(n_clusters), n)
    if c <= 1:
        return np.zeros(n, dtype=np.int64)
    if method == "auto":
        method = "exact" if n <= AUTO_WARD_THRESHOLD else "kmeans"
    if method == "exact":
        Z = _cached(exact_linkage, memory)(np.asarray(embeddings, dtype=np.float64))
        return cut_tree_labels(Z, c)
    if method == "kmeans":
        cells = n_cells if n_cells is not None else max(256, 16 * c)
        # UnitRows (lbee.core.rows) stay lazy: the cells and their means are computed in row blocks
        rows = embeddings if isinstance(embeddings, UnitRows) and not embeddings.small() else np.asarray(embeddings)
        cell_of, Z = _cached(kmeans_tree, memory)(rows, int(cells), int(random_state))
        labels: IntArray = cut_tree_labels(Z, min(c, Z.shape[0] + 1))[cell_of]
        return labels
    return _knn_labels(np.asarray(embeddings), c, memory, n_neighbors)


def ward_hard_groups(
    embeddings: ArrayLike,
    n_clusters: int,
    memory: Any = None,
    *,
    method: str = DEFAULT_WARD,
    hard: ArrayLike | None = None,
    confidence: ArrayLike | None = None,
    a: float = 0.2,
) -> tuple[IntArray, list[IntArray]]:
    """Ward clusters of the hard rows (LBEE Step 2): the hard groups of ``slicer='ward'``.

    The one implementation behind [`lbee.slicers.WardSlicer`][lbee.slicers.WardSlicer] and
    [`lbee.core.partition.Partition`][lbee.Partition]'s default slicer. Warns
    (`ClusterCountWarning`) when ``n_clusters`` exceeds the hard split.

    Parameters
    ----------
    embeddings : array-like of shape (n, d)
        Renormalised to unit rows.
    n_clusters : int
    memory : joblib.Memory or str, optional
        See `ward_labels`.
    method : {'auto', 'exact', 'kmeans', 'knn'}, default='auto'
    hard : array-like of bool, shape (n,), optional
        The hard split. With neither ``hard`` nor ``confidence``, every row is clustered.
    confidence : array-like of shape (n,), optional
        φ (higher = easier); hard = φ < μ − aσ. Ignored when ``hard`` is given.
    a : float, default=0.2

    Returns
    -------
    labels : ndarray of int64, shape (n,)
        Cluster of each row; -1 outside the hard split.
    groups : list of ndarray of int64
        The clusters (indices into the rows), in ``ward_labels``' label order.
    """
    from .._validation import check_choice, check_positive_int, check_real
    from .split import split_by_confidence

    X = embeddings if isinstance(embeddings, UnitRows) else UnitRows(embeddings, "embeddings")
    c = check_positive_int(n_clusters, "n_clusters")
    check_choice(method, "ward", set(WARD_METHODS))
    if hard is not None:
        mask = np.asarray(hard, dtype=bool)
        if mask.shape != (X.shape[0],):
            raise ValueError(f"`hard` must be a boolean mask of shape ({X.shape[0]},); received shape {mask.shape}.")
    elif confidence is not None:
        mask, _ = split_by_confidence(confidence, a=check_real(a, "a", minimum=0.0))
    else:
        mask = np.ones(X.shape[0], dtype=bool)
    idx = np.flatnonzero(mask)
    if idx.size == 0:
        raise ValueError("The hard split is empty: WardSlicer has nothing to cluster.")
    if c > idx.size:  # blame the caller of WardSlicer.fit / Partition.fit
        warnings.warn(capped_clusters_message(c, int(idx.size)), ClusterCountWarning, stacklevel=3)
    labels = ward_labels(X.subset(idx), c, memory, method=method)
    full = np.full(X.shape[0], -1, dtype=np.int64)
    full[idx] = labels
    return full, [idx[labels == i] for i in range(int(labels.max()) + 1)]


def _cached(func: Callable[..., Any], memory: Any) -> Callable[..., Any]:
    if memory is None:
        return func
    if isinstance(memory, str):
        from joblib import Memory

        memory = Memory(location=memory, verbose=0)
    cached: Callable[..., Any] = memory.cache(func)
    return cached


def _knn_labels(embeddings: FloatArray, c: int, memory: Any, n_neighbors: int) -> IntArray:
    from sklearn.cluster import AgglomerativeClustering

    n = embeddings.shape[0]
    connectivity = None
    if n > n_neighbors + 1:
        from sklearn.neighbors import kneighbors_graph

        connectivity = kneighbors_graph(embeddings, n_neighbors, include_self=False)
    model = AgglomerativeClustering(
        n_clusters=c,
        linkage="ward",
        memory=memory,
        connectivity=connectivity,
        compute_full_tree=True if memory is not None else "auto",
    )
    with warnings.catch_warnings():
        # A kNN graph of clustered data is often disconnected; scikit-learn joins the pieces itself.
        warnings.filterwarnings("ignore", message="the number of connected components")
        labels: IntArray = model.fit_predict(embeddings).astype(np.int64)
    return labels


# --------------------------------------------------------------------------- prototypes


def prototypes(embeddings: FloatArray | UnitRows, labels: ArrayLike, n_clusters: int) -> tuple[FloatArray, FloatArray]:
    """Renormalised mean of each cluster's unit embeddings.

    Parameters
    ----------
    embeddings : ndarray or lbee.core.rows.UnitRows of shape (n, d)
        Summed in row blocks (`lbee.core.ward.group_sums`).
    labels : ndarray of int, shape (n,)
        In ``range(n_clusters)``.
    n_clusters : int

    Returns
    -------
    protos : ndarray of shape (n_clusters, d)
        Unit rows.
    means : ndarray of shape (n_clusters, d)
        Plain means (Domino's describe step uses them).
    """
    labels = np.asarray(labels, dtype=np.int64)
    sums = group_sums(embeddings, labels, n_clusters)
    counts = np.bincount(labels, minlength=n_clusters).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums / counts[:, None]
    norms = np.linalg.norm(means, axis=1, keepdims=True)
    # A cluster of exactly opposite vectors has a zero mean; keep it zero rather than NaN.
    protos = np.divide(means, norms, out=np.zeros_like(means), where=norms > 0)
    return protos, means


def match_easy(hard_prototypes: FloatArray, easy_prototypes: FloatArray) -> IntArray:
    """Index of the most cosine-similar easy prototype for each hard one (ties: lowest index)."""
    matches: IntArray = np.argmax(hard_prototypes @ easy_prototypes.T, axis=1)
    return matches


# The algorithms live in lbee.core.ward; their names stay importable from here, where they were.
__all__ = [
    "AUTO_WARD_THRESHOLD",
    "DEFAULT_WARD",
    "TINY_GROUP",
    "WARD_METHODS",
    "ClusterCountWarning",
    "capped_clusters_message",
    "cluster_notes",
    "condensed_distances",
    "cut_tree_labels",
    "kmeans_cells",
    "match_easy",
    "prototypes",
    "ward_hard_groups",
    "ward_labels",
    "warn_cluster_notes",
    "weighted_ward_linkage",
]
