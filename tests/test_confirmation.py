"""Confirmation on held-out images (issue 33): the tests, the q-values, the ablation, the ranking and the outputs."""

import numpy as np
import pytest

from lbee.core.confirmation import (
    MIN_CONFIRM_IMAGES,
    MIN_EFFECT,
    NEEDED,
    NOT_NEEDED,
    ablation,
    bh_qvalues,
    effect_lower_bound,
    fisher_greater,
    held_out,
    is_confirmed,
    region_test,
)
from lbee.grammar import load_grammar

G = load_grammar("spotcheck")
FAILURE = {("square", "color"): "blue", ("circle", "presence"): "false", ("text", "presence"): "true"}


def grammar_world(
    n=3000, seed=0, noise=0.08, failure=FAILURE, fail_rate=0.9, noise_rate=0.03, grammar=True, confounder=None
):
    """Images embedded beside the spotcheck grammar's atom sentences (one axis each), failing inside ``failure``.

    ``failure=None``: label noise only (every image fails at ``noise_rate``). ``grammar=False``: the sentences
    carry no conditions (no 'compose'; statements are tested by similarity above τ). ``confounder=(key, value, p_in,
    p_out)``: the attribute ``key`` has ``value`` with probability p_in inside the failure, p_out outside.

    Returns (RunInputs, Scores, inside): ω is a 0/1 correctness, φ the confidence (low where the model fails).
    """
    from lbee.grammar import embedded_atoms
    from lbee.run.specs import RunInputs, Scores

    atoms, conds = embedded_atoms(G)
    rng = np.random.default_rng(seed)
    truth = {key: np.asarray(values)[rng.integers(0, len(values), n)] for key, values in G.keys()}

    def holds(key, value):  # "a blue square" holds only where there is a square, as the grammar says it
        present = truth.get((key[0], "presence"), np.full(n, "true")) == "true"
        return (truth[key] == value) & (present | (key[1] == "presence"))

    inside = np.all([holds(k, v) for k, v in (failure or {}).items()], axis=0) if failure else np.zeros(n, bool)
    if confounder is not None:
        key, value, p_in, p_out = confounder
        other = next(v for v in dict(G.keys())[key] if v != value)
        truth[key] = np.where(rng.random(n) < np.where(inside, p_in, p_out), value, other)
    x = np.zeros((n, len(atoms) + 8))
    for j, c in enumerate(conds):
        ((key, value),) = c.items()
        present = truth.get((key[0], "presence"), np.full(n, "true")) == "true"
        x[:, j] = (truth[key] == value) & (present | (key[1] == "presence"))
    x += rng.normal(0, noise, x.shape)
    wrong = rng.random(n) < np.where(inside, fail_rate, noise_rate)
    phi = np.where(wrong, 0.2, 0.9) + rng.normal(0, 0.05, n)
    inputs = RunInputs(
        x,
        np.eye(len(atoms), x.shape[1]),
        atoms,
        [f"img{i}" for i in range(n)],
        None,
        None,
        None,
        None,
        "none",
        0.15,
        {"encoder": "planted"},
        "spotcheck.grammar",
        sentence_conditions=conds if grammar else None,
        grammar=G if grammar else None,
    )
    return inputs, Scores(phi, (~wrong).astype(float), "φ", "correctness"), inside


def run(inputs, scores, methods=("compose",), **settings):
    from lbee.run.pipeline import analyse
    from lbee.run.settings import RunSettings

    return analyse(inputs, scores, RunSettings(methods=methods, clusters=8, k=2, **settings))


def test_held_out_split_is_stratified_and_seeded():
    strata = np.repeat([0, 1, 2], [100, 300, 600])
    mask = held_out(strata, 0.3)
    assert [int(mask[strata == s].sum()) for s in (0, 1, 2)] == [30, 90, 180]
    assert np.array_equal(mask, held_out(strata, 0.3)) and not np.array_equal(mask, held_out(strata, 0.3, seed=1))


def test_statistics_of_a_region():
    failed = np.r_[np.ones(40, bool), np.zeros(60, bool), np.ones(5, bool), np.zeros(95, bool)]
    region = np.r_[np.ones(100, bool), np.zeros(100, bool)]
    t = region_test(region, failed, np.arange(200))
    assert (t.n_in, t.errors_in, t.n_out, t.errors_out) == (100, 40, 100, 5)
    assert t.lift == pytest.approx(8.0) and t.ci[0] < 0.4 < t.ci[1] and t.p_value < 1e-8
    from scipy.stats import fisher_exact

    assert fisher_greater(7, 10, 3, 12) == pytest.approx(fisher_exact([[7, 3], [3, 9]], "greater")[1])
    # Benjamini–Hochberg: the step-up rule, in the input order
    q = bh_qvalues([0.01, 0.04, 0.03, 0.5])
    assert q.tolist() == pytest.approx([0.04, 0.04 * 4 / 3, 0.04 * 4 / 3, 0.5])


def test_a_significant_but_weak_region_is_not_confirmed():
    """1,500 images failing 1.4× as often as 1,500 others: real (p < 1e-4), but not twice as often."""
    failed = np.r_[np.ones(210, bool), np.zeros(1290, bool), np.ones(150, bool), np.zeros(1350, bool)]
    region = np.r_[np.ones(1500, bool), np.zeros(1500, bool)]
    weak = region_test(region, failed, np.arange(3000))
    assert weak.p_value < 1e-3 and weak.lift == pytest.approx(1.4)
    assert 1.0 < weak.effect_low < weak.lift < MIN_EFFECT and not is_confirmed(weak.p_value, weak.effect_low)
    # Katz's log interval with ½ added to each count, one-sided 95 %
    a, n, b, m = 210.5, 1500.5, 150.5, 1500.5
    katz = np.exp(np.log((a / n) / (b / m)) - 1.645 * np.sqrt(1 / a - 1 / n + 1 / b - 1 / m))
    assert weak.effect_low == pytest.approx(katz)
    # a failure four times as common confirms; so does one where most images outside fail but those inside
    # succeed a third as often (an error ratio of 0.95 / 0.55 < 2 could never confirm)
    strong = region_test(region, np.r_[np.ones(600, bool), np.zeros(900, bool), failed[1500:]], np.arange(3000))
    assert strong.effect_low > MIN_EFFECT and is_confirmed(strong.p_value, strong.effect_low)
    mostly = np.r_[np.ones(285, bool), np.zeros(15, bool), np.ones(1650, bool), np.zeros(1350, bool)]
    t = region_test(np.r_[np.ones(300, bool), np.zeros(3000, bool)], mostly, np.arange(3300))
    assert t.lift < MIN_EFFECT < t.effect_low and is_confirmed(t.p_value, t.effect_low)
    assert effect_lower_bound(5, 0, 3, 10) == 0.0 == effect_lower_bound(5, 10, 0, 0)
    assert not is_confirmed(0.2, 10.0) and is_confirmed(0.01, MIN_EFFECT)


def test_the_terminal_says_why_a_significant_statement_is_not_confirmed():
    from lbee.run.confirm_text import confirmation_lines

    failed = np.r_[np.ones(210, bool), np.zeros(1290, bool), np.ones(150, bool), np.zeros(1350, bool)]
    t = region_test(np.r_[np.ones(1500, bool), np.zeros(1500, bool)], failed, np.arange(3000)).to_dict()
    statement = {"text": "A photo in the rain", **t, "q_value": t["p_value"], "confirmed": False}
    conf = {
        "status": "done",
        "n_held_out": 3000,
        "outcome": "error rate",
        "statements": [statement],
        "groups": [{"statement": 0, "confirmed": False}],
    }
    (line,) = confirmation_lines(conf, 0)
    assert line.startswith("its statement NOT CONFIRMED") and f"under the {MIN_EFFECT:g}× lbee asks" in line
    assert f"at least {t['effect_low']:.1f}× as often as the rest (95 % sure)" in line and "too weak to act on" in line
    statement.update(errors_in=600, error_rate_in=0.4, q_value=1e-40, effect_low=3.1, confirmed=True)
    assert "too weak" not in confirmation_lines(conf, 0)[0]


def test_ablation_keeps_a_needed_condition_and_drops_one_that_goes_with_the_failure():
    """Failure where A and B hold; C holds for 90 % of it and 50 % elsewhere: dropping C lets in failing images."""
    rng = np.random.default_rng(0)
    n = 4000
    a, b = rng.random(n) < 0.5, rng.random(n) < 0.5
    inside = a & b
    c = rng.random(n) < np.where(inside, 0.9, 0.5)
    failed = rng.random(n) < np.where(inside, 0.9, 0.03)
    out = ablation(a & b & c, [b & c, a & c, a & b], failed, np.arange(n))
    assert [o["verdict"] for o in out] == [NEEDED, NEEDED, NOT_NEEDED]
    assert out[2]["error_rate_excluded"] > 0.8 and out[0]["error_rate_excluded"] < 0.1


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_confounder_that_compose_keeps_is_marked_not_needed_on_held_out_images(seed):
    """The world of test_compose's strict xfail (issue 31): compose names the failure with a 4th literal, grey,
    held at 90 % inside and 50 % outside; the ablation on held-out images says grey is not needed for it."""
    from test_compose import KEYS, holds, planted_world

    from lbee.core.atoms import Literals
    from lbee.core.compose import ComposeSearch
    from lbee.core.confirmation import CONFIRM_Q
    from lbee.core.hypotheses import one_hypothesis_per_failure

    values, _ = planted_world(n=8000, seed=4 + seed)
    rng = np.random.default_rng(4 + seed)
    failure = {("square", "color"): "orange", ("circle", "presence"): "false", ("text", "presence"): "true"}
    inside = holds(values, failure)
    grey = ("background", "color")
    values[grey] = np.where(inside, rng.random(len(inside)) >= 0.9, rng.random(len(inside)) >= 0.5).astype(int)
    keys, cols = [(("square", "presence"), "true")], [np.ones(len(inside))]
    for k, (v0, v1) in KEYS.items():
        for bit, v in ((0, v0), (1, v1)):
            keys.append((k, v))
            cols.append((values[k] == bit).astype(float))
    truth = np.stack(cols, 1)
    probs = 1 / (1 + np.exp(-(4 * (truth - 0.5) + rng.normal(0, 1.2, truth.shape))))
    lits = Literals.from_probabilities(keys, probs)
    wrong = rng.random(len(inside)) < np.where(inside, 0.9, 0.03)
    test = held_out(wrong.astype(int), 0.3, seed=seed)
    search = ComposeSearch(lits, G, np.flatnonzero(~wrong & ~test), np.flatnonzero(wrong & ~test))
    big = values[("square", "size")] == 1
    groups = [np.flatnonzero(wrong & ~test & m) for m in (inside & big, inside & ~big, ~inside)]
    _, descs = one_hypothesis_per_failure(search, groups, wrong)
    # compose, searching the whole hard split (lbee.core.discovery), mostly leaves grey out; the statement that
    # names it beside the failure, as compose said before, is the one ablated
    named = {**descs[0][0].conditions, grey: KEYS[grey][0]}
    assert {k: v for k, v in named.items() if k != grey} == failure
    index = {key: j for j, key in enumerate(search.keys)}

    def region(conds):
        return search.region([index[item] for item in conds.items()]) >= 0.5

    rows = np.flatnonzero(test)
    assert region_test(region(named), wrong, rows).p_value < CONFIRM_Q
    out = ablation(region(named), [region({k: v for k, v in named.items() if k != key}) for key in named], wrong, rows)
    verdict = dict(zip(named, (o["verdict"] for o in out)))
    assert verdict[grey] == NOT_NEEDED
    assert all(verdict[k] == NEEDED for k in failure)


@pytest.fixture(scope="module")
def planted_whole():
    inputs, scores, _ = grammar_world()
    return run(inputs, scores)


@pytest.fixture(scope="module")
def planted_run(planted_whole):
    return planted_whole.main


