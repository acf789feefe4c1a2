"""A new user's first hour: labels by name, checks before work, offline encoders, quiet and fitting output."""

import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from conftest import planted_world
from PIL import Image

from lbee.cli import cli

ROOT = Path(__file__).resolve().parents[1]


def named_predictions(tmp_path, labels):
    """The planted world with a 3-class predictions table whose labels are class names."""
    X, S, phi, sentences = planted_world(noise=0.01)
    np.save(tmp_path / "img.npy", X)
    np.save(tmp_path / "sen.npy", S)
    (tmp_path / "sents.txt").write_text("\n".join(sentences) + "\n")
    p = np.where(phi[:, None] > 0.5, [0.9, 0.05, 0.05], [0.4, 0.35, 0.25])
    pd.DataFrame(
        {
            "image": [f"i{i}.png" for i in range(len(X))],
            "label": labels,
            "prob_car": p[:, 0],
            "prob_person": p[:, 1],
            "prob_tree": p[:, 2],
        }
    ).to_csv(tmp_path / "pred.csv", index=False)
    return [
        "describe",
        "--image-embeddings",
        str(tmp_path / "img.npy"),
        "--sentence-embeddings",
        str(tmp_path / "sen.npy"),
        "--sentences",
        str(tmp_path / "sents.txt"),
        "--predictions",
        str(tmp_path / "pred.csv"),
        "--clusters",
        "2",
        "-k",
        "1",
        "--tau",
        "0.25",
    ]  # bare arrays: τ given


def test_labels_by_class_name(tmp_path):
    args = named_predictions(tmp_path, ["car"] * 18 + ["person"] * 6)
    r = CliRunner().invoke(cli, ["-q", *args, "--json", "--out", str(tmp_path / "o")], obj={})
    assert r.exit_code == 0, r.output
    summary = json.loads(r.stdout)  # stderr says the bare arrays carry no row ids
    assert summary["n_images"] == 24 and summary["hard_groups"] and summary["out"] == str(tmp_path / "o")
    omega = pd.read_parquet(tmp_path / "o" / "assignments.parquet")["performance"]
    assert omega.sum() == 18  # 'car' rows are predicted car (named labels matched to prob_car); 'person' rows are not


def test_a_bad_label_fails_before_any_embedding(tmp_path):
    (tmp_path / "imgs").mkdir()
    for i in range(24):
        Image.fromarray(np.full((8, 8, 3), i * 10, np.uint8)).save(tmp_path / "imgs" / f"i{i}.png")
    named_predictions(tmp_path, ["car"] * 23 + ["bus"])
    t0 = time.perf_counter()
    r = CliRunner().invoke(
        cli,
        [
            "-q",
            "--cache-dir",
            str(tmp_path / "cache"),
            "describe",
            str(tmp_path / "imgs"),
            "--predictions",
            str(tmp_path / "pred.csv"),
            "--encoder",
            "open_clip:ViT-B-32@random",
        ],
        obj={},
    )
    assert r.exit_code == 1 and "label" in r.output and "bus" in r.output, r.output
    assert "Traceback" not in r.output
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").rglob("*.npz"))  # nothing embedded
    assert time.perf_counter() - t0 < 30  # no encoder was even loaded


def test_a_bad_relevance_cell_fails_before_any_embedding(tmp_path):
    """A ninth user's Γ with one bad cell ('maybe') was reported after 1 min 55 s of embedding, against the README's
    'before any embedding starts'."""
    (tmp_path / "imgs").mkdir()
    for i in range(24):
        Image.fromarray(np.full((8, 8, 3), i * 10, np.uint8)).save(tmp_path / "imgs" / f"i{i}.png")
    named_predictions(tmp_path, ["car"] * 24)
    sentences = (tmp_path / "sents.txt").read_text().split("\n")[:2]
    rows = [{"image": f"i{i}.png", "sentence": s, "relevant": "1"} for i in range(24) for s in sentences]
    rows[5]["relevant"] = "maybe"
    pd.DataFrame(rows).to_csv(tmp_path / "rel.csv", index=False)
    base = ["-q", "--cache-dir", str(tmp_path / "cache"), "describe", str(tmp_path / "imgs")]
    opts = ["--predictions", str(tmp_path / "pred.csv"), "--sentences", str(tmp_path / "sents.txt")]
    enc = ["--encoder", "open_clip:ViT-B-32@random", "--relevance", str(tmp_path / "rel.csv")]
    r = CliRunner().invoke(cli, [*base, *opts, *enc], obj={})
    assert r.exit_code == 1 and "maybe" in r.output and "relevant" in r.output, r.output
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").rglob("*.npz"))  # nothing embedded
    n_sentences = len([t for t in (tmp_path / "sents.txt").read_text().splitlines() if t.strip()])
    np.save(tmp_path / "rel.npy", np.full((24, n_sentences), 0.5))  # a tenth user's .npy: found after 114 s
    enc[-1] = str(tmp_path / "rel.npy")
    r = CliRunner().invoke(cli, [*base, *opts, *enc], obj={})
    assert r.exit_code == 1 and "must hold booleans or 0/1" in r.output, r.output
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").rglob("*.npz"))


