"""Ward's tree, computed three ways (the algorithms behind `lbee.core.clustering.ward_labels`).

- exact Ward on all pairs: distances from blocked BLAS products (float64) into
  a condensed matrix, the tree from ``fastcluster`` (or SciPy's
  nearest-neighbour chain when ``fastcluster`` is missing);
- weighted Ward by the nearest-neighbour chain (a point of weight w behaves as
  w coincident points);
- k-means cells (FAISS, in a PCA reduction) and the weighted Ward tree of
  their means: Ward under the one constraint that a cell is never split.

Trees are SciPy linkage matrices; `cut_tree_labels` cuts one into
labels numbered as scikit-learn numbers them.
"""

from __future__ import annotations

import heapq

import numpy as np

from .._blas import one_blas_thread
from ..typing import AnyArray, ArrayLike, FloatArray, IntArray
from . import rows as rows_module
from .rows import UnitRows

KMEANS_DIM = 64  # PCA dimensions the k-means cells are found in
KMEANS_TRAIN_PER_CELL = 48  # k-means trains on at most this many sampled rows per cell, then assigns every row
KMEANS_ITER = 15
PCA_ROWS = 16384  # the PCA basis of 'kmeans' comes from at most this many sampled rows
# Up to this many rows the PCA and k-means of 'kmeans' run on one thread (BLAS and OpenMP): on a busy machine
# two spinning threads made them 5-10x slower than one (benchmarks/bench_ward.py); results do not depend on it.
KMEANS_ONE_THREAD_ROWS = 200_000
_ONE_THREAD_ROWS = 1024  # exact Ward on up to this many rows computes its distances on one BLAS thread
_BLOCK_ROWS = 2048  # rows of the blocked Gram product (2,048 x n float64: 330 MB at n = 20,000)


# --------------------------------------------------------------------------- exact Ward


def condensed_distances(X: ArrayLike, *, block_rows: int = _BLOCK_ROWS) -> FloatArray:
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
    rows: FloatArray = np.ascontiguousarray(X, dtype=np.float64)
    n = rows.shape[0]
    if n <= _ONE_THREAD_ROWS:  # small products: two busy BLAS threads spin far longer than one computes
        with one_blas_thread():
            return _condensed(rows, block_rows)
    return _condensed(rows, block_rows)