def test_a_run_confirms_a_planted_failure_and_ranks_it_first(planted_run, planted_whole):
    r = planted_run
    conf = r.extra["confirmation"]
    assert conf["status"] == "done" and conf["n_held_out"] == len(conf["held_out"]) == 900
    held = np.asarray(conf["held_out"])
    first = r.explanations["compose"].hard_clusters[0]
    assert not np.isin(first.indices, held).any()  # the slicer never saw a held-out image
    lead = conf["statements"][conf["groups"][0]["statement"]]
    assert conf["groups"][0]["confirmed"] and lead["q_value"] <= 0.05
    assert lead["text"] == G.render(FAILURE)
    assert lead["error_rate_in"] > 0.7 and lead["error_rate_out"] < 0.1
    assert [g["confirmed"] for g in conf["groups"]] == sorted((g["confirmed"] for g in conf["groups"]), reverse=True)
    assert r.explanations["compose"].params["confirm"] == 0.3
    # the hypothesis's own images beside its description's region, each named
    h = r.extra["hypotheses"][0]
    assert h["hypothesis_error_rate"] > 0.8 and "error_concentration" in h
    # each confirmed statement with the ids of the images it holds for (trial 26 dug them out of extra)
    top = planted_whole.confirmed()[0]
    assert top["text"] == lead["text"] and top["images"] == [r.image_ids[i] for i in lead["holds_for"]]


def test_confirmation_off_or_skipped_is_said_and_changes_nothing_else():
    inputs, scores, _ = grammar_world(n=MIN_CONFIRM_IMAGES - 100)
    whole = run(inputs, scores)
    r = whole.main
    assert r.extra["confirmation"]["status"] == "skipped"
    # trial 25: `confirmed()` gave [] in silence, read as "tested, and none held"
    with pytest.warns(UserWarning, match=f"no statement of this run was tested.*under the {MIN_CONFIRM_IMAGES}"):
        assert whole.confirmed() == []
    # the leads, without walking result.main.explanations (trial 32): each group as --json lists it
    groups = whole.groups()
    hard = r.explanations["compose"].hard_clusters
    assert [g["size"] for g in groups] == [len(c.indices) for c in hard] and all(g["verdict"] is None for g in groups)
    assert groups[0]["sentences"]["compose"] == r.explanations["compose"].cluster_sentences(0)
    assert groups[0]["error_rate"] == round(float(1 - r.performance[hard[0].indices].mean()), 4)
    # each group's statement where it holds, beside the group's own error rate (trial 25 read 0.85 for a statement
    # that holds for 105 images wrong at 23 %)
    from lbee.run.text import terminal_blocks

    said = " ".join(terminal_blocks(r, width=200).split())
    share = 100 * r.extra["hypotheses"][0]["error_concentration"]
    line = f"not tested: of the hard and easy images its statement holds for, {share:.0f} % are hard"
    assert line in said
    # report.md and the HTML report say it too: the terminal alone did (issue 34)
    from lbee.reports.html import render_report
    from lbee.run.text import render_markdown

    assert line in " ".join(render_markdown(r).split())
    assert line in " ".join(render_report(_page(r, r.extra["hypotheses"])).split())
    assert f"under the {MIN_CONFIRM_IMAGES}" in r.extra["confirmation"]["reason"]
    from lbee.run.confirm_text import confirmation_note

    # a fourteenth user's 384-image audit read only "skipped": what the numbers shown then are is said
    assert "Read each group as found, not confirmed" in confirmation_note(r.extra["confirmation"])
    off = run(inputs, scores, confirm=0).main
    assert off.extra["confirmation"] == {
        "status": "off",
        "fraction": 0.0,
        "seed": 0,
        "reason": "turned off (confirm = 0)",
    }
    assert [c.indices.tolist() for c in off.explanations["compose"].hard_clusters] == [
        c.indices.tolist() for c in r.explanations["compose"].hard_clusters
    ]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_label_noise_alone_confirms_no_statement(seed):
    """No planted failure: the model errs on 10 % of the images at random. Every describer still returns
    statements (found on the discovery images); none confirms on the held-out ones at q <= 0.05."""
    inputs, scores, _ = grammar_world(seed=seed, failure=None, noise_rate=0.1)
    conf = run(inputs, scores, methods=("compose", "tops", "fpdiff")).main.extra["confirmation"]
    assert conf["status"] == "done" and len(conf["statements"]) >= 5
    assert not any(s["confirmed"] for s in conf["statements"]), [s for s in conf["statements"] if s["confirmed"]]
    assert not any(g["confirmed"] for g in conf["groups"])


def test_sentences_without_conditions_are_tested_by_similarity_above_tau():
    inputs, scores, inside = grammar_world(grammar=False)
    r = run(inputs, scores, methods=("fpdiff",)).main
    conf = r.extra["confirmation"]
    assert conf["status"] == "done" and all("conditions" not in s for s in conf["statements"])
    tau = r.explanations["fpdiff"].params["tau"]
    s = conf["statements"][0]
    held = np.asarray(conf["held_out"])
    region = inputs.embeddings[held] / np.linalg.norm(inputs.embeddings[held], axis=1, keepdims=True)
    assert s["n_in"] == int((region @ inputs.sentence_embeddings[s["sentence"]] > tau).sum())


def test_a_given_relevance_defines_a_sentence_s_region_and_an_empty_region_is_not_tested():
    """Seventh user: a sentence their Γ held for 100 % of the group was 'NOT CONFIRMED ... the images it is true
    of, 0, error rate 0.00 (95 % CI 0.00–1.00) ... lift 0.0': the region came from a random encoder's similarity."""
    import dataclasses

    from lbee.run.text import confirmation_lines

    inputs, scores, inside = grammar_world(grammar=False)
    gamma = np.zeros((len(inside), len(inputs.sentences)), dtype=bool)
    gamma[:, 0] = inside  # sentence 0 is true exactly of the failure; every other sentence of no image
    r = run(dataclasses.replace(inputs, relevance=gamma), scores, methods=("tops", "fpdiff")).main
    conf = r.extra["confirmation"]
    held = np.asarray(conf["held_out"])
    by_text = {s["text"]: s for s in conf["statements"]}
    first = by_text[inputs.sentences[0]] if inputs.sentences[0] in by_text else None
    others = [s for s in conf["statements"] if s["sentence"] != 0]
    assert all(s["region"] == "relevance" for s in conf["statements"])
    assert all(s["n_in"] == 0 and not s["confirmed"] for s in others)
    if first is not None:  # chosen by a describer: its region is the failure's held-out images
        assert first["n_in"] == int(inside[held].sum()) and first["confirmed"]
    empty = [g for g in range(len(conf["groups"])) if conf["statements"][conf["groups"][g]["statement"]]["n_in"] == 0]
    assert empty
    (line,) = confirmation_lines(conf, empty[0])
    assert line == (
        f"its statement NOT CONFIRMED: it holds for none of the {conf['n_held_out']} held-out images (the given Γ "
        "holds it for none): it cannot be tested there"
    )
    # the groups no statement confirms come most harmful first, as the heading says (not in clustering order)
    omega = np.asarray(scores.performance)
    groups = r.explanations["fpdiff"].hard_clusters
    unconfirmed = [i for i, g in enumerate(conf["groups"]) if not g["confirmed"]]
    harm = [(1 - omega[groups[i].indices].mean()) * len(groups[i].indices) for i in unconfirmed]
    assert harm == sorted(harm, reverse=True), harm


def test_terminal_and_markdown_tell_confirmed_from_unconfirmed(planted_run):
    from lbee.run.text import render_markdown, summary_dict, terminal_blocks

    conf = planted_run.extra["confirmation"]
    kinds = [g["confirmed"] for g in conf["groups"]]
    assert True in kinds and False in kinds  # the planted world has both
    text = terminal_blocks(planted_run, width=100)
    blocks = [b for b in text.split("\n\n") if b.startswith("Hard group")]
    marks = [("NOT CONFIRMED" in b, "CONFIRMED on" in b.replace("NOT CONFIRMED on", "")) for b in blocks]
    assert marks == [(not k, k) for k in kinds]
    assert "needed" in blocks[0] and max(map(len, text.splitlines())) <= 100
    md = render_markdown(planted_run)
    assert md.count("- its statement NOT CONFIRMED on") == kinds.count(False)
    assert md.count("- its statement CONFIRMED on") == kinds.count(True)
    groups = summary_dict(planted_run)["hard_groups"]
    assert [g["confirmation"]["confirmed"] for g in groups] == kinds


def test_a_run_never_calls_a_confounder_needed():
    """Through the whole run: grey held by 90 % of the failure's images and 50 % of the others. Where compose
    names it, on the held-out images its ablation says 'not needed' where the excluded images suffice to
    tell (about 10 % of the failure's held-out images), else that it cannot tell, never 'needed'; a planted
    condition is never called 'not needed'."""
    grey = ("background.color=grey", ("background", "color"), "grey")
    verdicts = []
    for seed in range(3):
        inputs, scores, _ = grammar_world(n=12000, seed=seed, noise=0.2, confounder=(grey[1], grey[2], 0.9, 0.5))
        conf = run(inputs, scores).main.extra["confirmation"]
        lead = conf["statements"][conf["groups"][0]["statement"]]
        assert lead["confirmed"] and lead["text"].startswith(G.render(FAILURE)), lead["text"]
        verdict = {a["condition"]: a["verdict"] for a in lead["ablation"]}
        assert all(verdict[f"{k[0]}.{k[1]}={v}"] != NOT_NEEDED for k, v in FAILURE.items()), verdict
        verdicts.append(verdict.get(grey[0]))
    # Where the lead names grey, its ablation says so; found by its description (lbee.core.discovery) the failure
    # is usually named without it (None: grey not said). The ablation of a named grey is tested above.
    assert NEEDED not in verdicts, verdicts


def test_a_statement_that_restates_the_groups_above_is_not_confirmed():
    """A fragment of a failure confirms on its own (its region holds the failure's images): in the demo, three
    3-image groups' statements, each a wider version of blindspot 1's, were CONFIRMED beside it. Tested on the
    images the statements above it do not hold for, a restatement adds nothing; a second failure still does."""
    from lbee.run.confirm_rank import beyond_the_groups_above

    rng = np.random.default_rng(0)
    n = 3000
    a = np.zeros(n, bool)
    a[:300] = True  # failure A
    c = np.zeros(n, bool)
    c[300:500] = True  # failure C, elsewhere
    failed = (a | c) & (rng.random(n) < 0.9) | (~(a | c) & (rng.random(n) < 0.03))
    wider_a = a | (~c & (rng.random(n) < 0.1))  # A's statement without a condition: A and 10 % of the rest
    regions = np.stack([a, wider_a, c, a], axis=1)
    statements = [{"confirmed": True}] * 4
    rows = np.arange(n)
    out = beyond_the_groups_above([0, 1, 2, 3, None], statements, regions, failed, rows)
    assert out[0] is None and out[4] is None  # the first has nothing above it; no statement, no test
    assert out[1]["confirmed"] is False and out[1]["groups_above"] == [0] and out[1]["n_in"] > 200
    assert out[2]["confirmed"] is True and out[2]["groups_above"] == [0] and out[2]["n_in"] == 200
    assert out[3]["confirmed"] is False and out[3]["n_in"] == 0  # the same statement twice
    assert out[3]["groups_above"] == [0, 2]  # a restatement is not above anything


