"""Build lbee's wheel, install it into a fresh venv and run ``lbee demo`` from outside the source tree.

Run by ``make wheel-check`` (and so by ``.ci/run``)::

    python scripts/check_wheel.py --preinstall "torch==2.14.1 torchvision==0.29.1"

Fails (exit 1) when

- the build prints a warning (``...Warning``, "Package would be ignored"),
- the wheel's files differ from the source tree's (every tracked file under
  ``lbee/``, ``vqa/`` and ``sentence_sets/``, the last as ``lbee/sentence_sets/``),
- the core install brings an extra's module, or ``lbee demo`` without its extras
  does not stop with one line naming ``pip install "WHEEL[...]"`` (lbee is not on PyPI: the
  wheel it was installed from), or that command (run as it is printed) does not install them,
- ``lbee demo``, with the extras that line names, fails or shows a warning raised
  in lbee's code (``PYTHONWARNINGS=default``; library warnings with the caller's
  line count as lbee's).

Prints the time of each step and ``lbee describe --help`` in the fresh venv.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Where a source file goes in the wheel.
SOURCE_TO_WHEEL = {"lbee/": "lbee/", "vqa/": "vqa/", "sentence_sets/": "lbee/sentence_sets/"}
BUILD_WARNING = re.compile(r"\b\w*Warning\b|Package would be ignored")


class CheckFailed(Exception):
    pass


def run(cmd, *, cwd=None, env=None, check=True):
    """Run ``cmd`` (a list), echoing it; returns the CompletedProcess with stdout and stderr as text."""
    print("$ " + " ".join(shlex.quote(str(c)) for c in cmd), flush=True)
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise CheckFailed(f"exit {proc.returncode}:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    return proc


def build_wheel(dist):
    """``pip wheel --no-deps`` into ``dist``; a warning in the build log fails the check."""
    for stale in ("build", "lbee.egg-info"):  # setuptools would reuse build/lib, deleted files included
        subprocess.run(["rm", "-rf", str(ROOT / stale)], check=True)
    proc = run([sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "-w", dist, ROOT])
    warnings = [line.strip() for line in (proc.stdout + proc.stderr).splitlines() if BUILD_WARNING.search(line)]
    if warnings:
        raise CheckFailed("the build warns:\n  " + "\n  ".join(warnings[:20]))
    wheels = sorted(Path(dist).glob("lbee-*.whl"))
    if len(wheels) != 1:
        raise CheckFailed(f"expected one lbee wheel in {dist}; found {wheels}")
    return wheels[0]


def expected_files():
    """The wheel paths of every tracked file under lbee/, vqa/ and sentence_sets/."""
    tracked = run(["git", "ls-files", "--", *SOURCE_TO_WHEEL], cwd=ROOT).stdout.split()
    untracked = run(
        ["git", "ls-files", "--others", "--exclude-standard", "--", *SOURCE_TO_WHEEL], cwd=ROOT
    ).stdout.split()  # new files of the working tree ship too
    out = set()
    for path in tracked + untracked:
        if not (ROOT / path).is_file():
            continue  # deleted in the working tree
        for src, dst in SOURCE_TO_WHEEL.items():
            if path.startswith(src):
                out.add(dst + path[len(src) :])
    return out


def check_file_list(wheel):
    names = {n for n in zipfile.ZipFile(wheel).namelist() if ".dist-info/" not in n}
    want = expected_files()
    missing, extra = sorted(want - names), sorted(names - want)
    if missing or extra:
        raise CheckFailed(f"{wheel.name} differs from the source tree:\n  missing: {missing}\n  extra: {extra}")
    licence = [n for n in zipfile.ZipFile(wheel).namelist() if n.endswith(".dist-info/licenses/LICENSE")]
    if not licence:
        raise CheckFailed(f"{wheel.name} has no LICENSE in its .dist-info/licenses/")
    print(f"  {len(names)} files, as in the source tree, and the LICENSE", flush=True)


def clean_env(**extra):
    """The environment without the source tree on PYTHONPATH, offline, with the venv first on PATH."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", **extra)
    return env


