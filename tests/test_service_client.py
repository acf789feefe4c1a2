"""The service's client side without a server: progress throttling, the entry-key advice, entry files.

The client against a real server is in tests/test_service_live.py (test_submit_runs_a_job_end_to_end).
"""

import json
import re

import numpy as np
import pytest

from lbee.service.client import Client, ServiceError, describe_progress, read_entry
from lbee.service.job_progress import job_listener
from lbee.service.job_warnings import entry_advice


def test_job_listener_writes_each_new_phase_at_once_and_a_phase_at_most_once_a_second():
    now, writes = [0.0], []
    on = job_listener(lambda **v: writes.append(v), every=1.0, clock=lambda: now[0])
    on("preparing", None, None)
    on("embedding images", 0, 100)
    for done in range(1, 100):  # a hundred batches within 0.99 s: none written until the last one
        now[0] += 0.01
        on("embedding images", done, 100)
    on("embedding images", 100, 100)
    now[0] += 0.01
    on("describing", None, None)
    assert [w["phase"] for w in writes] == ["preparing", "embedding images", "embedding images", "describing"]
    assert writes[1] == {"phase": "embedding images", "fraction": 0.0, "progress": "embedding images: 0 of 100"}
    assert writes[2]["fraction"] == 1.0 and writes[3] == {
        "phase": "describing",
        "fraction": None,
        "progress": "describing",
    }


def test_a_failed_jobs_advice_names_the_entry_key_not_the_cli_flag():
    msg = (
        "The weights of open_clip ViT-B-32@laion2b_s34b_b79k are not in the local cache. Either:\n"
        "  --encoder 'open_clip:ViT-B-32@/path/to/open_clip_pytorch_model.bin'   (a local checkpoint file)\n"
        "  --encoder spotcheck\n"
        "Embed both with the same --encoder (`lbee embed`); see --out and --batch-size=32."
    )
    out = entry_advice(msg)
    assert "--encoder" not in out and "  encoder: 'open_clip:ViT-B-32@/path/to/" in out
    assert "  encoder: spotcheck" in out and "the same `encoder:` (`lbee embed`)" in out
    assert "--out" in out and "batch_size: 32" in out  # --out is no entry key; batch_size is
    # a message that names the key already keeps it once; one that names the CLI's flag as such keeps it
    assert entry_advice("Pass τ explicitly (--tau / tau:).") == "Pass τ explicitly (tau:)."
    assert entry_advice("(n_clusters; CLI --clusters)") == "(n_clusters; CLI --clusters)"
    # a flag "on the command line" beside its key's own form goes (a fifteenth user read "logits: on the command
    # line, logits: true in a report config")
    said = entry_advice("have a softmax applied: --logits on the command line, logits: true in a report config.")
    assert said == "have a softmax applied: logits: true in a report config."


def test_read_entry_refuses_a_whole_config_and_a_list(tmp_path):
    (tmp_path / "cfg.yaml").write_text("datasets:\n  - name: a\n")
    with pytest.raises(ValueError, match="is a `lbee report` config"):
        read_entry(tmp_path / "cfg.yaml")
    (tmp_path / "list.yaml").write_text("- name: a\n")
    with pytest.raises(ValueError, match="holds a list; expected one dataset entry"):
        read_entry(tmp_path / "list.yaml")
    (tmp_path / "ok.yaml").write_text("name: demo\nspotcheck: {seed: 0}\n")
    assert read_entry(tmp_path / "ok.yaml") == {"name": "demo", "spotcheck": {"seed": 0}}

    # eighth sweep: `name: 2024-01-01` (a YAML date) or a !!binary value ended in a TypeError of json.dumps
    for text, where in [
        ("name: 2024-01-01\nspotcheck: {seed: 0}\n", "`name` is datetime.date(2024, 1, 1)"),
        ("name: a\nspotcheck: {seed: !!binary aGk=}\n", "`spotcheck.seed` is b'hi'"),
        (
            "name: a\nmodels: [{name: m, predictions: !!set {a}}]\n",
            "`models[0].predictions` is {'a'}, which YAML reads as a set",
        ),
    ]:
        (tmp_path / "odd.yaml").write_text(text)
        with pytest.raises(ValueError, match=re.escape(where)):
            read_entry(tmp_path / "odd.yaml")


def test_no_server_is_one_clean_error():
    with pytest.raises(ServiceError, match="Cannot reach the lbee server at http://127.0.0.1:9"):
        Client("http://127.0.0.1:9", "t", timeout=5).job("x")