def test_a_broader_statement_leads_when_the_narrower_ones_condition_does_not_matter():
    """A thirteenth user's confirmed list put 'a red blob and a grey sky' (the failure and a condition that goes
    with it, failing by chance a little more often) above 'a red blob' (the failure), which was said only to add
    the rest. The broader statement now leads and the narrower one goes with it; a broad statement that holds
    other images failing less often ('an image', below) stays below the failure's own."""
    from lbee.run.confirm_rank import beyond_the_groups_above, broader_first

    rng = np.random.default_rng(1)
    n = 4000
    blob = np.zeros(n, bool)
    blob[:400] = True  # the failure
    grey = blob & (rng.random(n) < 0.6) | (~blob & (rng.random(n) < 0.2))  # goes with it
    failed = ~blob & (rng.random(n) < 0.03)
    for part, rate in ((blob & grey, 0.88), (blob & ~grey, 0.84)):  # the narrower one a little more often, by chance
        idx = np.flatnonzero(part)
        failed[idx[: round(rate * idx.size)]] = True
    wide = blob | (rng.random(n) < 0.5)  # the failure and half of the rest
    regions = np.stack([blob & grey, blob, wide], axis=1)
    statements = [{"confirmed": True}] * 3
    rows = np.arange(n)
    assert failed[blob & grey].mean() > failed[blob].mean()  # ranked by precision, the narrower one first
    order = broader_first([0, 1, 2], statements, regions, failed, rows)
    assert order == [1, 0, 2]
    out = beyond_the_groups_above([[0, 1, 2][k] for k in order], statements, regions, failed, rows)
    assert out[0] is None and out[1]["confirmed"] is False  # 'a red blob and a grey sky' goes with 'a red blob'
    # a narrower statement whose condition matters (its extra images fail far less often) keeps its place
    half = blob & (np.arange(n) < 200)
    failed2 = failed.copy()
    failed2[blob & ~half] = False
    assert broader_first([0, 1], statements, np.stack([half, blob], axis=1), failed2, rows) == [0, 1]
    # an unconfirmed or missing statement is never moved
    assert broader_first([0, None, 1], [{"confirmed": True}, {"confirmed": False}], regions, failed, rows) == [0, 1, 2]


def test_a_statement_with_a_condition_the_images_cannot_separate_goes_below_the_shorter_one():
    """Trial 29: "on a dark belt" held for 55 of a failure's 56 images. 'wet, crushed, dim light, on a dark belt'
    led the finding and the exact statement was said to go with it, on the same held-out images. With as good as
    the same images, the shorter statement goes first; with images of its own, the extra condition can matter."""
    from lbee.run.confirm_rank import broader_first

    rng = np.random.default_rng(2)
    n = 3000
    failure = np.zeros(n, bool)
    failure[:300] = True
    dark = failure.copy()
    dark[5] = False  # the condition goes with the failure on all but a few of its images
    failed = failure & (rng.random(n) < 0.9) | (~failure & (rng.random(n) < 0.03))
    failed[:5] = True
    failed[5] = False  # the one image it keeps out is right: the longer statement fails a little more often
    exact = {"confirmed": True, "conditions": "item.state=crushed; item.wet=true; scene.light=dim"}
    longer = {"confirmed": True, "conditions": exact["conditions"] + "; belt.color=dark"}
    rows = np.arange(n)
    assert failed[dark].mean() > failed[failure].mean()
    regions = np.stack([dark, failure], axis=1)
    assert broader_first([0, 1], [longer, exact], regions, failed, rows) == [1, 0]
    # the same conditions as a dict (before they are written out) are read alike
    as_dict = {"confirmed": True, "conditions": {("item", "state"): "crushed", ("item", "wet"): "true"}}
    assert broader_first([0, 1], [longer, as_dict], regions, failed, rows) == [1, 0]
    # not a shorter statement (another condition), or no conditions at all: no move on a near tie
    other = {"confirmed": True, "conditions": "item.state=crushed; scene.light=bright"}
    assert broader_first([0, 1], [longer, other], regions, failed, rows) == [0, 1]
    plain = [{"confirmed": True}, {"confirmed": True}]
    assert broader_first([0, 1], plain, regions, failed, rows) == [0, 1]
    # a shorter statement holding many images of its own goes first only if they fail as often (the rule above)
    wide = failure | (rng.random(n) < 0.3)
    assert broader_first([0, 1], [longer, exact], np.stack([dark, wide], axis=1), failed, rows) == [0, 1]


def test_the_demo_confirms_each_blindspot_once(demo_run):
    import html
    import json

    out, text = demo_run
    conf = json.loads((out / "explanation.json").read_text())["confirmation"]
    confirmed = [g for g in conf["groups"] if g["confirmed"]]
    assert len(confirmed) == 2 and [g["confirmed"] for g in conf["groups"][:2]] == [True, True]
    # issue 33's definition (q alone) recorded beside the run's rule, for the benches
    assert [g["confirmed_at_q"] for g in conf["groups"][:2]] == [True, True]
    assert all(s["significant"] == (s["q_value"] <= 0.05) for s in conf["statements"])
    for g in conf["groups"][2:]:  # the small groups: too few images to be failures of their own, or restating 0, 1
        assert not g["confirmed"], g
        assert "too few to be a failure" in g.get("not_a_failure", "") or (
            g["beyond"]["confirmed"] is False and g["beyond"]["groups_above"] == [0, 1]
        ), g
    # the page lists the confirmed statements too, as the terminal does (a tenth user found them only there)
    from lbee.run.text import confirmed_statements_lines

    page = (out / "report.html").read_text()
    block = page.split('id="groups-ward-statements"', 1)[1].split("</div>", 1)[0]
    lines = confirmed_statements_lines(conf, every=True)
    # the failures' own statements numbered by an <ol>, the companions in a <ul> of their own after the line that
    # says what they are (a fifteenth user read a numbered item inside a bullet, and companions beside it)
    import re

    own = [line for line in lines[1:] if re.match(r"\d+\. ", line)]
    said = [line for line in lines[1:] if line not in own and not line.startswith("    ")]
    assert lines and lines[0] in block and block.count("<li>") == len(lines) - 1 - len(said) and said
    assert block.split("<ol>", 1)[1].split("</ol>", 1)[0].count("<li>") == len(own)
    assert block.count("<p>") == 1 + len(said)
    # every companion listed (an eleventh user's report.md named 3 of 6), and marked apart from the failures' own
    companions = [s for s in conf["statements"] if s["confirmed"] and s.get("beyond", {}).get("confirmed") is False]
    assert companions and all(html.escape(s["text"]) in block for s in companions)
    assert 'class="companion"' in page and "goes with" in page
    md = (out / "report.md").read_text()
    assert all(s["text"] in md.split("## Confirmed statements", 1)[1] for s in companions)


def test_the_report_marks_not_confirmed_only_on_a_group_s_leading_statement():
    """A seventh user's page carried a red 'not confirmed' on all 15 sentences of every group."""
    from lbee.reports.marks import held_out_mark as _mark
    from lbee.reports.marks import leading_text as _leading_text

    conf = {
        "groups": [{"statement": 1}, {"statement": None}],
        "statements": [{"text": "a", "confirmed": True}, {"text": "b", "confirmed": False}],
    }
    assert _leading_text(conf, 0) == "b" and _leading_text(conf, 1) is None and _leading_text(conf, 5) is None
    assert _mark(True, "a", "b") is True  # a confirmed sentence is marked wherever it is
    assert _mark(False, "b", "b") is False  # the group's own statement, not confirmed: marked
    assert _mark(False, "c", "b") is None  # another unconfirmed sentence: left unmarked
    assert _mark(None, "b", "b") is None  # untested


def test_only_a_group_that_fails_itself_ranks_as_a_confirmed_failure():
    """An eighth user's 1-image group (error rate 0.00) came before a 19-image group at 0.89: its statement confirmed,
    so it ranked first, and the failure's own group was then 'NOT CONFIRMED: it adds no failure to group 0'. Now a
    group of fewer than 5 images, or one whose images fail no more than the rest, never ranks as a confirmed
    failure; the groups after the confirmed ones come most harmful first."""
    from lbee.run.pipeline import analyse
    from lbee.run.settings import RunSettings
    from lbee.run.text import FEW_IMAGES

    inputs, scores, _ = grammar_world(grammar=False)
    r = analyse(inputs, scores, RunSettings(methods=("tops", "fpdiff"), clusters=60, k=2)).main  # tiny groups too
    conf = r.extra["confirmation"]
    groups = r.explanations["fpdiff"].hard_clusters
    omega = np.asarray(scores.performance)
    held = np.zeros(len(omega), bool)
    held[conf["held_out"]] = True
    base = 1 - omega[~held].mean()
    tiny = [g for g in conf["groups"] if g["images"] < FEW_IMAGES]
    # the case at hand: tiny groups whose statement confirms on the held-out images (it holds the failure's images)
    assert any(g["statement"] is not None and conf["statements"][g["statement"]]["confirmed"] for g in tiny)
    for g in conf["groups"]:
        if g["confirmed"]:
            assert g["images"] >= FEW_IMAGES and g["hypothesis_error_rate"] > base, g
        if g["images"] < FEW_IMAGES:
            assert "too few to be a failure" in g["not_a_failure"] and not g["confirmed"]
    n_confirmed = sum(g["confirmed"] for g in conf["groups"])
    assert [g["confirmed"] for g in conf["groups"]] == [True] * n_confirmed + [False] * (len(groups) - n_confirmed)
    harm = [(1 - omega[c.indices].mean()) * len(c.indices) for c in groups[n_confirmed:]]
    assert harm == sorted(harm, reverse=True), harm
    # the confirmed ones too, most harmful first (a tenth user's 5 random errors, with the most precise statement,
    # led a 60-image failure)
    harm = [(1 - omega[c.indices].mean()) * len(c.indices) for c in groups[:n_confirmed]]
    assert harm == sorted(harm, reverse=True), harm


def test_a_group_leads_only_on_a_statement_of_its_own_images_and_significant_errors():
    """A ninth user's first group held 11 images, 2 of them errors (0.18 against 0.13): its fpdiff sentence, the
    planted failure, confirmed on held-out images by the given Γ but held for none of the group's 11 images, and
    the group ranked above the failure's own. A group now stands for a confirmed failure only when it fails
    significantly more often than the rest and its statement holds for at least a quarter of its images."""
    from types import SimpleNamespace

    from lbee.core.explanation import HardCluster
    from lbee.run.confirm_rank import _holds_for_the_group, _own_failure
    from lbee.run.confirm_text import confirmation_lines

    n = 400
    failed = np.zeros(n, bool)
    failed[[0, 1]] = True  # group A: 2 errors of 11
    failed[20:50] = True  # group B: 30 of 30
    failed[100:130:2] = True  # the rest: 15 of 270
    plan = SimpleNamespace(counted=np.ones(n, bool), mask=np.arange(n) >= 300, failed=failed)
    groups = [HardCluster(np.arange(11), np.zeros(2), 0), HardCluster(np.arange(20, 50), np.zeros(2), 0)]
    own = _own_failure(groups, plan)
    assert "not significantly more often" in own[0] and own[1] is None
    regions = np.zeros((n, 1), bool)
    regions[20:50, 0] = regions[300:320, 0] = True  # the statement holds for group B's images, not group A's
    holds = _holds_for_the_group(groups, [0, 0], {0: (0, {"region": "relevance"})}, regions)
    assert holds == {0: (0, 11), 1: (30, 30)}
    statement = {"n_in": 20, "lift": 9.0, "error_rate_in": 0.9, "error_rate_out": 0.1, "ci": [0.7, 0.97]}
    conf = {
        "status": "done",
        "n_held_out": 100,
        "outcome": "error rate",
        "statements": [{**statement, "q_value": 1e-9, "confirmed": True, "region": "relevance"}],
        "groups": [{"statement": 0, "confirmed": False, "not_a_failure": "its statement holds for 0 of its 11 images"}],
    }
    assert confirmation_lines(conf, 0)[0].startswith(
        "NOT CONFIRMED for this group: its statement holds for 0 of its 11 images; the statement is confirmed elsewhere"
    )


def test_region_test_refuses_what_does_not_fit():
    """A ninth user gave region_test a 10-element region against 720 failures, failures of 0.5 and indices past the
    end: a result, a result and a bare IndexError."""
    from lbee.core.confirmation import region_test

    failed = np.zeros(720, bool)
    with pytest.raises(ValueError, match="`region` has 10 entries and `failed` 720"):
        region_test(np.ones(10, bool), failed, np.arange(5))
    with pytest.raises(ValueError, match="`failed` must be booleans"):
        region_test(np.ones(720, bool), np.full(720, 0.5), np.arange(5))
    with pytest.raises(ValueError, match=r"`rows` must be indices in \[0, 720\)"):
        region_test(np.ones(720, bool), failed, np.array([719, 720]))
    assert region_test(np.ones(720, bool), failed, np.arange(5)).n_in == 5