def _condensed(X: FloatArray, block_rows: int) -> FloatArray:
    n = X.shape[0]
    sq = np.einsum("ij,ij->i", X, X)
    out = np.empty(n * (n - 1) // 2)
    pos = 0
    for i0 in range(0, n - 1, block_rows):
        i1 = min(i0 + block_rows, n - 1)
        # rows i0..i1-1 against columns i0+1..n-1: the upper triangle of this band
        g = X[i0:i1] @ X[i0 + 1 :].T
        g *= -2.0
        g += sq[i0:i1, None]
        g += sq[None, i0 + 1 :]
        np.maximum(g, 0.0, out=g)
        np.sqrt(g, out=g)
        upper = np.arange(g.shape[1])[None, :] >= np.arange(i1 - i0)[:, None]  # g[r, r:] of each row r, in order
        band = g[upper]
        out[pos : pos + band.size] = band
        pos += band.size
    return out


def exact_linkage(X: FloatArray) -> FloatArray:
    """SciPy-convention Ward linkage matrix (n-1, 4) of the rows of X."""
    if X.shape[0] < 2:
        return np.zeros((0, 4))
    y = condensed_distances(X)
    try:
        import fastcluster
    except ImportError:  # same tree, SciPy's nearest-neighbour chain (copies the distances once)
        from scipy.cluster.hierarchy import linkage

        tree: FloatArray = linkage(y, method="ward")
        return tree
    tree = fastcluster.linkage(y, method="ward", preserve_input=False)
    return tree


def cut_tree_labels(Z: FloatArray, n_clusters: int) -> IntArray:
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


def weighted_ward_linkage(points: ArrayLike, weights: ArrayLike | None = None) -> FloatArray:
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
    chain: list[int] = []
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


def _relabel(Z: FloatArray, n: int) -> FloatArray:
    """SciPy's ``label``: rename slot indices to tree nodes (merge i creates node n + i)."""
    parent = list(range(2 * n - 1))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    out: FloatArray = Z.copy()
    for i in range(n - 1):
        a, b = find(int(Z[i, 0])), find(int(Z[i, 1]))
        out[i, 0], out[i, 1] = min(a, b), max(a, b)
        parent[a] = parent[b] = n + i
    return out


# --------------------------------------------------------------------------- k-means cells + weighted Ward


def kmeans_cells(
    X: FloatArray | UnitRows, n_cells: int, *, dim: int = KMEANS_DIM, random_state: int = 0, n_iter: int = KMEANS_ITER
) -> IntArray:
    """Cut the rows of X into k-means cells found in a PCA reduction.

    Parameters
    ----------
    X : ndarray or lbee.core.rows.UnitRows of shape (n, d)
        A UnitRows is read in row blocks (only the float32 projection, n x ``dim``, is held).
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
    if isinstance(X, UnitRows):  # read in row blocks: only the (n, dim) projection is held
        Y = _reduce_blocks(X, dim, random_state)
    else:
        Xf = np.asarray(X, dtype=np.float32)
        if d > dim:
            # the basis and the centre from at most 16,384 rows (a seeded sample): enough for 64 directions
            rows = Xf if n <= PCA_ROWS else Xf[np.random.default_rng(random_state).choice(n, PCA_ROWS, replace=False)]
            mean = rows.mean(axis=0, dtype=np.float64)
            basis = _basis(rows, mean, dim)
            Y = Xf @ basis
            Y -= (mean.astype(np.float32) @ basis)[None, :]
        else:
            Y = Xf - Xf.mean(axis=0, dtype=np.float64).astype(np.float32)[None, :]
    cell = faiss_kmeans(
        Y, k, seed=int(random_state) + 1234, n_iter=n_iter, max_points_per_centroid=KMEANS_TRAIN_PER_CELL
    )
    _, cell_of = np.unique(cell, return_inverse=True)  # renumbered without empty cells
    return cell_of.astype(np.int64).ravel()


def _basis(rows: AnyArray, mean: FloatArray, dim: int) -> AnyArray:
    """The ``dim`` leading principal directions (d, dim) float32 of float32 ``rows`` about ``mean``."""
    return _leading((rows.T @ rows).astype(np.float64) / rows.shape[0] - np.outer(mean, mean), dim)


def _leading(cov: FloatArray, dim: int) -> AnyArray:
    with one_blas_thread():  # d x d (512): 0.04 s on one thread; two threads on a busy machine took 2 s at 1M rows
        _, vecs = np.linalg.eigh(cov)
    basis: AnyArray = np.ascontiguousarray(vecs[:, ::-1][:, :dim], dtype=np.float32)
    return basis


def _reduce_blocks(X: UnitRows, dim: int, random_state: int) -> AnyArray:
    """`kmeans_cells`' centred PCA projection (n, dim) float32 of ``X``, read in row blocks.

    The same computation as for an in-memory array, block by block: the basis and the centre (its float32
    column mean, summed in float64) from the same seeded sample, then each block projected with one product.
    One pass over the rows: k-means does not depend on where the projection is centred, so the centre is
    the sample's mean (all rows up to `PCA_ROWS`), not a pass of its own.
    """
    n, d = X.shape
    if d <= dim:
        total = np.zeros(d)
        for _, b in X.blocks():
            total += b.astype(np.float32).sum(axis=0, dtype=np.float64)
        centre = (total / n).astype(np.float32)[None, :]
        Y = np.empty((n, d), dtype=np.float32)
        for i0, b in X.blocks():
            Y[i0 : i0 + len(b)] = b.astype(np.float32) - centre
        return Y
    sample = np.arange(n) if n <= PCA_ROWS else np.random.default_rng(random_state).choice(n, PCA_ROWS, replace=False)
    gram, total = np.zeros((d, d)), np.zeros(d)
    for p0 in range(0, sample.size, rows_module.BLOCK_ROWS):  # the sample's Gram matrix and sum, a block at a time
        b = X.take(sample[p0 : p0 + rows_module.BLOCK_ROWS]).astype(np.float32)
        gram += b.T @ b
        total += b.sum(axis=0, dtype=np.float64)
    mean = total / sample.size
    basis = _leading(gram / sample.size - np.outer(mean, mean), dim)
    shift = (mean.astype(np.float32) @ basis)[None, :]
    Y = np.empty((n, dim), dtype=np.float32)
    for i0, b in X.blocks():
        Y[i0 : i0 + len(b)] = b.astype(np.float32) @ basis - shift
    return Y


def kmeans_tree(X: FloatArray | UnitRows, n_cells: int, random_state: int) -> tuple[IntArray, FloatArray]:
    """Cells of X and the weighted Ward tree of their full-dimensional means."""
    if X.shape[0] <= KMEANS_ONE_THREAD_ROWS:
        from threadpoolctl import threadpool_limits

        with threadpool_limits(1):
            cell_of = kmeans_cells(X, n_cells, random_state=random_state)
    else:
        cell_of = kmeans_cells(X, n_cells, random_state=random_state)
    m = int(cell_of.max()) + 1
    counts = np.bincount(cell_of, minlength=m).astype(np.float64)
    means = group_sums(X, cell_of, m) / counts[:, None]
    return cell_of, weighted_ward_linkage(means, counts)


#: Up to this many rows, `group_sums` sums each group's rows directly.
_SMALL_SUM_ROWS = 2048


def group_sums(X: FloatArray | UnitRows, labels: IntArray, n_groups: int) -> FloatArray:
    """Row sums per label: one sparse (n_groups x n) indicator product, no ``np.add.at``.

    Each group's rows are added in index order, as ``np.add.at`` adds them
    (same floating-point result), in one pass over X. A `UnitRows` of more than one
    block is summed block by block (the blocks' sums added: the last digits may differ from one product).
    """
    n = X.shape[0]
    if n <= _SMALL_SUM_ROWS:  # a class of a per-class run: building the sparse indicator costs more than summing
        rows = np.asarray(X, dtype=np.float64)
        sums = np.zeros((n_groups, rows.shape[1]))
        for g in np.unique(labels).tolist():  # a reduction along axis 0 adds the rows in index order, as add.at
            sums[g] = rows[labels == g].sum(axis=0)
        return sums
    from scipy.sparse import csr_matrix

    if isinstance(X, UnitRows) and not X.small():  # one indicator product per row block, summed
        sums = np.zeros((n_groups, X.shape[1]))
        for i0, b in X.blocks():
            m = len(b)
            part = csr_matrix((np.ones(m), (labels[i0 : i0 + m], np.arange(m))), shape=(n_groups, m))
            sums += part @ b
        return sums
    indicator = csr_matrix((np.ones(n), (labels, np.arange(n))), shape=(n_groups, n))
    return np.asarray(indicator @ np.asarray(X), dtype=np.float64)