def test_progress_line():
    job = {"status": "running", "phase": "embedding images", "fraction": 0.4, "progress": "embedding images: 4 of 10"}
    assert describe_progress(job) == "running · embedding images 40% (4 of 10)"
    assert describe_progress({"status": "done", "phase": "done", "fraction": None, "progress": "done in 3.1 s"}) == (
        "done · done in 3.1 s"
    )


def test_the_service_uses_the_clis_embedding_cache_by_default(tmp_path, monkeypatch):
    """One content-addressed cache on one machine: a job reuses what `lbee describe` embedded, and back."""
    from lbee.io.cache import default_cache_dir
    from lbee.service import ServiceSettings

    monkeypatch.setenv("LBEE_CACHE_DIR", str(tmp_path / "shared"))
    assert ServiceSettings(root=tmp_path, output=tmp_path / "out").cache_dir == default_cache_dir().resolve()
    assert ServiceSettings(root=tmp_path, cache_dir=tmp_path / "own").cache_dir == (tmp_path / "own").resolve()


@pytest.fixture(scope="module")
def served_run(tmp_path_factory):
    """A real run's explanation.json and images.parquet, as a server sends them."""
    import pandas as pd
    from click.testing import CliRunner

    from lbee.cli import cli

    p = tmp_path_factory.mktemp("served")
    rng = np.random.default_rng(0)
    np.save(p / "img.npy", rng.normal(size=(60, 8)))
    np.save(p / "sen.npy", np.eye(8))
    (p / "s.txt").write_text("\n".join(f"sentence {j}" for j in range(8)) + "\n")
    pd.DataFrame({"image": [f"{i}.png" for i in range(60)], "confidence": rng.random(60)}).to_csv(p / "p.csv")
    args = ["describe", "--image-embeddings", str(p / "img.npy"), "--sentence-embeddings", str(p / "sen.npy")]
    args += ["--sentences", str(p / "s.txt"), "--predictions", str(p / "p.csv"), "--clusters", "2", "--html"]
    r = CliRunner().invoke(cli, [*args, "--out", str(p / "run")], obj={})
    assert r.exit_code == 0, r.output
    return {name: (p / "run" / name).read_bytes() for name in ("explanation.json", "images.parquet")}


def test_fetch_replaces_a_jobs_results_together_or_not_at_all(tmp_path, monkeypatch, served_run):
    """Sixth sweep L1: fetch wrote report.html, explanation.json and metrics.json one by one, so a kill after the
    first left a new report beside another job's explanation. Now they are staged and moved in together."""
    from pathlib import Path

    from lbee.service.client import RESULT_FILES

    class Fake(Client):
        def __init__(self, tag):
            self.tag = tag

        def _request(self, method, path, body=None, *, raw=False, limit=None):
            name = next(n for n, endpoint in RESULT_FILES.items() if path.split("?")[0].endswith("/" + endpoint))
            if name == "metrics.json":  # a run record, as lbee serve answers
                return json.dumps({"id": 1, "metrics": [], "tag": self.tag}).encode()
            return served_run.get(name) or json.dumps([self.tag]).encode()

    def tags(folder):
        def tag(p):
            said = json.loads(p.read_text())
            return said["tag"] if isinstance(said, dict) else said[0]

        return {p.name: tag(p) for p in folder.iterdir() if p.name in ("report.html", "metrics.json")}

    out = tmp_path / "res"
    Fake("old").fetch("j1", out)
    with pytest.raises(ValueError, match="--overwrite"):
        Fake("new").fetch("j2", out)
    real = Path.write_bytes
    calls = []

    def dies_on_the_second(self, data):
        calls.append(self.name)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real(self, data)

    monkeypatch.setattr(Path, "write_bytes", dies_on_the_second)
    with pytest.raises(OSError):
        Fake("new").fetch("j2", out, overwrite=True)
    monkeypatch.setattr(Path, "write_bytes", real)
    assert tags(out) == {"report.html": "old", "metrics.json": "old"} and len(list(out.iterdir())) == len(RESULT_FILES)
    Fake("new").fetch("j2", out, overwrite=True)
    assert tags(out) == {"report.html": "new", "metrics.json": "new"}
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


