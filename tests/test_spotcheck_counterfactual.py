"""Counterfactual verification in the SpotCheck world: fresh renders where a statement holds, and one condition off.

The world and its model are the demo's (the session's ``demo_run`` fixture); renders are few and seeded.
"""

import json
import re
from types import SimpleNamespace

import numpy as np
import pytest

from lbee.grammar import load_grammar, parse_conditions
from lbee.spotcheck import (
    NEEDED_ACCURACY,
    ExperimentalConfiguration,
    counterfactual_check,
    one_condition_variants,
)

#: Renders per check in these tests (the demo uses lbee.bench.counterfactual.DEMO_COUNTERFACTUAL).
N = 60


@pytest.fixture(scope="module")
def demo_ec(demo_run):
    out, _ = demo_run
    return ExperimentalConfiguration.load(out / "ec")


def _blocks(text):
    """The demo's counterfactual section: {hard cluster: (header, [lines])}."""
    section = text.split("Counterfactual check")[1].split("\n[")[0].split("\nWrote")[0]
    blocks, current = {}, None
    for line in section.splitlines():
        m = re.match(r"  hard group (\d+) \(", line)
        if m:
            current = int(m.group(1))
            blocks[current] = (line, [])
        elif current is not None and line.startswith("      "):
            blocks[current][1].append(line.strip())
    return blocks


def _blindspot_hypotheses(text):
    return {int(b): int(c) for c, b in re.findall(r"hard group (\d+) \(\d+ images; blindspot (\d+)\)", text)}


def test_demo_checks_every_hypothesis_and_prints_each_one_condition_variant(demo_run):
    """Every hypothesis of 'compose' gets the check: its accuracy where it holds and one line per variant; those of
    fewer than FEW_IMAGES images that cover no blindspot share one line."""
    import pandas as pd

    from lbee.run.text import FEW_IMAGES

    out, text = demo_run
    payload = json.loads((out / "explanation.json").read_text())
    grammar = load_grammar("spotcheck")
    hard = payload["methods"]["compose"]["hard_sentences"]
    blocks = _blocks(text)
    covering = _blindspot_hypotheses(text)
    assert sorted(covering) == list(range(len(payload["blindspots"])))
    table = pd.read_parquet(out / "assignments.parquet")
    sizes = table.loc[table["split"] == "hard", "cluster"].value_counts()
    few = [i for i in range(len(hard)) if sizes.get(i, 0) < FEW_IMAGES and i not in covering.values()]
    assert sorted(blocks) == [i for i in range(len(hard)) if i not in few]
    if few:
        named = f"hard group{'s' if len(few) > 1 else ''} {', '.join(map(str, few))} ("
        assert named in text.split("Counterfactual")[1]
    for i in sorted(blocks):
        sentences = hard[i]
        header, lines = blocks[i]
        first = sentences[0]
        assert f'"{payload["sentences"][first]}"' in header
        conditions = parse_conditions(payload["sentence_conditions"][first])
        assert re.fullmatch(r"holds: accuracy \d\.\d\d on 100 new images", lines[0])
        variants = [line for line in lines if line.startswith("without '")]
        assert len(variants) == len(one_condition_variants(conditions, grammar)) >= 1
        assert all(re.search(r": \d\.\d\d", line) for line in variants)


@pytest.mark.parametrize(
    "blindspot",
    [
        0,
        pytest.param(
            1,
            marks=pytest.mark.xfail(
                strict=True,
                reason="compose's first sentence for blindspot 1 leaves out 'small text', which the shipped offline "
                "encoder does not see (the sentence's similarity tells small from large text at ROC-AUC 0.53 among "
                "images with text, 0.43 in the hypothesis's region): the check measures 0.34 where it holds and "
                "says the failure needs 'small text'",
            ),
        ),
    ],
)
def test_demo_statement_of_each_blindspot_is_the_failure_on_fresh_renders(demo_run, blindspot):
    """Issue 33's done-when: on fresh renders satisfying each blindspot's statement the model is right ≤ 20 %."""
    _, text = demo_run
    cluster = _blindspot_hypotheses(text)[blindspot]
    holds = float(re.match(r"holds: accuracy (\d\.\d\d)", _blocks(text)[cluster][1][0]).group(1))
    assert holds <= 0.2


