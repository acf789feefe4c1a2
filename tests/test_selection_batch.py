"""select_all (one product per method) equals select_sentences cluster by cluster."""

import numpy as np
import pytest

from lbee.core.selection import METHODS, select_all, select_sentences
from lbee.core.sentence_index import SentenceIndex


def _unit(x):
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _case(seed, n_sent=400, d=24, c=7):
    rng = np.random.default_rng(seed)
    S = _unit(rng.normal(size=(n_sent, d)))
    S[[5, 50, 300]] = S[120]           # exact ties between sentences
    S[[7, 8]] = S[9]
    hard = _unit(rng.normal(size=(c, d)))
    hard[3] = S[120]                   # a prototype equal to a (repeated) sentence
    easy = _unit(rng.normal(size=(c, d)))
    easy[1] = easy[4]                  # two hard clusters matched to one easy cluster
    easy[2] = hard[2]                  # a twin equal to its hard prototype: all PDiff scores tie at 0
    means = hard * rng.uniform(0.3, 0.9, (c, 1))
    ref = means.mean(axis=0)
    return S, hard, easy, means, ref


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("method", METHODS)
def test_select_all_equals_select_sentences(seed, method):
    S, hard, easy, means, ref = _case(seed)
    for use_faiss in (True, False):
        index = SentenceIndex(S, use_faiss=use_faiss)
        for k, tau in ((1, 0.3), (3, 0.25), (10, 0.1), (3, -1.0), (500, 0.2)):
            got = select_all(method, index, hard, easy, k, tau, cluster_means=means, reference_mean=ref)
            assert len(got) == len(hard)
            for i, (ids, scores) in enumerate(got):
                want_ids, want_scores = select_sentences(method, index, hard[i], easy[i], k, tau,
                                                         cluster_mean=means[i], reference_mean=ref)
                assert ids.tolist() == want_ids.tolist(), (method, k, tau, i)
                np.testing.assert_allclose(scores, want_scores, rtol=1e-12, atol=1e-12)


def test_select_all_ties_go_to_the_lower_index():
    S = np.tile(np.eye(3)[0], (6, 1))
    S[4] = np.eye(3)[1]
    index = SentenceIndex(S)
    (ids, scores), = select_all("tops", index, np.eye(3)[:1], np.eye(3)[1:2], 3, 0.25)
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
    first = index._last[1]
    for m in ("setdiff", "pdiff", "fpdiff"):
        select_all(m, index, hard, easy, 3, 0.25)
        assert index._last[1] is first
    assert not first.flags.writeable
    select_all("tops", index, easy, hard, 3, 0.25)  # other prototypes: a new product
    assert index._last[1] is not first
