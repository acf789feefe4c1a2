import json
import os

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from conftest import planted_world

from lbee.cli import cli


def run(args, **kw):
    result = CliRunner().invoke(cli, args, obj={}, catch_exceptions=False, **kw)
    return result


@pytest.fixture
def precomputed(tmp_path):
    X, S, phi, sentences = planted_world(noise=0.01)
    np.save(tmp_path / "img.npy", X)
    np.save(tmp_path / "sen.npy", S)
    (tmp_path / "sents.txt").write_text("# planted\n" + "\n".join(sentences) + "\n")
    pd.DataFrame(
        {
            "image": [f"i{i}.png" for i in range(24)],
            "confidence": phi,
            "label": np.ones(24, int),
            "pred": (phi > 0.5).astype(int),
        }
    ).to_csv(tmp_path / "pred.csv", index=False)
    rel = np.zeros((24, 8), bool)
    rel[:, 0] = np.r_[np.ones(6), np.zeros(6), np.ones(6), np.zeros(6)]
    rel[12:18, 2] = True
    rel[18:24, 3] = True
    np.save(tmp_path / "rel.npy", rel)
    return tmp_path


def describe_args(p, *extra):
    return [
        "describe",
        "--image-embeddings",
        str(p / "img.npy"),
        "--sentence-embeddings",
        str(p / "sen.npy"),
        "--sentences",
        str(p / "sents.txt"),
        "--predictions",
        str(p / "pred.csv"),
        "--clusters",
        "2",
        "-k",
        "1",
        *extra,
    ]


def test_the_built_in_sentence_set_taken_by_default_is_named_with_where_a_domains_words_go(precomputed):
    """Trial 32 audited microscopy images in words of weather and seasons without being told."""
    from lbee.io.sentences import load_sentence_set

    p = precomputed
    n_set = len(load_sentence_set("conditions"))
    X = np.load(p / "img.npy")
    np.save(p / "sen_conditions.npy", np.random.default_rng(0).normal(size=(n_set, X.shape[1])))
    args = [
        "describe",
        "--image-embeddings",
        str(p / "img.npy"),
        "--sentence-embeddings",
        str(p / "sen_conditions.npy"),
    ]
    r = run([*args, "--predictions", str(p / "pred.csv"), "--clusters", "2", "-k", "1"])
    assert r.exit_code == 0, r.output
    said = " ".join(r.output.split())
    assert f"Sentences: lbee's built-in 'conditions' set ({n_set} capture conditions" in said, r.output
    assert "Your domain's words go in --sentences" in said
    r = run(describe_args(p))  # sentences given: nothing said of them
    assert r.exit_code == 0 and "built-in" not in r.output, r.output