def demo_without_extras(lbee, outside, env, wheel):
    """The core install: no extra's module, and ``lbee demo`` stops at once with the pip line.

    Returns the line's install target (the wheel, as lbee found it in pip's record) and extras.
    """
    proc = run(
        [
            lbee.parent / "python",
            "-c",
            "import importlib.util as u, lbee.extras as e; "
            "print(' '.join(m for _, (__, mods) in e.EXTRAS.items() for m in mods if u.find_spec(m)))",
        ],
        cwd=outside,
        env=env,
    )
    if proc.stdout.strip():
        raise CheckFailed(f"the core install brings extras' modules: {proc.stdout.strip()}")
    t = time.perf_counter()
    proc = run([lbee, "demo", "--out", outside / "no-extras"], cwd=outside, env=env, check=False)
    took = time.perf_counter() - t
    text = proc.stdout + proc.stderr
    found = re.search(r'pip install "([^"\[]+)\[([a-z,]+)\]"', text)
    if proc.returncode != 1 or "Traceback" in text or not found or len(text.strip().splitlines()) != 1:
        raise CheckFailed(
            f"`lbee demo` without its extras should stop with one line naming pip install "
            f'"WHEEL[...]"; exit {proc.returncode}:\n{text[-3000:]}'
        )
    if Path(found.group(1)).resolve() != Path(wheel).resolve():
        raise CheckFailed(f"the install advice names {found.group(1)!r}, not the wheel lbee came from ({wheel})")
    print(f"  without extras: {text.strip()} ({took:.2f} s)", flush=True)
    return found.group(1), found.group(2)


def lbee_warnings(text, site):
    """Warning lines of ``text`` raised in lbee's installed code, and the lbee logger's WARNING lines."""
    here = re.compile(r"^(?P<path>\S+\.py):\d+: \w*Warning\b")
    out = []
    for line in text.splitlines():
        m = here.match(line)
        if m and any(Path(m.group("path")).resolve().is_relative_to(site / pkg) for pkg in ("lbee", "vqa")):
            out.append(line)
        elif line.startswith("WARNING: "):  # lbee -v: the lbee logger's warnings
            out.append(line)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preinstall", default="", help="Requirements installed first (torch pins), space-separated.")
    ap.add_argument("--keep", action="store_true", help="Keep the temporary folder (its path is printed).")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    steps = []

    def step(name, t):
        steps.append((name, time.perf_counter() - t))
        print(f"  [{name}: {steps[-1][1]:.1f} s]", flush=True)

    tmp = Path(tempfile.mkdtemp(prefix="lbee-wheel-check-"))
    free = shutil.disk_usage(tmp).free / 2**30
    print(f"  {free:.1f} GiB free where the fresh venv goes ({tmp}); torch's pins take some 6 GiB", flush=True)
    try:
        t = time.perf_counter()
        wheel = build_wheel(tmp / "dist")
        check_file_list(wheel)
        step("build and file list", t)

        t = time.perf_counter()
        venv = tmp / "venv"
        run([sys.executable, "-m", "venv", venv])
        py, lbee = venv / "bin" / "python", venv / "bin" / "lbee"
        env = clean_env()
        # No pip cache: the torch pins are gigabytes, and CI's disk holds the project's venvs already.
        pip = [py, "-m", "pip", "install", "-q", "--no-cache-dir"]
        run([*pip, "--upgrade", "pip"], env=env)
        if args.preinstall.split():
            run([*pip, *args.preinstall.split()], env=env)
        run([*pip, wheel], env=env)
        step("fresh venv: torch pins and the core wheel", t)

        outside = tmp / "elsewhere"  # no lbee/ folder here: `import lbee` must find the installed one
        outside.mkdir()
        site = Path(
            run(
                [py, "-c", "import lbee, pathlib; print(pathlib.Path(lbee.__file__).parents[1])"], cwd=outside, env=env
            ).stdout.strip()
        )
        if site.resolve().is_relative_to(ROOT.resolve()):
            raise CheckFailed(f"`import lbee` found the source tree ({site}), not the installed wheel")
        t = time.perf_counter()
        run([lbee, "describe", "--help"], cwd=outside, env=env)
        print(f"  lbee describe --help: {time.perf_counter() - t:.2f} s (wall, fresh venv)", flush=True)
        target, extras = demo_without_extras(lbee, outside, env, wheel)

        t = time.perf_counter()
        run([*pip, f"{target}[{extras}]"], env=env)  # the advice, as printed
        step(f"install the extras the demo names ({extras})", t)

        t = time.perf_counter()
        proc = run(
            [lbee, "-v", "--cache-dir", outside / "cache", "demo", "--out", outside / "demo"],
            cwd=outside,
            env=clean_env(PYTHONWARNINGS="default"),
        )
        step("lbee demo from outside the tree", t)
        found = lbee_warnings(proc.stdout + proc.stderr, site)
        if found:
            raise CheckFailed("lbee demo warns:\n  " + "\n  ".join(found))
        for name in ("report.html", "explanation.json", "report.md"):
            if not (outside / "demo" / name).is_file():
                raise CheckFailed(f"lbee demo wrote no {name}")
    except CheckFailed as exc:
        print(f"wheel check FAILED: {exc}", file=sys.stderr)
        return 1
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            t = time.perf_counter()
            subprocess.run(["rm", "-rf", str(tmp)], check=False)
            step("remove the temporary venv", t)
    print(
        f"wheel check passed in {time.perf_counter() - t0:.0f} s: " + ", ".join(f"{n} {s:.0f} s" for n, s in steps),
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
