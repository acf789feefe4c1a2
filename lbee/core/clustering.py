"""Step 2 of LBEE: Ward clustering of a split and cluster prototypes.

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
- ``'auto'`` (default): ``'exact'`` up to :data:`AUTO_WARD_THRESHOLD` images,
  ``'kmeans'`` above.
"""

from __future__ import annotations

import heapq
import warnings

import numpy as np

from .._blas import one_blas_thread

WARD_METHODS = ("auto", "exact", "kmeans", "knn")
DEFAULT_WARD = "auto"
# Above this many images 'auto' switches from exact Ward to k-means cells + weighted Ward (see
# benchmarks/bench_ward.py: at 4,000 images exact Ward takes ~1 s on 2 cores and needs 64 MB of distances,
# and the two agree to ARI >= 0.95 on structured data from a few thousand images on).
AUTO_WARD_THRESHOLD = 4000
KMEANS_DIM = 64  # PCA dimensions the k-means cells are found in
KMEANS_TRAIN_PER_CELL = 48  # k-means trains on at most this many sampled rows per cell, then assigns every row
KMEANS_ITER = 15
# Up to this many rows the PCA and k-means of 'kmeans' run on one thread (BLAS and OpenMP): on a busy machine
# two spinning threads made them 5-10x slower than one (benchmarks/bench_ward.py); results do not depend on it.
KMEANS_ONE_THREAD_ROWS = 200_000
_ONE_THREAD_ROWS = 1024  # exact Ward on up to this many rows computes its distances on one BLAS thread
_BLOCK_ROWS = 2048  # rows of the blocked Gram product (2,048 x n float64: 330 MB at n = 20,000)
#: Hard groups whose median size is below this are warned about as too small to describe a failure mode.
TINY_GROUP = 5


class ClusterCountWarning(UserWarning):
    """More clusters asked for than a split has images, or groups too small to describe (LBEE Step 2)."""


def capped_clusters_message(asked, n, side="hard", option="n_clusters (CLI --clusters)"):
    """The one wording of "C was capped at the split size" (library, CLI, config and service)."""
    return (f"{asked} {side} clusters were asked for but the {side} split has {n} image(s): {n} cluster(s) were "
            f"formed, one image each, and a one-image group is not a failure mode; ask for fewer with {option}.")


