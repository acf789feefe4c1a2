"""The run layer: one settings object, one pipeline, a public partition step (issue: one run layer)."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import planted_world
from sklearn.exceptions import NotFittedError

import lbee
from lbee.cli import cli
from lbee.core.clustering import DEFAULT_WARD, WARD_METHODS
from lbee.core.evaluation import DEFAULT_O
from lbee.core.partition import DEFAULT_A, DEFAULT_K, DEFAULT_N_CLUSTERS, DEFAULT_N_CLUSTERS_PER_CLASS
from lbee.core.selection import CLIP_TAU, DESCRIBERS, METHODS, resolve_tau
from lbee.reports.config import KNOB_KEYS, load_report_config
from lbee.run.settings import RunSettings
from lbee.slicers import SLICERS, WardSlicer

ROOT = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------- settings
def test_settings_defaults_come_from_the_steps():
    s = RunSettings()
    assert (s.a, s.k, s.o, s.ward) == (DEFAULT_A, DEFAULT_K, DEFAULT_O, DEFAULT_WARD)
    assert s.methods == tuple(METHODS) and s.slicers == ("ward",)
    assert s.n_clusters == DEFAULT_N_CLUSTERS
    assert s.replace(per_class="errors").n_clusters == DEFAULT_N_CLUSTERS_PER_CLASS
    assert s.replace(clusters=7, per_class="errors").n_clusters == 7


def test_tau_rule_lives_in_one_function():
    assert resolve_tau() == CLIP_TAU == 0.25
    assert resolve_tau(None, 0.07) == 0.07 and resolve_tau(0.3, 0.07) == 0.3
    assert RunSettings().resolved_tau(0.07) == 0.07 and RunSettings(tau=0.1).resolved_tau(0.07) == 0.1
    # the literal appears once in the package: where the rule lives
    hits = subprocess.run(
        ["git", "grep", "-n", r"0\.25\b", "--", "lbee"], cwd=ROOT, capture_output=True, text=True
    ).stdout.splitlines()
    # docstrings may state the value for readers ("CLIP's 0.25", a numpydoc "default=0.25"): test_docs_site ties
    # that text to CLIP_TAU and the signature's default
    hits = [h for h in hits if "0.025" not in h and "enrich" not in h and "CLIP's 0.25" not in h]
    hits = [h for h in hits if "default=0.25" not in h]
    assert len(hits) == 1 and hits[0].startswith("lbee/core/selection.py"), hits


@pytest.mark.parametrize(
    "bad, phrase",
    [
        (dict(k=0), "`k` is 0; expected an integer in .1, 100."),
        (dict(a=-1), "`a` is -1; expected a number in .0, 10."),
        (dict(clusters=10**8), "`clusters` is 100000000; expected an integer in .1, 1000."),
        (dict(a=10**400), "expected a number in .0, 10."),
        (dict(methods=["tops", "nope"]), "'nope' is not one"),
        (dict(methods=[]), "a non-empty list"),
        (dict(slicers=["ward", "ward"]), "at most once"),
        (dict(ward="fast"), "one of " + ", ".join(WARD_METHODS)),
        (dict(confidence_from="softmax"), "entropy, max, true_class"),
        (dict(clusters=2.5), "an integer"),
        (dict(tau=float("nan")), "a finite number"),
        (dict(per_class="errors", task="segmentation"), "per_class` is for classification"),
    ],
)
def test_settings_validation_names_the_knob(bad, phrase):
    with pytest.raises(ValueError, match=phrase.replace("(", r"\(").replace(")", r"\)")):
        RunSettings(**bad)


def test_cli_options_and_yaml_schema_are_built_from_the_settings():
    """Every knob a command exposes has the settings' default and choices; YAML accepts exactly the knobs."""
    defaults = RunSettings()
    for command in ("describe", "sweep"):
        params = {p.name: p for p in cli.commands[command].params}
        for knob in RunSettings.knobs():
            if knob not in params or knob == "per_class":  # describe: a --per-class flag with --class-split
                continue
            p = params[knob]
            if knob == "methods":
                assert list(p.default) == ["all"] and set(p.type.choices) == set(DESCRIBERS) | {"all"}
            elif knob == "slicers":
                assert tuple(p.default) == defaults.slicers and set(p.type.choices) == set(SLICERS)
            elif knob in ("clusters", "easy_clusters", "tau"):
                assert p.default is None  # resolved by the settings (15 / 5 per class; the encoder's τ)
            else:
                assert p.default == getattr(defaults, knob), knob
            if knob == "ward":
                assert tuple(p.type.choices) == WARD_METHODS
    assert set(KNOB_KEYS) == set(RunSettings.knobs())


