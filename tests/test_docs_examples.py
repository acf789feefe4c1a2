"""The documentation's examples run: every ```python, ```pycon, ```bash and ```console block of README.md and
docs/**/*.md, offline, on small data that this test prepares (a workspace of SpotCheck renders, a predictions
table, embeddings, Γ, segmentation outputs).

A block that cannot run here carries a marker just before it, with the reason::

    <!-- docs-test: skip: needs pretrained CLIP weights -->

and ``<!-- docs-test: file NAME -->`` before a block (YAML, text) writes it into the workspace for the blocks
after it. The blocks of one page run in order, in one copy of the workspace and one Python namespace (as a reader
would type them). ``lbee`` command lines run in this process (click's CliRunner, one torch import); anything with
shell syntax (pipes, redirections, variables, here-documents) runs under ``bash -e``.
"""

from __future__ import annotations

import doctest
import os
import re
import shlex
import shutil
import subprocess
import sys
import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))
RUN_LANGS = {"python", "pycon", "bash", "console", "sh"}
MARKER = re.compile(r"^<!--\s*docs-test:\s*(skip|file)\s*:?\s*(.*?)\s*-->$")
FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([\w+-]*)")


@dataclass
class Block:
    page: str
    line: int
    lang: str
    text: str
    skip: str | None = None
    file: str | None = None