def cluster_notes(explanation):
    """Warnings about what an explanation's clustering became, from its clusters and ``params``.

    Says when the easy clusters asked for exceed the easy split (the hard side
    is warned about by :class:`lbee.slicers.WardSlicer` as it clusters), and
    when the hard groups are tiny (median below :data:`TINY_GROUP` images),
    with the number of clusters to try instead.

    Returns
    -------
    list of str
    """
    p = explanation.params
    notes = []
    asked_e, n_easy = p.get("n_easy_clusters"), p.get("n_easy")
    if asked_e is not None and n_easy is not None and int(asked_e) > int(n_easy):
        notes.append(capped_clusters_message(int(asked_e), int(n_easy), "easy",
                                             "n_easy_clusters (CLI --easy-clusters)"))
    sizes = np.array([len(c.indices) for c in explanation.hard_clusters])
    if sizes.size > 1 and np.median(sizes) < TINY_GROUP:
        n_hard = int(sizes.sum())
        twins = {int(c.easy_cluster) for c in explanation.hard_clusters}
        same = ", all matched to the same easy cluster" if len(twins) == 1 else ""
        better = max(1, n_hard // (2 * TINY_GROUP))
        notes.append(f"{sizes.size} hard clusters of {n_hard} hard images are tiny (sizes {sizes.min()}–"
                     f"{sizes.max()}, median {np.median(sizes):g}){same}: each group's sentences describe a few "
                     f"images, not a failure mode. Try about {better} cluster(s) (n_clusters; CLI --clusters), or a "
                     "smaller split margin a to put more images in the hard split.")
    return notes


def warn_cluster_notes(explanation, stacklevel=2):
    """:func:`cluster_notes` as :class:`ClusterCountWarning` warnings."""
    for note in cluster_notes(explanation):
        warnings.warn(note, ClusterCountWarning, stacklevel=stacklevel + 1)


def ward_labels(embeddings, n_clusters, memory=None, *, method=DEFAULT_WARD, n_neighbors=15, n_cells=None,
                random_state=0):
    """Ward agglomerative clustering labels.

    Parameters
    ----------
    embeddings : ndarray of shape (n_samples, d)
        Unit rows.
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
        :data:`AUTO_WARD_THRESHOLD` images and 'kmeans' above.
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
        Z = _cached(_exact_linkage, memory)(np.asarray(embeddings, dtype=np.float64))
        return cut_tree_labels(Z, c)
    if method == "kmeans":
        cells = n_cells if n_cells is not None else max(256, 16 * c)
        cell_of, Z = _cached(_kmeans_tree, memory)(np.asarray(embeddings), int(cells), int(random_state))
        return cut_tree_labels(Z, min(c, Z.shape[0] + 1))[cell_of]
    return _knn_labels(embeddings, c, memory, n_neighbors)


def _cached(func, memory):
    if memory is None:
        return func
    if isinstance(memory, str):
        from joblib import Memory

        memory = Memory(location=memory, verbose=0)
    return memory.cache(func)


def _knn_labels(embeddings, c, memory, n_neighbors):
    from sklearn.cluster import AgglomerativeClustering

    n = embeddings.shape[0]
    connectivity = None
    if n > n_neighbors + 1:
        from sklearn.neighbors import kneighbors_graph

        connectivity = kneighbors_graph(embeddings, n_neighbors, include_self=False)
    model = AgglomerativeClustering(n_clusters=c, linkage="ward", memory=memory, connectivity=connectivity,
                                    compute_full_tree=True if memory is not None else "auto")
    with warnings.catch_warnings():
        # A kNN graph of clustered data is often disconnected; scikit-learn joins the pieces itself.
        warnings.filterwarnings("ignore", message="the number of connected components")
        return model.fit_predict(embeddings).astype(np.int64)


# --------------------------------------------------------------------------- exact Ward


def condensed_distances(X, *, block_rows=_BLOCK_ROWS):
    """Euclidean distances of all pairs, in SciPy's condensed order, by blocked BLAS products.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    block_rows : int, default=2048
        Rows per Gram block: memory beyond the result is ``block_rows * n`` floats.

    Returns
    -------
    ndarray of float64, shape (n * (n - 1) // 2,)
        ``||x_i - x_j||`` for i < j, row-major (as ``scipy.spatial.distance.pdist``).
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    n = X.shape[0]
    if n <= _ONE_THREAD_ROWS:  # small products: two busy BLAS threads spin far longer than one computes
        with one_blas_thread():
            return _condensed(X, block_rows)
    return _condensed(X, block_rows)


def _condensed(X, block_rows):
    n = X.shape[0]
    sq = np.einsum("ij,ij->i", X, X)
    out = np.empty(n * (n - 1) // 2)
    pos = 0
    for i0 in range(0, n - 1, block_rows):
        i1 = min(i0 + block_rows, n - 1)
        # rows i0..i1-1 against columns i0+1..n-1: the upper triangle of this band
        g = X[i0:i1] @ X[i0 + 1:].T
        g *= -2.0
        g += sq[i0:i1, None]
        g += sq[None, i0 + 1:]
        np.maximum(g, 0.0, out=g)
        np.sqrt(g, out=g)
        for r in range(i1 - i0):
            length = n - 1 - (i0 + r)
            out[pos:pos + length] = g[r, r:]
            pos += length
    return out


def _exact_linkage(X):
    """SciPy-convention Ward linkage matrix (n-1, 4) of the rows of X."""
    if X.shape[0] < 2:
        return np.zeros((0, 4))
    y = condensed_distances(X)
    try:
        import fastcluster
    except ImportError:  # same tree, SciPy's nearest-neighbour chain (copies the distances once)
        from scipy.cluster.hierarchy import linkage

        return linkage(y, method="ward")
    return fastcluster.linkage(y, method="ward", preserve_input=False)


def cut_tree_labels(Z, n_clusters):
    """Cut a linkage matrix into ``n_clusters`` clusters, numbered as scikit-learn numbers them.

    The last ``n_clusters - 1`` merges are undone; clusters are numbered in the
    order of ``AgglomerativeClustering``'s heap of tree nodes, so labels equal
    its ``labels_`` for the same tree.

    Parameters
    ----------
    Z : ndarray of shape (n - 1, 4)
        Linkage matrix (SciPy convention: merge ``i`` creates node ``n + i``).
    n_clusters : int
        In ``[1, n]``.

    Returns
    -------
    ndarray of int, shape (n,)
    """
    n = Z.shape[0] + 1
    if n_clusters <= 1:
        return np.zeros(n, dtype=np.int64)
    children = Z[:, :2].astype(np.int64)
    nodes = [-(int(children[-1].max()) + 1)]
    for _ in range(n_clusters - 1):
        these = children[-nodes[0] - n]
        heapq.heappush(nodes, -int(these[0]))
        heapq.heappushpop(nodes, -int(these[1]))
    node_label = [-1] * (2 * n - 1)
    for i, node in enumerate(nodes):
        node_label[-node] = i
    kids = children.tolist()
    for j in range(n - 2, -1, -1):  # top-down: a node passes its label to both children
        lab = node_label[n + j]
        if lab >= 0:
            a, b = kids[j]
            node_label[a] = lab
            node_label[b] = lab
    return np.asarray(node_label[:n], dtype=np.int64)


# --------------------------------------------------------------------------- weighted Ward (NN chain)


def weighted_ward_linkage(points, weights=None):
    """Exact Ward linkage of weighted points by the nearest-neighbour chain.

    A point of weight w behaves as w coincident points: the first merge cost of
    two points is ``2 w_i w_j / (w_i + w_j) ||x_i - x_j||²`` (squared SciPy
    Ward height), later costs follow Lance–Williams with the summed weights.
    With unit weights this is ``scipy.cluster.hierarchy.linkage(points, 'ward')``.

    Parameters
    ----------
    points : ndarray of shape (m, d)
    weights : ndarray of shape (m,), optional
        Positive weights (cluster sizes); default all 1.

    Returns
    -------
    Z : ndarray of shape (m - 1, 4)
        SciPy linkage matrix: merged nodes, Ward height, summed weight; rows
        sorted by height (stable), nodes numbered as SciPy numbers them.
    """
    P = np.asarray(points, dtype=np.float64)
    m = P.shape[0]
    w = np.ones(m) if weights is None else np.asarray(weights, dtype=np.float64).copy()
    if m < 2:
        return np.zeros((0, 4))
    sq = np.einsum("ij,ij->i", P, P)
    D = sq[:, None] + sq[None, :] - 2.0 * (P @ P.T)
    np.maximum(D, 0.0, out=D)
    D *= 2.0 * np.outer(w, w) / (w[:, None] + w[None, :])  # squared Ward heights between the atoms
    np.fill_diagonal(D, np.inf)
    active = np.ones(m, dtype=bool)
    Z = np.empty((m - 1, 4))
    chain = []
    for step in range(m - 1):
        if not chain:
            chain.append(int(np.flatnonzero(active)[0]))
        while True:
            x = chain[-1]
            y = int(np.argmin(D[x]))  # inactive rows / columns hold inf; ties: lowest index
            best = D[x, y]
            if len(chain) > 1 and D[x, chain[-2]] <= best:  # SciPy keeps the chain's previous element on ties
                y, best = chain[-2], D[x, chain[-2]]
            if len(chain) > 1 and y == chain[-2]:
                break
            chain.append(y)
        chain.pop()
        chain.pop()
        x, y = min(x, y), max(x, y)
        wx, wy = w[x], w[y]
        Z[step] = (x, y, np.sqrt(best), wx + wy)
        # Lance–Williams for Ward on squared heights; the merged cluster takes y's slot.
        others = active.copy()
        others[[x, y]] = False
        wi = w[others]
        t = 1.0 / (wx + wy + wi)
        new = ((wi + wx) * D[x, others] + (wi + wy) * D[y, others] - wi * best) * t
        D[y, others] = new
        D[others, y] = new
        D[x, :] = np.inf
        D[:, x] = np.inf
        active[x] = False
        w[y] = wx + wy
    Z = Z[np.argsort(Z[:, 2], kind="mergesort")]
    return _relabel(Z, m)


def _relabel(Z, n):
    """SciPy's ``label``: rename slot indices to tree nodes (merge i creates node n + i)."""
    parent = list(range(2 * n - 1))

    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    out = Z.copy()
    for i in range(n - 1):
        a, b = find(int(Z[i, 0])), find(int(Z[i, 1]))
        out[i, 0], out[i, 1] = min(a, b), max(a, b)
        parent[a] = parent[b] = n + i
    return out


# --------------------------------------------------------------------------- k-means cells + weighted Ward


def kmeans_cells(X, n_cells, *, dim=KMEANS_DIM, random_state=0, n_iter=KMEANS_ITER):
    """Cut the rows of X into k-means cells found in a PCA reduction.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    n_cells : int
        Requested cells (at most n; empty cells are dropped).
    dim : int, default=64
        PCA dimensions (float32) the cells are found in.
    random_state : int, default=0
        FAISS k-means seed.
    n_iter : int, default=15
        k-means iterations, on at most ``KMEANS_TRAIN_PER_CELL`` sampled rows per cell.

    Returns
    -------
    cell_of : ndarray of int, shape (n,)
        Cell of each row, in ``range(n_cells_found)``.
    """
    from .sentence_index import faiss_kmeans

    n, d = X.shape
    k = min(int(n_cells), n)
    if k >= n:
        return np.arange(n, dtype=np.int64)
    Xf = np.asarray(X, dtype=np.float32)
    mean = Xf.mean(axis=0, dtype=np.float64)
    if d > dim:
        # the basis from at most 16,384 rows (a seeded sample): enough for 64 directions
        rows = Xf if n <= 16384 else Xf[np.random.default_rng(random_state).choice(n, 16384, replace=False)]
        cov = (rows.T @ rows).astype(np.float64) / rows.shape[0] - np.outer(mean, mean)
        _, vecs = np.linalg.eigh(cov)
        basis = np.ascontiguousarray(vecs[:, ::-1][:, :dim], dtype=np.float32)
        Y = Xf @ basis
        Y -= (mean.astype(np.float32) @ basis)[None, :]
    else:
        Y = Xf - mean.astype(np.float32)[None, :]
    cell = faiss_kmeans(Y, k, seed=int(random_state) + 1234, n_iter=n_iter,
                        max_points_per_centroid=KMEANS_TRAIN_PER_CELL)
    _, cell_of = np.unique(cell, return_inverse=True)  # renumbered without empty cells
    return cell_of.astype(np.int64).ravel()


def _kmeans_tree(X, n_cells, random_state):
    """Cells of X and the weighted Ward tree of their full-dimensional means."""
    if X.shape[0] <= KMEANS_ONE_THREAD_ROWS:
        from threadpoolctl import threadpool_limits

        with threadpool_limits(1):
            cell_of = kmeans_cells(X, n_cells, random_state=random_state)
    else:
        cell_of = kmeans_cells(X, n_cells, random_state=random_state)
    m = int(cell_of.max()) + 1
    counts = np.bincount(cell_of, minlength=m).astype(np.float64)
    means = _group_sums(X, cell_of, m) / counts[:, None]
    return cell_of, weighted_ward_linkage(means, counts)


# --------------------------------------------------------------------------- prototypes


def _group_sums(X, labels, n_groups):
    """Row sums per label: one sparse (n_groups x n) indicator product, no ``np.add.at``.

    Each group's rows are added in index order, as ``np.add.at`` adds them
    (same floating-point result), in one pass over X.
    """
    from scipy.sparse import csr_matrix

    n = X.shape[0]
    indicator = csr_matrix((np.ones(n), (labels, np.arange(n))), shape=(n_groups, n))
    return np.asarray(indicator @ X, dtype=np.float64)


def prototypes(embeddings, labels, n_clusters):
    """Renormalised mean of each cluster's unit embeddings.

    Parameters
    ----------
    embeddings : ndarray of shape (n, d)
    labels : ndarray of int, shape (n,)
        In ``range(n_clusters)``.
    n_clusters : int

    Returns
    -------
    protos : ndarray of shape (n_clusters, d)
        Unit rows (SPEC §1).
    means : ndarray of shape (n_clusters, d)
        Plain means (Domino's describe step uses them).
    """
    labels = np.asarray(labels, dtype=np.int64)
    sums = _group_sums(embeddings, labels, n_clusters)
    counts = np.bincount(labels, minlength=n_clusters).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums / counts[:, None]
    norms = np.linalg.norm(means, axis=1, keepdims=True)
    # A cluster of exactly opposite vectors has a zero mean; keep it zero rather than NaN.
    protos = np.divide(means, norms, out=np.zeros_like(means), where=norms > 0)
    return protos, means


def match_easy(hard_prototypes, easy_prototypes):
    """Index of the most cosine-similar easy prototype for each hard one (ties: lowest index)."""
    return np.argmax(hard_prototypes @ easy_prototypes.T, axis=1)
