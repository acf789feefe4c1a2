"""Trial 38 (a sawmill's plank grader): a confirmed finding broader than its failure, said to be so."""

import numpy as np
import pytest


def _planks(rng, n=600):
    """Walnut, wet planks fail only on the roller conveyor; a coat colour that has nothing to do with it."""
    walnut_wet = rng.random(n) < 0.3
    roller = rng.random(n) < 0.6
    colour = rng.random(n) < 0.5
    failed = rng.random(n) < np.where(walnut_wet & roller, 0.9, 0.04)
    return walnut_wet, roller, colour, failed


def test_narrowing_names_the_condition_whose_absence_fails_like_the_rest():
    from lbee.core.confirmation import narrowing

    rng = np.random.default_rng(0)
    walnut_wet, roller, colour, failed = _planks(rng)
    rows = np.arange(len(failed))
    best = narrowing(walnut_wet, [colour, walnut_wet & roller], failed, rows)
    assert best is not None and best["index"] == 1
    assert best["n"] == int((walnut_wet & roller).sum()) and best["n_left_out"] == int((walnut_wet & ~roller).sum())
    assert best["error_rate_left_out"] < 0.15 < 0.7 < best["error_rate"] and best["p_value"] <= 0.05
    # nothing narrows the exact statement, and a condition unrelated to the failure never does
    assert narrowing(walnut_wet & roller, [colour], failed, rows) is None
    assert narrowing(walnut_wet, [colour], failed, rows) is None
    # the images left out must fail like the rest, not merely less than the failure (a confounder's)
    leaky = failed | ((walnut_wet & ~roller) & (rng.random(len(failed)) < 0.3))
    assert narrowing(walnut_wet, [roller], leaky, rows) is None


@pytest.mark.parametrize("block", [64, 1])
def test_a_finding_broader_than_its_failure_says_what_it_may_need(tmp_path, monkeypatch, block):
    """Trial 38: "a walnut plank, with wet patches" (0.60) hid that the chain conveyor's fail 0 of 32 times."""
    from click.testing import CliRunner

    import lbee
    import lbee.run.confirm
    from lbee.cli import cli
    from lbee.io.sentences import load_sentence_set

    monkeypatch.setattr(lbee.run.confirm, "NARROW_BLOCK", block)  # candidates judged a block at a time, alike

    grammar = tmp_path / "planks.grammar.yaml"
    grammar.write_text(
        "name: planks\nlead: A photo of\nbare: A photo\nmax_conditions: 2\nsubjects:\n"
        "  - id: plank\n    noun: plank\n    attributes:\n"
        "      - id: species\n        kind: noun\n        values: {pine: pine plank, walnut: walnut plank}\n"
        "      - id: wet\n        kind: clause\n        values: {'true': with wet patches, 'false': that is dry}\n"
        "settings:\n  - id: conveyor\n    noun: conveyor\n    preposition: on\n    attributes:\n"
        "      - id: type\n        values: {chain: chain, roller: roller}\n"
    )
    out = tmp_path / "planks.txt"
    assert CliRunner().invoke(cli, ["sentences", "generate", str(grammar), "--out", str(out)]).exit_code == 0
    sset = load_sentence_set(out)
    rng = np.random.default_rng(1)
    n = 900
    walnut, wet, roller = rng.random(n) < 0.4, rng.random(n) < 0.5, rng.random(n) < 0.6
    failed = rng.random(n) < np.where(walnut & wet & roller, 0.9, 0.03)
    truth = {("plank", "species"): np.where(walnut, "walnut", "pine"), ("plank", "wet"): np.where(wet, "true", "false")}
    truth[("conveyor", "type")] = np.where(roller, "roller", "chain")
    gamma = np.ones((n, len(sset.conditions)), bool)
    for j, c in enumerate(sset.conditions):
        for key, value in sset.grammar.implied(c).items():
            if key in truth:  # (the plank's and the conveyor's presence hold for every image)
                gamma[:, j] &= truth[key] == value
    # embeddings that only Γ is read through: the statement tested is the one the run found
    x = rng.normal(size=(n, 16)).astype(np.float32)
    s = rng.normal(size=(len(sset.conditions), 16)).astype(np.float32)
    conf = np.where(failed, rng.uniform(0.05, 0.4, n), rng.uniform(0.6, 0.99, n))
    result = lbee.audit(x, s, sentences=sset, confidence=conf, performance=(~failed).astype(float), relevance=gamma)
    statements = result.main.extra["confirmation"]["statements"]
    failure = {"plank.species=walnut", "plank.wet=true", "conveyor.type=roller"}
    confirmed = [st for st in statements if st["confirmed"]]
    assert confirmed
    for st in confirmed:  # each confirmed statement says less than the failure: what it lacks is named
        own = set(st["conditions"].split("; "))
        assert own < failure and st["narrower"]["condition"] in failure - own, st
        assert st["narrower"]["error_rate_left_out"] < 0.1 < 0.4 < st["narrower"]["error_rate"]
    two = [st for st in confirmed if st["text"] == "A photo of a walnut plank, on a roller conveyor"]
    assert two and two[0]["narrower"]["with"] == "A photo of a walnut plank, on a roller conveyor, with wet patches"
    from lbee.run.confirm_text import ranked_statements

    listed = ranked_statements(result.main.extra["confirmation"])
    assert any(e.get("may_need", "").startswith("the failure may need '") for e in listed)


def test_a_malformed_narrower_record_is_not_said():
    """A record read back from an edited or older explanation.json is said only when whole (no traceback)."""
    from lbee.run.condition_words import conditions_said, narrower_words

    whole = {"phrase": "on a roller conveyor", "with": "A photo", "n_left_out": 14, "n": 44}
    whole.update(error_rate_left_out=0.0, error_rate=0.8, p_value=0.0031)
    assert narrower_words(whole).startswith("the failure may need 'on a roller conveyor' too: the 14 of its images")
    assert conditions_said({"narrower": whole}) == "; it may need 'on a roller conveyor' too"
    for broken in (None, "x", {**whole, "phrase": 3}, {**whole, "n": "14"}, {**whole, "p_value": True}):
        assert narrower_words(broken) == "" and conditions_said({"narrower": broken}) == ""
