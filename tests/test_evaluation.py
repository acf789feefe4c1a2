import math

import numpy as np
import pytest

import lbee
from lbee.core.explanation import EasyCluster, Explanation, HardCluster


def make_exp(clusters):
    """clusters: list of (image indices, sentence ids)."""
    hard = [HardCluster(np.array(ix), np.zeros(2), 0, list(s), [0.0] * len(s)) for ix, s in clusters]
    # No easy image: every image of these hand-made worlds is in a hard cluster (an image cannot be both).
    return Explanation(hard, [EasyCluster(np.zeros(0, np.int64), np.zeros(2))], "tops")


def test_failure_sentences_by_hand():
    # omega: mean 0.5, std 0.5 -> beta(o=0.2) = 0.1, threshold 0.4
    omega = np.array([1.0, 1.0, 0.0, 0.0])
    rel = np.array(
        [
            [1, 0, 1, 0],
            [1, 0, 0, 0],
            [0, 1, 1, 0],
            [0, 1, 0, 0],
        ],
        dtype=bool,
    )
    # sentence hardness: s0 = 1.0, s1 = 0.0, s2 = 0.5, s3 = never relevant
    assert lbee.failure_sentences(rel, omega).tolist() == [1]
    assert lbee.failure_sentences(rel, omega, o=0.0).tolist() == [1]
    # with o large enough nothing fails: threshold 0.5 - 2*0.5 < 0
    assert lbee.failure_sentences(rel, omega, o=2.0).tolist() == []


def test_evaluate_by_hand():
    omega = np.array([1.0, 1.0, 0.0, 0.0])
    rel = np.array([[1, 0, 1, 0], [1, 0, 0, 0], [0, 1, 1, 0], [0, 1, 0, 0]], dtype=bool)
    exp = make_exp([([2, 3], [1, 2]), ([0], [0])])
    s = lbee.evaluate(exp, rel, omega)
    # S* = {1}; HR = [1/2, 0] -> 0.25; CR_0 = mean(1.0, 0.5) = .75, CR_1 = 1.0 -> .875
    assert s["AHR"] == pytest.approx(0.25)
    assert s["ACR"] == pytest.approx(0.875)
    assert s["TPR"] == pytest.approx(1.0)
    assert s["JI"] == pytest.approx(1 / 3)  # R_S = {0,1,2}, S* = {1}
    assert s["n_failure_sentences"] == 1


def test_empty_cluster_sentences_and_empty_star():
    omega = np.ones(3)
    rel = np.ones((3, 2), bool)
    exp = make_exp([([0, 1], []), ([2], [0])])
    s = lbee.evaluate(exp, rel, omega)
    assert s["n_failure_sentences"] == 0
    assert s["AHR"] == 0.0
    assert math.isnan(s["TPR"])
    assert s["JI"] == 0.0  # R_S = {0}, S* empty: union non-empty
    s = lbee.evaluate(make_exp([([0], [])]), rel, omega)
    assert math.isnan(s["JI"]) and math.isnan(s["TPR"])


def test_evaluate_real_explanation_against_bruteforce():
    rng = np.random.default_rng(0)
    X, S = rng.normal(size=(200, 8)), rng.normal(size=(30, 8))
    phi = rng.normal(size=200)
    exp = lbee.explain(X, S, confidence=phi, n_clusters=5, method="pdiff")
    rel = rng.random((200, 30)) < 0.3
    omega = (phi > 0).astype(float)
    s = lbee.evaluate(exp, rel, omega, o=0.1)
    star = {n for n in range(30) if rel[:, n].any() and omega[rel[:, n]].mean() < omega.mean() - 0.1 * omega.std()}
    hr = [len(set(c.sentences) & star) / len(c.sentences) for c in exp.hard_clusters]
    assert s["AHR"] == pytest.approx(np.mean(hr))
    assert s["n_failure_sentences"] == len(star)


def test_evaluate_errors():
    exp = make_exp([([0], [5])])
    with pytest.raises(ValueError, match="sentence columns"):
        lbee.evaluate(exp, np.ones((3, 2), bool), np.ones(3))
    with pytest.raises(ValueError, match="3 rows but `performance` has 2"):
        lbee.evaluate(exp, np.ones((3, 6), bool), np.ones(2))
    with pytest.raises(TypeError, match="lbee.Explanation"):
        lbee.evaluate({"x": 1}, np.ones((3, 6), bool), np.ones(3))
    with pytest.raises(TypeError, match="booleans"):
        lbee.failure_sentences(np.full((3, 2), 0.5), np.ones(3))
    with pytest.raises(ValueError, match="NaN"):
        lbee.failure_sentences(np.ones((3, 2), bool), np.array([1, np.nan, 0]))