def test_describe_and_evaluate_precomputed(precomputed):
    p = precomputed
    r = run(describe_args(p, "--out", str(p / "out")))
    assert r.exit_code == 0, r.output
    assert "at night" in r.output and "in fog" in r.output
    payload = json.loads((p / "out" / "explanation.json").read_text())
    assert set(payload["methods"]) == {"tops", "setdiff", "pdiff", "fpdiff", "domino"}
    assert payload["lbee_version"] and payload["encoder"]["encoder"] == "precomputed"
    from lbee.run.pipeline import load_explanations

    fp = load_explanations(p / "out" / "explanation.json")[0]["fpdiff"]
    assert sorted(s for c in fp.hard_clusters for s in c.sentences) == [2, 3]
    table = pd.read_parquet(p / "out" / "assignments.parquet")
    assert list(table.columns) == ["image", "split", "cluster", "confidence", "performance"]
    assert (table["split"] == "hard").sum() == 12 and table["performance"].tolist()[12:] == [0.0] * 12
    report = (p / "out" / "report.md").read_text()
    assert "Hard group 0" in report and "fpdiff" in report
    r = run(["evaluate", str(p / "out"), "--relevance", str(p / "rel.npy"), "--o", "0.2", "--o", "0.5"])
    assert r.exit_code == 0, r.output
    rows = json.loads((p / "out" / "metrics.json").read_text())
    fp_row = next(x for x in rows if x["method"] == "fpdiff" and x["o"] == 0.2)
    # --json with Γ has the metric rows metrics.csv has (trial 28's CI script found none), without Γ none
    said = json.loads(run(describe_args(p, "--relevance", str(p / "rel.npy"), "--json")).stdout)
    assert {m["method"]: m["AHR"] for m in said["metrics"]}["fpdiff"] == fp_row["AHR"]
    assert json.loads(run(describe_args(p, "--json")).stdout)["metrics"] == []
    # ω = 0 on hard images: S* = {at night, in fog}; FPDiff picks exactly those
    assert fp_row["TPR"] == 1.0 and fp_row["JI"] == 1.0 and fp_row["AHR"] == 1.0 and fp_row["ACR"] == 1.0
    long = pd.DataFrame(
        [
            {"image": f"i{i}.png", "sentence": s, "relevant": 1}
            for i in range(24)
            for s in ["road", "at night"]
            if (s == "road" and i % 2) or (s == "at night" and 12 <= i < 18)
        ]
    )
    long.to_csv(p / "rel.csv", index=False)
    r = run(
        ["evaluate", str(p / "out" / "explanation.json"), "--relevance", str(p / "rel.csv"), "--out", str(p / "m.csv")]
    )
    assert r.exit_code == 0, r.output
    assert set(pd.read_csv(p / "m.csv")["method"]) == {"tops", "setdiff", "pdiff", "fpdiff", "domino"}
    # sweep #10: an existing --out file (or the default metrics.json) is never replaced in silence, nor an input ever
    (p / "prec.csv").write_text("precious")
    for target in (["--out", str(p / "prec.csv")], []):
        r = run(["evaluate", str(p / "out"), "--relevance", str(p / "rel.csv"), *target])
        assert r.exit_code == 2 and "already exists" in r.output and "--overwrite" in r.output, r.output
    assert (p / "prec.csv").read_text() == "precious" and fp_row in json.loads((p / "out" / "metrics.json").read_text())
    r = run(["evaluate", str(p / "out"), "--relevance", str(p / "rel.csv"), "--out", str(p / "rel.csv"), "--overwrite"])
    assert r.exit_code == 2 and "is the input file" in r.output, r.output
    r = run(
        ["evaluate", str(p / "out"), "--relevance", str(p / "rel.csv"), "--out", str(p / "prec.csv"), "--overwrite"]
    )
    assert r.exit_code == 0 and set(pd.read_csv(p / "prec.csv")["method"]) >= {"fpdiff"}, r.output


def test_describe_errors(precomputed):
    p = precomputed
    r = CliRunner().invoke(cli, describe_args(p)[:-4] + ["--sentences", "nope"], obj={})
    assert r.exit_code != 0 and "Unknown sentence set 'nope'" in r.output
    np.save(p / "bad.npy", np.ones((24, 5)))
    r = CliRunner().invoke(
        cli,
        [
            "describe",
            "--image-embeddings",
            str(p / "bad.npy"),
            "--sentence-embeddings",
            str(p / "sen.npy"),
            "--sentences",
            str(p / "sents.txt"),
            "--predictions",
            str(p / "pred.csv"),
        ],
        obj={},
    )
    assert r.exit_code == 1 and "image_embeddings has dimension 5 but sentence_embeddings 8" in r.output
    pd.DataFrame({"image": [f"i{i}" for i in range(24)], "confidence": [np.nan] + [1.0] * 23}).to_csv(
        p / "nan.csv", index=False
    )
    r = CliRunner().invoke(cli, describe_args(p)[:-4] + ["--predictions", str(p / "nan.csv")], obj={})
    assert r.exit_code == 1 and "NaN or inf" in r.output
    r = CliRunner().invoke(cli, describe_args(p, "--a", "9"), obj={})  # in range, but no image is hard
    assert r.exit_code == 1 and "smaller --a" in r.output  # the knob named by its flag
    r = CliRunner().invoke(cli, describe_args(p, "--a", "50"), obj={})  # issue 32: a bounded setting
    assert r.exit_code == 2 and "--a" in r.output and "10" in r.output
    r = CliRunner().invoke(cli, ["describe", "--sentences", "nico"], obj={})
    assert r.exit_code == 2 and "--predictions" in r.output
    (p / "empty.txt").write_text("# nothing\n")
    r = CliRunner().invoke(cli, ["sentences", "show", str(p / "empty.txt")], obj={})
    assert r.exit_code == 1 and "no sentence" in r.output