def test_yaml_and_api_reject_the_same_value(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        textwrap.dedent("""\
        datasets:
          - name: x
            spotcheck: {seed: 0}
            ward: fast
    """)
    )
    ds = load_report_config(cfg).datasets[0]
    with pytest.raises(ValueError) as api:
        RunSettings(ward="fast")
    assert "line 4" in ds.error and str(api.value).split("; ")[1] in ds.error


@pytest.mark.parametrize("written", ["010", "07", "1:0", "0x10", "1_000", "0o17", "+0x1"])
def test_yaml_1_1_numbers_are_not_read_as_other_numbers(tmp_path, written):
    """Sweep #12: `clusters: 010` became 8 (octal), `1:0` 60, `0x10` 16, `1_000` 1000, in silence."""
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"datasets:\n  - name: x\n    spotcheck: {{seed: 0}}\n    clusters: {written}\n")
    ds = load_report_config(cfg).datasets[0]
    assert ds.error and f"line 4: datasets[0] key 'clusters' is '{written}'; expected an integer" in ds.error


def test_yaml_numbers_in_decimal_are_numbers(tmp_path):
    """Sweep #32: `a: 1e-1` stayed the text '1e-1' (YAML 1.1 wants a dot); numbers follow YAML 1.2's core schema."""
    from lbee.reports.yaml_reader import load_yaml

    text = "a: 1e-1\nb: 12\nc: -0.5\nd: .5\ne: 0\nf: 1E+2\ng: 010.5\n"
    assert load_yaml(text, source="t") == {"a": 0.1, "b": 12, "c": -0.5, "d": 0.5, "e": 0, "f": 100.0, "g": 10.5}
    cfg = tmp_path / "c.yaml"
    cfg.write_text("datasets:\n  - name: x\n    spotcheck: {seed: 0}\n    a: 1e-1\n")
    assert load_report_config(cfg).datasets[0].error is None


def test_yaml_merge_keys_are_a_clear_error(tmp_path):
    """Sweep #33: `<<: *b` gave "could not determine a constructor for the tag 'tag:yaml.org,2002:merge'"."""
    from lbee.reports.config import ConfigError

    cfg = tmp_path / "c.yaml"
    cfg.write_text("base: &b {seed: 0}\ndatasets:\n  - name: x\n    spotcheck: {<<: *b}\n")
    with pytest.raises(ConfigError, match=r"c.yaml, line 4: merge keys \(<<\) are not supported; write the keys out.$"):
        load_report_config(cfg)


def _long_alias_config(path, aliases):
    """A config whose methods list aliases a 500,000-character name ``aliases`` times (sweep #6)."""
    path.write_text(
        'datasets:\n  - {name: &s "'
        + "x" * 500_000
        + '", spotcheck: {seed: 0}, methods: ['
        + ", ".join(["*s"] * aliases)
        + "]}\n"
    )
    return path


