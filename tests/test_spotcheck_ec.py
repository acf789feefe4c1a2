"""The SpotCheck EC pipeline end to end: lbee demo, EC persistence, the encoder gate, the benchmark."""

import json
import re
import shutil

import numpy as np
import pytest
from click.testing import CliRunner

from lbee.cli import cli
from lbee.spotcheck import (
    CorruptECError,
    ExperimentalConfiguration,
    domino_synthetic_predictions,
    relevance_matrix,
    spotcheck_sentences,
)


def test_demo_names_each_true_blindspot(demo_run):
    """Each true blindspot is found, and compose's first sentence for it is true of it and of little else."""
    out, text = demo_run
    payload = json.loads((out / "explanation.json").read_text())
    assert payload["DR"] == 1.0 and payload["FDR"] == 0.0
    assert payload["description_score"]["compose"] >= 0.6
    assert max(payload["description_score"].values()) == payload["description_score"]["compose"]
    named = text.split("what 'compose' says of the hypothesis covering it:")[1].split("\nCounterfactual check")[0]
    scores = [float(x) for x in re.findall(r"description score (\d\.\d\d)", named)]
    assert len(scores) == len(payload["blindspots"]) >= 2 and min(scores) >= 0.8


def test_demo_prints_and_writes_everything(demo_run):
    out, text = demo_run
    assert "True blindspots" in text and "DR =" in text and "FDR =" in text
    for m in ("compose", "tops", "setdiff", "pdiff", "fpdiff", "domino"):
        assert m in text
    payload = json.loads((out / "explanation.json").read_text())
    assert list(payload["methods"]) == ["compose", "tops", "setdiff", "pdiff", "fpdiff", "domino"]  # compose first
    assert len(payload["sentence_conditions"]) == len(payload["sentences"]) > 744  # the grammar's, then compose's
    # each true blindspot is named by compose's first sentence for the hypothesis covering it (seed 0)
    assert "Each true blindspot, and what 'compose' says" in text
    assert payload["encoder"]["encoder"] == "spotcheck" and payload["blindspots"]
    assert (out / "assignments.parquet").exists() and "## Metrics" in (out / "report.md").read_text()
    assert 0.0 <= payload["DR"] <= 1.0


def test_demo_ec_has_verified_blindspots_and_round_trips(demo_run):
    out, _ = demo_run
    ec = ExperimentalConfiguration.load(out / "ec")
    v = ec.verification
    assert v["passed"] and v["accuracy_outside"] >= 0.9 and max(v["accuracy_inside"]) <= 0.2
    # test labels are the truth; train labels are flipped inside blindspots
    assert np.array_equal(ec.labels["test"], ec.true_labels("test"))
    inside = ec.membership("train").any(1)
    assert inside.any() and np.all(ec.labels["train"][inside] != ec.true_labels("train")[inside])
    assert np.all(ec.labels["train"][~inside] == ec.true_labels("train")[~inside])
    # the reloaded model reproduces the verification
    from lbee.spotcheck import verify_blindspots

    assert verify_blindspots(ec)["accuracy_inside"] == pytest.approx(v["accuracy_inside"])
    # the model exposes its penultimate representation
    from lbee.spotcheck import predict

    probs, feats = predict(ec.model, ec.images["test"][:5])
    assert probs.shape == (5, 2) and feats.shape[0] == 5 and feats.ndim == 2


def test_demo_metrics_match_evaluate_from_files(demo_run):
    """lbee evaluate on the demo's output with the exact Γ reproduces the demo's numbers."""
    out, _ = demo_run
    from lbee.grammar import load_grammar, parse_conditions

    ec = ExperimentalConfiguration.load(out / "ec", load_images=False)
    payload = json.loads((out / "explanation.json").read_text())
    g = load_grammar("spotcheck")
    rel = relevance_matrix(
        ec.attributes["test"], [g.implied(parse_conditions(c)) for c in payload["sentence_conditions"]]
    )
    np.save(out / "rel.npy", rel)
    r = CliRunner().invoke(
        cli, ["evaluate", str(out), "--relevance", str(out / "rel.npy"), "--out", str(out / "m.json")], obj={}
    )
    assert r.exit_code == 0, r.output
    rows = {x["method"]: x for x in json.loads((out / "m.json").read_text())}
    demo_scores = json.loads((out / "explanation.json").read_text())["metrics"]
    for m, s in demo_scores.items():
        for key in ("AHR", "ACR", "TPR", "JI"):
            assert rows[m][key] == pytest.approx(s[key], nan_ok=True)