def test_sentences_commands():
    r = run(["sentences", "list"])
    assert r.exit_code == 0 and "imagenet" in r.output and "urban_scenes" in r.output
    # a new user: the grammars were not listed, and "(weather, ..., image" was cut mid-phrase; no paper sections
    assert "street_scenes.grammar" in r.output and "app." not in r.output and "§" not in r.output
    assert "image quality, viewpoint, place, image type)" in r.output
    name = next(ln.split()[0] for ln in r.output.splitlines() if ln.endswith("occlusion)") and "grammar" in ln)
    assert run(["sentences", "show", name]).output.count("\n") > 10
    r = run(["sentences", "show", "nico"])
    assert "A photo of a cactus in the water" in r.output


def test_describe_images_end_to_end_with_open_clip(tmp_path):
    from test_encoders_cache import write_images

    folder = tmp_path / "imgs"
    folder.mkdir()
    write_images(folder, 12)
    (folder / "broken.png").write_bytes(b"not an image")
    pd.DataFrame({"path": [f"img{i}.png" for i in range(12)], "confidence": np.linspace(-1, 1, 12)}).to_csv(
        tmp_path / "pred.csv", index=False
    )
    args = [
        "--cache-dir",
        str(tmp_path / "cache"),
        "-q",
        "describe",
        str(folder),
        "--sentences",
        "conditions",
        "--predictions",
        str(tmp_path / "pred.csv"),
        "--encoder",
        "open_clip:ViT-B-32@random",
        "--clusters",
        "2",
        "--method",
        "tops",
        "--method",
        "fpdiff",
        "--num-workers",
        "0",
        "--out",
        str(tmp_path / "out"),
    ]
    r = CliRunner().invoke(cli, args, obj={})
    assert r.exit_code == 0, r.output
    payload = json.loads((tmp_path / "out" / "explanation.json").read_text())
    assert set(payload["methods"]) == {"tops", "fpdiff"}
    assert payload["encoder"]["model"] == "ViT-B-32" and payload["encoder"]["weights"].startswith("random:")
    assert len(payload["images"]) == 12 and payload["skipped_images"][0]["path"].endswith("broken.png")
    assert "broken.png" in (tmp_path / "out" / "report.md").read_text()
    r = CliRunner().invoke(cli, args[:-6] + ["--strict", "--num-workers", "0"], obj={})
    assert r.exit_code == 1 and "broken.png" in r.output
    # a new user's run, not quiet: random weights said once, by the banner (it was also a warning on stderr, and
    # open_clip's root logger added "No pretrained weights loaded")
    loud = [a for a in args if a != "-q"][:-1] + [str(tmp_path / "loud")]
    r = CliRunner().invoke(cli, loud, obj={})
    assert r.exit_code == 0, r.output
    assert r.output.count("meaningless") == 1 and "No pretrained weights loaded" not in r.output, r.output


def test_manifest_missing_column(tmp_path):
    pd.DataFrame({"file": ["a.png"]}).to_csv(tmp_path / "m.csv", index=False)
    pd.DataFrame({"path": ["a.png"], "confidence": [1.0]}).to_csv(tmp_path / "p.csv", index=False)
    r = CliRunner().invoke(
        cli,
        ["describe", str(tmp_path / "m.csv"), "--predictions", str(tmp_path / "p.csv"), "--encoder", "open_clip"],
        obj={},
    )  # (a bad --encoder is refused even earlier)
    assert r.exit_code == 1 and "lacks the column 'path'" in r.output