def test_a_config_whose_aliases_expand_to_gigabytes_is_refused_quickly(tmp_path):
    """Sweep #6: `lbee report --check` took 1 GB (2,000 aliases) to build one error message; linear in aliases."""
    import resource
    import time

    cfg = _long_alias_config(tmp_path / "c.yaml", 4000)

    def at_most_2_gb():  # in the child: a regression is a MemoryError, not a machine out of memory
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    start = time.perf_counter()
    run = subprocess.run(
        [sys.executable, "-c", "from lbee.cli import cli; cli()", "report", "--check", str(cfg)],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=at_most_2_gb,
    )
    assert time.perf_counter() - start < 60
    said = run.stdout + run.stderr
    assert run.returncode != 0 and "Traceback" not in said, said[-2000:]
    assert "its aliases expand to 2,000,000,000 characters of text beyond" in said and len(said) < 2000


def test_a_long_value_is_quoted_cut_in_messages(tmp_path):
    """Sweep #5, #6: the message quoted the full repr of the value (19 aliases of 500,000 characters: 9.5 MB)."""
    ds = load_report_config(_long_alias_config(tmp_path / "c.yaml", 19)).datasets[0]
    assert "key 'methods' is ['xxxx" in ds.error and "(19 items)" in ds.error and len(ds.error) < 1000


# ---------------------------------------------------------------- partition
def test_partition_once_describe_many_equals_explain():
    X, S, phi, sentences = planted_world(noise=0.01)
    part = lbee.partition(X, confidence=phi, n_clusters=2)
    assert part.n_hard_ == int((phi < phi.mean() - 0.2 * phi.std()).sum())
    assert part.n_hard_clusters_ == len(part.hard_groups_) == 2 and part.n_clusters == 2
    assert part.n_easy_clusters_ == len(part.easy_groups_)
    for method in METHODS:
        for k in (1, 3):
            a = part.describe(S, method, k=k, sentences=sentences).to_dict()
            b = lbee.explain(X, S, confidence=phi, n_clusters=2, method=method, k=k, sentences=sentences).to_dict()
            assert a == b
    many = part.describe_methods(S, ["tops", "fpdiff"], k=1)
    assert list(many) == ["tops", "fpdiff"]
    with pytest.raises(NotFittedError):
        lbee.Partition().describe(S)
    with pytest.raises(ValueError, match="dimension d=3"):
        part.describe(np.random.default_rng(0).normal(size=(5, 3)))


def test_partition_reports_the_clusters_actually_formed():
    X, S, phi, _ = planted_world(noise=0.01)
    part = lbee.partition(X, confidence=phi, n_clusters=50)
    assert part.n_clusters == 50 and part.n_hard_clusters_ == part.n_hard_ < 50


def test_ward_is_a_slicer_like_the_others():
    X, S, phi, _ = planted_world(noise=0.01)
    by_name = lbee.explain(X, S, confidence=phi, n_clusters=2, method="tops")
    by_object = lbee.explain(X, S, confidence=phi, n_clusters=2, method="tops", slicer=WardSlicer(n_clusters=2))
    assert [c.indices.tolist() for c in by_name.hard_clusters] == [c.indices.tolist() for c in by_object.hard_clusters]
    assert SLICERS["ward"] is WardSlicer


# ---------------------------------------------------------------- one pipeline
def _comparable(payload):
    """What must agree between two runs of the same inputs: clusters, sentences, scores, parameters."""
    from lbee.core.explanation import validate_explanation_payload

    exps = validate_explanation_payload(payload, source="explanation.json")
    return {
        m: {k: e.to_dict()[k] for k in ("hard_clusters", "easy_clusters", "params", "selected")}
        for m, e in exps.items()
    } | {"sentences": payload["sentences"], "images": payload["images"]}


