"""Issue 23, "numbers that cannot drift": runs are never replaced or mixed in silence, caps are stated,
outputs are written atomically, configs are read strictly (CLI level; the library cases are rows of
tests/test_hostile_inputs.py, provenance is tests/test_provenance.py)."""

import json
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from conftest import planted_world

from lbee.cli import cli


def run(args, **kw):
    return CliRunner().invoke(cli, args, obj={}, catch_exceptions=False, **kw)


@pytest.fixture
def precomputed(tmp_path):
    X, S, phi, sentences = planted_world(noise=0.01)
    np.save(tmp_path / "img.npy", X)
    np.save(tmp_path / "sen.npy", S)
    (tmp_path / "sents.txt").write_text("\n".join(sentences) + "\n")
    pd.DataFrame(
        {
            "image": [f"i{i}.png" for i in range(24)],
            "confidence": phi,
            "label": np.ones(24, int),
            "pred": (phi > 0.5).astype(int),
        }
    ).to_csv(tmp_path / "pred.csv", index=False)
    rel = np.zeros((24, 8), bool)
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
        "-k",
        "1",
        "--tau",
        "0.25",
        *extra,
    ]


# ---------------------------------------------------------------- case 13: --out onto a run, --overwrite


def test_out_onto_existing_run_is_refused_then_replaced_whole_with_overwrite(precomputed):
    p, out = precomputed, precomputed / "out"
    assert run(describe_args(p, "--clusters", "2", "--out", str(out))).exit_code == 0
    (out / "report.html").write_text("old page")  # an older run's extras: must not survive beside the new run
    (out / "slicer_domino").mkdir()
    (out / "notes.txt").write_text("mine")  # not a run's file: left alone
    before = (out / "explanation.json").read_bytes()
    r = run(describe_args(p, "--clusters", "3", "--out", str(out)))
    assert r.exit_code == 2 and "Usage:" not in r.output  # the command line was right (a sixth user)
    assert "already holds a run" in r.output and "--overwrite" in r.output and "report.html" in r.output
    assert (out / "explanation.json").read_bytes() == before  # refused before any work, nothing touched
    r = run(describe_args(p, "--clusters", "3", "--out", str(out), "--overwrite"))
    assert r.exit_code == 0, r.output
    names = sorted(x.name for x in out.iterdir())
    assert names == ["assignments.parquet", "explanation.json", "images.parquet", "notes.txt", "report.md"]
    assert json.loads((out / "explanation.json").read_text())["params"]["n_clusters"] == 3
    assert not [x for x in p.iterdir() if "lbee-staging" in x.name or "lbee-replaced" in x.name]


def test_failed_run_leaves_the_folder_as_it_was(tmp_path):
    from lbee.run.outputs import staged_run_folder

    out = tmp_path / "out"
    out.mkdir()
    (out / "explanation.json").write_text("old")
    with pytest.raises(RuntimeError):
        with staged_run_folder(out, overwrite=True) as stage:
            (stage / "explanation.json").write_text("half")
            raise RuntimeError("disk full")
    assert (out / "explanation.json").read_text() == "old"
    assert sorted(x.name for x in tmp_path.iterdir()) == ["out"]


def _dead_pid():
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(proc.stdout)


def test_staging_leftovers_are_settled_only_when_their_writer_is_gone(tmp_path):
    """Issue 32: hidden staging / replaced folders of a killed run are settled by the next run, never blindly."""
    import os
    import subprocess
    import sys

    from lbee.io.staging import recover_leftovers
    from lbee.run.outputs import check_out_folder

    out = tmp_path / "run"
    out.mkdir()
    (out / "explanation.json").write_text("new")  # a writer killed between its moves, without a commit file (not
    aside = (
        tmp_path / f".run.lbee-replaced-{_dead_pid()}-aaaaaaaaaaaa"
    )  # a state lbee leaves): the old run goes back whole
    aside.mkdir()
    (aside / "explanation.json").write_text("old")
    (aside / "report.md").write_text("old")
    dead_stage = tmp_path / f".run.lbee-staging-{_dead_pid()}-bbbbbbbbbbbb"  # a dead writer's stage, never committed
    dead_stage.mkdir()
    (dead_stage / "report.md").write_text("half")
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        live_stage = tmp_path / f".run.lbee-staging-{live.pid}-cccccccccccc"  # a writer still at work: left alone
        live_stage.mkdir()
        legacy = tmp_path / ".run.lbee-staging-0123456789ab"  # written before pids were recorded: left alone
        legacy.mkdir()
        assert check_out_folder(out, overwrite=True) == ["explanation.json", "report.md"]
        assert {p.name: p.read_text() for p in out.iterdir()} == {"explanation.json": "old", "report.md": "old"}
        assert not aside.exists() and not dead_stage.exists() and live_stage.is_dir() and legacy.is_dir()
    finally:
        live.kill()
        live.wait()
    assert live.pid != os.getpid() and recover_leftovers(out) and not live_stage.exists()