def extract_blocks(path):
    """The fenced blocks of a Markdown file with their docs-test markers."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks, i, pending = [], 0, None
    rel = str(path.relative_to(ROOT))
    while i < len(lines):
        stripped = lines[i].strip()
        m = MARKER.match(stripped)
        if m:
            pending = (m.group(1), m.group(2))
            i += 1
            continue
        f = FENCE.match(lines[i])
        if f:
            indent, fence, lang = f.group(1), f.group(2), f.group(3).lower()
            body, j = [], i + 1
            while j < len(lines) and not lines[j].strip().startswith(fence):
                body.append(lines[j][len(indent) :] if lines[j].startswith(indent) else lines[j].lstrip())
                j += 1
            block = Block(rel, i + 1, lang, "\n".join(body) + "\n")
            if pending:
                kind, arg = pending
                if kind == "skip":
                    block.skip = arg
                else:
                    block.file = arg
            blocks.append(block)
            pending, i = None, j + 1
            continue
        if stripped:
            pending = None  # a marker applies to the block right after it only
        i += 1
    return blocks


def all_blocks():
    return [b for p in PAGES for b in extract_blocks(p)]


# --------------------------------------------------------------------------- the workspace


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """Small data under the names the documentation uses (see docs/development.md, "Documentation")."""
    import pandas as pd
    from click.testing import CliRunner
    from PIL import Image

    from lbee.cli import cli
    from lbee.spotcheck import DatasetDefinition, relevance_matrix, render, spotcheck_sentences

    ws = tmp_path_factory.mktemp("docs_ws")
    rng = np.random.default_rng(0)
    world = DatasetDefinition(
        ["background", "square", "circle"],
        [
            ("square", "presence"),
            ("circle", "presence"),
            ("background", "color"),
            ("square", "color"),
            ("circle", "color"),
            ("background", "texture"),
        ],
    )
    rows, attrs = [], []
    for i in range(48):
        a = world.sample_attributes(rng)
        img, full = render(a, rng)
        square, circle = a[("square", "presence")] == "true", a[("circle", "presence")] == "true"
        cls = "square" if square else "none"
        (ws / "images" / cls).mkdir(parents=True, exist_ok=True)
        name = f"{cls}/{i:03d}.png"
        Image.fromarray(img).save(ws / "images" / name)
        # A planted failure: the classifier misses squares that have a circle beside them.
        p = 0.25 if square and circle else (0.9 if square else 0.1)
        p = float(np.clip(p + rng.normal(0, 0.05), 0.02, 0.98))
        rows.append({"image": name, "label": cls, "prob_none": 1 - p, "prob_square": p})
        attrs.append(full)
    order = np.argsort([r["image"] for r in rows])  # the folder's order, which `lbee embed` keeps
    rows, attrs = [rows[i] for i in order], [attrs[i] for i in order]
    preds = pd.DataFrame(rows)
    preds.to_csv(ws / "preds.csv", index=False)
    pd.DataFrame({"path": "images/" + preds["image"], "label": (preds["label"] == "square").astype(int)}).to_csv(
        ws / "manifest.csv", index=False
    )

    sentences = [s for s, _, _ in spotcheck_sentences()]
    (ws / "sentences.txt").write_text("\n".join(sentences) + "\n")
    gamma = relevance_matrix(attrs, [c for _, c, _ in spotcheck_sentences()])
    np.save(ws / "gamma.npy", gamma)
    pd.DataFrame(
        [
            {"image": img, "sentence": s, "relevant": int(gamma[i, j])}
            for i, img in enumerate(preds["image"])
            for j, s in enumerate(sentences)
        ]
    ).to_parquet(ws / "relevance.parquet")
    probs = preds[["prob_none", "prob_square"]].to_numpy()
    np.save(ws / "phi.npy", (probs * np.log(probs)).sum(1))  # φ = −entropy
    np.save(ws / "omega.npy", (probs.argmax(1) == (preds["label"] == "square")).astype(float))

    # Embeddings with provenance, by the SpotCheck encoder (bundled, CPU, no download).
    res = CliRunner().invoke(
        cli,
        [
            "--cache-dir",
            str(ws / ".cache"),
            "-q",
            "embed",
            str(ws / "images"),
            "--sentences",
            str(ws / "sentences.txt"),
            "--encoder",
            "spotcheck",
            "--out",
            str(ws / "emb"),
        ],
        obj={},
    )
    assert res.exit_code == 0, res.output
    # The pages use the files `lbee embed` writes, under their own names (emb/embeddings.npy, ...), nothing renamed.
    assert (ws / "emb" / "ids.txt").read_text().split() == list(preds["image"])

    # Semantic segmentation: 3 classes, per-image probability maps and label masks.
    for sub in ("images", "outputs", "masks"):
        (ws / "seg" / sub).mkdir(parents=True)
    for i in range(12):
        mask = np.zeros((32, 32), np.uint8)
        mask[:, 16:] = 1
        mask[20:, :] = 2
        logits = rng.normal(0, 1, (3, 32, 32)) + 3 * np.eye(3)[mask].transpose(2, 0, 1) * (i % 3 != 0)
        prob = np.exp(logits) / np.exp(logits).sum(0)
        Image.fromarray((rng.random((32, 32, 3)) * 255).astype(np.uint8)).save(ws / "seg" / "images" / f"{i:02d}.png")
        np.save(ws / "seg" / "outputs" / f"{i:02d}.npy", prob.astype(np.float32))
        Image.fromarray(mask).save(ws / "seg" / "masks" / f"{i:02d}.png")
    return ws


# --------------------------------------------------------------------------- running blocks

SHELL_SYNTAX = set("|&;<>()$`")


def _commands(text):
    """Shell lines of a bash block (continuations joined, comments dropped), or None when it needs a shell."""
    joined = re.sub(r"\\\n", " ", text)
    out = []
    for line in joined.splitlines():
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            return None
        if not words:
            continue
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.commenters = "#"
        if words[0] != "lbee" or any(t and set(t) <= SHELL_SYNTAX for t in lexer):
            return None
        out.append(words[1:])
    return out


def _run_shell(block, ws, env):
    if block.lang == "console":
        text = "\n".join(line[2:] for line in block.text.splitlines() if line.startswith("$ ")) + "\n"
    else:
        text = block.text
    cmds = _commands(text)
    where = f"{block.page}:{block.line}"
    if cmds is not None:
        from click.testing import CliRunner

        from lbee.cli import cli

        for args in cmds:
            res = CliRunner().invoke(cli, args, obj={}, env=env)
            assert res.exit_code == 0, f"{where}: `lbee {shlex.join(args)}` exited {res.exit_code}:\n{res.output}" + (
                f"\n{res.exc_info[1]!r}" if res.exc_info and res.exit_code not in (0, 1, 2) else ""
            )
        return
    full_env = {**os.environ, **env}
    proc = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", text], cwd=ws, env=full_env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, f"{where}: exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"


def _run_python(block, ns):
    where = f"{block.page}:{block.line}"
    if block.lang == "pycon" or block.text.lstrip().startswith(">>>"):
        test = doctest.DocTestParser().get_doctest(block.text, ns, where, block.page, block.line)
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
        out = []
        runner.run(test, out=out.append, clear_globs=False)
        assert runner.failures == 0, f"{where}:\n" + "".join(out)
    else:
        code = compile(block.text, where, "exec")
        exec(code, ns)  # noqa: S102 - the documentation's own code


# Pages with something to run (the API reference pages, for one, have no example).
PAGE_IDS = [
    str(p.relative_to(ROOT)) for p in PAGES if any(b.skip is None and b.lang in RUN_LANGS for b in extract_blocks(p))
]


@pytest.mark.parametrize("page", PAGE_IDS)
def test_page_examples_run(page, workspace, tmp_path, monkeypatch):
    blocks = [b for b in extract_blocks(ROOT / page) if b.lang in RUN_LANGS or b.file]
    ws = tmp_path / "ws"
    shutil.copytree(workspace, ws, ignore=shutil.ignore_patterns(".cache"))
    cache = workspace / ".cache"  # shared by the pages: an encoder embeds each image once
    env = {
        "LBEE_CACHE_DIR": str(cache),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
        "MPLBACKEND": "Agg",
    }
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.chdir(ws)
    ns = {"__name__": "__docs__"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the examples' own warnings (bare arrays, random weights) are expected
        for block in blocks:
            if block.skip is not None:
                continue
            if block.file:
                dest = ws / block.file
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_text(block.text)
            elif block.lang in ("python", "pycon"):
                _run_python(block, ns)
            else:
                _run_shell(block, ws, env)


def test_markers_have_reasons_and_are_counted():
    """Every skipped example says why; the counts go to the warnings summary of the run."""
    blocks = [b for b in all_blocks() if b.lang in RUN_LANGS]
    skipped = [b for b in blocks if b.skip is not None]
    for b in skipped:
        assert len(b.skip) >= 10, f"{b.page}:{b.line}: a skip marker needs a reason (received {b.skip!r})"
    files = [b for b in all_blocks() if b.file]
    for b in files:
        assert b.lang not in RUN_LANGS, f"{b.page}:{b.line}: a file marker belongs before a data block"
    reasons = Counter(b.skip.split(":")[0].split("(")[0].strip() for b in skipped)
    assert len(blocks) - len(skipped) > len(skipped), "most examples must run"
    warnings.warn(
        f"documentation examples: {len(blocks) - len(skipped)} run, {len(skipped)} skipped ("
        + "; ".join(f"{n} × {r}" for r, n in reasons.most_common())
        + ")",
        UserWarning,
        stacklevel=1,
    )