@pytest.mark.parametrize(
    "bad, said",
    [
        ({"explanation.json": b"{not json"}, "Cannot read explanation file"),
        ({"images.parquet": b"PAR1garbage"}, "Cannot read"),
        ({"metrics.json": b"<html>"}, "Expecting value"),
        ({"metrics.json": b"[1, 2]"}, "no run record"),  # sweep 32t N5: kept, rc 0
        ({"metrics.json": b'{"id": 1, "metrics": [1, 2]}'}, "no metric row"),
    ],
)
def test_fetch_refuses_files_no_lbee_wrote_and_writes_nothing(tmp_path, served_run, bad, said):
    """Sweep 32r N2: `lbee submit --out` wrote whatever a malformed server sent (a `{not json` explanation, garbage
    parquet) and exited 0; the files are now read back as a run folder's before anything moves in."""
    from lbee.service.client import RESULT_FILES, ServiceError

    answers = {**served_run, "report.html": b"<html></html>", "metrics.json": b'{"id": 1, "metrics": []}', **bad}

    class Fake(Client):
        def __init__(self):
            pass

        def _request(self, method, path, body=None, *, raw=False, limit=None):
            return answers[next(n for n, e in RESULT_FILES.items() if path.split("?")[0].endswith("/" + e))]

    with pytest.raises(ServiceError, match=f"not an lbee run's result files .*{said}.*nothing was written"):
        Fake().fetch("j1", tmp_path / "res")
    assert not (tmp_path / "res").exists() or not list((tmp_path / "res").iterdir())
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


@pytest.mark.parametrize("url", ["file:///etc/passwd#", "ftp://127.0.0.1/x", "127.0.0.1:8000", "http://"])
def test_the_client_speaks_http_only(url):
    """Sixth sweep M2: `lbee submit --url file:///...` had urllib open a local file."""
    with pytest.raises(ValueError, match="expected http://HOST:PORT"):
        Client(url)


def test_a_jobs_python_warning_is_one_line_of_the_server_log_and_one_of_the_jobs(caplog, capsys, tmp_path):
    """A new user's server log carried `.../lbee/run/inputs.py:332: UserWarning: ...` and its source line."""
    import logging
    import warnings
    from types import SimpleNamespace

    from lbee.service.job_warnings import job_warnings

    lines = []
    settings = SimpleNamespace(root=tmp_path, output=tmp_path / "out", cache_dir=tmp_path / "cache")
    with caplog.at_level(logging.WARNING, logger="py.warnings"), warnings.catch_warnings():
        warnings.simplefilter("always")
        with job_warnings(lines, settings):
            warnings.warn("rows of a table match no image", UserWarning, stacklevel=1)
    assert lines == ["warning: rows of a table match no image"]
    assert [r.getMessage() for r in caplog.records if r.name == "py.warnings"] == ["rows of a table match no image"]
    assert "UserWarning" not in capsys.readouterr().err


def test_phases_shorter_than_a_poll_are_still_said_in_order():
    """Fifth and sixth users: `lbee submit` showed "embedding sentences 0%" then done; "describing" and "writing the
    report" fell between two polls. The job's log names each phase it entered, and the client says the missed ones."""
    from lbee.service.client import progress_lines
    from lbee.service.job_progress import PHASE_LINE, job_listener

    writes, log = [], []
    on = job_listener(lambda **v: writes.append(v), clock=lambda: 0.0, on_phase=lambda p: log.append(PHASE_LINE + p))
    for phase, done, total in [
        ("preparing", None, None),
        ("embedding sentences", 0, 3),
        ("embedding sentences", 3, 3),
        ("describing", None, None),
        ("writing the report", None, None),
    ]:
        on(phase, done, total)
    assert log == [PHASE_LINE + p for p in ("preparing", "embedding sentences", "describing", "writing the report")]
    seen = set()
    first = progress_lines(
        {
            "status": "running",
            "phase": "embedding sentences",
            "fraction": 0.0,
            "progress": "embedding sentences: 0 of 3",
            "log": log[:2],
        },
        seen,
    )
    last = progress_lines({"status": "done", "phase": "done", "fraction": None, "progress": "done", "log": log}, seen)
    # a phase just begun says its size, not "0%" (an eighth user read "embedding sentences 0%" as stuck)
    assert first[-1] == "running · embedding sentences (3 to do)" and len(first) == 2  # preparing, then this
    assert last == ["running · describing", "running · writing the report", "done"], last
    # the log names a phase before the job's row does: a poll in between says the row's phase, then the next one
    # (a user saw "embedding images" and then "hashing images 0%")
    seen = set()
    row = {
        "status": "running",
        "phase": "embedding sentences",
        "fraction": 0.0,
        "progress": "embedding sentences: 0 of 3",
    }
    between = progress_lines({**row, "log": log[:3]}, seen)
    assert between[0] == "running · preparing" and between[-1] == "running · embedding sentences (3 to do)"
    assert len(between) == 2, between
    assert progress_lines(
        {**row, "phase": "describing", "fraction": None, "progress": "describing", "log": log[:3]}, seen
    ) == ["running · describing"]
    # the library's wait says them too (a fifteenth user's on_progress went from queued to "writing the report")
    from lbee.service.client import Client

    polls = iter(
        [
            {"status": "queued", "phase": None, "fraction": None, "progress": "", "log": []},
            {"status": "running", "phase": "writing the report", "fraction": None, "progress": "", "log": log},
            {"status": "done", "phase": "done", "fraction": None, "progress": "done", "log": log},
        ]
    )

    class Fake(Client):
        def __init__(self):
            pass

        def job(self, job_id):
            return next(polls)

    said = []
    Fake().wait("j", poll=0, on_progress=lambda j: said.append(j.get("phase") or j["status"]))
    assert said == ["queued", "preparing", "embedding sentences", "describing", "writing the report", "done"], said


