"""select_all (one product per method) equals the per-cluster definitions served by FAISS.

``_reference`` is the per-cluster selection as it was written before select_all:
top-k and ``> tau`` sets from the FAISS index (float32 candidates re-scored
exactly), ranking by a full stable sort.
"""

import numpy as np
import pytest

from lbee.core.selection import METHODS, select_all, select_sentences
from lbee.core.sentence_index import SentenceIndex


def _rank(candidates, scores, k):
    candidates = np.asarray(candidates, dtype=np.int64)
    order = np.argsort(-scores[candidates], kind="stable")
    chosen = candidates[order[:k]]
    return chosen, scores[chosen]


def _reference(method, index, h, e, k, tau, m, ref):
    n = index.n_sentences
    sims = lambda q: np.atleast_2d(q) @ index.embeddings.T  # noqa: E731
    if method == "tops":
        return _rank(np.arange(n), sims(h)[0], k)
    if method == "pdiff":
        v = sims(np.stack([h, e]))
        return _rank(np.arange(n), v[0] - v[1], k)
    if method == "setdiff":
        easy_set = np.union1d(index.top_k(e, k), index.above(e, tau))
        return _rank(np.setdiff1d(np.arange(n), easy_set, assume_unique=True), sims(h)[0], k)
    if method == "fpdiff":
        v = sims(np.stack([h, e]))
        return _rank(np.union1d(index.top_k(h, k), index.above(h, tau)), v[0] - v[1], k)
    return _rank(np.arange(n), sims(m - ref)[0], k)


def _unit(x):
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _case(seed, n_sent=400, d=24, c=7):
    rng = np.random.default_rng(seed)
    S = _unit(rng.normal(size=(n_sent, d)))
    S[[5, 50, 300]] = S[120]  # exact ties between sentences
    S[[7, 8]] = S[9]
    hard = _unit(rng.normal(size=(c, d)))
    hard[3] = S[120]  # a prototype equal to a (repeated) sentence
    easy = _unit(rng.normal(size=(c, d)))
    easy[1] = easy[4]  # two hard clusters matched to one easy cluster
    easy[2] = hard[2]  # a twin equal to its hard prototype: all PDiff scores tie at 0
    means = hard * rng.uniform(0.3, 0.9, (c, 1))
    ref = means.mean(axis=0)
    return S, hard, easy, means, ref


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("method", METHODS)
def test_select_all_and_select_sentences_equal_the_faiss_definitions(seed, method):
    S, hard, easy, means, ref = _case(seed)
    for use_faiss in (True, False):
        index = SentenceIndex(S, use_faiss=use_faiss)
        for k, tau in ((1, 0.3), (3, 0.25), (10, 0.1), (3, -1.0), (500, 0.2)):
            got = select_all(method, index, hard, easy, k, tau, cluster_means=means, reference_mean=ref)
            assert len(got) == len(hard)
            for i, (ids, scores) in enumerate(got):
                want_ids, want_scores = _reference(method, index, hard[i], easy[i], k, tau, means[i], ref)
                assert ids.tolist() == want_ids.tolist(), (method, k, tau, i)
                np.testing.assert_allclose(scores, want_scores, rtol=1e-12, atol=1e-12)
                one_ids, one_scores = select_sentences(
                    method, index, hard[i], easy[i], k, tau, cluster_mean=means[i], reference_mean=ref
                )
                assert one_ids.tolist() == want_ids.tolist()
                np.testing.assert_allclose(one_scores, want_scores, rtol=1e-12, atol=1e-12)


def test_select_all_ties_go_to_the_lower_index():
    S = np.tile(np.eye(3)[0], (6, 1))
    S[4] = np.eye(3)[1]
    index = SentenceIndex(S)
    ((ids, scores),) = select_all("tops", index, np.eye(3)[:1], np.eye(3)[1:2], 3, 0.25)
    assert ids.tolist() == [0, 1, 2] and scores.tolist() == [1.0, 1.0, 1.0]


def test_select_all_checks_its_inputs():
    index = SentenceIndex(np.eye(4))
    with pytest.raises(ValueError, match="`method` must be one of"):
        select_all("best", index, np.eye(4)[:1], np.eye(4)[:1], 1, 0.2)
    with pytest.raises(ValueError, match="cluster_means"):
        select_all("domino", index, np.eye(4)[:1], np.eye(4)[:1], 1, 0.2)
    assert select_all("tops", index, np.zeros((0, 4)), np.zeros((0, 4)), 1, 0.2) == []


def test_describers_of_one_explanation_share_one_product():
    S, hard, easy, means, ref = _case(4)
    index = SentenceIndex(S)
    select_all("tops", index, hard, easy, 3, 0.25)
    assert len(index._recent) == 1
    first = next(iter(index._recent.values()))
    for m in ("setdiff", "pdiff", "fpdiff"):
        select_all(m, index, hard, easy, 3, 0.25)
    assert len(index._recent) == 1 and next(iter(index._recent.values())) is first
    assert not first.flags.writeable
    select_all("tops", index, easy, hard, 3, 0.25)  # other prototypes: a new product
    assert len(index._recent) == 2
    for i in range(100):  # bounded
        select_sentences("tops", index, hard[i % 7] * (1 + i), easy[0], 3, 0.25)
    assert len(index._recent) == 64


@pytest.mark.parametrize("seed", range(4))
def test_kth_smallest_equals_the_partial_sort(seed):
    # the argmin passes must give np.partition's k-th value: repeats counted, inf and -inf in place, NaN last
    from lbee.core.selection import _FEW_PASSES, _kth_smallest

    rng = np.random.default_rng(seed)
    values = np.round(rng.normal(size=(40, 30)), 1)  # rounded: many ties
    values[rng.random(values.shape) < 0.1] = np.inf
    values[rng.random(values.shape) < 0.05] = -np.inf
    values[3] = np.inf
    with_nan = values.copy()
    with_nan[5, 7] = np.nan
    for v in (values, with_nan):
        for k in range(1, _FEW_PASSES + 3):
            want = np.partition(v, k - 1, axis=1)[:, k - 1]
            np.testing.assert_array_equal(_kth_smallest(v, k), want, err_msg=f"k={k}")
