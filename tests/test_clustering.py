"""Ward variants: weighted nearest-neighbour chain, exact fast path, k-means cells, prototypes."""

import numpy as np
import pytest
from scipy.cluster.hierarchy import linkage
from scipy.spatial.distance import pdist
from sklearn.cluster import AgglomerativeClustering
from sklearn.metrics import adjusted_rand_score

import lbee.core.clustering as cl
from lbee.core.clustering import (
    DEFAULT_WARD,
    WARD_METHODS,
    condensed_distances,
    cut_tree_labels,
    prototypes,
    ward_labels,
    weighted_ward_linkage,
)


def _unit(x):
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _anisotropic(n, d=64, k=12, seed=0):
    """Clusters on the sphere around centres sharing a common direction, each stretched along 3 axes."""
    rng = np.random.default_rng(seed)
    centres = _unit(_unit(rng.normal(size=(1, d))) + _unit(rng.normal(size=(k, d))))
    axes = _unit(rng.normal(size=(k * 3, d))).reshape(k, 3, d)
    y = rng.choice(k, size=n, p=rng.dirichlet(np.full(k, 2.0)))
    z = rng.normal(size=(n, 3)) * 0.3 * np.array([1.0, 0.6, 0.3])
    return _unit(centres[y] + np.einsum("nr,nrd->nd", z, axes[y]) + 0.3 * rng.normal(size=(n, d)) / np.sqrt(d))


def _spotcheck_like(n, d=64, seed=0):
    """Attribute combinations (object x colour x background) tiled with noise."""
    rng = np.random.default_rng(seed)
    values = [rng.normal(size=(k, d)) for k in (4, 3, 3)]
    combos = np.stack([rng.integers(0, k, 30) for k in (4, 3, 3)], axis=1)
    base = sum(w * v[combos[:, j]] for j, (w, v) in enumerate(zip((1.5, 1.0, 0.6), values)))
    return _unit(base[rng.integers(0, 30, n)] + 0.35 * rng.normal(size=(n, d)))


def test_constants_name_every_variant_and_auto_is_default():
    assert set(WARD_METHODS) == {"auto", "exact", "kmeans", "knn"}
    assert DEFAULT_WARD == "auto"
    with pytest.raises(ValueError, match="`ward` must be one of"):
        ward_labels(np.eye(3), 2, method="fast")


def test_weighted_nn_chain_equals_scipy_on_unit_weights():
    rng = np.random.default_rng(0)
    for n, d in ((2, 3), (17, 5), (300, 16)):
        X = rng.normal(size=(n, d))
        ours, ref = weighted_ward_linkage(X), linkage(X, "ward")
        np.testing.assert_allclose(ours[:, 2], ref[:, 2], rtol=1e-10, atol=1e-12)
        np.testing.assert_array_equal(ours[:, [0, 1, 3]], ref[:, [0, 1, 3]])
        for c in (1, 2, min(7, n)):
            np.testing.assert_array_equal(cut_tree_labels(ours, c), cut_tree_labels(ref, c))


def test_weighted_nn_chain_equals_ward_on_duplicated_points():
    rng = np.random.default_rng(1)
    m = 40
    P = rng.normal(size=(m, 6))
    w = rng.integers(1, 6, m)
    owner = np.repeat(np.arange(m), w)
    Zw = weighted_ward_linkage(P, w)
    Zd = linkage(P[owner], "ward")  # duplicates merge first, at height 0
    np.testing.assert_allclose(Zw[:, 2], Zd[-(m - 1) :, 2], rtol=1e-10)
    np.testing.assert_array_equal(Zw[:, 3], Zd[-(m - 1) :, 3])
    for c in (2, 5, 11, m):
        dup = AgglomerativeClustering(c, linkage="ward").fit_predict(P[owner])
        assert adjusted_rand_score(cut_tree_labels(Zw, c)[owner], dup) == 1.0


def test_blocked_distances_equal_pdist():
    X = np.random.default_rng(2).normal(size=(301, 20))
    np.testing.assert_allclose(condensed_distances(X, block_rows=64), pdist(X), rtol=1e-12, atol=1e-12)
    assert condensed_distances(X[:1]).shape == (0,)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_exact_labels_equal_scikit_learn_including_numbering(dtype):
    rng = np.random.default_rng(3)
    for n, c in ((2, 2), (40, 3), (600, 15), (1500, 8)):
        X = _unit(rng.normal(size=(n, 32))).astype(dtype)
        ref = AgglomerativeClustering(n_clusters=c, linkage="ward").fit_predict(X)
        np.testing.assert_array_equal(ward_labels(X, c, method="exact"), ref)
    X = _anisotropic(800).astype(dtype)
    for c in (2, 5, 15):
        np.testing.assert_array_equal(
            ward_labels(X, c, method="exact"), AgglomerativeClustering(n_clusters=c, linkage="ward").fit_predict(X)
        )


