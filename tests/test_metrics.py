import math

import numpy as np
import pytest

from lbee.core.metrics import (
    blindspot_precision,
    blindspot_recall,
    discovery_rate,
    false_discovery_rate,
    precision_at_k,
)


def test_precision_recall_by_hand():
    b = [0, 1, 2, 3, 4]
    assert blindspot_precision([0, 1, 9, 8], b) == 0.5
    assert blindspot_precision([], b) == 0.0
    mask = np.zeros(10, bool)
    mask[[0, 1]] = True
    assert blindspot_precision(mask, b) == 1.0
    # hypotheses with BP >= .8 : [0,1,2] (1.0), [3,4,5,6,7] (0.4, excluded)
    assert blindspot_recall([[0, 1, 2], [3, 4, 5, 6, 7]], b) == pytest.approx(0.6)
    assert blindspot_recall([[0, 1, 2], [3, 4, 5, 6, 7]], b, lambda_p=0.4) == pytest.approx(1.0)


def test_dr_fdr_by_hand():
    blind = [[0, 1, 2, 3, 4], [10, 11, 12, 13, 14]]
    hyps = [[20, 21], [0, 1, 2, 3, 4], [30, 31], [10, 11, 12, 13], [40]]
    assert discovery_rate(hyps, blind) == 1.0  # second blindspot: recall 0.8 >= 0.8
    # shortest prefix reaching DR=1 is the first 4; false among them: [20,21], [30,31]
    assert false_discovery_rate(hyps, blind) == pytest.approx(0.5)
    assert discovery_rate(hyps[:2], blind) == 0.5
    assert false_discovery_rate(hyps[:2], blind) == pytest.approx(0.5)
    assert math.isnan(false_discovery_rate([[50]], blind))
    assert discovery_rate([[50]], blind) == 0.0


def test_precision_at_k():
    truth = np.zeros((20, 2), bool)
    truth[:5, 0] = True
    truth[10:20, 1] = True
    scores = np.zeros((20, 2))
    scores[:5, 0] = 1  # slice 0 ranks 0..4 first, then ties by index 5..9
    scores[10:20, 1] = np.arange(1, 11)
    p = precision_at_k(scores, truth, k=10)
    assert p.tolist() == [0.5, 1.0]
    assert precision_at_k(scores, truth, k=5).tolist() == [1.0, 1.0]
    assert precision_at_k(scores, truth, k=100).tolist() == [0.25, 0.5]  # k capped at n


def test_metric_errors():
    with pytest.raises(ValueError, match="blindspots"):
        discovery_rate([[1]], [])
    with pytest.raises(ValueError, match="lambda_p"):
        discovery_rate([[1]], [[1]], lambda_p=2)
    with pytest.raises(TypeError, match="integer"):
        blindspot_precision([0.5], [1])
    with pytest.raises(ValueError, match="same number of rows"):
        precision_at_k(np.zeros((3, 1)), np.zeros((4, 1), bool))
    with pytest.raises(ValueError, match="k"):
        precision_at_k(np.zeros((3, 1)), np.zeros((3, 1), bool), k=0)


def test_failure_analysis_by_hand():
    from lbee.core.metrics import failure_analysis

    blind = [[0, 1, 2, 3, 4, 5, 6, 7, 8, 9], [20, 21, 22, 23, 24]]
    hyps = [[0, 1], [2, 3, 20, 21, 22], [4, 5, 30, 31, 32, 33, 34, 35, 36, 37]]
    # blindspot 0: 0,1 found (BP 1.0); 2,3 merged (hyp mostly in the union); 4,5 impure; 6..9 not returned
    res = failure_analysis(hyps, blind)
    b0 = next(r for r in res if r["blindspot"] == 0)
    assert b0 == {"blindspot": 0, "not_returned": 0.4, "found": 0.2, "merged": 0.2, "impure": 0.2}
    b1 = next(r for r in res if r["blindspot"] == 1)
    assert b1["merged"] == pytest.approx(0.6) and b1["not_returned"] == pytest.approx(0.4)