def test_describe_runs_a_model_over_a_manifest(tmp_path):
    """--model module:factory with --weights, labels from the manifest, φ = true-class probability."""
    import torch
    from test_confidence_models import Tiny
    from test_encoders_cache import write_images

    paths = write_images(tmp_path, 16)
    torch.manual_seed(0)
    torch.save(Tiny().state_dict(), tmp_path / "w.pt")
    pd.DataFrame({"path": [p.split("/")[-1] for p in paths], "label": np.arange(16) % 4}).to_parquet(
        tmp_path / "manifest.parquet"
    )
    r = CliRunner().invoke(
        cli,
        [
            "--cache-dir",
            str(tmp_path / "c"),
            "-q",
            "describe",
            str(tmp_path / "manifest.parquet"),
            "--model",
            "test_confidence_models:tiny_factory",
            "--weights",
            str(tmp_path / "w.pt"),
            "--confidence-from",
            "true_class",
            "--encoder",
            "spotcheck",
            "--sentences",
            "spotcheck",
            "--clusters",
            "2",
            "--num-workers",
            "0",
            "--out",
            str(tmp_path / "out"),
        ],
        obj={},
    )
    assert r.exit_code == 0, r.output
    table = pd.read_parquet(tmp_path / "out" / "assignments.parquet")
    assert len(table) == 16 and set(table["performance"]) <= {0.0, 1.0}
    payload = json.loads((tmp_path / "out" / "explanation.json").read_text())
    assert payload["encoder"]["encoder"] == "spotcheck"
    assert payload["params"]["tau"] == pytest.approx(
        __import__("lbee.encoders", fromlist=["x"]).create_encoder("spotcheck").default_tau
    )


def test_the_vqa_package_is_ours_and_a_shadowing_one_is_refused(tmp_path, monkeypatch):
    """`vqa` is a top-level name: the imported one must sit beside lbee, and a foreign one gives a clear error."""
    import sys
    import types
    from pathlib import Path

    import lbee
    import vqa

    assert vqa.__lbee__ is True
    assert Path(vqa.__file__).resolve().parent.parent == Path(lbee.__file__).resolve().parent.parent
    fake = types.ModuleType("vqa")
    fake.__file__ = "/elsewhere/vqa/__init__.py"
    monkeypatch.setitem(sys.modules, "vqa", fake)
    (tmp_path / "a.csv").write_text("image,sentence,relevant\n")
    r = CliRunner().invoke(
        cli, ["vqa", "agreement", "--pseudo", str(tmp_path / "a.csv"), "--truth", str(tmp_path / "a.csv")], obj={}
    )
    assert r.exit_code == 1 and "is not lbee's" in r.output and "/elsewhere/vqa" in r.output, r.output


def test_an_explanation_whose_images_were_reordered_is_refused_by_evaluate(precomputed):
    """Sweep #21: reversed `images` in explanation.json scored differently with a .npy and a long-table Γ."""
    p = precomputed
    assert run(describe_args(p, "--out", str(p / "out"))).exit_code == 0
    path = p / "out" / "explanation.json"
    payload = json.loads(path.read_text())
    payload["images"] = payload["images"][::-1]
    path.write_text(json.dumps(payload))
    r = run(["evaluate", str(p / "out"), "--relevance", str(p / "rel.npy")])
    assert r.exit_code == 1 and "the file was edited" in r.output, r.output  # its rows' digest
    del payload["rows_sha256"]  # a format-3 file always has it: deleting it is an edit too (third sweep F1)
    path.write_text(json.dumps(payload))
    r = run(["evaluate", str(p / "out"), "--relevance", str(p / "rel.npy")])
    assert r.exit_code == 1 and "has none: the file was edited" in r.output, r.output
    payload["format"] = 2  # a file written before the digest: the run's assignments.parquet tells
    del payload["content_sha256"]
    path.write_text(json.dumps(payload))
    r = run(["evaluate", str(p / "out"), "--relevance", str(p / "rel.npy")])
    assert r.exit_code == 1 and "differ from the run's assignments.parquet at row 1" in r.output, r.output


def test_an_explanation_whose_sentences_were_edited_is_refused(precomputed):
    """Second sweep, #21's other half: reversed `sentences` in explanation.json gave two results for one Γ."""
    p = precomputed
    assert run(describe_args(p, "--out", str(p / "out"))).exit_code == 0
    path = p / "out" / "explanation.json"
    payload = json.loads(path.read_text())
    payload["sentences"] = payload["sentences"][::-1]
    path.write_text(json.dumps(payload))
    r = run(["evaluate", str(p / "out"), "--relevance", str(p / "rel.npy")])
    assert r.exit_code == 1 and "the file was edited" in r.output, r.output
    del payload["rows_sha256"], payload["content_sha256"]
    payload["format"] = 2  # an older file: read, but never in silence (third sweep F1)
    path.write_text(json.dumps(payload))
    r = run(["evaluate", str(p / "out"), "--relevance", str(p / "rel.npy")])
    said = " ".join(r.output.split())
    assert r.exit_code == 0 and "its 'sentences' cannot be checked against edits" in said, r.output


