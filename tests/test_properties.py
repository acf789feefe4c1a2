"""Property-based tests: random valid inputs never raise and give consistent results;
random invalid inputs raise ValueError / TypeError (or FileNotFoundError for a
missing file), never anything else."""

from __future__ import annotations

import copy
import json
import math
import string
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import lbee
from lbee.core.explanation import EasyCluster, Explanation, HardCluster
from lbee.core.metrics import (
    blindspot_precision,
    blindspot_recall,
    discovery_rate,
    false_discovery_rate,
    precision_at_k,
)
from lbee.io.relevance import load_relevance
from lbee.io.tables import parse_bool, read_table
from lbee.scoring.confidence import scores_from_table

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ALLOWED = (ValueError, TypeError)

names = st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=6)


_FOLDER: dict[str, Path] = {}


@pytest.fixture(autouse=True, scope="module")
def _examples_folder(tmp_path_factory):
    # hypothesis runs many examples per test, so a function's tmp_path cannot hold them; pytest
    # still owns (and prunes) this folder, so no example's file is left in the system's /tmp
    _FOLDER["root"] = tmp_path_factory.mktemp("examples")
    yield
    _FOLDER.clear()


def write_csv(frame_or_text, suffix=".csv"):
    folder = Path(tempfile.mkdtemp(prefix="t-", dir=_FOLDER["root"]))
    path = folder / f"t{suffix}"
    if isinstance(frame_or_text, str):
        path.write_text(frame_or_text, encoding="utf-8")
    else:
        frame_or_text.to_csv(path, index=False)
    return path


# ---------------------------------------------------------------------------- table readers


@st.composite
def predictions_tables(draw):
    classes = draw(st.lists(names, min_size=2, max_size=5, unique=True))
    n = draw(st.integers(1, 12))
    raw = np.asarray(
        draw(
            st.lists(
                st.lists(st.floats(0.01, 1.0), min_size=len(classes), max_size=len(classes)), min_size=n, max_size=n
            )
        )
    )
    probs = raw / raw.sum(axis=1, keepdims=True)
    labels = draw(st.lists(st.integers(0, len(classes) - 1), min_size=n, max_size=n))
    as_names = draw(st.booleans())
    frame = pd.DataFrame({"path": [f"img{i}.png" for i in range(n)]})
    for j, c in enumerate(classes):
        frame[f"prob_{c}"] = probs[:, j]
    frame["label"] = [classes[k] for k in labels] if as_names else labels
    return frame, probs, np.asarray(labels)


@SETTINGS
@given(predictions_tables(), st.sampled_from(["entropy", "max", "true_class"]))
def test_valid_predictions_never_raise(table, kind):
    frame, probs, labels = table
    ids, scores = scores_from_table(read_table(write_csv(frame)), kind=kind)
    assert ids == list(frame["path"])
    assert scores.labels.tolist() == labels.tolist()
    assert np.allclose(scores.probs, probs, atol=1e-9)
    assert np.all(np.isfinite(scores.confidence)) and set(np.unique(scores.performance)) <= {0.0, 1.0}


junk = st.one_of(
    st.just(""), st.just("nan"), st.just("-0.5"), st.just("7"), st.just("abc"), st.just("1e400"), st.text(max_size=5)
)


@SETTINGS
@given(predictions_tables(), st.data())
def test_invalid_predictions_raise_value_error(table, data):
    frame, _, _ = table
    frame = frame.astype(object)
    row = data.draw(st.integers(0, len(frame) - 1))
    col = data.draw(st.sampled_from(list(frame.columns)))
    value = data.draw(junk)
    frame.iloc[row, frame.columns.get_loc(col)] = value
    path = write_csv(frame)
    try:
        scores_from_table(read_table(path))
    except ValueError:
        return
    # Some junk is legitimately valid (e.g. a label index in range, a path text): then the values must be sane.


@SETTINGS
@given(st.text(max_size=200))
def test_any_text_file_reads_or_raises_value_error(text):
    path = write_csv(text)
    try:
        table = read_table(path)
        scores_from_table(table)
    except ValueError:
        pass


