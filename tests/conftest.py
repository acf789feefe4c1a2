import os

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def lbee_cli(*args):
    """``lbee ARGS`` in this process (click's runner), each argument as text: the result (exit code, output)."""
    from click.testing import CliRunner

    from lbee.cli import cli

    return CliRunner().invoke(cli, [str(a) for a in args], obj={})


def generated_sentences(folder, grammar_text, name):
    """``folder/s.txt``: the sentences `lbee sentences generate` writes for a grammar ``name`` of ``grammar_text``."""
    (folder / f"{name}.grammar.yaml").write_text(grammar_text)
    r = lbee_cli("sentences", "generate", folder / f"{name}.grammar.yaml", "--out", folder / "s.txt")
    assert r.exit_code == 0, r.output
    return folder / "s.txt"


def planted_world(noise=0.0, seed=0, per_cluster=6):
    """Two easy and two hard groups whose failure causes are planted sentence directions.

    Sentences are the 8 basis vectors. Easy A ~ e0 ("road"), easy B ~ e1 ("field");
    hard A ~ e0 + e2 ("road at night"), hard B ~ e1 + e3 ("field in fog").
    """
    rng = np.random.default_rng(seed)
    eye = np.eye(8)
    centres = [eye[0], eye[1], (eye[0] + eye[2]) / np.sqrt(2), (eye[1] + eye[3]) / np.sqrt(2)]
    X = np.concatenate([np.tile(c, (per_cluster, 1)) for c in centres])
    X = X + noise * rng.normal(size=X.shape)
    phi = np.repeat([1.0, 1.0, 0.0, 0.0], per_cluster)
    sentences = ["road", "field", "at night", "in fog", "s4", "s5", "s6", "s7"]
    return X, eye, phi, sentences


@pytest.fixture
def planted():
    return planted_world()


@pytest.fixture(scope="session")
def random_clip():
    """open_clip ViT-B-32 with random weights (no download), shared across the session."""
    import torch

    from lbee.encoders import create_encoder

    torch.manual_seed(0)
    return create_encoder("open_clip:ViT-B-32@random", device="cpu")


@pytest.fixture(scope="session")
def demo_printed(tmp_path_factory):
    """`lbee demo` run once per session: (output folder, what it printed on the terminal, without -v)."""
    from click.testing import CliRunner

    from lbee.cli import cli

    out = tmp_path_factory.mktemp("demo")
    result = CliRunner().invoke(
        cli, ["--cache-dir", str(out / "cache"), "demo", "--seed", "0", "--out", str(out)], obj={}
    )
    assert result.exit_code == 0, result.output
    return out, result.output


@pytest.fixture(scope="session")
def demo_run(demo_printed):
    """The session's `lbee demo`: (output folder, its whole story: demo.txt, what ``lbee -v demo`` prints)."""
    out, _ = demo_printed
    return out, (out / "demo.txt").read_text(encoding="utf-8")


@pytest.fixture
def killed_lbee():
    """Run ``lbee ARGS`` in a subprocess that SIGKILLs itself at a step of lbee.io.staging (``LBEE_TEST_KILL_AT``).

    ``setup`` is Python run first in the subprocess (to register a test encoder). Returns the finished process.
    """
    import signal
    import subprocess
    import sys
    from pathlib import Path

    def run(args, step, *, setup=""):
        code = f"{setup}\nimport sys\nfrom lbee.cli import cli\ncli(sys.argv[1:], prog_name='lbee', obj={{}})"
        root = str(Path(__file__).resolve().parents[1])
        env = {
            **os.environ,
            "LBEE_TEST_KILL_AT": step,
            "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]),
        }
        proc = subprocess.run(
            [sys.executable, "-c", code, *map(str, args)], env=env, capture_output=True, text=True, timeout=300
        )
        assert proc.returncode == -signal.SIGKILL, (proc.returncode, proc.stdout, proc.stderr)
        return proc

    return run


def server_answers(monkeypatch, answers):
    """Make `lbee.Client` read ``answers`` (bytes, one per request, in order) as a server's, with no network."""
    from lbee.service import client as client_mod

    answers = iter(answers)

    class Answer:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    monkeypatch.setattr(client_mod, "_read_within", lambda resp, limit, deadline, what: next(answers))
    monkeypatch.setattr(client_mod, "open_within", lambda req, timeout, deadline: Answer())


def fake_report_run(gamma, confidence=None):
    """What `lbee.reports.browse.browse_view` reads of a report run: n images, Γ (n, N), no labels."""
    from types import SimpleNamespace

    n, m = gamma.shape
    return SimpleNamespace(
        labels=None,
        preds=None,
        class_names=None,
        relevance=gamma,
        image_ids=[f"i{j}" for j in range(n)],
        confidence=np.zeros(n) if confidence is None else confidence,
        performance=np.ones(n),
        image_links=None,
        sentences=[f"s{j}" for j in range(m)],
    )


@pytest.fixture
def registry_builds(monkeypatch):
    """The devices torchvision's registry models are built on, in order: a list filled as they are built."""
    import torchvision

    built = []
    real = torchvision.models.get_model

    def counting(arch, **kw):
        model = real(arch, **kw)
        built.append(next(model.parameters()).device.type)
        return model

    monkeypatch.setattr(torchvision.models, "get_model", counting)
    return built


def killed_after_commit(out, monkeypatch, files):
    """A writer of ``out`` (`lbee.io.staging`) killed after its commit, before its first move.

    ``files``: ``{relative path: text}`` it staged (folders made as needed).
    """
    import lbee.io.staging as staging

    def killed(*args, **kwargs):
        raise KeyboardInterrupt  # as a SIGKILL after the commit, before the first move

    with monkeypatch.context() as m:
        m.setattr(staging, "move_aside", killed)
        with pytest.raises(KeyboardInterrupt):
            with staging.staged_entries(out) as st:
                for rel, text in files.items():
                    (st / rel).parent.mkdir(parents=True, exist_ok=True)
                    (st / rel).write_text(text)


def two_photo_folders(tmp_path):
    """``photos/p0.png`` and ``photos2/p0.png`` in ``tmp_path``: the run's image ids and paths (of photos/ alone)."""
    from PIL import Image

    for folder in ("photos", "photos2"):
        (tmp_path / folder).mkdir()
        Image.new("RGB", (8, 8)).save(tmp_path / folder / "p0.png")
    return ["p0.png"], [str(tmp_path / "photos" / "p0.png")]