def test_exact_with_memory_cuts_one_cached_tree(tmp_path):
    from joblib import Memory

    X = _anisotropic(500)
    memory = Memory(tmp_path / "m", verbose=0)
    for c in (3, 9, 3):
        np.testing.assert_array_equal(ward_labels(X, c, memory, method="exact"), ward_labels(X, c, method="exact"))
    assert len(list((tmp_path / "m").rglob("output.pkl"))) == 1  # one tree, cut three times
    np.testing.assert_array_equal(
        ward_labels(X, 4, str(tmp_path / "s"), method="exact"), ward_labels(X, 4, method="exact")
    )


def test_auto_is_exact_below_the_threshold_and_kmeans_above(monkeypatch):
    X = _anisotropic(600, seed=4)
    np.testing.assert_array_equal(ward_labels(X, 6), ward_labels(X, 6, method="exact"))
    monkeypatch.setattr(cl, "AUTO_WARD_THRESHOLD", 100)
    np.testing.assert_array_equal(ward_labels(X, 6), ward_labels(X, 6, method="kmeans"))


@pytest.mark.parametrize("make", [_anisotropic, _spotcheck_like])
def test_kmeans_ward_agrees_with_exact_ward_on_structured_data(make):
    X = make(3000, seed=5)
    exact = ward_labels(X, 10, method="exact")
    approx = ward_labels(X, 10, method="kmeans")
    assert adjusted_rand_score(exact, approx) >= 0.95
    assert set(approx.tolist()) == set(range(10))
    np.testing.assert_array_equal(approx, ward_labels(X, 10, method="kmeans"))  # fixed seed


def test_kmeans_with_more_cells_than_points_is_exact_ward():
    X = _anisotropic(120, seed=6)
    assert (
        adjusted_rand_score(ward_labels(X, 5, method="kmeans", n_cells=500), ward_labels(X, 5, method="exact")) == 1.0
    )


def test_prototypes_equal_plain_means():
    rng = np.random.default_rng(7)
    E = rng.normal(size=(400, 9))
    lab = rng.integers(0, 6, 400)
    lab[lab == 5] = 4  # cluster 5 stays empty
    sums = np.zeros((6, 9))
    np.add.at(sums, lab, E)
    protos, means = prototypes(E, lab, 6)
    with np.errstate(invalid="ignore"):
        expected = sums / np.bincount(lab, minlength=6)[:, None]
    np.testing.assert_allclose(means[:5], expected[:5], rtol=1e-13)
    np.testing.assert_allclose(np.linalg.norm(protos[:5], axis=1), 1.0)
    assert np.isnan(means[5]).all() and not protos[5].any()


@pytest.mark.parametrize("n", [50, 3000])
def test_group_sums_add_each_groups_rows_in_index_order_on_both_paths(n):
    """The direct sums of a small input (a class of a per-class run) and the sparse product of a large one give
    ``np.add.at``'s numbers, bit for bit, an empty group a zero row."""
    from lbee.core.ward import _SMALL_SUM_ROWS, group_sums

    assert (n <= _SMALL_SUM_ROWS) == (n == 50)
    rng = np.random.default_rng(n)
    E = rng.normal(size=(n, 33))
    lab = rng.integers(0, 5, n)
    lab[lab == 3] = 0  # group 3 stays empty
    sums = np.zeros((5, 33))
    np.add.at(sums, lab, E)
    np.testing.assert_array_equal(group_sums(E, lab, 5), sums)


def test_one_blas_thread_inside_another_changes_nothing_and_restores_on_exit():
    """A per-class run's thousands of small products each set BLAS's threads (~45 µs): inside an open block, an
    inner one does not call threadpoolctl, and the limit is lifted when the outer block ends."""
    from threadpoolctl import threadpool_info

    from lbee import _blas

    def blas_threads():
        return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]

    _blas._CONTROLLER.clear()  # a controller built now knows every BLAS loaded so far (SciPy's own too)
    before = blas_threads()
    with _blas.one_blas_thread():
        assert set(blas_threads()) <= {1}
        calls = []
        controller = _blas._CONTROLLER[0]
        real = controller.limit
        controller.limit = lambda **kw: calls.append(kw) or real(**kw)
        try:
            with _blas.one_blas_thread():
                assert set(blas_threads()) <= {1}
        finally:
            controller.limit = real
        assert calls == [] and set(blas_threads()) <= {1}
    assert blas_threads() == before