def test_describe_and_a_one_dataset_report_write_the_same_explanation(tmp_path):
    X, S, phi, sentences = planted_world(noise=0.01)
    import pandas as pd

    np.save(tmp_path / "img.npy", X)
    np.save(tmp_path / "sen.npy", S)
    (tmp_path / "sents.txt").write_text("\n".join(sentences) + "\n")
    pd.DataFrame({"image": [f"i{i}.png" for i in range(len(X))], "confidence": phi}).to_csv(
        tmp_path / "pred.csv", index=False
    )
    r = CliRunner().invoke(
        cli,
        [
            "-q",
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
            "2",
            "--out",
            str(tmp_path / "d"),
        ],
        obj={},
    )
    assert r.exit_code == 0, r.output
    (tmp_path / "c.yaml").write_text(
        textwrap.dedent("""\
        output: rep
        datasets:
          - name: planted
            image_embeddings: img.npy
            sentence_embeddings: sen.npy
            sentences: sents.txt
            predictions: pred.csv
            clusters: 2
            k: 2
    """)
    )
    r = CliRunner().invoke(cli, ["-q", "report", str(tmp_path / "c.yaml")], obj={})
    assert r.exit_code == 0, r.output
    described = json.loads((tmp_path / "d" / "explanation.json").read_text())
    reported = json.loads((tmp_path / "rep" / "planted" / "explanation.json").read_text())
    assert _comparable(described) == _comparable(reported)
    assert set(described["methods"]) == set(METHODS)  # the same default method set everywhere
    assert described["params"]["tau"] == CLIP_TAU  # precomputed embeddings: no encoder τ, the CLIP value


def test_describe_checks_the_output_folder_before_any_work(tmp_path):
    (tmp_path / "file").write_text("x")
    X, S, phi, sentences = planted_world(noise=0.01)
    np.save(tmp_path / "img.npy", X)
    np.save(tmp_path / "sen.npy", S)
    import pandas as pd

    pd.DataFrame({"image": [f"i{i}" for i in range(len(X))], "confidence": phi}).to_csv(tmp_path / "p.csv", index=False)
    (tmp_path / "s.txt").write_text("\n".join(sentences) + "\n")
    r = CliRunner().invoke(
        cli,
        [
            "describe",
            "--image-embeddings",
            str(tmp_path / "img.npy"),
            "--sentence-embeddings",
            str(tmp_path / "sen.npy"),
            "--sentences",
            str(tmp_path / "s.txt"),
            "--predictions",
            str(tmp_path / "p.csv"),
            "--out",
            str(tmp_path / "file" / "out"),
        ],
        obj={},
    )
    assert r.exit_code == 1 and "--out" in r.output and "not a writable folder" in r.output
    assert r.exception is None or isinstance(r.exception, SystemExit)


def test_layout_reads_like_the_data_flow():
    pkg = ROOT / "lbee"
    for sub in ("core", "slicers", "encoders", "scoring", "io", "run", "analyses", "reports", "spotcheck", "cli"):
        assert (pkg / sub / "__init__.py").is_file(), sub
    # the domain package imports no presentation module, and vqa uses only lbee's public modules
    spot = "".join(p.read_text() for p in (pkg / "spotcheck").glob("*.py"))
    assert "reports" not in spot and "from ..cli" not in spot
    vqa = "".join(p.read_text() for p in (ROOT / "vqa").glob("*.py"))
    assert " import _" not in vqa.replace("import __future__", "")


def test_the_default_number_of_groups_fits_a_small_hard_split():
    """A new user's 51 hard images went into the paper's 15 groups: 6 single images, the planted failure spread
    over 6 groups, and only then a warning advising about 5. The default is one group per 10 hard images, up to 15."""
    from lbee.run.settings import IMAGES_PER_DEFAULT_GROUP

    assert RunSettings().n_clusters_for(51) == 51 // IMAGES_PER_DEFAULT_GROUP == 5
    assert RunSettings().n_clusters_for(400) == RunSettings().n_clusters == 15
    assert RunSettings().n_clusters_for(3) == 1
    assert RunSettings(clusters=15).n_clusters_for(51) == 15  # asked for: kept
    assert RunSettings(per_class="errors").n_clusters_for(51) == 5  # the paper's per-class default