def test_offline_default_encoder_fails_at_once_with_the_fix(monkeypatch, tmp_path):
    from lbee.encoders import EncoderLoadError, create_encoder

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    with pytest.raises(EncoderLoadError) as info:
        create_encoder("open_clip", device="cpu")
    msg = str(info.value)
    assert msg.count("not in the local cache") == 1
    assert "--encoder spotcheck" in msg and "@random" in msg and "/path/to/" in msg
    assert "--image-embeddings FILE --sentence-embeddings FILE" in msg  # the README's offline route (trial 15)
    assert "docs/howto/no-clip.md" in msg  # the how-to of a run with no encoder at all (trial 30)
    assert (Path(__file__).parents[1] / "docs" / "howto" / "no-clip.md").is_file()
    with pytest.raises(EncoderLoadError, match="Unknown pretrained tag 'nope'"):
        create_encoder("open_clip:ViT-B-32@nope", device="cpu")


def test_random_weights_are_seeded(random_clip):
    from lbee.encoders import create_encoder

    again = create_encoder("open_clip:ViT-B-32@random:0", device="cpu")
    other = create_encoder("open_clip:ViT-B-32@random:1", device="cpu")
    assert again.identity() == random_clip.identity()  # same seed, same weights: the cache hits on rerun
    assert other.identity()["weights"] != random_clip.identity()["weights"]
    assert random_clip.identity()["weights"].startswith("random:seed=0:")
    with pytest.raises(ValueError, match="integer seed"):
        create_encoder("open_clip:ViT-B-32@random:x", device="cpu")


def test_terminal_output_fits_and_keeps_whole_sentences(tmp_path, monkeypatch):
    X, S, phi, _ = planted_world(noise=0.01)
    long = ["a road seen at night under orange sodium street lights with heavy rain on the lens"] + [
        f"sentence number {i} that is rather long and must wrap instead of being cut" for i in range(1, 8)
    ]
    # the model wrong on the hard half: groups that fail are read out (every describer's lead sentence, wrapped)
    args = named_predictions(tmp_path, ["car" if p > 0.5 else "person" for p in phi])
    (tmp_path / "sents.txt").write_text("\n".join(long) + "\n")
    monkeypatch.setenv("COLUMNS", "80")
    r = CliRunner().invoke(cli, ["-q", *args], obj={})
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert max(len(line) for line in lines) <= 80
    joined = " ".join(line.strip() for line in lines)
    shown = [t for t in long if " ".join(t.split()[:4]) in joined]  # each sentence begun is printed whole, wrapped
    assert "…" not in r.output and shown and all(t in joined for t in shown)
    assert "Nothing was saved (give --out FOLDER" in r.output


def test_no_traceback_for_bad_input_and_debug_shows_it(tmp_path):
    (tmp_path / "e.json").write_text(json.dumps({"methods": [], "images": [], "sentences": []}))
    (tmp_path / "rel.npy").write_bytes(b"")
    r = CliRunner().invoke(
        cli, ["evaluate", str(tmp_path / "e.json"), "--relevance", str(tmp_path / "rel.npy")], obj={}
    )
    assert r.exit_code == 1 and "methods" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(
        cli, ["--debug", "evaluate", str(tmp_path / "e.json"), "--relevance", str(tmp_path / "rel.npy")], obj={}
    )
    assert r.exit_code == 1 and isinstance(r.exception, ValueError)  # the traceback is let through