def test_demo_says_what_an_incomplete_statement_lacks(demo_run):
    """Where a statement holds more widely than the failure, the open attribute that parts it is named."""
    _, text = demo_run
    pattern = r"with '.+': (\d\.\d\d) on \d+ of them, with '.+': (\d\.\d\d) on \d+: the failure needs '.+' too"
    for _, lines in _blocks(text).values():
        holds = float(re.match(r"holds: accuracy (\d\.\d\d)", lines[0]).group(1))
        if 0.2 < holds < NEEDED_ACCURACY + 0.2:  # right on part of it: something the statement leaves open decides
            low, high = map(float, re.fullmatch(pattern, lines[1]).groups())
            assert low < holds < high and high >= NEEDED_ACCURACY


def test_each_planted_blindspot_is_the_failure_and_needs_every_condition(demo_ec):
    """The world's truth: where a planted blindspot holds the model fails; changing any one condition ends that."""
    for blindspot in demo_ec.blindspots:
        check = counterfactual_check(demo_ec, blindspot.as_dict(), n_images=N, random_state=0)
        assert check.holds.n == N and check.holds.accuracy <= 0.2 and check.fails
        assert len(check.variants) == len(blindspot.triplets) and all(v.in_world for v in check.variants)
        assert all(check.needed()), check.summary()
        assert check.holds.narrower is None  # nothing left open decides


def test_a_statement_missing_a_condition_is_caught_and_the_condition_named(demo_ec):
    """Blindspot 1 without its text size: accuracy splits by the text's size, and the check says so."""
    full = demo_ec.blindspots[1].as_dict()
    assert full[("text", "size")] == "normal"  # 'small text' in the grammar's words
    partial = {k: v for k, v in full.items() if k != ("text", "size")}
    check = counterfactual_check(demo_ec, partial, n_images=N, random_state=0)
    (low, low_acc, _), (high, high_acc, _) = check.holds.narrower
    assert (low, high) == ("small text", "large text") and low_acc <= 0.2 < NEEDED_ACCURACY <= high_acc
    assert "the failure needs 'small text' too" in check.summary()


def test_a_confounder_is_marked_not_needed(demo_ec):
    """A condition that goes with the failure without causing it: changing it leaves the accuracy low."""
    bs = demo_ec.blindspots[0].as_dict()  # two squares, no circle, no text, below the centre
    assert ("background", "texture") in demo_ec.dataset.rollable and ("background", "texture") not in bs
    check = counterfactual_check(demo_ec, {**bs, ("background", "texture"): "noise"}, n_images=N, random_state=0)
    noisy = [v for v, needed in zip(check.variants, check.needed()) if v.changed[0] == "on a noisy background"]
    assert len(noisy) == 1 and noisy[0].accuracy <= 0.2
    assert "without 'on a noisy background' (on a clean background): " in check.summary()
    assert sum(check.needed()) == len(check.variants) - 1 and "(the failure stays: not needed)" in check.summary()


def test_same_random_state_same_result(demo_ec):
    conditions = {("square", "number"): "2", ("circle", "presence"): "false"}
    a = counterfactual_check(demo_ec, conditions, n_images=20, random_state=3)
    b = counterfactual_check(demo_ec, conditions, n_images=20, random_state=3)
    assert a.to_dict() == b.to_dict() and a.statement == "An image with two squares but no circle"


def test_a_variant_outside_the_world_is_said_so(demo_ec):
    """An attribute the world never varies (here every square is blue) is rendered, and marked never seen."""
    assert ("square", "color") not in demo_ec.dataset.rollable
    check = counterfactual_check(demo_ec, {("square", "color"): "blue"}, n_images=10)
    assert check.holds.in_world and not check.variants[0].in_world
    assert "(an orange square, never in this world)" in check.summary()