def test_overwrite_never_deletes_an_input_that_a_run_folder_holds(precomputed):
    """Third sweep L1, L2: `--overwrite` replaced the run's assignments.parquet (read as ω), or an input named
    like a run file."""
    p = precomputed
    assert run(describe_args(p, "--out", str(p / "out"))).exit_code == 0
    r = run(
        [
            "evaluate",
            str(p / "out"),
            "--relevance",
            str(p / "rel.npy"),
            "--out",
            str(p / "out" / "assignments.parquet"),
            "--overwrite",
        ]
    )
    assert r.exit_code != 0 and "input file" in r.output, r.output
    assert pd.read_parquet(p / "out" / "assignments.parquet").shape[0] == 24  # still the run's ω
    (p / "e2").mkdir()
    (p / "e2" / "metrics.csv").write_text((p / "pred.csv").read_text())
    args = describe_args(p, "--out", str(p / "e2"), "--overwrite")
    args[args.index("--predictions") + 1] = str(p / "e2" / "metrics.csv")
    r = run(args)
    assert r.exit_code != 0 and "this command's input" in r.output, r.output
    assert (p / "e2" / "metrics.csv").read_text() == (p / "pred.csv").read_text()


def test_the_spotlight_export_never_replaces_a_file_in_silence_nor_the_run_it_reads(precomputed):
    """Fifth sweep L-A: `lbee export spotlight RUN --out FILE` replaced any file, the run's explanation.json too."""
    p = precomputed
    assert run(describe_args(p, "--out", str(p / "out"))).exit_code == 0
    before = (p / "out" / "explanation.json").read_bytes()
    r = run(["export", "spotlight", str(p / "out"), "--out", str(p / "out" / "explanation.json"), "--overwrite"])
    assert r.exit_code == 2 and "never replaces its own input" in r.output, r.output
    assert (p / "out" / "explanation.json").read_bytes() == before
    # a run of arrays, without image files: its table needs --without-images (trial 22: a table of no picture)
    assert run(["export", "spotlight", str(p / "out")]).exit_code == 1
    assert not (p / "out" / "spotlight.parquet").exists()
    assert run(["export", "spotlight", str(p / "out"), "--without-images"]).exit_code == 0
    r = run(["export", "spotlight", str(p / "out"), "--without-images"])
    assert r.exit_code == 2 and "--overwrite" in r.output, r.output
    assert run(["export", "spotlight", str(p / "out"), "--without-images", "--overwrite"]).exit_code == 0


def test_spotcheck_generate_never_replaces_an_ec_in_silence(tmp_path):
    """`lbee spotcheck generate --out` replaced an EC folder's files without --overwrite (left open by stop 36)."""
    out = tmp_path / "ec"
    out.mkdir()
    (out / "ec.json").write_text("{}")
    r = run(["spotcheck", "generate", "--seed", "0", "--out", str(out)])  # refused before any world is drawn
    assert r.exit_code == 2 and "ec.json" in r.output and "--overwrite" in r.output, r.output
    assert (out / "ec.json").read_text() == "{}"


def test_submit_out_of_an_entry_with_several_models_asks_whose_results(tmp_path):
    """Fifth sweep F-B: `lbee submit --out` of a two-model entry wrote the first model's files alone, no word."""
    entry = tmp_path / "e.yaml"
    entry.write_text("name: e\nmodels:\n  - {name: m1, predictions: p.csv}\n  - {name: m2, predictions: p.csv}\n")
    r = run(["submit", str(entry), "--url", "http://127.0.0.1:9", "--token", "t", "--out", str(tmp_path / "o")])
    assert r.exit_code == 1 and "has 2 models (m1, m2); pass --model NAME" in r.output, r.output
    # tenth sweep: --model nope was found only after the job had run (a 404 on the fetch)
    args = ["submit", str(entry), "--url", "http://127.0.0.1:9", "--token", "t", "--out", str(tmp_path / "o")]
    r = run([*args, "--model", "nope"])
    assert r.exit_code == 1 and "--model 'nope'" in r.output and "m1, m2" in r.output and "reach" not in r.output
    assert not (tmp_path / "o").exists()