def test_corrupt_ec_folder(demo_run, tmp_path):
    out, _ = demo_run
    bad = tmp_path / "ec"
    shutil.copytree(out / "ec", bad)
    (bad / "images" / "test" / "00000.png").write_bytes(b"broken")
    with pytest.raises(CorruptECError, match="cannot be read"):
        ExperimentalConfiguration.load(bad)
    (bad / "metadata.parquet").unlink()
    with pytest.raises(CorruptECError, match="incomplete or corrupt"):
        ExperimentalConfiguration.load(bad)


def _without_metadata_digest(ec):
    """The world as saved before ec.json recorded metadata.parquet's digest (tenth sweep W4)."""
    definition = json.loads((ec / "ec.json").read_text())
    definition.pop("metadata_sha256")
    (ec / "ec.json").write_text(json.dumps(definition))


def test_a_world_reads_only_its_own_renders(demo_run, tmp_path):
    """Eighth sweep S2: metadata.parquet's `file` rows, absolute or with '..', made a job embed images outside the
    data root (and say whether an outside path exists); a link among the renders led out too."""
    import pandas as pd

    from lbee.io.confinement import confined_to

    out, _ = demo_run
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copy(out / "ec" / "images" / "test" / "00000.png", outside / "secret.png")
    for bad_file in (str(outside / "secret.png"), "../../outside/secret.png", "images/test/00001.png"):
        ec = root / "ec"
        shutil.rmtree(ec, ignore_errors=True)
        shutil.copytree(out / "ec", ec)
        meta = pd.read_parquet(ec / "metadata.parquet")
        meta.loc[(meta["split"] == "test") & (meta["index"] == 0), "file"] = bad_file
        meta.to_parquet(ec / "metadata.parquet", index=False)
        _without_metadata_digest(ec)  # a world saved before the digest: the rows' own checks stand
        with pytest.raises(CorruptECError, match="test image 0 is .*a world's images are 'images/test/00000.png'"):
            ExperimentalConfiguration.load(ec, load_images=False)
    # ninth sweep W3: a duplicate index, a label of 7, an unknown split, float indices, a key twice in ec.json
    for change, says in [
        (lambda m: m.assign(index=m["index"].where(m["index"] != 1, 0)), "not numbered 0 to"),
        (lambda m: m.assign(label=m["label"].where(m.index != 0, 7)), "the label(s) [7]"),
        (lambda m: m.assign(split=m["split"].where(m.index != 0, "extra")), "rows of the split(s) ['extra']"),
        (lambda m: m.assign(index=m["index"].astype(float)), "not numbered 0 to"),
    ]:
        shutil.rmtree(ec)
        shutil.copytree(out / "ec", ec)
        change(pd.read_parquet(ec / "metadata.parquet")).to_parquet(ec / "metadata.parquet", index=False)
        _without_metadata_digest(ec)
        with pytest.raises(CorruptECError, match=re.escape(says)):
            ExperimentalConfiguration.load(ec, load_images=False)
    shutil.rmtree(ec)
    shutil.copytree(out / "ec", ec)
    text = (ec / "ec.json").read_text()
    (ec / "ec.json").write_text(text.rstrip()[:-1] + ', "seed": 5}')
    with pytest.raises(CorruptECError, match="the key 'seed' is written twice"):
        ExperimentalConfiguration.load(ec, load_images=False)
    shutil.rmtree(ec)
    shutil.copytree(out / "ec", ec)
    (ec / "images" / "test" / "00000.png").unlink()
    (ec / "images" / "test" / "00000.png").symlink_to(outside / "secret.png")
    assert ExperimentalConfiguration.load(ec).images["test"].shape[0] > 0  # the command line: no root
    with confined_to(root), pytest.raises(CorruptECError, match="leads outside the data root"):
        ExperimentalConfiguration.load(ec)


