"""Issue 35: embeddings read in row blocks (lbee.core.rows), memory-mapped input, and no whole-matrix copy."""

import hashlib
import tracemalloc
import warnings

import numpy as np
import pytest

import lbee
from lbee._validation import as_unit_rows
from lbee.core import rows as rows_module
from lbee.core.rows import UnitRows
from lbee.io.arrays import check_embeddings, embeddings_file
from lbee.io.provenance import array_digest


def _clustered(n, d, seed=0, k=6):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(k, d))
    X = centres[rng.integers(k, size=n)] + 0.3 * rng.normal(size=(n, d))
    scale = 10.0 ** rng.integers(-3, 4, size=(n, 1))  # rows of any scale: unit rows must not care
    return (X * scale).astype(np.float32), rng.normal(size=n)


def test_unit_rows_are_as_unit_rows_bit_for_bit_in_any_blocks(monkeypatch):
    X, _ = _clustered(1000, 16)
    want = as_unit_rows(X, "x")
    monkeypatch.setattr(rows_module, "BLOCK_ROWS", 37)
    u = UnitRows(X)
    got = np.concatenate([b for _, b in u.blocks()])
    assert np.array_equal(got, want)
    idx = np.array([999, 3, 500, 3])
    assert np.array_equal(u.take(idx), want[idx])
    sub = u.subset(np.arange(100, 900))
    assert np.array_equal(sub.block(10, 20), want[110:120])
    assert np.array_equal(sub.subset([5, 1]).take([1, 0]), want[[101, 105]])
    assert np.allclose(u.mean(), want.mean(axis=0), atol=1e-12)


def test_unit_rows_name_the_first_bad_row_as_before(monkeypatch):
    monkeypatch.setattr(rows_module, "BLOCK_ROWS", 4)
    X = np.ones((10, 3), np.float32)
    X[6] = 0
    with pytest.raises(ValueError, match=r"all-zero rows \(first indices, from 0: \[6\]\)"):
        UnitRows(X)
    X[6, 1] = np.nan
    with pytest.raises(ValueError, match="contains 1 NaN or inf"):
        UnitRows(X)


def _labels(part, n):
    lab = np.full(n, -1)
    for i, g in enumerate(part.hard_groups_):
        lab[g] = i
    return lab


@pytest.mark.parametrize("ward", ["kmeans", "exact"])
def test_a_memory_mapped_partition_in_blocks_equals_the_in_memory_one(tmp_path, monkeypatch, ward):
    from sklearn.metrics import adjusted_rand_score

    X, phi = _clustered(3000, 24)
    S = np.random.default_rng(1).normal(size=(40, 24))
    np.save(tmp_path / "X.npy", X)
    mm = np.load(tmp_path / "X.npy", mmap_mode="r")
    ref = lbee.partition(X, confidence=phi, n_clusters=5, ward=ward)  # one block: the in-memory path
    monkeypatch.setattr(rows_module, "BLOCK_ROWS", 256)  # many blocks, read from the memory map
    part = lbee.partition(mm, confidence=phi, n_clusters=5, ward=ward)
    assert isinstance(part.embeddings_.data, np.memmap)
    assert adjusted_rand_score(_labels(ref, 3000), _labels(part, 3000)) == 1.0
    assert np.allclose(part.hard_prototypes_, ref.hard_prototypes_, atol=1e-9)
    assert np.allclose(part.reference_mean_, ref.reference_mean_, atol=1e-12)
    for m in ("tops", "setdiff", "pdiff", "fpdiff", "domino"):
        a, b = part.describe(S, m, tau=0.1), ref.describe(S, m, tau=0.1)
        assert [c.sentences for c in a.hard_clusters] == [c.sentences for c in b.hard_clusters], m


def test_partition_of_a_memory_map_holds_no_copy_of_the_embeddings(tmp_path, monkeypatch):
    """Before issue 35 the unit rows were a float64 copy (2x the float32 input) plus its temporaries."""
    X, phi = _clustered(20_000, 128)
    np.save(tmp_path / "X.npy", X)
    mm = np.load(tmp_path / "X.npy", mmap_mode="r")
    monkeypatch.setattr(rows_module, "BLOCK_ROWS", 1024)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lbee.partition(mm[:6000], confidence=phi[:6000], n_clusters=5, ward="kmeans")  # imports before tracing
        tracemalloc.start()
        lbee.partition(mm, confidence=phi, n_clusters=5)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peak < 0.75 * X.nbytes, f"peak {peak / X.nbytes:.2f}x the embeddings"


