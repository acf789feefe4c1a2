import numpy as np
import pytest

from lbee.core.sentence_index import SentenceIndex, stable_top_k


@pytest.mark.parametrize("seed", range(3))
def test_faiss_matches_exact_definitions(seed):
    rng = np.random.default_rng(seed)
    S = rng.normal(size=(300, 32))
    S[10] = S[20] = S[200]  # exact ties
    index, dense = SentenceIndex(S), SentenceIndex(S, use_faiss=False)
    for q in rng.normal(size=(20, 32)):
        q = q / np.linalg.norm(q)
        v = dense.similarities(q)[0]
        for k in (1, 3, 10):
            want = sorted(range(300), key=lambda n: (-v[n], n))[:k]
            assert index.top_k(q, k).tolist() == want
        for tau in (0.0, 0.1, 0.3):
            assert index.above(q, tau).tolist() == np.flatnonzero(v > tau).tolist()
    q = S[10] / np.linalg.norm(S[10])
    assert index.top_k(q, 3).tolist() == [10, 20, 200]


def test_many_ties_fall_back_to_exact():
    S = np.tile(np.eye(4)[0], (50, 1))
    S[30] = np.eye(4)[1]
    idx = SentenceIndex(S)
    assert idx.top_k(np.eye(4)[0], 3).tolist() == [0, 1, 2]
    assert stable_top_k(np.array([1.0, 2.0, 2.0]), 2).tolist() == [1, 2]