def test_the_run_lists_its_confirmed_statements_each_tested_beyond_the_stronger_ones():
    """A ninth user found the failure's own sentence (lift 28) and a confounder beside it ('a foggy road sign at
    night', lift 11, failing at 0.05 without the failure) only in explanation.json. The run now ranks every confirmed
    statement by its held-out lower bound and tests each on the images no stronger one holds for."""
    from lbee.core.confirmation import rank_key
    from lbee.run.confirm_text import confirmed_statements_lines
    from lbee.run.pipeline import analyse
    from lbee.run.settings import RunSettings

    inputs, scores, _ = grammar_world(grammar=False)
    conf = analyse(inputs, scores, RunSettings(methods=("tops", "fpdiff"), k=3)).main.extra["confirmation"]
    ranked, statements = conf["ranked"], conf["statements"]
    assert ranked and [statements[j]["confirmed"] for j in ranked] == [True] * len(ranked)
    assert sorted(ranked, key=lambda j: rank_key(statements[j])) == ranked
    assert "beyond" not in statements[ranked[0]] and all("beyond" in statements[j] for j in ranked[1:])
    for j in ranked[1:]:
        b = statements[j]["beyond"]
        assert set(b["above"]) <= set(ranked[: ranked.index(j)])
        assert len(b["shared"]) == len(b["above"]) and all(0 <= c <= statements[j]["n_in"] for c in b["shared"])
    lines = confirmed_statements_lines(conf)
    assert lines[0].startswith("Confirmed on ") and lines[1].startswith(f'1. "{statements[ranked[0]]["text"]}"')

    fake = {
        "status": "done",
        "n_held_out": 216,
        "outcome": "error rate",
        "ranked": [0, 1],
        "statements": [
            {"text": "at night in the rain", "n_in": 24, "error_rate_in": 0.88, "error_rate_out": 0.03, "lift": 28.0},
            {
                "text": "a foggy road sign at night",
                "n_in": 22,
                "error_rate_in": 0.68,
                "error_rate_out": 0.06,
                "lift": 11.0,
                "beyond": {
                    "n_in": 9,
                    "error_rate_in": 0.05,
                    "error_rate_out": 0.1,
                    "p_value": 0.7,
                    "confirmed": False,
                    "above": [0],
                },
            },
        ],
    }
    said = confirmed_statements_lines(fake)
    assert len(said) == 3 and said[2].startswith("1 more confirms but adds no failure beyond those above: it goes")
    assert '"a foggy road sign at night"' in said[2]


def test_a_companion_is_said_to_go_with_the_statement_it_shares_most_images_with():
    """Trial 30: "a hand covering it, tilted" was said to go with "a digital meter and a flash glare" (the
    strongest finding, 2 of its held-out images) where it shares 6 with "a hand covering it, at night". It is now
    named beside the one it shares the most held-out images with; a run recorded before the shares, the strongest."""
    from lbee.reports.marks import held_out_state
    from lbee.run.confirm_text import confirmed_statements_lines, stronger_than

    test = {"n_in": 11, "error_rate_in": 0.7, "error_rate_out": 0.1, "lift": 7.0, "confirmed": True}
    beyond = {"n_in": 2, "error_rate_in": 0.5, "error_rate_out": 0.4, "p_value": 0.6, "confirmed": False}
    statements = [
        {**test, "text": "a digital meter and a flash glare"},
        {**test, "text": "a hand covering it, at night", "beyond": {**beyond, "confirmed": True, "above": [0]}},
        {**test, "text": "a hand covering it, tilted", "beyond": {**beyond, "above": [0, 1], "shared": [2, 6]}},
    ]
    conf = {"status": "done", "n_held_out": 168, "outcome": "error rate", "ranked": [0, 1, 2], "statements": statements}
    assert stronger_than(statements[2], statements) == [statements[1]["text"], statements[0]["text"]]
    lines = confirmed_statements_lines(conf, every=True)
    assert (
        lines[-1]
        == '    "a hand covering it, tilted" (goes with 2 stronger, most of all "a hand covering it, at night")'
    )
    assert held_out_state(statements[2], conf) == "“a hand covering it, at night” and 1 more"
    del statements[2]["beyond"]["shared"]  # recorded before the shares: strongest first
    assert stronger_than(statements[2], statements)[0] == statements[0]["text"]


def test_a_grammar_statement_is_judged_by_the_given_relevance_when_there_is_one():
    """A ninth user gave exact Γ over a grammar's sentences: 'A photo in the rain' was said to hold for 125 held-out
    images (the encoder's guess) where Γ said 77. A statement of conditions is now true where Γ's columns of the
    sentences stating each condition alone all hold, and its ablation is judged the same way."""
    import dataclasses

    from lbee.grammar import parse_conditions
    from lbee.io.relevance import compose_columns

    inputs, scores, _ = grammar_world(noise=0.3)  # an encoder far from the truth
    gamma = np.clip(inputs.embeddings[:, : len(inputs.sentences)], 0, 1) > 0.5  # a Γ of the user's, not the encoder's
    conf = run(dataclasses.replace(inputs, relevance=gamma), scores).main.extra["confirmation"]
    held = np.zeros(len(gamma), bool)
    held[conf["held_out"]] = True
    judged = 0
    for s in (s for s in conf["statements"] if s.get("conditions")):
        try:  # composable: every condition stated alone by a sentence of the set
            region = compose_columns(gamma, inputs.sentence_conditions, [parse_conditions(s["conditions"])])[:, 0]
        except ValueError:
            assert s.get("region") != "relevance"  # left to the encoder's composed relevance
            continue
        assert s.get("region") == "relevance" and s["n_in"] == int((region & held).sum())  # counted on Γ's region
        judged += 1
    assert judged >= 3
    without = run(inputs, scores).main.extra["confirmation"]
    assert not any(s.get("region") == "relevance" for s in without["statements"])


def test_a_group_whose_statement_goes_with_a_stronger_one_says_so_beside_its_own_test():
    """An eleventh user's group 1 ("a red blob and a yellow border") read "a failure of its own" beside the groups
    above, while the list of confirmed statements said it adds no failure beyond "a red blob": one verdict is said."""
    from lbee.run.confirm_text import confirmation_lines

    test = {"n_in": 40, "errors_in": 30, "error_rate_in": 0.75, "n_out": 176, "errors_out": 5}
    test.update(error_rate_out=0.03, lift=25.0, ci=[0.6, 0.86], p_value=1e-20, effect_low=12.0, q_value=1e-19)
    beyond_groups = {**test, "n_in": 29, "error_rate_in": 0.45, "error_rate_out": 0.04, "p_value": 4.5e-8}
    conf = {
        "status": "done",
        "n_held_out": 216,
        "outcome": "error rate",
        "statements": [
            {"text": "An image with a red blob", **test, "confirmed": True},
            {
                "text": "An image with a red blob and a yellow border",
                **test,
                "confirmed": True,
                "beyond": {**test, "p_value": 0.4, "confirmed": False, "above": [0]},
            },
        ],
        "groups": [
            {"statement": 0, "confirmed": True},
            {"statement": 1, "confirmed": True, "beyond": {**beyond_groups, "confirmed": True, "groups_above": [0]}},
        ],
    }
    lines = confirmation_lines(conf, 1)
    # one verdict (a twenty-first user read "a group of the failure's images of its own", then "adds no failure")
    assert len(lines) == 2 and "of its own" not in lines[1], lines
    assert lines[1].startswith("the 29 of its images that the statements of group 0 do not hold for fail at 0.45")
    # the group is a failure: what fails in it is the stronger statement (trial 27 read "goes with" of the failure)
    assert 'but what fails here is said by a stronger confirmed statement ("An image with a red blob")' in lines[1]
    assert "this group's statement adds a condition that goes with that failure" in lines[1]
    # by their conditions: one left out (trial 38's "walnut, wet" beside "walnut, on a roller conveyor, wet" was said
    # to add one), one added, or each with conditions of its own
    for own, stronger, said in [
        ("blob.color=red", "blob.color=red; border.color=yellow", "leaves out a condition of that one"),
        ("blob.color=red; border.color=yellow", "blob.color=red", "adds a condition that goes with that failure"),
        (
            "blob.color=red; border.color=yellow",
            "blob.color=red; blob.size=large",
            "goes with that failure, with conditions",
        ),
    ]:
        conf["statements"][1]["conditions"], conf["statements"][0]["conditions"] = own, stronger
        assert f"this group's statement {said}" in confirmation_lines(conf, 1)[1]
    conf["statements"][1].pop("beyond")  # a failure of its own in both tests: said once, as before
    assert confirmation_lines(conf, 1)[1].endswith(": a failure of its own")