def test_one_condition_variants_drop_what_the_change_contradicts():
    g = load_grammar("spotcheck")
    conds = {("circle", "presence"): "true", ("circle", "color"): "orange", ("background", "position"): "above"}
    variants = {(k, v): c for k, v, c in one_condition_variants(conds, g)}
    # no circle: its colour goes with it; the clause stays
    assert variants[(("circle", "presence"), "false")] == {
        ("circle", "presence"): "false",
        ("background", "position"): "above",
    }
    assert variants[(("circle", "color"), "blue")][("circle", "color")] == "blue"
    assert variants[(("background", "position"), "below")][("background", "position")] == "below"
    # no square: the clause about the square is dropped
    square = one_condition_variants({("square", "presence"): "true", ("background", "position"): "above"}, g)
    assert {v: c for (_, v, c) in square}["false"] == {("square", "presence"): "false"}


@pytest.mark.parametrize(
    ("conditions", "match"),
    [
        ({}, "`conditions` is empty"),
        ({("triangle", "presence"): "true"}, "triangle.presence"),
        ({("circle", "presence"): "false", ("circle", "color"): "orange"}, "can never hold together"),
    ],
)
def test_bad_conditions_are_refused_naming_them(demo_ec, conditions, match):
    with pytest.raises(ValueError, match=match):
        counterfactual_check(demo_ec, conditions, n_images=1)


def test_a_world_without_model_is_refused(demo_ec):
    import dataclasses

    with pytest.raises(ValueError, match="no trained model"):
        counterfactual_check(dataclasses.replace(demo_ec, model=None), {("square", "number"): "2"})


def test_bench_columns_beside_the_description_score(demo_ec):
    """Per describer: accuracy where the sentence describing each covered blindspot holds, conditions needed."""
    from lbee import bench
    from lbee.bench.counterfactual import blindspot_counterfactuals

    exact = demo_ec.blindspots[0].as_dict()
    loose = {("square", "number"): "2", ("circle", "presence"): "false"}  # lacks 'no text': holds more widely
    analysis = SimpleNamespace(
        result=SimpleNamespace(sentences=["exact", "loose", "no conditions"]),
        sentence_conditions=[exact, loose, None],
        description_details={
            "good": [{"blindspot": 0, "covered": True, "sentences": [0, 1]}, {"blindspot": 1, "covered": False}],
            "worse": [{"blindspot": 0, "covered": True, "sentences": [1]}],
            "mute": [{"blindspot": 0, "covered": True, "sentences": [2]}],
        },
    )
    cf = blindspot_counterfactuals(demo_ec, analysis, n_images=N)
    assert cf["good"]["accuracy"] <= 0.2 and cf["good"]["needed"] == 1.0
    assert cf["worse"]["accuracy"] > cf["good"]["accuracy"] + 0.2
    assert np.isnan(cf["mute"]["accuracy"]) and analysis.description_details["mute"][0]["counterfactual"] is None
    assert analysis.description_details["good"][0]["counterfactual"]["holds"]["n"] == N
    json.dumps(analysis.description_details)  # kept in the bench's EC records
    # the table: rows beside the description score, over the records that have them
    rec = {"scores": {"good": {"AHR": 1, "ACR": 1, "TPR": 1, "JI": 1}}, "description_score": {"good": 1.0}}
    rows = bench.summarize([{**rec, "failure_analysis": [], "counterfactual": {"good": cf["good"]}}])
    names = [r["metric"] for r in rows]
    assert "description score" in names
    (acc,) = [r for r in rows if r["metric"].startswith("counterfactual accuracy")]
    assert acc["mean"] == pytest.approx(cf["good"]["accuracy"]) and acc["n"] == 1
    assert not any("counterfactual" in r["metric"] for r in bench.summarize([{**rec, "failure_analysis": []}]))


def test_a_statement_the_model_gets_right_is_no_failure(demo_ec):
    """Where the model is right, no condition is 'needed' and no open attribute is said to be missing."""
    check = counterfactual_check(demo_ec, {("square", "presence"): "true", ("circle", "presence"): "false"}, n_images=N)
    assert check.holds.accuracy >= 0.5 and not check.fails
    assert check.holds.narrower is None and not any(check.needed())
    assert "not needed" not in check.summary() and "the failure needs" not in check.summary()
