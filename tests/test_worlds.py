"""Synthetic attribute worlds of any grammar (lbee.bench.worlds), the simulated encoder and the worlds bench."""

import numpy as np
import pytest

from lbee.bench.simulated_encoder import SimulatedEncoder
from lbee.bench.world_bench import literal_scores, run_world
from lbee.bench.worlds import ERROR_INSIDE, ERROR_OUTSIDE, make_world
from lbee.grammar import load_grammar


@pytest.mark.parametrize("family", ["street_scenes", "object_photos", "camera_traps"])
def test_a_world_plants_failures_with_confounders_and_a_model_that_fails_on_them(family):
    world = make_world(family, n=6000, n_failures=2, random_state=3)
    g = world.grammar
    masks = world.failure_masks()
    for j, f in enumerate(world.failures):
        assert 2 <= len(f) <= 4 and g.contradiction(g.implied(f)) is None
        assert 0.02 <= masks[:, j].mean() <= 0.10, (g.render(f), masks[:, j].mean())
        if world.confounders[j] is not None:
            key, value = world.confounders[j]
            assert key not in g.implied(f)
            inside = (world.values[key] == value)[masks[:, j]].mean()
            outside = (world.values[key] == value)[~masks[:, j]].mean()
            assert inside > 0.85 and outside < 0.7, (inside, outside)
    inside = masks.any(axis=1)
    assert abs((~world.correct[inside]).mean() - ERROR_INSIDE) < 0.05
    assert abs((~world.correct[~inside]).mean() - ERROR_OUTSIDE) < 0.015
    assert world.confidence[~world.correct].mean() < 0.35 < 0.65 < world.confidence[world.correct].mean()
    again = make_world(family, n=6000, n_failures=2, random_state=3)
    assert again.failures == world.failures and np.array_equal(again.correct, world.correct)


def test_an_absence_is_planted_as_an_absent_subject_without_its_attributes():
    world = make_world("street_scenes", n=4000, n_failures=3, random_state=5)
    g = world.grammar
    for key, _ in g.keys():
        subject = g.subject(key[0])
        if key[1] != "presence" and not subject.setting and subject.deniable:
            absent = world.values[(key[0], "presence")] == "false"
            assert (world.values[key][absent] == "").all()  # nothing said of what is not there


@pytest.mark.parametrize("level", [0.75, 0.88, 0.97])
def test_the_simulated_encoder_reaches_the_asked_median_atom_auc(level):
    world = make_world("camera_traps", n=4000, random_state=1)
    enc = SimulatedEncoder(world.grammar, random_state=1).fit_quality(world, level)
    auc = enc.atom_auc(world)
    assert abs(np.nanmedian(auc) - level) < 0.01
    assert np.nanmax(auc) - np.nanmin(auc) > 0.05  # atoms differ in how well they are seen
    x = enc.embed_images(world)
    assert x.dtype == np.float32 and np.allclose(np.linalg.norm(x, axis=1), 1, atol=1e-5)


def test_the_encoder_has_real_encoders_faults():
    world = make_world("street_scenes", n=6000, random_state=2)
    g = world.grammar
    enc = SimulatedEncoder(g, random_state=2, nuisance=0.0).fit_quality(world, 0.97)
    x = enc.embed_images(world)
    # weak negation: "no car" lies closer to "a car" than "a truck" does
    s = enc.embed_sentences(
        [{("car", "presence"): "false"}, {("car", "presence"): "true"}, {("truck", "presence"): "true"}]
    )
    assert s[0] @ s[1] > s[2] @ s[1] + 0.3
    # a binding leak: "a red traffic light" and "a red ..." of another subject share the word "red"? (street_scenes
    # has one 'red'); distances are said "nearby" / "distant" of pedestrians, cyclists and cars alike
    near = [{(subj, "distance"): "near"} for subj in ("pedestrian", "cyclist")]
    a, b = enc.embed_sentences(near)
    has_ped_near = world.values[("pedestrian", "distance")] == "near"
    no_cyclist = world.values[("cyclist", "presence")] == "false"
    sims = x @ b  # "a nearby cyclist" over images without any cyclist
    assert sims[no_cyclist & has_ped_near].mean() > sims[no_cyclist & ~has_ped_near].mean()


def test_literal_scores():
    g = load_grammar("street_scenes")
    truth = {("pedestrian", "distance"): "far", ("cyclist", "presence"): "true"}
    assert literal_scores(truth, truth, g)["exact"] == 1.0
    # a presence its attribute implies is the same statement
    implied = {("pedestrian", "distance"): "far", ("pedestrian", "presence"): "true", ("cyclist", "presence"): "true"}
    assert literal_scores(implied, truth, g)["exact"] == 1.0
    s = literal_scores({("road", "type"): "city", ("pedestrian", "distance"): "far"}, truth, g)
    assert s == {"precision": 0.5, "recall": 0.5, "f1": 0.5, "exact": 0.0}
    assert literal_scores({}, truth, g)["f1"] == 0.0