def test_submit_of_an_entry_on_random_weights_says_so_once_the_job_is_accepted(tmp_path, monkeypatch):
    """A new user's `lbee submit` of an `encoder: ...@random` entry printed no word of random weights; the third
    saw the note before refusals (a 422, a 401). It comes once the job is accepted."""
    from lbee.service.client import Client

    entry = tmp_path / "e.yaml"
    entry.write_text("name: e\nimages: imgs\npredictions: p.csv\nencoder: open_clip:ViT-B-32@random\n")
    r = run(["submit", str(entry), "--url", "http://127.0.0.1:9", "--token", "t"])
    assert r.exit_code == 1 and "Cannot reach the lbee server" in r.output and "random weights" not in r.output
    monkeypatch.setattr(Client, "submit", lambda self, e: {"id": "j1", "status": "queued"})
    r = run(["submit", str(entry), "--url", "http://127.0.0.1:9", "--token", "t", "--no-wait"])
    # the same words as the run's own banner (a fifth user met three wordings in describe, embed and submit)
    from lbee.run.identity import RANDOM_WEIGHTS_BANNER

    said = " ".join(RANDOM_WEIGHTS_BANNER.format(encoder="open_clip:ViT-B-32").split())
    assert r.exit_code == 0 and " ".join(r.output.split()).count(said) == 1, r.output
    entry.write_text("name: e\nimages: imgs\npredictions: p.csv\nencoder: open_clip:ViT-B-32\n")
    r = run(["submit", str(entry), "--url", "http://127.0.0.1:9", "--token", "t", "--no-wait"])
    assert r.exit_code == 0 and "random weights" not in r.output and "ran before" not in r.output
    # the same entry sent again after it finished runs again, and says which job it repeats (trial 29)
    monkeypatch.setattr(Client, "submit", lambda self, e: {"id": "j2", "status": "queued", "earlier": "j1"})
    r = run(["submit", str(entry), "--url", "http://127.0.0.1:9", "--token", "t", "--no-wait"])
    assert r.exit_code == 0 and "the same entry ran before as job j1: it runs again" in r.output, r.output


@pytest.mark.parametrize(
    "args",
    [
        ["describe", "imgs", "--predictions", "p.csv", "--clusters", "1_0"],
        ["describe", "imgs", "--predictions", "p.csv", "--clusters=1_0"],
        ["describe", "imgs", "--predictions", "p.csv", "-k", "\u0663"],  # Arabic-Indic 3
        ["describe", "imgs", "--predictions", "p.csv", "-k\u0663"],
        ["describe", "imgs", "--predictions", "p.csv", "--a", "\uff10.\uff15"],  # full-width 0.5
        ["describe", "imgs", "--predictions", "p.csv", "--confirm", "0.1_5"],
        ["bench", "worlds", "--levels", "\uff10.\uff19"],
        ["sweep", "--k-grid", "1_0", "--predictions", "p.csv", "--relevance", "r.npy"],
    ],
)
def test_numbers_on_the_command_line_are_ascii_decimal_as_in_tables_and_yaml(args):
    """Sixth sweep W5: `--clusters 1_0` ran with 10 clusters, `--a ０.５` with 0.5 and `-k ٣` with 3 (Python's int()
    and float()), while tables, YAML and the service refuse those forms. Refused before anything is read."""
    r = run(args)
    said = "ASCII digits" in r.output or "is not an integer;" in r.output or "expected comma-separated AUCs" in r.output
    assert r.exit_code == 2 and said and "Traceback" not in r.output, r.output