def test_encoder_quality_gate_on_fresh_renders():
    """Single-attribute sentences separate images with / without the attribute (ROC-AUC)."""
    from sklearn.metrics import roc_auc_score

    from lbee.encoders import create_encoder
    from lbee.spotcheck import ATTRIBUTES, DatasetDefinition, render

    enc = create_encoder("spotcheck")
    rng = np.random.default_rng(2024)  # renders never seen in training
    d = DatasetDefinition(["background", "square", "rectangle", "circle", "text"], list(ATTRIBUTES))
    imgs, attrs = [], []
    for _ in range(1200):
        im, a = render(d.sample_attributes(rng), rng, 64)
        imgs.append(im)
        attrs.append(a)
    X = enc.encode_arrays(np.stack(imgs))
    sents = [s for s in spotcheck_sentences() if s[2]]
    S = enc.encode_text([s for s, _, _ in sents])
    rel = relevance_matrix(attrs, [c for _, c, _ in sents])
    aucs = np.array([roc_auc_score(rel[:, j], X @ S[j]) for j in range(len(sents))])
    assert np.median(aucs) >= 0.90 and aucs.min() >= 0.75, dict(zip([s for s, _, _ in sents], aucs.round(3)))
    assert np.allclose(np.linalg.norm(X, axis=1), 1, atol=1e-5)
    assert 0 < enc.default_tau < 1


def test_domino_synthetic_model_rates():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 20000)
    s = rng.random(20000) < 0.3
    p = domino_synthetic_predictions(
        y, s, in_sensitivity=0.3, out_sensitivity=0.9, in_specificity=0.6, out_specificity=0.95, random_state=0
    )
    assert p.mean() == pytest.approx(p.mean()) and ((p > 0) & (p < 1)).all()
    assert p[(y == 1) & s].mean() == pytest.approx(0.3, abs=0.02)
    assert p[(y == 1) & ~s].mean() == pytest.approx(0.9, abs=0.02)
    assert p[(y == 0) & s].mean() == pytest.approx(0.4, abs=0.02)
    with pytest.raises(ValueError, match="in_sensitivity"):
        domino_synthetic_predictions(y, s, in_sensitivity=1.5)


def test_benchmark_resumes_and_summarizes(tmp_path, monkeypatch):
    import lbee.spotcheck
    from lbee import bench

    rec = {
        "seed": 0,
        "DR": 1.0,
        "FDR": 0.0,
        "scores": {"tops": {"AHR": 0.5, "ACR": 0.4, "TPR": 0.3, "JI": 0.2}},
        "description_accuracy": {"tops": 1.0},
        "failure_analysis": [{"blindspot": 0, "not_returned": 0.0, "found": 0.5, "merged": 0.5, "impure": 0.0}],
        "config": bench.bench_config(),
    }
    (tmp_path / "ecs").mkdir()
    for seed, dr in ((0, 1.0), (1, 0.5)):
        (tmp_path / "ecs" / f"ec_{seed:04d}.json").write_text(json.dumps({**rec, "seed": seed, "DR": dr}))

    def boom(*a, **k):
        raise AssertionError("a finished EC was recomputed")

    monkeypatch.setattr(lbee.spotcheck, "make_ec", boom)
    records = bench.run_benchmark(2, tmp_path, encoder=None)
    assert [r["seed"] for r in records] == [0, 1]
    with pytest.raises(ValueError, match="another configuration"):  # never averaged with another protocol
        bench.run_benchmark(2, tmp_path, encoder=None, protocol="lbee")
    rows = bench.summarize(records)
    dr = next(r for r in rows if r["metric"] == "DR")
    assert dr["mean"] == pytest.approx(0.75) and dr["n"] == 2
    assert dr["ci95"] == pytest.approx(1.96 * 0.3535534 / 2**0.5)
    md = bench.write_tables(rows, tmp_path)
    assert "| DR |" in md and (tmp_path / "bench.csv").exists()
    # a variant of the description score is a row beside it, over the records that have it
    records[0]["description_variants"] = {"first sentence": {"tops": 0.5}}
    rows = bench.summarize(records)
    names = [r["metric"] for r in rows]
    assert names.index("description score (first sentence)") == names.index("description score") + 1
    variant = rows[names.index("description score (first sentence)")]
    assert variant["mean"] == 0.5 and variant["n"] == 1