def test_report_check_and_published_schema(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    r = CliRunner().invoke(cli, ["report", "--schema"], obj={})
    assert r.exit_code == 0
    schema = json.loads(r.output)
    published = json.loads((ROOT / "docs" / "lbee-report.schema.json").read_text())
    assert schema == published  # the file editors use is the one the code builds
    good = {
        "output": "out",
        "defaults": {"k": 2, "methods": ["tops"]},
        "datasets": [{"name": "w", "spotcheck": {"seed": 0}, "slicers": ["ward", {"domino": {}}]}],
    }
    jsonschema.validate(good, schema)
    for bad in (
        {"datasets": [{"name": "w", "spotcheck": 0, "methds": ["tops"]}]},
        {"datasets": [{"name": "w", "spotcheck": 0, "ward": "fast"}]},
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)
    (tmp_path / "c.yaml").write_text(
        "datasets:\n  - name: a\n    spotcheck: {seed: 0}\n    k: 0\n"
        "  - name: b\n    images: nowhere\n    predictions: p.csv\n"
    )
    r = CliRunner().invoke(cli, ["report", "--check", str(tmp_path / "c.yaml")], obj={})
    assert "Usage:" not in r.output  # the command line was right; a fifth user read the YAML's problems as misuse
    assert (
        r.exit_code == 2
        and "3 problem(s)" in r.output
        and "line 4" in r.output
        and "nowhere" in r.output
        and "p.csv" in r.output
    )  # every problem of entry b is listed (issue 23)


def test_review_findings_digit_classes_tau_range_json_and_check(tmp_path):
    """Found by a hostile-input sweep: each ends in the right number or a clear error."""
    X, S, phi, sentences = planted_world(noise=0.01)
    np.save(tmp_path / "img.npy", X)
    np.save(tmp_path / "sen.npy", S)
    (tmp_path / "s.txt").write_text("\n".join(sentences) + "\n")
    base = [
        "describe",
        "--image-embeddings",
        str(tmp_path / "img.npy"),
        "--sentence-embeddings",
        str(tmp_path / "sen.npy"),
        "--sentences",
        str(tmp_path / "s.txt"),
        "--clusters",
        "2",
        "-k",
        "1",
    ]
    # classes named "0" and "1", columns in the other order: a label is its class's name, not a column position
    right = np.where(phi > 0.5, 0.9, 0.2)  # P(class "1")
    for order in (("prob_1", "prob_0"), ("prob_0", "prob_1")):
        cols = {"prob_1": right, "prob_0": 1 - right}
        pd.DataFrame(
            {"image": [f"i{i}" for i in range(24)], **{c: cols[c] for c in order}, "label": np.ones(24, int)}
        ).to_csv(tmp_path / "p.csv", index=False)
        out = tmp_path / ("o" + order[0])
        r = CliRunner().invoke(cli, ["-q", *base, "--predictions", str(tmp_path / "p.csv"), "--out", str(out)], obj={})
        assert r.exit_code == 0, r.output
        assert pd.read_parquet(out / "assignments.parquet")["performance"].sum() == 12  # the confident half
    # logits are refused with a hint that can be acted on, and --logits softmaxes them
    pd.DataFrame({"image": [f"i{i}" for i in range(24)], "prob_a": 3 * phi, "prob_b": -3 * phi}).to_csv(
        tmp_path / "logits.csv", index=False
    )
    r = CliRunner().invoke(cli, [*base, "--predictions", str(tmp_path / "logits.csv")], obj={})
    assert r.exit_code == 1 and "--logits" in r.output
    r = CliRunner().invoke(cli, ["-q", *base, "--predictions", str(tmp_path / "logits.csv"), "--logits"], obj={})
    assert r.exit_code == 0, r.output
    # τ is a cosine similarity
    r = CliRunner().invoke(cli, [*base, "--predictions", str(tmp_path / "p.csv"), "--tau", "5"], obj={})
    assert r.exit_code == 2 and "--tau" in r.output
    # metrics.json is standard JSON even when a metric is undefined, and the user is told why
    r = CliRunner().invoke(
        cli, ["-q", *base, "--predictions", str(tmp_path / "p.csv"), "--out", str(tmp_path / "e")], obj={}
    )
    np.save(tmp_path / "rel0.npy", np.zeros((24, 8), bool))
    r = CliRunner().invoke(cli, ["evaluate", str(tmp_path / "e"), "--relevance", str(tmp_path / "rel0.npy")], obj={})
    assert r.exit_code == 0 and "no failure sentence" in r.output
    rows = json.loads((tmp_path / "e" / "metrics.json").read_text())  # strict JSON: no NaN token
    assert all(row["TPR"] is None for row in rows)
    # a tampered file with one image in two hard clusters is refused
    from lbee.core.explanation import validate_explanation_payload

    payload = json.loads((tmp_path / "e" / "explanation.json").read_text())
    hard = payload["clustering"]["hard"]
    hard[1]["indices"][0] = hard[0]["indices"][0]
    with pytest.raises(ValueError, match="more than one cluster"):
        validate_explanation_payload(payload, source="tampered")
    payload["format"] = 99
    with pytest.raises(ValueError, match="format"):
        validate_explanation_payload(payload, source="tampered")
    # --check sees an output that cannot be created
    (tmp_path / "afile").write_text("x")
    (tmp_path / "c.yaml").write_text("output: afile/x\ndatasets:\n  - name: a\n    spotcheck: {seed: 0}\n")
    r = CliRunner().invoke(cli, ["report", "--check", str(tmp_path / "c.yaml")], obj={})
    assert r.exit_code == 2 and "output" in r.output and "not a writable folder" in r.output


def test_report_check_reads_npy_headers(tmp_path):
    """--check catches embeddings of the wrong shape or dimension without loading or running anything."""
    X, S, phi, sentences = planted_world(noise=0.01)
    np.save(tmp_path / "img.npy", X)
    np.save(tmp_path / "sen_short.npy", S[:5])
    np.save(tmp_path / "sen_wide.npy", np.hstack([S, S]))
    (tmp_path / "s.txt").write_text("\n".join(sentences) + "\n")
    pd.DataFrame({"image": [f"i{i}" for i in range(len(X))], "confidence": phi}).to_csv(tmp_path / "p.csv", index=False)
    entry = (
        "  - name: {name}\n    image_embeddings: {root}/img.npy\n    sentence_embeddings: {root}/{sen}\n"
        "    sentences: {root}/s.txt\n    predictions: {root}/p.csv\n"
    )
    (tmp_path / "c.yaml").write_text(
        "datasets:\n"
        + "".join(
            entry.format(name=n, root=tmp_path, sen=f)
            for n, f in (("short", "sen_short.npy"), ("wide", "sen_wide.npy"))
        )
    )
    r = CliRunner().invoke(cli, ["report", "--check", str(tmp_path / "c.yaml")], obj={})
    assert r.exit_code == 2 and "2 problem(s)" in r.output, r.output
    assert "has shape (5, 8); expected (8, d), one row per sentence" in r.output
    assert "image_embeddings has dimension 8 but sentence_embeddings 16" in r.output


def test_a_failed_run_leaves_no_empty_out_folder(tmp_path):
    """A new user's failed `lbee describe --out new/run` left an empty folder; the one they had made stays."""
    (tmp_path / "imgs").mkdir()
    (tmp_path / "p.csv").write_text("path,prob_a,prob_b\nx.png,0.5,0.5\n")
    args = ["describe", str(tmp_path / "imgs"), "--predictions", str(tmp_path / "p.csv"), "--encoder", "spotcheck"]
    r = CliRunner().invoke(cli, [*args, "--out", str(tmp_path / "new" / "run")], obj={})
    assert r.exit_code != 0 and "No image found" in r.output
    assert not (tmp_path / "new").exists()
    (tmp_path / "mine").mkdir()
    r = CliRunner().invoke(cli, [*args, "--out", str(tmp_path / "mine")], obj={})
    assert r.exit_code != 0 and (tmp_path / "mine").is_dir() and not any((tmp_path / "mine").iterdir())


def test_groups_are_numbered_in_the_order_they_are_shown(tmp_path):
    """A new user's groups printed as 2, 0, 5, 7, 6, 14, 1, ...: without held-out images (under 500) the run
    orders its groups by harm and numbers them so, in the terminal and in explanation.json alike."""
    import json

    rng = np.random.default_rng(0)
    n, d = 300, 16
    x = rng.normal(size=(n, d)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    s = rng.normal(size=(12, d)).astype(np.float32)
    s /= np.linalg.norm(s, axis=1, keepdims=True)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "s.npy", s)
    (tmp_path / "s.txt").write_text("".join(f"An image of kind {i}\n" for i in range(12)))
    wrong = rng.random(n) < 0.15
    pa = np.where(wrong, 0.2, 0.9)
    pd.DataFrame({"image": [f"i{i}" for i in range(n)], "label": 0, "prob_a": pa, "prob_b": 1 - pa}).to_csv(
        tmp_path / "p.csv", index=False
    )
    args = ["-q", "describe", "--image-embeddings", str(tmp_path / "x.npy"), "--sentence-embeddings"]
    args += [str(tmp_path / "s.npy"), "--sentences", str(tmp_path / "s.txt"), "--predictions", str(tmp_path / "p.csv")]
    r = CliRunner().invoke(cli, [*args, "--tau", "0.2", "--clusters", "6", "--out", str(tmp_path / "o")], obj={})
    assert r.exit_code == 0, r.output
    shown = [
        int(line.split()[2].rstrip(":"))
        for line in r.output.splitlines()
        if line.startswith("Hard group ") and "too few to tell" not in line  # not a folded group's line
    ]
    payload = json.loads((tmp_path / "o" / "explanation.json").read_text())
    sizes = [len(c["indices"]) for c in payload["clustering"]["hard"]]
    assert sizes == sorted(sizes, reverse=True)  # every image here fails: harm is size
    # the blocks come 0, 1, 2, ...; groups too small to read out are folded into one line after them
    big = [i for i, n in enumerate(sizes) if n >= 5]
    assert shown == big == list(range(len(big))) and len(sizes) == 6
    if len(big) < 6:
        assert "fewer than 5 images each" in " ".join(r.output.split()) or "fewer than 5 images" in r.output


def test_a_warning_about_the_predictions_is_said_once(tmp_path):
    """A fourth user's `truth` column (not `label`) was warned about three times, by the preflight, the run and
    the confirmation plan, each reading the table."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 8)).astype(np.float32)
    s = rng.normal(size=(5, 8)).astype(np.float32)
    np.save(tmp_path / "x.npy", x / np.linalg.norm(x, axis=1, keepdims=True))
    np.save(tmp_path / "s.npy", s / np.linalg.norm(s, axis=1, keepdims=True))
    (tmp_path / "s.txt").write_text("".join(f"An image of kind {i}\n" for i in range(5)))
    pa = rng.uniform(0.05, 0.95, 40)
    table = pd.DataFrame({"image": [f"i{i}" for i in range(40)], "truth": "a", "prob_a": pa, "prob_b": 1 - pa})
    table.to_csv(tmp_path / "p.csv", index=False)
    args = ["-q", "describe", "--image-embeddings", str(tmp_path / "x.npy"), "--sentence-embeddings"]
    args += [str(tmp_path / "s.npy"), "--sentences", str(tmp_path / "s.txt"), "--predictions", str(tmp_path / "p.csv")]
    r = CliRunner().invoke(cli, [*args, "--tau", "0.2"], obj={})
    assert r.exit_code != 0 and "their 'truth' looks like one" in r.output, r.output  # refused (trials 32-35)
    assert "did you mean 'label'?" not in r.output  # the refusal alone, not the reader's warning first (trial 35)
    args += ["--confidence-from", "entropy"]  # the uncertainty split, asked for: run, and warned once
    r = CliRunner().invoke(cli, [*args, "--tau", "0.2"], obj={})
    assert r.exit_code == 0, r.output
    assert r.output.count("did you mean 'label'?") == 1, r.output
    table.rename(columns={"truth": "Label"}).to_csv(tmp_path / "p.csv", index=False)  # a tenth user's capital L
    r = CliRunner().invoke(cli, [*args, "--tau", "0.2", "--out", str(tmp_path / "o2")], obj={})
    assert r.exit_code == 0 and "'Label' (did you mean 'label'?" in r.output, r.output
    table.rename(columns={"truth": "lable"}).to_csv(tmp_path / "p.csv", index=False)  # an eleventh user's typo
    r = CliRunner().invoke(cli, [*args, "--tau", "0.2", "--out", str(tmp_path / "o3")], obj={})
    assert r.exit_code == 0 and "'lable' (did you mean 'label'?" in r.output, r.output
    table.rename(columns={"truth": "label", "prob_a": "proba"}).to_csv(tmp_path / "p.csv", index=False)
    r = CliRunner().invoke(cli, [*args, "--tau", "0.2", "--out", str(tmp_path / "o4")], obj={})
    said = " ".join(r.output.split())
    assert r.exit_code == 1 and "'proba' are not read as class probabilities (did you mean 'prob_a'?" in said, said
    assert "--logits" not in said and "and 15 more" not in said  # the rename, once: not every row it fixes (trial 36)
    assert "without them, predictions table" in said and "has one prob_<class> column ('prob_b')" in said, said
    table.rename(columns={"truth": "label", "prob_a": "prob a"}).to_csv(tmp_path / "p.csv", index=False)
    r = CliRunner().invoke(cli, [*args, "--tau", "0.2", "--out", str(tmp_path / "o5")], obj={})
    said = " ".join(r.output.split())  # a twenty-third user's space was kept: "did you mean 'prob_ a'?"
    assert r.exit_code == 1 and "'prob a' are not read as class probabilities (did you mean 'prob_a'?" in said, said


def test_the_metric_legend_says_compose_s_tpr_and_ji_are_low_by_design():
    """An eleventh user read compose's one exact sentence, scored lowest on TPR / JI, as the worst describer."""
    from lbee.run.text import metric_legend

    assert "low by design" in " ".join(metric_legend(["tops", "compose"]).split())
    assert "compose" not in metric_legend(["tops", "fpdiff"]) and "(TPR:" in metric_legend()


def test_an_option_given_twice_is_said():
    """An eleventh user's second --predictions replaced the first without a word (click keeps the last)."""
    r = CliRunner().invoke(cli, ["describe", "missing", "--predictions", "a.csv", "--predictions=b.csv"], obj={})
    assert "--predictions is given twice ('a.csv', then 'b.csv'): the last is used" in r.output, r.output
    r = CliRunner().invoke(cli, ["describe", "missing", "-k", "3", "--clusters", "4"], obj={})
    assert "given twice" not in r.output


def test_a_transposed_gamma_and_a_misspelled_gamma_column_are_named(tmp_path):
    """A twelfth user's Γ.T got only its shape, and a sentence column missing a comma did not name the one there."""
    from lbee.io.relevance import load_relevance

    ids, sentences = [f"i{k}.png" for k in range(5)], ["a grainy, noisy image", "a star"]
    np.save(tmp_path / "g.npy", np.zeros((2, 5), bool))
    with pytest.raises(ValueError, match=r"has shape \(2, 5\); expected \(5, 2\).*is it transposed"):
        load_relevance(tmp_path / "g.npy", ids, sentences)
    pd.DataFrame({"image": ids, "a grainy noisy image": 0, "a star": 1}).to_csv(tmp_path / "g.csv", index=False)
    with pytest.raises(ValueError, match="did you mean its column 'a grainy noisy image'"):
        load_relevance(tmp_path / "g.csv", ids, sentences)


def test_a_generated_set_names_a_grammar_beside_it_relatively(tmp_path):
    """A twelfth user copied a set and its grammar into a service's root: the '# grammar:' line still named the
    old absolute place, and the job failed in the worker."""
    import shutil

    from lbee.grammar import load_grammar

    src = load_grammar("spotcheck").source
    shutil.copy(src, tmp_path / "my.grammar.yaml")
    out = tmp_path / "sets" / "my.txt"
    out.parent.mkdir()
    shutil.move(str(tmp_path / "my.grammar.yaml"), out.parent / "my.grammar.yaml")
    r = CliRunner().invoke(
        cli, ["sentences", "generate", str(out.parent / "my.grammar.yaml"), "--max-conditions", "1", "--out", str(out)]
    )
    assert r.exit_code == 0, r.output
    line = (out.parent / "my.conditions.tsv").read_text().splitlines()[0]
    assert line == "# grammar: my.grammar.yaml", line
    moved = tmp_path / "moved"
    shutil.copytree(out.parent, moved)  # the set and its grammar move together
    from lbee.io.sentences import load_sentence_set

    assert len(load_sentence_set(str(moved / "my.txt"))) > 0


def test_report_check_reads_a_single_dataset_entry_as_lbee_submit_takes_it(tmp_path):
    """docs/service.md says to check a job's entry with `lbee report --check`; an eighteenth user's entry was refused
    ("unknown key 'name' in the top level"). A file holding one dataset entry is a config of that one entry."""
    from click.testing import CliRunner

    from lbee.cli import cli

    (tmp_path / "entry.yaml").write_text("name: tiles\nimages: nowhere\nsentences: spotcheck\nk: 0\n")
    r = CliRunner().invoke(cli, ["report", "--check", str(tmp_path / "entry.yaml")], obj={})
    assert r.exit_code == 2 and "3 problem(s)" in r.output, r.output  # each problem with its line in the entry
    assert "line 2: images path 'nowhere' does not exist" in r.output and "line 4: datasets[0] key 'k'" in r.output
    (tmp_path / "ok.yaml").write_text("name: demo\nspotcheck: {seed: 0}\n")
    r = CliRunner().invoke(cli, ["report", "--check", str(tmp_path / "ok.yaml")], obj={})
    assert r.exit_code == 0 and "1 dataset(s), no problem found" in r.output, r.output
    (tmp_path / "mixed.yaml").write_text("name: demo\ndatasets: []\n")  # a config's key beside it: a config
    r = CliRunner().invoke(cli, ["report", "--check", str(tmp_path / "mixed.yaml")], obj={})
    assert r.exit_code != 0 and "unknown key 'name'" in r.output


def test_a_semicolon_separated_table_gets_a_hint(tmp_path):
    """An eighteenth user's spreadsheet CSV (';' between fields, decimal commas) read "every row has 4 field(s) more
    than the header's 1", true but with no hint of why."""
    from pathlib import Path

    from lbee.io.table_file import read_pinned

    path = tmp_path / "p.csv"
    path.write_text("image;label;prob_a;prob_b\na.png;a;0,9;0,1\nb.png;b;0,2;0,8\n")
    with pytest.raises(ValueError, match="separated by ';'") as err:
        read_pinned(str(path), Path(path), ".csv")
    assert "more than the header's 1" in str(err.value)
    path.write_text("image,label\na.png,a,extra\n")  # another cause: no word of ';'
    with pytest.raises(ValueError) as err:
        read_pinned(str(path), Path(path), ".csv")
    assert "';'" not in str(err.value)
    # trial 26: a sentence file given as the predictions read pandas' "Error tokenizing data. C error: ..."
    path.write_text("# a grammar's sentences\na photo\na photo, at night, in the rain\n")
    with pytest.raises(ValueError) as err:
        read_pinned(str(path), Path(path), ".csv")
    said = str(err.value)
    assert "line 3 has 3 comma-separated fields where its header has 1" in said and "tokenizing" not in said


BLOCK_NUMPY = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "numpy" or name.startswith("numpy."):
            raise ModuleNotFoundError("No module named 'numpy'", name="numpy")
sys.meta_path.insert(0, Block())
"""


def test_a_core_dependency_missing_inside_a_command_is_one_line(tmp_path):
    """A twentieth user's wheel without pyyaml: `lbee sentences generate` said only "No module named 'yaml'"."""
    import subprocess
    import sys

    run = BLOCK_NUMPY.replace('"numpy"', '"yaml"').replace('"numpy."', '"yaml."') + (
        f"sys.argv = ['lbee', 'sentences', 'generate', 'spotcheck', '--out', {str(tmp_path / 's.txt')!r}]\n"
        "from lbee.cli import cli\ncli()\n"
    )
    r = subprocess.run([sys.executable, "-c", run], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "lbee needs 'yaml'" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_every_missing_core_dependency_is_named_at_once_before_the_command_runs(tmp_path):
    """A twenty-first user's wheel installed with a few packages: 'No module named threadpoolctl', then scipy's
    error only at clustering, then pyarrow's after the whole analysis. A command names them all before it starts;
    --help still works."""
    import subprocess
    import sys

    block = BLOCK_NUMPY.replace(
        'if name == "numpy" or name.startswith("numpy."):',
        'if name.split(".")[0] in ("threadpoolctl", "scipy"):',
    ).replace('raise ModuleNotFoundError("No module named \'numpy\'", name="numpy")', "raise ModuleNotFoundError(name)")
    assert block != BLOCK_NUMPY
    for args, code in ((["sentences", "list"], 1), (["describe", "--help"], 0)):
        run = block + f"sys.argv = ['lbee', *{args!r}]\nfrom lbee.cli import cli\ncli()\n"
        r = subprocess.run([sys.executable, "-c", run], capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert r.returncode == code, (args, r.stderr)
        if code:
            assert "lbee needs 'scipy', 'threadpoolctl'" in r.stderr and "Traceback" not in r.stderr, r.stderr
            assert r.stderr.count("\n") == 1


@pytest.mark.parametrize("as_command", [True, False])
def test_a_missing_core_dependency_is_one_line(as_command):
    """An eighteenth user's wheel installed with --no-deps: `lbee --version` died in a ModuleNotFoundError traceback.
    The command says it in one line; the library raises an ImportError that says what to do."""
    import subprocess
    import sys

    run = BLOCK_NUMPY + (
        "sys.argv = ['lbee', '--version']\nfrom lbee.cli import cli\n" if as_command else "import lbee\n"
    )
    r = subprocess.run([sys.executable, "-c", run], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    assert "lbee needs 'numpy'" in r.stderr and "without its dependencies" in r.stderr
    if as_command:
        assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1
    else:
        assert "ImportError: lbee needs 'numpy'" in r.stderr


def test_probabilities_rounded_to_two_decimals_are_read_and_renormalised():
    """A nineteenth user's table written with .round(2): rows summing to 0.99 were refused with a hint to apply a
    softmax (--logits), which would flatten probabilities. Values of 2 or 3 decimals may sum to 1 within C · ½ ·
    10⁻ᵏ; a row further off is refused, with a hint that fits a probability table."""
    import pandas as pd

    from lbee.io.probabilities import check_probabilities

    table = pd.DataFrame({"prob_a": [0.33, 0.5], "prob_b": [0.33, 0.25], "prob_c": [0.33, 0.25]})
    with pytest.warns(UserWarning, match="1 row\\(s\\) of prob_<class> sum to 1 only within rounding"):
        probs = check_probabilities(table, ["prob_a", "prob_b", "prob_c"])
    assert np.allclose(probs.sum(axis=1), 1) and np.allclose(probs[0], 1 / 3)
    table.loc[1, "prob_a"] = 0.4  # sums to 0.9: no rounding of 2 decimals explains it
    with pytest.raises(ValueError, match="rows summing to 0.9.*If they were rounded") as err:
        check_probabilities(table, ["prob_a", "prob_b", "prob_c"])
    assert "--logits" in str(err.value)
    table.loc[1, "prob_a"] = 3.0  # logits: the softmax hint alone
    with pytest.raises(ValueError, match="outside \\[0, 1\\].*If they are logits"):
        check_probabilities(table, ["prob_a", "prob_b", "prob_c"])
    # percentages (trial 32 was told to use --logits, which would softmax them into nonsense): divide by 100
    pct = pd.DataFrame({"prob_a": [33.3, 50.0], "prob_b": [33.3, 25.0], "prob_c": [33.4, 25.0]})
    with pytest.raises(
        ValueError, match="look like percentages \\(every row sums to 100\\): divide them by 100"
    ) as err:
        check_probabilities(pct, ["prob_a", "prob_b", "prob_c"])
    assert "--logits" not in str(err.value)


def test_a_missing_core_dependency_is_named_as_pip_installs_it():
    """A twenty-second user read 'sklearn' and 'PIL': import names, where pip installs scikit-learn and pillow.
    Every core module's pip name is a dependency pyproject.toml declares."""
    import re
    from pathlib import Path

    import tomllib

    from lbee._dependencies import CORE_MODULES, PIP_NAMES, missing_message

    declared = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {re.split(r"[<>=!~\[ ]", d, maxsplit=1)[0].lower().replace("_", "-") for d in declared}
    for module in CORE_MODULES:
        if module == "huggingface_hub":  # open_clip_torch's own dependency, installed with it
            continue
        pip = PIP_NAMES.get(module, module).lower().replace("_", "-")
        assert pip in names, (module, pip)
    assert "'sklearn' (pip: scikit-learn)" in missing_message(["sklearn"])


def test_report_check_names_a_missing_html_extra(tmp_path, monkeypatch):
    """A twenty-second user's `lbee report --check` passed without the html extra, which the report needs."""
    import lbee.extras

    (tmp_path / "c.yaml").write_text("datasets:\n  - name: a\n    spotcheck: {seed: 0}\n")
    real = lbee.extras.missing_modules
    monkeypatch.setattr(lbee.extras, "missing_modules", lambda e: ["vl_convert"] if e == "html" else real(e))
    r = CliRunner().invoke(cli, ["report", "--check", str(tmp_path / "c.yaml")], obj={})
    assert r.exit_code == 2 and "1 problem(s)" in r.output and "vl_convert missing" in r.output, r.output


def test_commands_raise_no_deprecation_warning_from_lbee_code(tmp_path):
    """CI's wheel check failed on click 8.2+: every command warned "'protected_args' is deprecated" from lbee's own
    group (it read the subcommand's words there). A command and a nested one run with such warnings as errors."""
    import subprocess
    import sys

    for args in (["sentences", "list"], ["spotcheck", "--help"], ["describe", "--help"]):
        run = f"import sys\nsys.argv = ['lbee', *{args!r}]\nfrom lbee.cli import cli\ncli()\n"
        r = subprocess.run(
            [sys.executable, "-W", "error::DeprecationWarning:lbee.cli._base", "-c", run],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
        )
        assert r.returncode == 0 and "Deprecat" not in r.stderr, (args, r.stderr)


def test_report_check_with_root_reads_an_entry_as_the_service_reads_a_job(tmp_path):
    """Trial 30: `lbee report --check ENTRY.yaml` (as docs/service.md advises before submitting) gave five false
    "does not exist" for an entry kept outside the server's root: its paths were read from the file's folder. With
    --root they are read as `lbee serve --root` reads a job's: relative to the root, and confined to it."""
    from click.testing import CliRunner

    from lbee.cli import cli

    root = tmp_path / "root"
    (root / "meters").mkdir(parents=True)
    (root / "meters" / "sents.txt").write_text("a photo at night\na photo of a meter\n")
    (tmp_path / "secret.txt").write_text("a photo\n")
    entry = tmp_path / "job.yaml"
    entry.write_text("name: meters\nspotcheck: {seed: 0}\nsentences: meters/sents.txt\n")
    r = CliRunner().invoke(cli, ["report", "--check", str(entry)], obj={})
    assert r.exit_code == 2 and "Sentence file 'meters/sents.txt' does not exist" in r.output, r.output
    assert "Add --root DIR, the server's, to read its paths there" in " ".join(r.output.split())
    r = CliRunner().invoke(cli, ["report", "--check", str(entry), "--root", str(root)], obj={})
    assert r.exit_code == 0 and "(under --root" in r.output and "1 dataset(s), no problem found" in r.output, r.output
    entry.write_text(f"name: meters\nspotcheck: {{seed: 0}}\nsentences: {tmp_path / 'secret.txt'}\n")
    r = CliRunner().invoke(cli, ["report", "--check", str(entry), "--root", str(root)], obj={})
    assert r.exit_code == 2 and "1 problem(s)" in r.output and "dataset 'meters', read under --root" in r.output
    assert "Add --root" not in r.output
    r = CliRunner().invoke(cli, ["report", str(entry), "--root", str(root)], obj={})
    assert r.exit_code == 2 and "--root goes with --check" in r.output