@SETTINGS
@given(st.sampled_from(["1", "0", "true", "false", "yes", "no"]), st.data())
def test_boolean_words_any_case(word, data):
    cased = "".join(data.draw(st.sampled_from([ch.lower(), ch.upper()])) for ch in word)
    assert parse_bool(cased) is (word in ("1", "true", "yes"))
    assert parse_bool(" " + cased + " ") is (word in ("1", "true", "yes"))


@SETTINGS
@given(st.text(max_size=8))
def test_other_words_are_not_booleans(word):
    assume(word.strip().lower() not in {"1", "0", "true", "false", "yes", "no", "1.0", "0.0"})
    try:
        if float(word) in (0.0, 1.0):
            return  # "+1", "0e0", ... parse as numbers via pandas, not here
    except ValueError:
        pass
    assert parse_bool(word) is None


@SETTINGS
@given(st.integers(1, 6), st.integers(1, 4), st.data())
def test_long_form_relevance_round_trips(n, m, data):
    ids = [f"im{i}.png" for i in range(n)]
    sents = [f"Sentence {j}" for j in range(m)]
    truth = np.asarray(data.draw(st.lists(st.lists(st.booleans(), min_size=m, max_size=m), min_size=n, max_size=n)))
    words = data.draw(st.sampled_from([("1", "0"), ("yes", "no"), ("TRUE", "false")]))
    rows = [(ids[i], sents[j], words[0] if truth[i, j] else words[1]) for i in range(n) for j in range(m)]
    order = data.draw(st.permutations(range(len(rows))))
    frame = pd.DataFrame([rows[k] for k in order], columns=["image", "sentence", "relevant"])
    assert np.array_equal(load_relevance(write_csv(frame), ids, sents), truth)


# ---------------------------------------------------------------------------- Explanation.from_dict


def _explanation(seed):
    rng = np.random.default_rng(seed)
    return lbee.explain(
        rng.normal(size=(20, 4)),
        rng.normal(size=(6, 4)),
        confidence=rng.normal(size=20),
        n_clusters=3,
        k=2,
        sentences=[f"s{i}" for i in range(6)],
    )


BASES = [_explanation(s).to_dict() for s in range(3)]

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=6,
)


def _paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, prefix + (i,))


@SETTINGS
@given(st.integers(0, len(BASES) - 1))
def test_from_dict_round_trips(i):
    d = json.loads(json.dumps(BASES[i]))
    assert Explanation.from_dict(d).to_dict() == BASES[i]


@SETTINGS
@given(st.integers(0, len(BASES) - 1), st.data(), json_values)
def test_tampered_dict_raises_value_or_type_error(i, data, value):
    d = copy.deepcopy(BASES[i])
    paths = [p for p in _paths(d) if p]
    path = data.draw(st.sampled_from(paths))
    target = d
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    try:
        exp = Explanation.from_dict(d)
    except ALLOWED:
        return
    # Accepted: the result must be internally consistent and serialisable.
    json.dumps(exp.to_dict(), allow_nan=False)
    for c in exp.hard_clusters:
        assert np.all(c.indices >= 0) and 0 <= c.easy_cluster < len(exp.easy_clusters)
        assert all(s >= 0 for s in c.sentences) and len(c.scores) == len(c.sentences)


@SETTINGS
@given(json_values)
def test_from_dict_on_arbitrary_json(value):
    try:
        Explanation.from_dict(value)
    except ALLOWED:
        pass


# ---------------------------------------------------------------------------- metrics and evaluate

index_groups = st.lists(st.lists(st.integers(0, 30), min_size=0, max_size=10, unique=True), min_size=0, max_size=6)
blind_groups = st.lists(st.lists(st.integers(0, 30), min_size=1, max_size=10, unique=True), min_size=1, max_size=4)
lambdas = st.floats(0, 1)


@SETTINGS
@given(index_groups, blind_groups, lambdas, lambdas)
def test_blindspot_metrics_in_range(hyps, blinds, lp, lr):
    dr = discovery_rate(hyps, blinds, lp, lr)
    fdr = false_discovery_rate(hyps, blinds, lp, lr)
    assert 0 <= dr <= 1
    assert (math.isnan(fdr) and dr == 0) or 0 <= fdr <= 1
    for b in blinds:
        assert 0 <= blindspot_recall(hyps, b, lp) <= 1
        for h in hyps:
            assert 0 <= blindspot_precision(h, b) <= 1