def test_groups_are_tested_strongest_statement_first_and_shown_most_harmful_first():
    """A twelfth user's group led by the broad "a grainy, noisy image" (more harmful: it held the failure and more)
    stood above the failure's own "a grainy pattern tilted diagonally", so the failure's group was NOT CONFIRMED
    ("adds no failure to group 0 above") while the list of statements called the broad one the companion."""
    from types import SimpleNamespace

    from lbee.core.confirmation import bh_qvalues, is_confirmed
    from lbee.run.confirm import ConfirmationPlan
    from lbee.run.confirm_rank import rank_groups

    rng = np.random.default_rng(0)
    n = 4000
    grainy, diagonal = rng.random(n) < 0.4, rng.random(n) < 0.5
    inside = grainy & diagonal
    failed = np.where(inside, rng.random(n) < 0.9, rng.random(n) < 0.03)
    mask = np.zeros(n, bool)
    mask[n // 2 :] = True  # held out
    rows = np.flatnonzero(mask)
    discovery = ~mask
    broad = np.flatnonzero(discovery & grainy)  # the failure and its companions: more errors in all
    exact = np.flatnonzero(discovery & inside)[::2]
    groups = [SimpleNamespace(indices=broad), SimpleNamespace(indices=exact)]
    regions = np.column_stack([grainy, inside])
    statements = [{"text": "a grainy, noisy image"}, {"text": "a grainy pattern tilted diagonally"}]
    found = [region_test(regions[:, j], failed, rows) for j in range(2)]
    for s, t, q in zip(statements, found, bh_qvalues([t.p_value for t in found])):
        s.update(t.to_dict(), q_value=q, confirmed=is_confirmed(q, t.effect_low), significant=bool(q <= 0.05))
    assert all(s["confirmed"] for s in statements)  # each confirms on its own
    tests = {s["text"]: (j, s) for j, s in enumerate(statements)}
    plan = ConfirmationPlan(mask, "done", failed=failed, counted=np.ones(n, bool))
    leading = [s["text"] for s in statements]
    order, entries = rank_groups(groups, statements, regions, leading, tests, plan, (~failed) * 1.0, rows)
    assert order == [1, 0]  # the failure's own group is the confirmed one, and is shown first
    assert entries[0]["confirmed"] and "beyond" not in entries[0]
    assert not entries[1]["confirmed"] and entries[1]["beyond"]["groups_above"] == [0]
    assert entries[1]["beyond"]["error_rate_in"] < 0.1  # the broad statement's other images fail as the rest


def test_a_group_whose_statement_is_a_stronger_group_s_says_so():
    """A thirteenth user's group led by the run's top statement read 'NOT CONFIRMED: it adds no failure to group 0'."""
    from lbee.run.confirm_text import confirmation_lines

    test = {"n_in": 40, "errors_in": 34, "error_rate_in": 0.85, "n_out": 176, "errors_out": 4, "error_rate_out": 0.02}
    test.update(lift=37.0, ci=[0.7, 0.93], p_value=1e-30, effect_low=17.0, q_value=1e-29, confirmed=True)
    empty = {**test, "n_in": 0, "errors_in": 0, "error_rate_in": 0.0, "p_value": 1.0, "confirmed": False}
    conf = {
        "status": "done",
        "n_held_out": 216,
        "outcome": "error rate",
        "statements": [{"text": "A snowy sign with no pole", **test}],
        "groups": [
            {"statement": 0, "confirmed": True},
            {"statement": 0, "confirmed": False, "beyond": {**empty, "groups_above": [0]}},
        ],
    }
    (line,) = confirmation_lines(conf, 1)
    assert line.startswith("its statement holds only where that of group 0 does") and "NOT CONFIRMED" not in line


@pytest.mark.parametrize("only_its_own", [3, 8])
def test_a_statement_adds_a_failure_of_its_own_only_on_enough_images(only_its_own):
    """A nineteenth user's confounder, "a gear and a ruler", was confirmed as a failure of its own on the 3 held-out
    images only it held for, 1 of them wrong (p = 0.034), as no group of 3 images counts as one. A failure of its
    own needs `FEW_IMAGES` images of its own; with enough that fail, it is one."""
    from lbee.run.confirm_rank import beyond_the_groups_above
    from lbee.run.text import FEW_IMAGES

    n = 400
    failed = np.zeros(n, bool)
    strong = np.zeros(n, bool)
    strong[:40] = True
    failed[:36] = True  # the failure, held by the strong statement
    other = np.zeros(n, bool)
    other[30 : 40 + only_its_own] = True  # overlaps it, and holds `only_its_own` images beyond it
    failed[40 : 40 + only_its_own] = [True, False, False][:only_its_own] if only_its_own < FEW_IMAGES else True
    statements = [{"confirmed": True, "significant": True}, {"confirmed": True, "significant": True}]
    out = beyond_the_groups_above([0, 1], statements, np.stack([strong, other], 1), failed, np.arange(n))
    assert out[0] is None and out[1]["n_in"] == only_its_own
    assert out[1]["confirmed"] == (only_its_own >= FEW_IMAGES)


def test_a_statement_that_explains_another_away_ranks_above_it():
    """A twentieth user's confirmed list put 'a pair of chopsticks, with motion blur' (a condition that goes with
    the failure, and one that fails by chance: few images, a high error rate) above 'a bowl of soup, seen from
    directly above' (the failure's own, more images at a lower rate), and then said the soup statement went with
    the chopsticks. The soup statement adds failures beyond the chopsticks one; the chopsticks one adds none
    beyond the soup: the soup statement leads and the chopsticks one goes with it."""
    from lbee.run.confirm_rank import beyond_the_groups_above, broader_first, explaining_first

    rng = np.random.default_rng(4)
    n = 6000
    soup = rng.random(n) < 0.1
    dark = rng.random(n) < 0.4
    failure = soup & dark
    chopsticks = np.where(failure, rng.random(n) < 0.87, rng.random(n) < 0.25)
    blur = rng.random(n) < 0.2
    failed = np.where(failure, rng.random(n) < 0.86, rng.random(n) < 0.024)
    small = chopsticks & blur & (failure | (rng.random(n) < 0.15))  # the confounder, nearly inside the failure
    regions = np.stack([small, soup], axis=1)
    rows = np.arange(n)
    assert failed[small].mean() > failed[soup].mean()  # ranked by its error rate, the confounder's first
    statements = [{"confirmed": True}] * 2
    assert broader_first([0, 1], statements, regions, failed, rows) == [0, 1]  # no containment to go by
    order = explaining_first([0, 1], statements, regions, failed, rows)
    assert order == [1, 0]
    out = beyond_the_groups_above([[0, 1][k] for k in order], statements, regions, failed, rows)
    assert out[0] is None and out[1]["confirmed"] is False  # the chopsticks go with the soup
    # two failures of their own, each adding failures beyond the other, keep their order
    other = ~soup & (rng.random(n) < 0.05)
    failed2 = failed | (other & (rng.random(n) < 0.8))
    assert explaining_first([0, 1], statements, np.stack([other, soup], axis=1), failed2, rows) == [0, 1]


def test_a_broader_statement_holding_an_exact_one_is_left_to_the_containment_rule():
    """A twenty-first user's exact statement ('rust spots, seen from the underside, in low light', 0.93, the
    encoder seeing 'underside' weakly) was raised under 'rust spots, in low light' (0.66) by `explaining_first`:
    the broader one adds the failing images the encoder missed. A statement holding another's region is
    `broader_first`'s to judge, and there the images it adds fail far less often: the exact one stays first."""
    from lbee.run.confirm_rank import broader_first, explaining_first

    rng = np.random.default_rng(5)
    n = 1600
    rust, low, under = rng.random(n) < 0.25, rng.random(n) < 0.3, rng.random(n) < 0.5
    failure = rust & low & under
    failed = np.where(failure, rng.random(n) < 0.85, rng.random(n) < 0.025)
    exact = failure & (rng.random(n) < 0.3)  # the few the encoder sees from the underside
    broad = rust & low
    regions, rows = np.stack([exact, broad], axis=1), np.arange(n)
    statements = [{"confirmed": True}] * 2
    assert failed[exact].mean() < 2 * failed[broad].mean()  # not twice as precise: the other rule would move it
    assert explaining_first([0, 1], statements, regions, failed, rows) == [0, 1]
    assert broader_first([0, 1], statements, regions, failed, rows) == [0, 1]


def test_an_ablation_between_the_two_rates_on_enough_images_is_not_clear_rather_than_too_few():
    """A twenty-first user's 38 images kept out, failing at 0.55 between the failure's 0.93 and the rest's 0.03,
    were said to be 'too few images to tell'. Below 10 images that is what it is; above, the result is not clear."""
    from lbee.core.confirmation import UNCLEAR, UNDECIDED, ablation

    n = 2000
    region = np.zeros(n, bool)
    region[:100] = True
    failed = np.zeros(n, bool)
    failed[:93] = True
    for size, want in ((38, UNCLEAR), (6, UNDECIDED)):
        wider = region.copy()
        wider[100 : 100 + size] = True
        failed[100 : 100 + size] = np.arange(size) < round(0.55 * size)
        (a,) = ablation(region, [wider], failed, np.arange(n))
        assert a["n_excluded"] == size and a["verdict"] == want, a
        failed[100 : 100 + size] = False
    # "too few" says how many images would tell (trial 37): 3 kept out of 1,000 held out, in 2,000 images: 10 kept
    # out, at that share, take about 6,667 images
    held = np.arange(0, n, 2)
    (a,) = ablation(region, [wider], failed, held)
    assert a["n_excluded"] == 3 and a["verdict"] == UNDECIDED and a["images_to_tell"] == 6667, a
    from lbee.run.condition_words import condition_verdict

    assert condition_verdict(a, short=True) == "too few images to tell (about 6,700 images in all would)"
    assert "images_to_tell" not in ablation(region, [region], failed, held)[0]  # kept none out: nothing to tell


def test_the_findings_come_before_the_groups_with_each_conditions_verdict(planted_run):
    """A twenty-second user read five unconfirmed groups before the one confirmed statement, at the end, and never
    saw which of its conditions the run found needed (only explanation.json had it). The terminal and report.md
    open with the confirmed statements, each with its conditions' verdicts."""
    from lbee.run.text import render_markdown, terminal_blocks

    conf = planted_run.extra["confirmation"]
    first = conf["statements"][conf["ranked"][0]]
    assert first.get("ablation")
    text = " ".join(terminal_blocks(planted_run, width=100).split())
    assert text.startswith("Findings. Confirmed on") and text.index("Findings.") < text.index("Hard group")
    said = ", ".join(f"'{a.get('phrase') or a['condition']}' " for a in first["ablation"][:1])
    assert f'1. "{first["text"]}"' in text and "its conditions: " + said.strip() in text
    md = render_markdown(planted_run)
    assert md.index("## Confirmed statements") < md.index("## Hard groups")


def test_audit_runs_the_command_lines_analysis_on_arrays():
    """A twenty-second user rebuilt the command line's confirmed statements from thirty lines of the library
    guide. `lbee.audit` runs the command line's analysis on arrays and gives the same findings."""
    import lbee
    from lbee.grammar import embedded_atoms
    from lbee.io.sentences import SentenceSet
    from lbee.run.settings import RunSettings

    inputs, scores, inside = grammar_world()
    atoms, conds = embedded_atoms(G)
    want = run(inputs, scores).confirmed()
    sset = SentenceSet("mine", tuple(atoms), "", "", conditions=tuple(conds), grammar=G)
    got = lbee.audit(
        inputs.embeddings,
        inputs.sentence_embeddings,
        sentences=sset,
        confidence=scores.confidence,
        performance=scores.performance,
        tau=0.15,
        settings=RunSettings(methods=("compose",), clusters=8, k=2),
        image_ids=inputs.image_ids,
    )
    assert got.confirmed() == want and want and want[0]["adds_failure"]
    first = want[0]
    assert set(first["conditions"].values()) <= {"needed", "too few images to tell"}, first
    with pytest.raises(ValueError, match="give `probs`"):
        lbee.audit(inputs.embeddings, inputs.sentence_embeddings, sentences=sset, tau=0.15)
    with pytest.raises(ValueError, match="rows for"):
        lbee.audit(inputs.embeddings, inputs.sentence_embeddings[:3], sentences=sset, probs=np.ones((3000, 2)) / 2)


def test_an_unconfirmed_group_takes_one_line_unless_asked(planted_run):
    """A twenty-second user read three lines of statistics under every unconfirmed lead before the one finding.
    `lbee describe` says one line per unconfirmed group; -v (``others=True``) and report.md keep them all."""
    from lbee.run.text import terminal_blocks

    kinds = [g["confirmed"] for g in planted_run.extra["confirmation"]["groups"]]
    short = terminal_blocks(planted_run, width=100, others=False).split("\n\n")
    full = terminal_blocks(planted_run, width=100, others=True).split("\n\n")
    unconfirmed = [b for b in short if b.startswith("Hard group") and "not confirmed on the held-out images" in b]
    assert len(unconfirmed) == kinds.count(False) and all("95 % CI" not in b for b in unconfirmed)
    detailed = [b for b in full if b.startswith("Hard group") and "NOT CONFIRMED" in b and "95 % CI" in b]
    assert len(detailed) == kinds.count(False)


def test_audit_refuses_what_the_command_line_refuses():
    """Sweep 32e W-1: `lbee.audit` took logits for probabilities, a NaN or 0.5 in Γ for "relevant", a τ of 10⁹ and
    repeated sentences, all of which the command line and `lbee.evaluate` refuse. ω is any finite number, as a
    predictions table's (sweep 32g: the two disagreed on ω of 2); a NaN is refused."""
    import lbee

    rng = np.random.default_rng(0)
    X, S = rng.normal(size=(60, 4)), rng.normal(size=(3, 4))
    texts = ["a photo of a", "a photo of b", "a photo of c"]
    probs = rng.dirichlet([1, 1], 60)
    good = dict(sentences=texts, tau=0.2)
    cases = [
        (dict(probs=np.log(probs) * 3), "sum to 1|logits"),  # logits
        (dict(probs=probs, confidence=probs[:, 0]), "not both"),
        (dict(confidence=probs[:, 0], performance=np.full(60, np.nan)), "performance"),
        # sweep 32g: ids on more than one line, and settings as a dict (an AttributeError deep in the run)
        (dict(probs=probs, image_ids=[f"{i}\n0" for i in range(60)]), "image_ids\\[0\\].*U\\+000A"),
        (dict(probs=probs, settings={"clusters": 3}), "expected an lbee.RunSettings"),
        (dict(probs=probs, image_ids=["", *map(str, range(1, 60))]), "image_ids\\[0\\].*blank"),  # sweep 32h
        (dict(probs=probs, image_ids=[None, *map(str, range(1, 60))]), "image_ids\\[0\\].*blank"),
        (dict(probs=probs, relevance=np.full((60, 3), np.nan)), "relevance"),
        (dict(probs=probs, relevance=np.full((60, 3), 0.5)), "relevance"),
        (dict(probs=probs, tau=1e9), "tau"),
        (dict(probs=probs, sentences=["a", "A", "b"]), "repeats"),
        (dict(probs=probs, sentences=["a", "b\nc", "d"]), "line break"),
    ]
    for extra, message in cases:
        with pytest.raises((ValueError, TypeError), match=message):
            lbee.audit(X, S, **{**good, **extra})
    scored = lbee.audit(X, S, sentences=texts, tau=0.2, confidence=probs[:, 0], performance=-probs[:, 1] * 3)
    assert float(scored.scores.performance.min()) < -1  # a score, not a probability: read as the table's column


def test_only_findings_carry_condition_verdicts(demo_run):
    """Trial 23: a companion statement ("a crack, seen at an oblique angle" beside the failure's "a crack, under
    strong sun glare") carried the verdict 'needed' for its confounder, which `confirmed()` returned; a script
    filtering by 'needed' called the confounder causal. Verdicts are kept for the findings alone."""
    import json

    from lbee.run.confirm_text import adds_a_failure, ranked_statements

    out, _ = demo_run
    conf = json.loads((out / "explanation.json").read_text())["confirmation"]
    ranked = [conf["statements"][j] for j in conf["ranked"]]
    findings = [s for s in ranked if adds_a_failure(s)]
    companions = [s for s in ranked if not adds_a_failure(s)]
    several = [s for s in companions if s.get("conditions") and s["conditions"].count(";") >= 1]
    assert findings and several  # companions of two conditions or more, which were ablated before
    assert all(s.get("ablation") for s in findings if s.get("conditions") and ";" in s["conditions"])
    assert not any("ablation" in s for s in companions)
    listed = ranked_statements(conf)
    assert [e["adds_failure"] for e in listed if "conditions" in e] == [True] * sum("conditions" in e for e in listed)


def test_a_condition_that_keeps_out_no_image_is_said_to_add_nothing(demo_run):
    """A twenty-fourth user read "'but no scratch' too few images to tell" beside "a solder bridge" (always true of a
    bridge), as doubt. A condition whose removal keeps out no held-out image is said to add nothing."""
    import json

    from lbee.run.confirm_text import confirmation_lines, confirmed_statements_lines

    out, story = demo_run
    conf = json.loads((out / "explanation.json").read_text())["confirmation"]
    idle = [
        (s, a) for s in conf["statements"] for a in s.get("ablation") or () if a["n_excluded"] == 0
    ]  # the demo's "a large square": every square of its world is large
    assert idle
    listed = " ".join(confirmed_statements_lines(conf, every=True))
    for _, a in idle:
        assert f"'{a['phrase']}' adds nothing here" in listed
    group = next(
        i
        for i, g in enumerate(conf["groups"])
        if g["statement"] is not None and conf["statements"][g["statement"]] is idle[0][0]
    )
    lines = confirmation_lines(conf, group)
    assert any("it kept out no image: adds nothing here" in line for line in lines), lines
    assert "adds nothing here (it holds wherever the others do)" in " ".join(story.split())
    # the library's list says the same words (trial 29 read "too few images to tell" there)
    from lbee.run.condition_words import ADDS_NOTHING
    from lbee.run.confirm_text import ranked_statements

    entry = next(e for e in ranked_statements(conf) if e["text"] == idle[0][0]["text"])
    assert entry["conditions"][idle[0][1]["phrase"]] == ADDS_NOTHING


def test_audit_without_tau_says_its_arrays_carry_no_provenance():
    """A twenty-fourth user's arrays came from files with sidecars; the warning said "no .provenance.json sidecar"."""
    import lbee
    from lbee.io.provenance import ProvenanceWarning

    rng = np.random.default_rng(0)
    X, S = rng.normal(size=(60, 4)), rng.normal(size=(3, 4))
    with pytest.warns(ProvenanceWarning, match="arrays passed to lbee.audit.*load_embeddings"):
        lbee.audit(X, S, sentences=["a photo of a", "a photo of b", "a photo of c"], probs=rng.dirichlet([1, 1], 60))


def test_a_service_run_whose_statements_were_not_tested_says_so_not_none_confirmed(capsys):
    """Trial 25: `lbee submit` summed up a 320-image run as "no statement confirmed on held-out images" and the
    client's `confirmed()` gave [] in silence, though nothing had been tested (confirmation needs 500 images)."""
    from lbee.cli.submit import _echo_findings
    from lbee.service.client import Client

    skipped = {"status": "skipped", "fraction": 0.3, "seed": 0, "reason": "320 images: confirmation needs at least 500"}

    class Server(Client):
        def __init__(self):
            pass

        def explanation(self, job_id, model=None):
            return {"confirmation": skipped}

    _echo_findings(Server(), "j1", None, "traps / net")
    said = capsys.readouterr().out
    assert "no statement was tested on held-out images (320 images: confirmation needs at least 500)" in said
    assert "no statement confirmed" not in said

    with pytest.warns(UserWarning, match="no statement of this run was tested"):
        assert Server().confirmed("j1") == []


def _statement(text, confirmed, n_in, rate_in, rate_out, beyond=None):
    return {
        "text": text,
        "confirmed": confirmed,
        "n_in": n_in,
        "error_rate_in": rate_in,
        "error_rate_out": rate_out,
        "ci": [rate_in - 0.1, rate_in + 0.1],
        "lift": 3.0,
        "q_value": 0.001 if confirmed else 0.5,
        "p_value": 0.001 if confirmed else 0.5,
        "effect_low": 2.0,
        "beyond": beyond,
    }


def test_a_statement_that_confirms_but_adds_no_failure_is_said_so_everywhere_never_not_confirmed():
    """Trial 26: "at night" was listed among the findings as confirming but adding no failure, while its group said
    "not confirmed: the 75 its statement holds for fail at 0.27, the rest at 0.04", the report "NOT CONFIRMED" and the
    JSON ``statement.confirmed: true`` beside ``confirmed: false``. And group 0's table cell named its confounded
    statement, not the finding it goes with."""
    from types import SimpleNamespace

    from lbee.core.explanation import Explanation, HardCluster
    from lbee.run.confirm_text import confirmation_lines, group_verdict, unconfirmed_line
    from lbee.run.text import summary_dict

    above = {"above": [2], "confirmed": False, "n_in": 3, "error_rate_in": 0.3, "error_rate_out": 0.04}
    beyond = {"groups_above": [0], "confirmed": False, "n_in": 59, "error_rate_in": 0.10, "error_rate_out": 0.04}
    beyond.update(lift=2.7, ci=[0.05, 0.2], p_value=0.08, effect_low=1.1)
    conf = {
        "status": "done",
        "n_held_out": 210,
        "outcome": "fail at",
        "statements": [
            _statement("a fox, on snow, at night", True, 16, 0.88, 0.04, beyond=above),
            _statement("at night", True, 75, 0.27, 0.04, beyond=above),
            _statement("a fox, at night", True, 19, 0.89, 0.04),
        ],
        "groups": [
            {"images": 36, "statement": 0, "confirmed": True},
            {"images": 21, "statement": 1, "confirmed": False, "beyond": beyond},
        ],
        "ranked": [2, 0, 1],
    }
    assert group_verdict(conf, 0) == {"verdict": "confirmed", "finding": "a fox, at night", "groups_above": []}
    assert group_verdict(conf, 1)["verdict"] == "goes with" and group_verdict(conf, 1)["groups_above"] == [0]
    one = unconfirmed_line(conf, 1)
    assert one.startswith("confirmed, goes with group 0") and "not confirmed" not in one.lower()
    assert "not beyond chance (p = 0.08)" in one
    beyond.update(p_value=0.0056, effect_low=1.97)  # significant, but under the 2x rule: said so (trial 27)
    one = unconfirmed_line(conf, 1)
    assert "chance" not in one and "at least 1.97× as often as the rest (95 % sure), under the 2× lbee asks" in one
    assert (
        "NOT CONFIRMED" not in confirmation_lines(conf, 1)[0]
        and "confirmed, but it adds no failure" in (confirmation_lines(conf, 1)[0])
    )
    hard = [HardCluster(np.arange(4) + 4 * i, np.zeros(2), 0, [0], [1.0]) for i in range(2)]
    result = SimpleNamespace(
        explanations={"compose": Explanation(hard, [], "compose", {}, ["s"])},
        encoder={},
        extra={"confirmation": conf},
        image_ids=[str(i) for i in range(8)],
        failures=[],
    )
    said = summary_dict(result)
    assert [g["confirmation"]["verdict"]["verdict"] for g in said["hard_groups"]] == ["confirmed", "goes with"]
    assert [f["text"] for f in said["findings"] if f["adds_failure"]] == ["a fox, at night"]
    assert said["confirmation"] == {"status": "done", "n_held_out": 210}


def test_a_grammar_runs_metrics_cover_composes_sentences_and_match_the_report_rows():
    """Trial 26: with a grammar, `lbee.evaluate` refused the user's Γ (101 columns for 102 sentences: compose wrote
    one), `RunResult` had no metrics, and its repr printed thousands of numbers."""
    from dataclasses import replace

    import lbee
    from lbee.reports.page import ReportRun

    inputs, scores, inside = grammar_world()
    rel = inputs.embeddings[:, : len(inputs.sentences)] > 0.5  # Γ over the set's sentences, as a user has it
    whole = run(replace(inputs, relevance=rel), scores, methods=("compose", "fpdiff"))
    assert len(whole.sentences) > len(inputs.sentences) and whole.relevance.shape[1] == len(whole.sentences)
    table = whole.metrics()
    assert list(table["method"]) == ["compose", "fpdiff"] and table[["AHR", "ACR"]].notna().all().all()
    page = ReportRun(
        "d", "m", {"ward": whole.main.explanations}, whole.sentences, whole.main.image_ids,
        scores.confidence, scores.performance, relevance=whole.relevance,
    )  # fmt: skip
    assert table.to_dict("records") == page.metrics()  # the CLI's rows
    with pytest.raises(ValueError, match=r"computed over .* score a run of lbee.audit with result.metrics\(\)"):
        lbee.evaluate(whole.main.explanations["compose"], rel, scores.performance)
    said = repr(whole)
    assert len(said) < 300 and said.startswith(f"RunResult({len(inside)} images; slicers ward")
    own = sum(s["adds_failure"] for s in whole.confirmed())  # findings apart from those that go with them (trial 27)
    assert f"{own} finding(s), {len(whole.confirmed()) - own} more confirmed statement(s) that go with them" in said
    with pytest.raises(ValueError, match="given no relevance"):
        run(inputs, scores).metrics()
    # in a notebook: the findings, then each group's verdict and statement (trial 27 had the repr alone)
    shown = whole._repr_html_()
    top = next(s["text"] for s in whole.confirmed() if s["adds_failure"])
    assert f"<li>{top}: " in shown and shown.count("<tr>") == 1 + len(whole.main.explanations["compose"].hard_clusters)


def test_a_library_run_is_written_as_the_command_line_writes_one(tmp_path):
    """Trial 27: no way to write the report from Python. `lbee.write_run_folder` writes what describe --html does,
    and never over a run in silence."""
    import lbee
    from lbee.reports.stored_table import stored_images_table
    from lbee.run.stored import load_explanations

    inputs, scores, _ = grammar_world(n=MIN_CONFIRM_IMAGES - 100)
    whole = run(inputs, scores)
    out = lbee.write_run_folder(whole, tmp_path / "audit", name="traps")
    assert {"explanation.json", "assignments.parquet", "images.parquet", "report.html"} <= {
        p.name for p in out.iterdir()
    }
    exps, payload = load_explanations(out / "explanation.json")
    assert len(stored_images_table(out)) == len(inputs.image_ids) and "compose" in exps
    assert "<title>lbee · traps · model" in (out / "report.html").read_text()  # not "EC classifier" (trial 30)
    named = lbee.write_run_folder(whole, tmp_path / "named", name="traps", model="resnet-v2")
    assert "<title>lbee · traps · resnet-v2" in (named / "report.html").read_text()
    with pytest.raises(ValueError, match="`model` is ''; expected the model's name"):
        lbee.write_run_folder(whole, tmp_path / "m", model="")
    with pytest.raises(ValueError, match="already holds a run .* Pass overwrite=True"):
        lbee.write_run_folder(whole, out)
    assert "nothing tested on held-out images" in whole._repr_html_()
    (tmp_path / "file").write_text("x")  # sweep 32t: a bare FileExistsError
    with pytest.raises(ValueError, match="exists and is not a folder"):
        lbee.write_run_folder(whole, tmp_path / "file")
    with pytest.raises(ValueError, match="`out` is ''; expected the run's folder"):  # sweep 32u N5: the cwd
        lbee.write_run_folder(whole, "")
    with pytest.raises(ValueError, match="`name` is None; expected the dataset's name"):
        lbee.write_run_folder(whole, tmp_path / "n", name=None)


def test_a_library_run_written_with_its_image_files_shows_their_thumbnails(tmp_path, monkeypatch):
    """Trial 33: `write_run_folder` took no image files, so a report written from Python showed "no image" only."""
    import pandas as pd
    from PIL import Image

    import lbee

    monkeypatch.setenv("LBEE_CACHE_DIR", str(tmp_path / "cache"))  # the thumbnails' cache: not the user's
    inputs, scores, _ = grammar_world(n=MIN_CONFIRM_IMAGES - 100)
    whole = run(inputs, scores)
    n = len(inputs.image_ids)
    paths = [tmp_path / "imgs" / f"{i}.png" for i in range(n)]
    paths[0].parent.mkdir()
    for i, p in enumerate(paths):
        Image.new("RGB", (8, 8), (i % 256, 0, 0)).save(p)
    bare = (lbee.write_run_folder(whole, tmp_path / "bare") / "report.html").read_text()
    out = lbee.write_run_folder(whole, tmp_path / "audit", image_paths=paths)
    page = (out / "report.html").read_text()
    assert "data:image/jpeg;base64," in page and "data:image/jpeg;base64," not in bare
    assert pd.read_parquet(out / "images.parquet")["path"].tolist() == [str(p) for p in paths]
    assert any((tmp_path / "cache" / "thumbnails").rglob("*.jpg"))
    for bad, said in (
        (paths[:-1], f"has {n - 1} paths for {n} images"),
        (str(tmp_path / "imgs"), "expected a list of"),
        ([*paths[:-1], None], f"`image_paths\\[{n - 1}\\]` is None"),
    ):
        with pytest.raises(ValueError, match=said):
            lbee.write_run_folder(whole, tmp_path / "x", image_paths=bad)
    assert not (tmp_path / "x").exists()


def test_an_untested_statement_is_counted_where_the_given_relevance_says_it_holds():
    """Trial 28: with Γ given, a 300-image run's "not tested" line read the encoder's soft counts ("33 % are hard");
    by Γ, 88 % were. The line counts the images Γ says the statement holds for, and says so."""
    from dataclasses import replace

    from lbee.run.text import summary_dict, terminal_blocks

    inputs, scores, _ = grammar_world(n=MIN_CONFIRM_IMAGES - 100)
    n_atoms = len(inputs.sentences)
    gamma = inputs.embeddings[:, :n_atoms] > 0.5  # the world's truth: one axis per atom, noise 0.08
    r = run(replace(inputs, relevance=gamma, relevance_source="given"), scores).main
    h = r.extra["hypotheses"][0]
    conds = r.explanations["compose"].hard_clusters[0].details[0]["conditions"]
    region = np.ones(len(gamma), bool)
    for (subject, attribute), value in conds.items():  # an absence is where its presence's column is false
        said = {(subject, attribute): value} if value != "false" else {(subject, attribute): "true"}
        column = gamma[:, inputs.sentence_conditions.index(said)]
        region &= column if value != "false" else ~column
    part_hard = np.zeros(len(gamma), bool)
    part_hard[np.concatenate([c.indices for c in r.explanations["compose"].hard_clusters])] = True
    assert h["relevance_counts"][0] >= (region & part_hard).sum() > 0  # every hard image of the groups, and more
    k_hard, k_easy = h["relevance_counts"]
    said = " ".join(terminal_blocks(r, width=200).split())
    assert f"not tested: by the given Γ, of the {k_hard + k_easy} hard and easy images" in said
    assert f"{100 * k_hard / (k_hard + k_easy):.0f} % are hard" in said
    # --json: each group's error rate as the terminal shows it (trial 28 found none)
    group = summary_dict(r)["hard_groups"][0]
    rate = 1 - r.performance[r.explanations["compose"].hard_clusters[0].indices].mean()
    assert group["error_rate"] == round(rate, 4) and group["verdict"] is None  # untested: no verdict


def test_a_library_run_with_relevance_writes_the_metrics_files_as_the_command_line_does(tmp_path):
    """Trial 28: `write_run_folder` with ``relevance=`` wrote no metrics.csv / metrics.json; the CLI did."""
    import json
    from dataclasses import replace

    import pandas as pd

    import lbee

    inputs, scores, _ = grammar_world(n=MIN_CONFIRM_IMAGES - 100)
    gamma = inputs.embeddings[:, : len(inputs.sentences)] > 0.5
    whole = run(replace(inputs, relevance=gamma, relevance_source="given"), scores)
    out = lbee.write_run_folder(whole, tmp_path / "audit", html=False)
    assert {"images.parquet", "metrics.csv", "metrics.json"} <= {p.name for p in out.iterdir()}
    assert not (out / "report.html").exists()
    rows = json.loads((out / "metrics.json").read_text())
    table = pd.read_csv(out / "metrics.csv")
    assert [r["method"] for r in rows] == table["method"].tolist() == whole.metrics()["method"].tolist()
    assert table["AHR"].tolist() == pytest.approx(whole.metrics()["AHR"].tolist())
    plain = lbee.write_run_folder(run(inputs, scores), tmp_path / "plain", html=False)  # no Γ: no metrics files
    assert not (plain / "metrics.csv").exists() and (plain / "images.parquet").exists()


def test_a_finding_no_group_states_is_listed_with_where_its_images_lie():
    """Trial 30: the second planted failure was finding 2 but no hard group's statement (found lower in a group's
    list): absent from the table of what fails, and 8 of its images among the hard images in no hypothesis with
    nothing tying them to it. Each such finding is now a row of that table, and a line says where its images lie."""
    from lbee.reports.html import ReportRun, render_report
    from lbee.run.finding_places import unplaced_findings
    from lbee.run.text import render_markdown, terminal_blocks

    r = run(*grammar_world()[:2]).main
    conf = r.extra["confirmation"]
    first = next(iter(r.explanations.values()))
    assert unplaced_findings(conf, first.hard_clusters, first.unassigned) == []  # the failure's group states it
    for g in conf["groups"]:  # as if no group had stated it: the finding came from a group's other sentences
        g.update(statement=None, confirmed=False)
    places = unplaced_findings(conf, first.hard_clusters, first.unassigned)
    finding = conf["statements"][conf["ranked"][0]]
    assert places[0]["number"] == 1 and places[0]["text"] == finding["text"]
    idx = set(finding["holds_for"])
    by_group = {i: len(idx & set(c.indices.tolist())) for i, c in enumerate(first.hard_clusters)}
    assert places[0]["groups"] == sorted(((i, k) for i, k in by_group.items() if k), key=lambda g: (-g[1], g[0]))
    assert places[0]["unassigned"] == len(idx & set(first.unassigned.tolist()))
    assert (
        places[0]["n"]
        == len(idx)
        == sum(k for _, k in places[0]["groups"]) + places[0]["unassigned"] + places[0]["elsewhere"]
    )
    line = f'Finding 1 ("{finding["text"]}") is no hard group\'s statement'
    assert line in " ".join(terminal_blocks(r, width=300).split())
    assert line in " ".join(render_markdown(r).split())
    page = ReportRun(
        "d", "m", {"ward": r.explanations}, r.sentences, r.image_ids, r.confidence, r.performance,
        confirmations={"ward": conf}, hypotheses={"ward": r.extra["hypotheses"]},
    )  # fmt: skip
    html = " ".join(render_report(page).split())
    assert line.replace('"', "&#34;").replace("'", "&#39;") in html
    rate = 1 - r.performance[sorted(idx)].mean()
    assert f'<a href="#findings">finding 1</a></td><td class="num">{len(idx)}</td><td class="num">{rate:.2f}' in html


def test_a_group_whose_statement_holds_for_few_of_its_images_says_so_first():
    """Trial 31: a merged group's six-condition statement held for 3 of its 32 images by Γ; the terminal said only
    "not confirmed on the held-out images: the 1 its statement holds for ...", read as too few held-out images."""
    from lbee.reports.page import _misdescribed
    from lbee.run.confirm_text import unconfirmed_line

    test = {"n_in": 1, "errors_in": 1, "error_rate_in": 1.0, "n_out": 191, "errors_out": 44, "error_rate_out": 0.23}
    test.update(lift=4.3, ci=[0.2, 1.0], p_value=0.23, effect_low=0.5, q_value=0.3)
    why = "its statement holds for 5 of its 37 images by the given Γ"
    conf = {
        "status": "done",
        "n_held_out": 192,
        "outcome": "error rate",
        "statements": [{"text": "A sheet with mould spots and a folded leaf", **test, "confirmed": False}],
        "groups": [{"statement": 0, "confirmed": False, "not_a_failure": why}],
    }
    line = unconfirmed_line(conf, 0)
    assert line.startswith(f"not confirmed: {why}, so it does not describe this group; on the held-out images the 1 ")
    assert _misdescribed(conf, 0) == why
    conf["groups"][0]["not_a_failure"] = "it fails no more often than the rest"  # another reason: not this one
    assert unconfirmed_line(conf, 0).startswith("not confirmed on the held-out images") and not _misdescribed(conf, 0)


def test_report_md_counts_the_set_and_compose_sentences_apart():
    """Trial 31: report.md said 154 sentences where the terminal and the page said 153, + 1 composed."""
    from lbee.run.text import render_markdown

    r = run(*grammar_world()[:2]).main
    base = next(iter(r.explanations.values())).params["n_base_sentences"]
    assert len(r.sentences) > base  # compose wrote sentences of its own
    said = f"({base} sentences, + {len(r.sentences) - base} composed by compose)"
    assert said in render_markdown(r)


def test_an_untested_statement_that_holds_where_images_fail_no_more_than_average_is_said_to_single_out_nothing():
    """Trial 32: groups whose statements hold where 10 % of the images are hard, against 24 % overall, were listed
    under "What fails" with error rates 0.86 and 1.00 and no verdict."""
    from lbee.run.untested import NOT_SINGLED_OUT, singles_out_nothing, untested_statement_lines

    extra = {"confirmation": {"status": "skipped", "reason": "too few images"}}
    params = {"n_hard": 24, "n_easy": 76}
    for share, stray in [(0.10, True), (0.24, True), (0.30, False)]:
        lines = untested_statement_lines({**extra, "hypotheses": [{"error_concentration": share}]}, params, 0)
        assert lines[0].startswith(f"not tested: of the hard and easy images its statement holds for, {share:.0%}"[:60])
        assert lines[0].endswith(f": {NOT_SINGLED_OUT}") is stray and singles_out_nothing(lines) is stray
    # a tested run says nothing of the kind
    tested = {"confirmation": {"status": "done"}, "hypotheses": [{"error_concentration": 0.1}]}
    assert untested_statement_lines(tested, params, 0) == []

    # the HTML report's "What fails" row says it beside the group's sentence
    from lbee.reports.html import render_report

    inputs, scores, _ = grammar_world(n=MIN_CONFIRM_IMAGES - 100)
    r = run(inputs, scores).main
    p = r.explanations["compose"].params
    base = p["n_hard"] / (p["n_hard"] + p["n_easy"])
    pages = {}
    for share in (base / 2, min(1.0, base * 2)):
        hyps = [{**h, "error_concentration": share} for h in r.extra["hypotheses"]]
        pages[share > base] = render_report(_page(r, hyps))
    import html

    mark = "where it holds, images fail no more than on average: stray errors?"
    for stray, text in pages.items():
        text = html.unescape(" ".join(text.split()))
        assert (mark in text) is (not stray) and (NOT_SINGLED_OUT in text) is (not stray), stray


def _page(r, hypotheses):
    """The HTML report's run of ``r`` (its 'ward' slicer), with these hypotheses."""
    from lbee.reports.html import ReportRun

    args = (r.sentences, r.image_ids, r.confidence, r.performance)
    confirmations, hypotheses = {"ward": r.extra["confirmation"]}, {"ward": hypotheses}
    return ReportRun("d", "m", {"ward": r.explanations}, *args, confirmations=confirmations, hypotheses=hypotheses)


def test_a_finding_within_a_stronger_ones_conditions_is_cautioned_unless_judged_by_relevance():
    """A thirty-fifth user's second finding, "white tablets, in a clear plastic foil", added 22 images failing at
    0.50 beyond "white oval tablets, in a clear plastic foil, with strong glare"; by the truth, most were the first
    failure's images that the encoder's atoms missed. Its conditions being some of the stronger one's, the run says
    its images may be that failure's, unless a given Γ judged the regions."""
    from lbee.run.confirm_rank import within_a_stronger
    from lbee.run.confirm_text import confirmed_statements_lines, ranked_statements

    exact = "tablet.colour=white; tablet.shape=oval; foil.kind=clear; glare.level=strong"
    beyond = {"n_in": 22, "error_rate_in": 0.5, "error_rate_out": 0.04, "p_value": 7e-8, "confirmed": True}
    statements = [
        {"text": "white oval tablets, clear foil, strong glare", "conditions": exact},
        {"text": "white tablets, clear foil", "conditions": "tablet.colour=white; foil.kind=clear"},
        {"text": "white tablets, silver foil", "conditions": "tablet.colour=white; foil.kind=silver"},
        {"text": "the same four", "conditions": exact},
        {"text": "a sentence of its own"},
    ]
    assert within_a_stronger(1, [0], statements) == 0
    assert within_a_stronger(2, [0], statements) is None  # a condition the stronger one lacks
    assert within_a_stronger(3, [0], statements) is None  # a restatement is not within it
    assert within_a_stronger(4, [0], statements) is None  # no conditions: nothing to compare
    assert within_a_stronger(1, [2, 3], statements) == 3  # the first stronger one that holds all its conditions
    assert within_a_stronger(1, [], statements) is None
    judged = [dict(s, region="relevance") for s in statements]
    assert within_a_stronger(1, [0], judged) is None  # by the given Γ, its images are its own

    for s in statements[:2]:
        s.update(n_in=40, error_rate_in=0.7, error_rate_out=0.05, lift=14.0)
    statements[1]["beyond"] = {**beyond, "above": [0], "within": 0}
    conf = {"status": "done", "n_held_out": 210, "outcome": "error rate", "ranked": [0, 1], "statements": statements}
    lines = confirmed_statements_lines(conf)
    assert "caution" not in lines[1] and "caution: its conditions are some of finding 1's" in lines[2]
    entries = ranked_statements(conf)
    assert "may_be_misses_of" not in entries[0] and entries[1]["may_be_misses_of"] == statements[0]["text"]
    del statements[1]["beyond"]["within"]
    assert "caution" not in " ".join(confirmed_statements_lines(conf))
    assert "may_be_misses_of" not in ranked_statements(conf)[1]


def test_a_report_that_confirmed_nothing_says_so_at_its_top():
    """A thirty-sixth user's run confirmed nothing: the HTML report had no Findings section and no word of it at the
    top, only "not confirmed" in each row. A run with a finding has its section instead, a skipped one its note."""
    from lbee.reports.html import render_report

    inputs, scores, _ = grammar_world(seed=0, failure=None, noise_rate=0.1)
    r = run(inputs, scores).main
    assert r.extra["confirmation"]["status"] == "done"
    html = render_report(_page(r, r.extra["hypotheses"]))
    assert 'id="no-findings"' in html and 'id="findings"' not in html
    found = run(*grammar_world()[:2]).main
    html = render_report(_page(found, found.extra["hypotheses"]))
    assert 'id="findings"' in html and 'id="no-findings"' not in html
    skipped = run(*grammar_world(n=MIN_CONFIRM_IMAGES - 100)[:2]).main
    html = render_report(_page(skipped, skipped.extra["hypotheses"]))
    assert 'id="untested"' in html and 'id="no-findings"' not in html


def test_findings_on_random_weights_say_what_confirmed_is_worth_and_counts_say_of_what():
    """A thirty-seventh user's run on random weights printed "Findings. Confirmed ..." and its HTML a Findings box
    for a meaningless sentence, with no caveat beside them (the banner was at the top only); and read "holds for 82
    images; on the 25 held out" beside a group of 52 as three counts of one set."""
    from dataclasses import replace

    from lbee.reports.html import render_report
    from lbee.run.identity import random_weights_banner
    from lbee.run.meaningless import MEANINGLESS_FINDINGS
    from lbee.run.text import render_markdown, terminal_blocks

    found = run(*grammar_world()[:2]).main
    conf = found.extra["confirmation"]
    first = conf["statements"][conf["ranked"][0]]
    counts = f"holds for {len(first['holds_for'])} of all the images (by the encoder); on the {first['n_in']} of them"
    for encoder, meaningless in (
        ({"encoder": "open_clip", "weights": "random:seed=0:ab"}, True),
        (found.encoder, False),
    ):
        r = replace(found, encoder=encoder)
        banner = random_weights_banner(encoder)
        html = render_report(replace(_page(r, r.extra["hypotheses"]), banner=banner))
        terminal = " ".join(terminal_blocks(r, width=2000).split())
        for said in (terminal, render_markdown(r), html.replace("&#39;", "'")):
            assert (MEANINGLESS_FINDINGS in said) == meaningless
            assert counts in said


def test_lbee_submit_says_a_random_weights_runs_findings_are_worth_little(capsys, tmp_path):
    """Trial 37: `lbee submit` listed a random-weights run's statement under "confirmed on held-out images" bare."""
    import json
    from dataclasses import replace

    from lbee.cli.submit import _echo_findings
    from lbee.reports.html import render_index
    from lbee.run.meaningless import MEANINGLESS_FINDINGS
    from lbee.run.pipeline import write_outputs

    found = run(*grammar_world()[:2]).main

    class Service:  # the one call `_echo_findings` makes of `lbee.service.client.Client`
        def explanation(self, job_id, model):
            return json.loads((tmp_path / model / "explanation.json").read_text())

    for encoder, meaningless in (
        ({"encoder": "open_clip", "weights": "random:seed=0:ab"}, True),
        (found.encoder, False),
    ):
        write_outputs(replace(found, encoder=encoder), tmp_path / str(meaningless))
        _echo_findings(Service(), "j", str(meaningless), "run")
        said = " ".join(capsys.readouterr().out.split())
        assert "confirmed on held-out images, strongest first" in said and "of all the images (by the encoder)" in said
        assert (MEANINGLESS_FINDINGS in said) == meaningless, said
        # the batch index and the service's run list, too
        entry = {"dataset": "d", "model": "m", "href": "x", "rows": [], "folder": tmp_path / str(meaningless)}
        index = render_index([entry], [])
        assert ("but its sentences mean nothing" in index.replace("&#39;", "'")) == meaningless
    # trial 39: a run with a given Γ was said to hold "by the encoder" (the client's rows named no region)
    import dataclasses

    inputs, scores, _ = grammar_world()
    gamma = np.clip(inputs.embeddings[:, : len(inputs.sentences)], 0, 1) > 0.5
    write_outputs(run(dataclasses.replace(inputs, relevance=gamma), scores).main, tmp_path / "gamma")
    _echo_findings(Service(), "j", "gamma", "run")
    said = " ".join(capsys.readouterr().out.split())
    assert "of all the images (by the given Γ)" in said and "(by the encoder)" not in said, said


def test_report_md_says_why_a_describer_has_no_sentence(planted_run):
    """Trial 42: report.md showed setdiff's column empty for a group, with no word why (the terminal says it)."""
    import copy

    from lbee.core.selection import NO_SENTENCE
    from lbee.run.text import render_markdown

    r = copy.deepcopy(planted_run)
    for c in r.explanations["compose"].hard_clusters:  # SetDiff's, in the trial: any describer's
        c.sentences = []
    lines = render_markdown(r).splitlines()
    heads = [j for j, line in enumerate(lines) if line.startswith("| rank |")]
    assert len(heads) == len(r.explanations["compose"].hard_clusters)
    for j in heads:
        column = [c.strip() for c in lines[j].split("|")].index("compose")
        assert [c.strip() for c in lines[j + 2].split("|")][column] == NO_SENTENCE["compose"], lines[j + 2]


def test_random_weights_findings_read_from_gamma_say_gamma_found_them(capsys, tmp_path):
    """Trial 43: with random weights and a given Γ, the run named its two planted failures exactly, and every report
    said "its words do not say what they share": where a statement holds was read from Γ, not from the encoder."""
    import dataclasses
    import json

    from lbee.cli.submit import _echo_findings
    from lbee.reports.html import render_index, render_report
    from lbee.run.identity import random_weights_banner
    from lbee.run.meaningless import MEANINGLESS_BUT_GAMMA, MEANINGLESS_FINDINGS
    from lbee.run.pipeline import write_outputs
    from lbee.run.text import render_markdown, terminal_blocks

    inputs, scores, _ = grammar_world()
    gamma = np.clip(inputs.embeddings[:, : len(inputs.sentences)], 0, 1) > 0.5
    found = run(dataclasses.replace(inputs, relevance=gamma), scores).main
    conf = found.extra["confirmation"]
    assert conf["ranked"] and all(conf["statements"][j]["region"] == "relevance" for j in conf["ranked"])
    encoder = {"encoder": "open_clip", "weights": "random:seed=0:ab"}
    r = dataclasses.replace(found, encoder=encoder)
    html = render_report(dataclasses.replace(_page(r, r.extra["hypotheses"]), banner=random_weights_banner(encoder)))
    terminal = " ".join(terminal_blocks(r, width=2000).split())
    for said in (terminal, render_markdown(r), html.replace("&#39;", "'")):
        assert MEANINGLESS_BUT_GAMMA in said and MEANINGLESS_FINDINGS not in said

    class Service:  # the one call `_echo_findings` makes of `lbee.service.client.Client`
        def explanation(self, job_id, model):
            return json.loads((tmp_path / model / "explanation.json").read_text())

    write_outputs(r, tmp_path / "g")
    _echo_findings(Service(), "j", "g", "run")
    said = " ".join(capsys.readouterr().out.split())
    assert MEANINGLESS_BUT_GAMMA in said and MEANINGLESS_FINDINGS not in said, said
    entry = {"dataset": "d", "model": "m", "href": "x", "rows": [], "folder": tmp_path / "g"}
    index = render_index([entry], []).replace("&#39;", "'")
    assert "the given Γ found these" in index and "but its sentences mean nothing" not in index


def test_report_md_shows_an_image_id_in_a_code_span_as_typed(planted_run):
    """Sweep 32bb N8: report.md wrote every '<' as '&lt;', also inside the code spans of "Least confident:", where
    Markdown shows the entity as typed; outside them a '<' of the user's is still no raw HTML."""
    import copy
    import re

    from lbee.run.text import render_markdown

    r = copy.deepcopy(planted_run)
    r.image_ids = [f"x{i}<svg>`.png" for i in range(len(r.image_ids))]
    r.extra["split_criterion"] = "a <b>user's</b> criterion \x00`x` <i> `y`\x00"  # no text of theirs makes a span
    md = render_markdown(r)
    spans = re.findall(r"Least confident: (.*)", md)
    assert spans and all(re.fullmatch(r"(`` x\d+<svg>`\.png ``(, )?)+", s) for s in spans), spans[0]
    assert "a &lt;b>user's&lt;/b> criterion \x00`x` &lt;i> `y`\x00" in md
    # sweep 32bc: a line break in a file name ended its span, and the rest was raw HTML
    r.image_ids = [f"p{i}\n<script>x</script>.png" for i in range(len(r.image_ids))]
    md = render_markdown(r)
    assert "\n<script>" not in md and re.search(r"`p\d+\\n<script>x</script>\.png`", md)  # the break escaped