def test_a_world_run_scores_every_describer_against_the_planted_failures():
    run = run_world("object_photos", level=0.97, seed=0, n=3000, n_clusters=8)
    methods = {r["method"] for r in run.rows}
    assert methods == {"compose", "tops", "setdiff", "pdiff", "fpdiff", "domino"}
    assert len(run.rows) == 6 * 2 and abs(run.measured - 0.97) < 0.01
    for r in run.rows:
        assert 0 <= r["f1"] <= 1 and r["sentence"]
    for d in run.discovery:
        assert 0 <= d["dr"] <= d["dr_loose"] <= 1  # the loose variant finds at least what the strict one does


def test_bench_worlds_refuses_a_huge_grammar_and_never_replaces_its_files_in_silence(tmp_path):
    """Sixth sweep H2 and L2: a 6 kB grammar of YAML aliases (60 subjects x 8 attributes x 30 values) kept `lbee
    bench worlds` fitting for minutes; its --out replaced a user's worlds.md, file by file, with no --overwrite."""
    from click.testing import CliRunner

    from lbee.bench.worlds import MAX_WORLD_LITERALS
    from lbee.cli import cli

    attrs = "".join(
        f"      - id: a{a}\n        values: {{{', '.join(f'v{v}: w{a}x{v}' for v in range(30))}}}\n" for a in range(8)
    )
    subjects = "".join(f"  - {{id: s{i}, noun: t{i}, deniable: true, attributes: *A}}\n" for i in range(1, 60))
    grammar = tmp_path / "big.grammar.yaml"
    grammar.write_text(
        "name: big\ndescription: x\nlead: An image with\nbare: An image\nmax_conditions: 1\nsubjects:\n"
        f"  - id: s0\n    noun: t0\n    deniable: true\n    attributes: &A\n{attrs}{subjects}"
    )
    assert grammar.stat().st_size < 10_000
    r = CliRunner().invoke(cli, ["-q", "bench", "worlds", str(grammar), "--worlds", "1", "--n", "500"], obj={})
    assert r.exit_code == 1 and f"at most {MAX_WORLD_LITERALS}" in r.output and "Traceback" not in r.output, r.output
    out = tmp_path / "bw"
    out.mkdir()
    (out / "worlds.md").write_text("keep")
    args = ["-q", "bench", "worlds", "object_photos", "--worlds", "1", "--n", "500", "--levels", "0.97", "--out"]
    r = CliRunner().invoke(cli, args + [str(out)], obj={})
    assert r.exit_code == 2 and "--overwrite" in r.output and (out / "worlds.md").read_text() == "keep", r.output
    r = CliRunner().invoke(cli, args + [str(out), "--overwrite", "--clusters", "4"], obj={})
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in out.iterdir()) == ["discovery.csv", "worlds.csv", "worlds.md"]
    assert (out / "worlds.md").read_text().startswith("| level")


def test_an_attribute_table_is_checked_and_a_subject_in_every_image_needs_no_presence_column(tmp_path):
    """Trial 28: the simulated-encoder recipe died with a bare KeyError ('wbc', 'presence') on a table without a
    presence column for a cell in every smear, and read pandas' True / False as values no literal has (silently:
    the artefact's atom had no signal)."""
    from lbee.bench.worlds import AttributeWorld

    (tmp_path / "b.grammar.yaml").write_text(
        "name: smears\nlead: A smear showing\nbare: A smear\nmax_conditions: 2\nsubjects:\n"
        "  - id: wbc\n    noun: white cell\n    attributes:\n      - id: focus\n        kind: clause\n"
        "        values: {sharp: in focus, blurred: out of focus}\n"
        "  - id: artefact\n    noun: artefact\n    deniable: true\n"
    )
    g = load_grammar(tmp_path / "b.grammar.yaml")
    n = 4
    focus = np.array(["sharp", "blurred", "sharp", "blurred"])

    def world(values):
        return AttributeWorld(g, values, [], [], np.ones(n, bool), np.ones(n), random_state=0)

    w = world({("wbc", "focus"): focus, ("artefact", "presence"): np.array([True, False, True, False])})
    assert list(w.values[("wbc", "presence")]) == ["true"] * n  # present wherever its attribute has a value
    assert list(w.values[("artefact", "presence")]) == ["true", "false", "true", "false"]  # booleans read as such
    assert w.holds({("artefact", "presence"): "true", ("wbc", "focus"): "blurred"}).tolist() == [False] * n
    with pytest.raises(ValueError, match=r"no column 'artefact.presence'; expected one per key .* 'true', 'false'"):
        world({("wbc", "focus"): focus})  # a subject the grammar denies: its absence must be given
    with pytest.raises(ValueError, match=r"column 'wbc.focus', row 2: 'blurry' is none of the grammar's values"):
        world({("wbc", "focus"): np.array(["sharp", "blurry", "sharp", "sharp"]), ("artefact", "presence"): focus})
    with pytest.raises(ValueError, match=r"column 'wbc.focus' has shape \(3,\); expected one value per image"):
        world({("wbc", "focus"): focus[:3], ("artefact", "presence"): np.array(["true"] * n)})
    SimulatedEncoder(g, random_state=0).signal(w)  # the recipe's next step runs