def test_two_writers_into_one_output_take_turns_and_each_replaces_the_other_whole(tmp_path):
    """Stop 36 left it open: two writers into one output were not locked against each other, so their moves could
    interleave (one run's explanation.json beside the other's report.md). The swap now holds the output's lock."""
    import fcntl
    import os
    import threading

    from lbee.io.staging import staged_entries

    out = tmp_path / "run"
    out.mkdir()
    (out / "report.md").write_text("first")
    (out / "extra.txt").write_text("first")  # the first run's entry that the second does not write
    held = os.open(out, os.O_RDONLY)
    fcntl.flock(held, fcntl.LOCK_EX)  # another writer is swapping its run in
    done = threading.Event()

    def second():
        with staged_entries(out, replaces=("*.md", "*.txt")) as stage:
            (stage / "report.md").write_text("second")
        done.set()

    t = threading.Thread(target=second)
    t.start()
    try:
        assert not done.wait(1.0)  # it waits for the lock: nothing of the second run is in yet
        assert (out / "report.md").read_text() == "first" and (out / "extra.txt").exists()
    finally:
        os.close(held)
    t.join(30)
    assert done.is_set()
    assert {p.name: p.read_text() for p in out.iterdir()} == {"report.md": "second"}  # the first run gone whole
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".run.lbee-")]


def test_evaluate_writes_beside_a_report_metrics_json(precomputed):
    p, out = precomputed, precomputed / "out"
    assert run(describe_args(p, "--clusters", "2", "--out", str(out))).exit_code == 0
    report_rows = [{"slicer": "ward", "method": "fpdiff", "ACR": 0.5}]
    (out / "metrics.json").write_text(json.dumps(report_rows))  # lbee report's schema
    r = run(["evaluate", str(out), "--relevance", str(p / "rel.npy")])
    assert r.exit_code == 0, r.output
    assert json.loads((out / "metrics.json").read_text()) == report_rows
    rows = json.loads((out / "evaluate_metrics.json").read_text())
    assert {x["method"] for x in rows} >= {"fpdiff"} and "evaluate_metrics.json" in r.output
    (out / "metrics.json").unlink()
    r = run(["evaluate", str(out), "--relevance", str(p / "rel.npy")])  # no other metrics.json: the usual name
    assert r.exit_code == 0 and json.loads((out / "metrics.json").read_text())[0]["method"]


# ---------------------------------------------------------------- case 11: caps are recorded and warned


def test_clusters_beyond_the_split_are_recorded_and_warned(precomputed):
    p, out = precomputed, precomputed / "out"
    r = run(describe_args(p, "--clusters", "500", "--out", str(out)))
    assert r.exit_code == 0, r.output
    said = " ".join(r.output.split())  # warnings are wrapped to the terminal's width
    assert "500 hard clusters were asked for but the hard split has 12 image(s)" in said
    assert "hard clusters (12 hard images) have fewer than 5 images" in said and "Ask for about 1 cluster " in said
    payload = json.loads((out / "explanation.json").read_text())
    assert payload["params"]["n_clusters"] == 500 and payload["params"]["n_hard_clusters_formed"] == 12
    assert "clusters=500 asked, 12 formed" in (out / "report.md").read_text()


def test_library_warns_when_clusters_are_capped():
    import lbee
    from lbee.core.clustering import ClusterCountWarning

    X, S, phi, _ = planted_world(noise=0.01)
    with pytest.warns(ClusterCountWarning, match="5000 hard clusters were asked for but the hard split has 12"):
        exp = lbee.explain(X, S, confidence=phi, n_clusters=5000)
    assert len(exp.hard_clusters) == 12
    with warnings.catch_warnings():
        warnings.simplefilter("error", ClusterCountWarning)
        lbee.explain(X, S, confidence=phi, n_clusters=2)  # a sensible C: silent