def test_demo_inputs_feed_the_sweep_consistently(demo_run, tmp_path):
    """The sweep over the demo's saved inputs reproduces fixed-C Ward at the default K, C and o.

    (The sweep varies K, C and o over fixed-C Ward partitions; the demo itself merges them into one hypothesis
    per failure, so its own figures are not the sweep's.)
    """
    import pandas as pd

    import lbee
    from lbee.io.sentences import load_sentence_set

    out, text = demo_run
    inputs = out / "inputs"
    payload = json.loads((out / "explanation.json").read_text())
    tau = payload["params"]["tau"]
    from lbee.io.provenance import read_provenance

    for name in ("image_embeddings", "sentence_embeddings"):  # τ and the encoder travel with the arrays
        assert read_provenance(inputs / f"{name}.npy")["tau"] == pytest.approx(tau)
    sset = load_sentence_set(inputs / "sentences.txt")
    assert sset.grammar.name == "spotcheck" and len(sset.conditions) == len(sset)
    pred = pd.read_csv(inputs / "predictions.csv")
    X, S = np.load(inputs / "image_embeddings.npy"), np.load(inputs / "sentence_embeddings.npy")
    rel = np.load(inputs / "relevance.npy")
    exps = lbee.explain_methods(
        X,
        S,
        methods=["tops", "setdiff", "pdiff", "fpdiff", "domino"],
        confidence=pred["confidence"].to_numpy(),
        n_clusters=15,
        k=3,
        tau=tau,
    )
    expected = {m: lbee.evaluate(e, rel, pred["performance"].to_numpy(), o=0.2) for m, e in exps.items()}
    r = CliRunner().invoke(
        cli,
        [
            "sweep",
            "--image-embeddings",
            str(inputs / "image_embeddings.npy"),
            "--sentence-embeddings",
            str(inputs / "sentence_embeddings.npy"),
            "--sentences",
            str(inputs / "sentences.txt"),
            "--predictions",
            str(inputs / "predictions.csv"),
            "--relevance",
            str(inputs / "relevance.npy"),
            "--tau",
            str(tau),
            "--k-grid",
            "3",
            "--clusters-grid",
            "",
            "--o-grid",
            "0.2",
            "--out",
            str(tmp_path / "sw"),
        ],
        obj={},
    )
    assert r.exit_code == 0, r.output
    assert "lbee sweep --image-embeddings" in text
    table = pd.read_csv(tmp_path / "sw" / "sweep.csv").set_index(["parameter", "method"])
    for m, scores in expected.items():
        for metric in ("AHR", "ACR", "TPR", "JI"):
            assert table.loc[("K", m), metric] == pytest.approx(scores[metric], abs=1e-9)
            assert table.loc[("o", m), metric] == pytest.approx(scores[metric], abs=1e-9)


def test_train_classifier_learns_and_returns_a_cpu_model():
    """The per-batch uint8 → float conversion trains as before; the model always comes back on the CPU."""
    import torch

    from lbee.spotcheck import predict, train_classifier

    rng = np.random.default_rng(0)
    images = rng.integers(0, 60, size=(64, 16, 16, 3), dtype=np.uint8)
    labels = np.arange(64) % 2
    images[labels == 1, 4:12, 4:12] = 255  # a bright patch is the class
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = train_classifier(images, labels, epochs=6, batch_size=16, random_state=0, device=device)
    assert all(p.device.type == "cpu" for p in model.parameters())
    probs, _ = predict(model, images)
    assert (probs.argmax(1) == labels).mean() == 1.0


# ---- shipped classifier weights (make_ec(train='auto'), lbee demo --retrain)