def test_the_client_lists_a_run_s_confirmed_statements(demo_run):
    """An eleventh user had only the whole explanation (its confirmation block starts with 600 held-out indices)."""
    import json

    from lbee.service.client import confirmed_statements

    out, _ = demo_run
    explanation = json.loads((out / "explanation.json").read_text())
    listed = confirmed_statements(explanation)
    conf = explanation["confirmation"]
    assert [s["text"] for s in listed] == [conf["statements"][j]["text"] for j in conf["ranked"]]
    assert listed[0]["adds_failure"] and listed[0]["error_rate_in"] > 0.9 and listed[0]["effect_low"] >= 2
    companions = [s for s in listed if not s["adds_failure"]]
    assert companions and all(s["goes_with"] in {t["text"] for t in listed} for s in companions)

    class Fake(Client):
        def __init__(self):
            pass

        def explanation(self, job_id, model=None):
            return explanation

    ids = explanation["images"]  # the client's each with the ids of the images it holds for (trial 26)
    with_images = [  # a companion's empty (trial 34: a loop over every entry's images met a KeyError)
        {**s, "images": [ids[i] for i in s.get("holds_for", ())], "conditions": s.get("conditions") or {}}
        for s in listed
    ]
    assert Fake().confirmed("j1") == with_images and with_images[0]["images"] and with_images[0]["conditions"]
    assert confirmed_statements({"confirmation": {"status": "off", "fraction": 0.0}}) == []


@pytest.mark.parametrize(
    "confirmation",
    [
        {"ranked": [5], "statements": []},
        {"ranked": [0], "statements": ["x"]},
        {"ranked": [0], "statements": [{"text": "a", "beyond": {"confirmed": False, "above": [9]}}]},
    ],
)
def test_a_confirmation_block_lbee_did_not_write_is_said(confirmation):
    """A tampered or foreign answer ends in a clear ValueError, not an IndexError from the client."""
    from lbee.service.client import confirmed_statements

    with pytest.raises(ValueError, match="not one lbee writes|the file lbee wrote: an edit is refused"):
        confirmed_statements({"confirmation": {"status": "done", "fraction": 0.3, **confirmation}})


def test_a_served_image_table_names_images_inside_the_root_only(tmp_path):
    """The images.parquet a client fetches carries each image's path as the job named it, never a server path."""
    from types import SimpleNamespace

    from lbee.service.paths import inside_root

    root = tmp_path / "root"
    (root / "imgs").mkdir(parents=True)
    (tmp_path / "alias").symlink_to(root)
    settings = SimpleNamespace(root=tmp_path / "alias")  # the root as given, and as resolved, both recognised
    assert inside_root(str(root / "imgs" / "a.png"), settings) == "imgs/a.png"
    assert inside_root(str(tmp_path / "alias" / "imgs" / "b.png"), settings) == "imgs/b.png"
    assert inside_root(str(tmp_path / "rootx" / "c.png"), settings) is None  # a sibling whose name starts alike
    assert inside_root(str(tmp_path / "cache" / "world" / "0.png"), settings) is None
    assert inside_root(None, settings) is None and inside_root("", settings) is None