def test_an_explanation_whose_results_were_edited_is_refused(precomputed):
    """Sixth sweep W8: rows_sha256 covered the images and sentences only, so a group's sentence copied over
    another's (AHR 0.40 -> 0.33, ACR 1.00 -> 0.90) was scored. Format 4 digests the whole content."""
    p = precomputed
    assert run(describe_args(p, "--out", str(p / "out"))).exit_code == 0
    path = p / "out" / "explanation.json"
    payload = json.loads(path.read_text())
    assert payload["format"] == 4 and payload["content_sha256"].startswith("sha256:")
    method = next(iter(payload["methods"]))
    edited = json.loads(json.dumps(payload))
    body = edited["methods"][method]
    body["hard_scores"][0] = [v + 1.0 for v in body["hard_scores"][0]]  # well-formed, only the numbers changed
    path.write_text(json.dumps(edited))
    r = run(["evaluate", str(p / "out"), "--relevance", str(p / "rel.npy")])
    assert r.exit_code == 1 and "its content differs from what it was written with" in r.output, r.output
    del edited["content_sha256"]
    path.write_text(json.dumps(edited))
    r = run(["evaluate", str(p / "out"), "--relevance", str(p / "rel.npy")])
    assert r.exit_code == 1 and "records the digest of its content (content_sha256)" in r.output, r.output
    path.write_text(json.dumps(payload, indent=2))  # the same content, laid out otherwise: accepted
    assert run(["evaluate", str(p / "out"), "--relevance", str(p / "rel.npy")]).exit_code == 0
    # eighth sweep: a key written twice passed the digest (the last value was read, the first was digested)
    text = json.dumps(payload)
    path.write_text(text[:-1] + ', "format": 4}')
    r = run(["evaluate", str(p / "out"), "--relevance", str(p / "rel.npy"), "--overwrite"])
    assert r.exit_code == 1 and "the key 'format' is written twice in one object" in r.output, r.output
    path.write_text("\ufeff" + text, encoding="utf-8")  # a byte-order mark an editor added: read as written
    assert run(["evaluate", str(p / "out"), "--relevance", str(p / "rel.npy"), "--overwrite"]).exit_code == 0


def test_a_reader_that_leaves_the_pipe_early_is_no_error():
    """A new user's `lbee sentences list | head -2` ended in `Error: BrokenPipeError: [Errno 32] Broken pipe`."""
    import subprocess
    import sys

    proc = subprocess.run(
        f"{sys.executable} -m lbee.cli sentences show imagenet | head -1",
        shell=True,
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert proc.stdout.count("\n") == 1 and proc.stderr == "", proc.stderr


def test_evaluate_writes_no_metrics_beside_a_run_swapped_in_while_it_scored(precomputed, monkeypatch):
    """Sweep 32m F3: `lbee evaluate` wrote metrics.json without the folder's lock and without checking that the run it
    scored was still there; a `describe --overwrite` in between got the old run's metrics beside it."""
    import lbee.run.pipeline as pipeline

    p = precomputed
    assert run(describe_args(p, "--out", str(p / "out"))).exit_code == 0
    real = pipeline.load_explanations

    def then_a_new_run(path):
        loaded = real(path)
        assert run(describe_args(p, "--out", str(p / "out"), "-k", "2", "--overwrite")).exit_code == 0
        return loaded

    monkeypatch.setattr(pipeline, "load_explanations", then_a_new_run)
    r = run(["evaluate", str(p / "out"), "--relevance", str(p / "rel.npy")])
    said = " ".join(r.output.split())
    assert r.exit_code == 1 and "was replaced" in said and "nothing was written" in said, said
    assert not (p / "out" / "metrics.json").exists()
    monkeypatch.setattr(pipeline, "load_explanations", real)
    assert run(["evaluate", str(p / "out"), "--relevance", str(p / "rel.npy")]).exit_code == 0
    assert (p / "out" / "metrics.json").exists()


def test_evaluate_of_an_explanation_copy_never_writes_the_runs_metrics(precomputed):
    """Sweep 32n N2: `lbee evaluate out/old.json` (an earlier run's explanation kept beside the newer run) wrote its
    metrics as out/metrics.json, beside the newer run's explanation.json. A copy gets NAME.metrics.json."""
    import shutil

    p = precomputed
    assert run(describe_args(p, "--out", str(p / "out"))).exit_code == 0
    shutil.copy(p / "out" / "explanation.json", p / "out" / "old.json")
    r = run(["evaluate", str(p / "out" / "old.json"), "--relevance", str(p / "rel.npy")])
    assert r.exit_code == 0, r.output
    assert (p / "out" / "old.metrics.json").is_file() and not (p / "out" / "metrics.json").exists()