def test_service_reports_capped_and_tiny_clusters():
    from lbee.service.explain import explain_request

    X, S, phi, _ = planted_world(noise=0.01)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = explain_request(
            {
                "image_embeddings": X.tolist(),
                "sentence_embeddings": S.tolist(),
                "confidence": phi.tolist(),
                "settings": {"clusters": 50, "tau": 0.25},
            }
        )
    assert any("50 hard clusters were asked for" in w for w in out["warnings"])
    assert out["explanations"]["fpdiff"]["params"]["n_hard_clusters_formed"] == 12


# ---------------------------------------------------------------- case 7: YAML read strictly, every problem listed


def test_yaml_key_written_twice_is_refused(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("datasets:\n  - name: a\n    spotcheck: {seed: 0}\n    clusters: 3\n    clusters: 7\n")
    r = run(["report", "--check", str(cfg)])
    assert r.exit_code == 2
    assert "the key 'clusters' is written twice (lines 4 and 5); expected each key once" in r.output


def test_service_yaml_shares_the_strict_loader():
    import yaml

    from lbee.reports.yaml_reader import _loader, load_yaml

    with pytest.raises(yaml.YAMLError, match="'k' is written twice"):
        yaml.load("name: a\nk: 1\nk: 2\n", Loader=_loader())  # noqa: S506 - a SafeLoader subclass
    with pytest.raises(yaml.YAMLError, match="'k' is written twice"):
        load_yaml("name: a\nk: 1\nk: 2\n", source="the body")


CONFIG_BOMB = "\n".join(
    ["datasets: []", "a0: &a0 [x]"] + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
)


@pytest.mark.parametrize(
    "text, message",
    [
        (CONFIG_BOMB, r"c.yaml: its aliases expand to [\d,]+ nodes beyond the \d+ the text writes; at most 100,000"),
        ("datasets: &d [*d]\n", r"c.yaml, line 1: an alias refers to the mapping or list that contains it"),
        ("datasets: " + "[" * 3000 + "]" * 3000 + "\n", r"c.yaml, line 1: .*nested more than 64 levels deep"),
    ],
    ids=["alias bomb", "recursive alias", "3000 levels"],
)
def test_report_configs_are_read_by_the_bounded_yaml_reader(tmp_path, text, message):
    """Issue 32: one bounded YAML reader for jobs, configs and grammars."""
    import time

    cfg = tmp_path / "c.yaml"
    cfg.write_text(text)
    start = time.perf_counter()
    r = run(["report", "--check", str(cfg)])
    assert time.perf_counter() - start < 10
    assert r.exit_code == 2 and re.search(message, r.output), r.output


def test_report_check_lists_every_problem_of_an_entry(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "datasets:\n  - name: a\n    images: nowhere/\n    clustrs: 3\n    k: -1\n    predictions: missing.csv\n"
    )
    r = run(["report", "--check", str(cfg)])
    assert r.exit_code == 2
    assert "4 problem(s)" in r.output
    for phrase in (
        "line 4: unknown key 'clustrs'",
        "line 5: datasets[0] key 'k' is -1",
        "line 3: images path 'nowhere/' does not exist",
        "line 6: predictions path 'missing.csv'",
    ):
        assert phrase in r.output, phrase


def test_the_docs_give_the_spotcheck_encoder_s_own_tau():
    """A fifth user found τ = 0.0816 in six places of the docs, where the shipped encoder reports 0.0924."""
    from pathlib import Path

    from lbee.encoders import create_encoder

    ROOT = Path(__file__).resolve().parents[1]
    tau = f"{create_encoder('spotcheck').default_tau:.4f}"
    said = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        said += [(page.name, v) for v in re.findall(r"SpotCheck encoder's (?:τ )?is (0\.\d+)", text)]
        said += [(page.name, v) for v in re.findall(r"τ = (0\.\d+), from the sidecar", text)]
        said += [(page.name, v) for v in re.findall(r"\((0\.\d+) for spotcheck\)", text)]
        assert not re.search(r"tau=0\.\d", text), f"{page.name}: an example hard-codes τ; read it from the provenance"
    assert len(said) >= 4 and all(v == tau for _, v in said), (tau, said)