#: a small world: 200 training images, one epoch, a gate every model passes (the checks, not the model, are tested)
SMALL = {
    "n_train": 200,
    "n_val": 120,
    "n_test": 120,
    "epochs": 1,
    "min_blindspot_size": 0,
    "min_outside": 0.0,
    "max_inside": 1.0,
    "min_neighbour": 0.0,
}


@pytest.fixture()
def shipped_small(tmp_path, monkeypatch):
    """A small EC trained once and registered as shipped weights (in tmp_path) for its own world."""
    from lbee.spotcheck import _ec

    ec = _ec.make_ec(5, train=True, **SMALL)
    entry = _ec.write_shipped_classifier(ec, tmp_path / "small.pt")
    monkeypatch.setattr(_ec, "WEIGHTS_DIR", tmp_path)
    monkeypatch.setattr(_ec, "SHIPPED_CLASSIFIERS", {ec.seed: entry})
    monkeypatch.setattr(_ec, "_WORLD_ARGS", ())  # the small world counts as the default one
    return ec, entry


def _same_weights(a, b):
    import torch

    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def test_shipped_weights_are_used_without_training(shipped_small):
    from lbee.spotcheck import make_ec

    ec, entry = shipped_small
    msgs = []
    again = make_ec(5, log=msgs.append, **SMALL)
    assert again.verification["classifier"] == "shipped" and again.verification["passed"]
    assert _same_weights(again.model, ec.model)
    assert msgs[1] == "checking that the square classifier shipped for this world (small.pt) fits it ..."
    assert msgs[2].startswith("  it was trained on exactly this world's training images, so it is used")
    assert not any(m.startswith("training") or "epoch" in m for m in msgs)
    assert again.verification["accuracy_inside"] == pytest.approx(ec.verification["accuracy_inside"])


def test_forced_training_ignores_shipped_weights(shipped_small):
    from lbee.spotcheck import make_ec

    ec, _ = shipped_small
    msgs = []
    again = make_ec(5, train=True, log=msgs.append, **SMALL)
    assert again.verification["classifier"] == "trained"
    assert any(m.startswith("training the square classifier") for m in msgs)
    assert not any("shipped" in m for m in msgs)
    assert _same_weights(again.model, ec.model)  # same seed, same threads: training is deterministic


def test_digest_mismatch_falls_back_to_training_with_one_message(shipped_small, tmp_path):
    from lbee.spotcheck import make_ec

    ec, _ = shipped_small
    with open(tmp_path / "small.pt", "ab") as fh:
        fh.write(b"\0")  # the file no longer has the pinned sha256
    msgs = []
    again = make_ec(5, log=msgs.append, **SMALL)
    assert again.verification["classifier"] == "trained"
    notes = [m for m in msgs if "not used" in m]
    assert len(notes) == 1 and "small.pt has sha256" in notes[0] and notes[0].endswith("training it")
    assert "\n" not in notes[0]
    assert _same_weights(again.model, ec.model)
    with pytest.warns(UserWarning, match="is not used: small.pt has sha256"):  # without a log: a warning
        make_ec(5, **SMALL)


def test_other_training_data_or_missing_file_falls_back(shipped_small, tmp_path, monkeypatch):
    from lbee.spotcheck import _ec

    ec, entry = shipped_small
    monkeypatch.setattr(_ec, "SHIPPED_CLASSIFIERS", {ec.seed: {**entry, "train_data": "0" * 64}})
    msgs = []
    assert _ec.make_ec(5, log=msgs.append, **SMALL).verification["classifier"] == "trained"
    assert any("trained on other images or with another recipe" in m for m in msgs)
    monkeypatch.setattr(_ec, "SHIPPED_CLASSIFIERS", {ec.seed: {**entry, "file": "absent.pt"}})
    msgs = []
    assert _ec.make_ec(5, log=msgs.append, **SMALL).verification["classifier"] == "trained"
    assert any("absent.pt" in m and "is missing" in m for m in msgs)