bad_group = st.one_of(
    st.just([[0.5]]), st.just([["a"]]), st.just([[[1, 2]]]), st.just(np.arange(3)), st.just([[]]), st.just([])
)


@SETTINGS
@given(bad_group, bad_group, st.one_of(st.floats(allow_nan=True), st.text(max_size=2), st.none()))
def test_blindspot_metrics_reject_garbage(hyps, blinds, lam):
    for fn in (discovery_rate, false_discovery_rate):
        try:
            fn(hyps, blinds, lam, 0.8)
        except ALLOWED:
            pass


@SETTINGS
@given(st.integers(2, 20), st.integers(1, 4), st.integers(1, 3), st.integers(1, 12), st.data())
def test_precision_at_k_in_range(n, m_hat, m, k, data):
    scores = np.asarray(data.draw(st.lists(st.floats(-1e6, 1e6), min_size=n * m_hat, max_size=n * m_hat))).reshape(
        n, m_hat
    )
    truth = np.asarray(data.draw(st.lists(st.booleans(), min_size=n * m, max_size=n * m))).reshape(n, m)
    out = precision_at_k(scores, truth, k)
    assert out.shape == (m,) and np.all((out >= 0) & (out <= 1))


@SETTINGS
@given(
    st.one_of(st.just(np.zeros((0, 2))), st.just(np.array([[np.nan]])), st.just(np.ones(3)), st.just("scores")),
    st.integers(-2, 3),
)
def test_precision_at_k_rejects_garbage(scores, k):
    with pytest.raises(ALLOWED):
        precision_at_k(scores, np.ones((1, 1), bool), k)


@st.composite
def explanations_and_truth(draw):
    n = draw(st.integers(2, 15))
    m = draw(st.integers(1, 6))
    d = 3
    perm = draw(st.permutations(range(n)))
    # The first group is the easy cluster, the others hard: a partition (no image both hard and easy).
    cuts = sorted(draw(st.lists(st.integers(1, n - 1), min_size=1, max_size=3, unique=True)))
    groups = [np.asarray(g, dtype=np.int64) for g in np.split(np.asarray(perm), cuts)]
    proto = np.ones(d) / np.sqrt(d)
    easy = [EasyCluster(groups[0], proto)]
    hard = []
    for g in groups[1:]:
        sents = draw(st.lists(st.integers(0, m - 1), max_size=3, unique=True))
        hard.append(HardCluster(g, proto, 0, sents, [0.0] * len(sents)))
    exp = Explanation(hard, easy, "fpdiff")
    rel = np.asarray(draw(st.lists(st.booleans(), min_size=n * m, max_size=n * m))).reshape(n, m)
    omega = np.asarray(draw(st.lists(st.floats(-1e6, 1e6), min_size=n, max_size=n)))
    return exp, rel, omega


@SETTINGS
@given(explanations_and_truth(), st.floats(0, 3))
def test_evaluate_in_range(case, o):
    exp, rel, omega = case
    out = lbee.evaluate(exp, rel, omega, o=o)
    assert 0 <= out["AHR"] <= 1 and 0 <= out["ACR"] <= 1
    for key in ("TPR", "JI"):
        assert math.isnan(out[key]) or 0 <= out[key] <= 1
    assert out["n_failure_sentences"] == len(lbee.failure_sentences(rel, omega, o=o))
    assert Explanation.from_dict(json.loads(json.dumps(exp.to_dict()))).selected == exp.selected


@SETTINGS
@given(explanations_and_truth(), st.sampled_from(["nan-omega", "short-omega", "bad-rel", "1d-rel", "o"]))
def test_evaluate_rejects_garbage(case, how):
    exp, rel, omega = case
    if how == "nan-omega":
        omega = omega.copy()
        omega[0] = np.nan
    elif how == "short-omega":
        omega = omega[:-1]
    elif how == "bad-rel":
        rel = rel.astype(float) + 2  # values 2 and 3: never a relevance
    elif how == "1d-rel":
        rel = rel[:, 0]
    with pytest.raises(ALLOWED):
        lbee.evaluate(exp, rel, omega, o="x" if how == "o" else 0.2)
