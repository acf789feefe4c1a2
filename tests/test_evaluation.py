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


# ---------------------------------------------------------------- issue 32: the same Γ, whatever its format

BASE = ["A square", "A circle", "No circle", "A blue square"]
BASE_CONDITIONS = ["square.presence=true", "circle.presence=true", "circle.presence=false", "square.color=blue"]
COMPOSED = "A blue square and no circle"  # a conjunction 'compose' wrote: not in the set, so not in its Γ
IDS = [f"i{k}.png" for k in range(6)]
SET_GAMMA = np.array(
    [[1, 1, 0, 1], [1, 0, 1, 1], [1, 0, 1, 0], [0, 1, 0, 0], [1, 0, 1, 1], [0, 0, 1, 0]], dtype=bool
)  # images 1 and 4 hold a blue square and no circle
OMEGA = np.array([1.0, 0.0, 1.0, 1.0, 0.0, 1.0])


def _gamma_files(tmp_path):
    """The set's Γ (4 sentences) as a matrix, a long table and a wide table."""
    import pandas as pd

    np.save(tmp_path / "rel.npy", SET_GAMMA)
    rows = [(IDS[i], BASE[j], int(SET_GAMMA[i, j])) for i in range(6) for j in range(4)]
    pd.DataFrame(rows, columns=["image", "sentence", "relevant"]).to_csv(tmp_path / "long.csv", index=False)
    wide = pd.DataFrame(SET_GAMMA.astype(int), columns=BASE)
    wide.insert(0, "image", IDS)
    wide.to_csv(tmp_path / "wide.csv", index=False)
    return [tmp_path / "rel.npy", tmp_path / "long.csv", tmp_path / "wide.csv"]


def test_composed_columns_are_composed_alike_from_every_format(tmp_path):
    from lbee.io.relevance import load_relevance

    conditions = [*BASE_CONDITIONS, "square.color=blue; circle.presence=false"]
    expected = np.column_stack([SET_GAMMA, SET_GAMMA[:, 3] & SET_GAMMA[:, 2]])
    for path in _gamma_files(tmp_path):
        rel = load_relevance(path, IDS, [*BASE, COMPOSED], conditions=conditions, n_base=4)
        np.testing.assert_array_equal(rel, expected, err_msg=path.name)
    # a Γ with the composed column too is read as it is
    np.save(tmp_path / "all.npy", expected & np.array([1, 1, 1, 1, 0], bool))
    assert not load_relevance(tmp_path / "all.npy", IDS, [*BASE, COMPOSED], conditions=conditions, n_base=4)[:, 4].any()


def test_a_composed_column_that_cannot_be_composed_is_refused_by_every_format(tmp_path):
    from lbee.io.relevance import load_relevance

    conditions = [*BASE_CONDITIONS, "square.color=orange; circle.presence=false"]  # orange: no sentence of its own
    for path in _gamma_files(tmp_path):
        with pytest.raises(ValueError, match="cannot be composed: no sentence of the set states its condition "):
            load_relevance(path, IDS, [*BASE, COMPOSED], conditions=conditions, n_base=4)
        with pytest.raises(ValueError, match="without each sentence's conditions they cannot be composed"):
            load_relevance(path, IDS, [*BASE, COMPOSED], n_base=4)


def test_evaluate_gives_the_same_metrics_for_the_same_gamma_in_three_formats(tmp_path, caplog):
    """The demo's case, small: a run with a sentence compose wrote; its Γ over the set as .npy, long and wide CSV."""
    import json

    from click.testing import CliRunner

    from lbee.cli import cli

    exp = make_exp([([1, 4], [4, 3]), ([0, 2, 3, 5], [0])])
    body = {k: v for k, v in exp.to_dict().items() if k != "sentences"}
    body["params"] = dict(body["params"], n_base_sentences=4)
    run = tmp_path / "run"
    run.mkdir()
    (run / "explanation.json").write_text(
        json.dumps(
            {
                "sentences": [*BASE, COMPOSED],
                "images": IDS,
                "methods": {"tops": body},
                "sentence_conditions": [*BASE_CONDITIONS, "square.color=blue; circle.presence=false"],
            }
        )
    )
    np.save(tmp_path / "omega.npy", OMEGA)
    caplog.set_level("INFO", logger="lbee")
    found = []
    for path in _gamma_files(tmp_path):
        out = tmp_path / f"metrics-{path.stem}.json"
        r = CliRunner().invoke(
            cli,
            [
                "evaluate",
                str(run),
                "--relevance",
                str(path),
                "--performance",
                str(tmp_path / "omega.npy"),
                "--out",
                str(out),
            ],
            obj={},
        )
        assert r.exit_code == 0, r.output
        assert f"{path.name}' has no column for the 1 sentence(s) compose wrote; each is composed" in caplog.text
        found.append(json.loads(out.read_text()))
    assert found[0] == found[1] == found[2]
    full = np.column_stack([SET_GAMMA, SET_GAMMA[:, 3] & SET_GAMMA[:, 2]])
    want = lbee.evaluate(exp, full, OMEGA)
    assert (
        found[0][0]["AHR"] == pytest.approx(want["AHR"]) and found[0][0]["n_failure_sentences"] == 4
    )  # the composed one too (3 when it counted as 0)


def test_a_run_composes_its_gamma_by_the_same_rule():
    """lbee describe's own metrics: the columns of compose's sentences from the given Γ, as lbee evaluate does."""
    from types import SimpleNamespace

    from lbee.grammar import parse_conditions
    from lbee.run.pipeline import _composed_columns

    conds = [parse_conditions(c) for c in BASE_CONDITIONS]
    inputs = SimpleNamespace(sentence_conditions=conds, relevance_source="ground truth: rel.npy", notes=[])
    new = [parse_conditions("square.color=blue; circle.presence=false")]
    rel = _composed_columns(inputs, SET_GAMMA, new, results=None, index=None, tau=0.25)
    np.testing.assert_array_equal(rel[:, 4], SET_GAMMA[:, 3] & SET_GAMMA[:, 2])
    assert "composed from the columns of their conditions' sentences in ground truth: rel.npy" in inputs.notes[0]

    class Partition:  # a condition without a sentence of its own: the encoder's composed relevance, said so
        def composed_relevance(self, index, conditions, tau):
            return None, np.ones((6, len(conditions)), bool)

    results = {"ward": SimpleNamespace(partition=Partition())}
    rel = _composed_columns(inputs, SET_GAMMA, [{("square", "color"): "orange"}], results, index=None, tau=0.25)
    assert rel[:, 4].all() and "pseudo ground truth" in inputs.notes[1]