def test_shipped_weights_failing_the_gate_reject_the_candidate_untrained(shipped_small):
    """Shipped weights stand for the training: failing the gate, the candidate is rejected, nothing trains."""
    from lbee.spotcheck import make_ec
    from lbee.spotcheck._ec import ECGenerationError

    msgs = []
    with pytest.raises(ECGenerationError) as info:  # one epoch: not all right outside and all wrong inside
        make_ec(5, log=msgs.append, max_attempts=1, **{**SMALL, "min_outside": 1.0, "max_inside": 0.0})
    assert info.value.attempts[0]["reason"].startswith("shipped model failed verification (accuracy outside")
    assert not any(m.startswith("training the square classifier") for m in msgs)
    # the progress says it in one line (a seventh user read a four-clause story on stderr, and again on stdout);
    # the story, which candidate and why in words, is the attempt's record (the demo prints it once)
    (told,) = [m for m in msgs if "set aside" in m]
    assert told == (
        "candidate world 1 (seed 5000) set aside: its classifier does not fail exactly in its planted "
        "blindspots; drawing the next one (as designed: a world is kept only when it does)"
    )
    assert info.value.attempts[0]["story"].startswith("it ")


def test_shipped_weights_only_for_the_default_world(shipped_small, monkeypatch):
    from lbee.spotcheck import _ec

    monkeypatch.setattr(_ec, "_WORLD_ARGS", ("n_train",))  # n_train=200 is not make_ec's default
    msgs = []
    assert _ec.make_ec(5, log=msgs.append, **SMALL).verification["classifier"] == "trained"
    assert not any("shipped" in m for m in msgs)  # another world: training is the normal path, no notice
    with pytest.raises(ValueError, match="`train` must be 'auto' or True; received 'yes'"):
        _ec.make_ec(5, train="yes", **SMALL)


def test_the_shipped_demo_classifier_matches_its_pin(demo_run):
    """The files in lbee/weights have their pinned sha256; lbee demo (seed 0) rejected candidate 0 from its shipped
    weights (a broader blindspot than planted) and ran on candidate 1's, gate passed, nothing trained."""
    import torch

    from lbee.io.cache import file_sha256
    from lbee.spotcheck import _ec

    for entry in _ec.SHIPPED_CLASSIFIERS.values():
        assert file_sha256(_ec.WEIGHTS_DIR / entry["file"]) == entry["sha256"]
    out, text = demo_run
    ec = ExperimentalConfiguration.load(out / "ec", load_images=False)
    assert ec.seed == 1 and ec.verification["classifier"] == "shipped" and ec.verification["passed"]
    (rejected,) = ec.verification["attempts"]
    assert rejected["seed"] == 0 and "shipped model failed verification" in rejected["reason"]
    assert "where blindspot 1 holds but for rectangle absent" in rejected["reason"]
    assert "training the square classifier" not in text
    path = _ec.WEIGHTS_DIR / _ec.SHIPPED_CLASSIFIERS[1]["file"]
    shipped = torch.load(path, map_location="cpu", weights_only=True)
    assert shipped["ec_seed"] == 1 and shipped["recipe"]["epochs"] == ec.verification["epochs"]
    assert all(torch.equal(v, shipped["state_dict"][k]) for k, v in ec.model.state_dict().items())


def test_benches_and_retrain_always_train(tmp_path, monkeypatch):
    """The spotcheck bench trains every EC (never shipped weights); lbee demo --retrain asks make_ec to train."""
    import lbee.spotcheck
    from lbee import bench

    calls = []

    def record(*args, **kwargs):
        calls.append(kwargs)
        raise RuntimeError("stop here")

    monkeypatch.setattr(lbee.spotcheck, "make_ec", record)  # the bench and the demo both call lbee.spotcheck's
    for protocol in ("paper", "lbee"):
        recs = bench.run_benchmark(1, tmp_path / protocol, encoder=None, protocol=protocol)
        assert "stop here" in recs[0]["failed"]
    assert [c["train"] for c in calls] == [True, True]
    r = CliRunner().invoke(cli, ["demo", "--retrain", "--out", str(tmp_path / "demo")], obj={})
    assert "stop here" in r.output and calls[-1]["train"] is True
    CliRunner().invoke(cli, ["demo", "--out", str(tmp_path / "demo")], obj={})
    assert calls[-1]["train"] == "auto"