def test_memory_mapped_embeddings_are_checked_in_blocks_naming_the_row(tmp_path):
    X = np.ones((70_000, 2), np.float32)
    X[66_000, 1] = np.inf
    np.save(tmp_path / "e.npy", X)
    with pytest.raises(ValueError, match=r"row 66001 \(index 66000\) holds a NaN or inf"):
        check_embeddings(np.load(tmp_path / "e.npy", mmap_mode="r"), tmp_path / "e.npy", "--image-embeddings")
    with pytest.raises(ValueError, match="expected a non-empty 2-D real array"):
        check_embeddings(np.ones(3), tmp_path / "e.npy", "--image-embeddings")


def test_blocked_digest_is_the_digest_of_the_whole_array():
    X = np.random.default_rng(0).normal(size=(70_000, 3))
    arr = np.ascontiguousarray(X.astype(np.float32))
    h = hashlib.sha256(str(arr.shape).encode())
    h.update(memoryview(arr).cast("B"))
    assert array_digest(X) == h.hexdigest()


def test_a_folder_written_by_lbee_embed_names_its_embeddings(tmp_path):
    np.save(tmp_path / "embeddings.npy", np.ones((2, 2), np.float32))
    # fifth sweep F-A: without the ids lbee embed writes, rows paired with the predictions by position, no word
    with pytest.raises(ValueError, match="is a folder without ids.txt"):
        embeddings_file(tmp_path, "--image-embeddings")
    (tmp_path / "ids.txt").write_text("a.png\nb.png\n")
    assert embeddings_file(tmp_path, "--image-embeddings") == tmp_path / "embeddings.npy"
    assert embeddings_file(tmp_path / "x.npy", "--image-embeddings") == tmp_path / "x.npy"
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="is a folder without embeddings.npy"):
        embeddings_file(tmp_path / "empty", "--image-embeddings")


#: Two components per column: (mean of the lower, of the higher, variance of the lower, of the higher).
CASES = ((0, 1, 1.0, 0.1), (0, 1, 0.1, 1.0), (0, 1, 0.5, 0.5), (1, 0, 1, 1), (0, 2, 4, 0.01), (0, 0.1, 0.01, 9))


def test_the_posterior_made_monotone_without_sorting_is_the_running_maximum():
    from lbee.core.mixture import _monotone

    rng = np.random.default_rng(3)
    s = rng.normal(size=(5000, 6))
    s[::7, 0] = s[0, 0]  # ties in s
    cases = []
    for mu_lo, mu_hi, v_lo, v_hi in CASES:
        cases.append(-0.5 * (s[:, len(cases)] - mu_lo) ** 2 / v_lo + 0.5 * (s[:, len(cases)] - mu_hi) ** 2 / v_hi)
    post = 1.0 / (1.0 + np.exp(np.clip(np.stack(cases, axis=1), -60, 60)))
    want = np.empty_like(post)
    for j in range(s.shape[1]):  # the definition: the running maximum in the order of s
        order = np.argsort(s[:, j], kind="stable")
        want[order, j] = np.maximum.accumulate(post[order, j])
    got = _monotone(s, post)
    assert np.allclose(got, want, rtol=0, atol=1e-12)
    assert not np.allclose(post, want)  # the cases do turn down
    # where the higher component is the wider, its far tail below the lower one is the lower one's: the posterior
    # falls then rises, and below its trough keeps the trough's value (the running minimum from above), never the
    # far tail's (a trial's large-text images got P("small text") 0.98)
    wider = np.array([v_hi > v_lo for _, _, v_lo, v_hi in CASES])
    for j in np.flatnonzero(wider):
        order = np.argsort(s[:, j], kind="stable")
        want[order, j] = np.minimum.accumulate(post[order, j][::-1])[::-1]
    got = _monotone(s, post, wider)
    assert np.allclose(got, want, rtol=0, atol=1e-12) and wider.sum() == 2
    far = np.argmin(s[:, 1])  # the far left tail: the trough's value, not the tail's higher posterior
    assert (np.diff(got[np.argsort(s[:, 1]), 1]) >= 0).all() and got[far, 1] == post[:, 1].min() < post[far, 1]
