"""`lbee export spotlight`: the file, and Renumics Spotlight showing it in a real headless Chromium.

Spotlight pins pandas < 3, so `make install` puts it into .venv-spotlight (pyproject's `spotlight` extra); the
browser test starts Spotlight's own server from there (or $LBEE_SPOTLIGHT, or a `spotlight` on PATH). Without it
the browser test is skipped, and fails under CI=true, as the report's browser test does.
"""

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from lbee.cli import cli
from lbee.reports.spotlight import SPOTLIGHT_COLUMNS, spotlight_command
from tests.test_report_browser import _browser

ROOT = Path(__file__).resolve().parents[1]


def _spotlight_exe():
    for exe in (os.environ.get("LBEE_SPOTLIGHT"), ROOT / ".venv-spotlight" / "bin" / "spotlight"):
        if exe and Path(exe).is_file():
            return str(exe)
    return shutil.which("spotlight")


def _images_and_predictions(folder, n, side, *, seed):
    """``folder/imgs`` of n random PNGs and ``folder/preds.csv`` (confidence, performance); the generator after."""
    import numpy as np
    from PIL import Image

    (folder / "imgs").mkdir(parents=True)
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        Image.fromarray(rng.integers(0, 255, (side, side, 3), dtype=np.uint8)).save(folder / "imgs" / f"{i:02d}.png")
        rows.append({"image": f"{i:02d}.png", "confidence": float(rng.random()), "performance": 1.0})
    pd.DataFrame(rows).to_csv(folder / "preds.csv", index=False)
    return rng


def _export2(out, tmp_path):
    dest = tmp_path / "plain.parquet"
    r = CliRunner().invoke(cli, ["export", "spotlight", str(out), "--out", str(dest)], obj={})
    assert r.exit_code == 0, r.output
    return dest


def _export(out, tmp_path):
    dest = tmp_path / "run.parquet"
    r = CliRunner().invoke(cli, ["export", "spotlight", str(out), "--out", str(dest)], obj={})
    assert r.exit_code == 0, r.output
    assert f"Wrote {dest}" in r.output and f"spotlight {dest} --dtype image=Image" in r.output
    return dest


def test_export_has_one_row_per_image_with_hypothesis_sentence_split_confidence(demo_run, tmp_path):
    out, _ = demo_run
    table = pd.read_parquet(_export(out, tmp_path))
    assign = pd.read_parquet(out / "assignments.parquet")
    # with each image's embedding, for Spotlight's similarity map (a fifth user found it empty): the demo's inputs
    assert list(table.columns) == [*SPOTLIGHT_COLUMNS, "embedding"] and len(table) == len(assign)
    import numpy as np

    emb = np.stack(table["embedding"].to_numpy())
    assert np.array_equal(emb, np.load(out / "inputs" / "image_embeddings.npy").astype(np.float32))
    assert table["image_id"].tolist() == assign["image"].tolist()
    assert all(Path(p).is_file() and Path(p).is_absolute() for p in table["image"])
    hard = (assign["split"] == "hard") & (assign["cluster"] >= 0)
    # text (a third user saw Spotlight's Category of the integer column blank)
    assert (table["hypothesis"][hard] == "group " + assign["cluster"][hard].astype(str)).all()
    # a hard image in no hypothesis told apart from an easy one (trial 25: both were "none")
    unexplained = (assign["split"] == "hard") & (assign["cluster"] < 0)
    assert (table["hypothesis"][unexplained] == "hard, in no hypothesis").all()
    assert (table["hypothesis"][assign["split"] != "hard"] == "none").all()
    assert table["sentence"][hard].notna().all() and table["sentence"][~hard].isna().all()
    held = set(json.loads((out / "explanation.json").read_text())["confirmation"]["held_out"])
    assert table["split"].tolist() == ["held-out" if i in held else s for i, s in enumerate(assign["split"])]
    assert table["confidence"].tolist() == pytest.approx(assign["confidence"].tolist())
    assert table["label"].notna().all() and table["holds"][hard].notna().all()
    # the run's findings, the strongest one an image holds for (a twenty-second user could not filter to theirs)
    conf = json.loads((out / "explanation.json").read_text())["confirmation"]
    findings = [conf["statements"][j] for j in conf["ranked"] if "holds_for" in conf["statements"][j]]
    assert findings and set(table["finding_statement"].dropna()) == {s["text"] for s in findings}
    strongest = findings[0]
    assert (table["finding_statement"][strongest["holds_for"]] == strongest["text"]).all()
    assert (table["finding"][strongest["holds_for"]] == "finding 1").all()
    anywhere = set().union(*(s["holds_for"] for s in findings))
    outside = [i for i in range(len(table)) if i not in anywhere]
    assert (table["finding"][outside] == "none").all() and table["finding_statement"][outside].isna().all()
    # and images.parquet, for the user's own tools (a twenty-sixth user found them in the Spotlight table only)
    images = pd.read_parquet(out / "images.parquet")
    assert images["finding"].tolist() == table["finding"].astype(str).tolist()
    assert images["finding_statement"].tolist() == table["finding_statement"].tolist()


def test_export_of_a_run_made_from_a_relative_folder_finds_every_image(tmp_path, monkeypatch):
    """A new user's run: `lbee describe imgs/ ... --html` from their folder, then the export from another one
    wrote image = None on every row (the recorded paths were relative to where describe ran)."""
    import numpy as np

    work = tmp_path / "work"
    rng = _images_and_predictions(work, 40, 8, seed=0)
    np.save(work / "x.npy", rng.normal(size=(40, 6)))
    np.save(work / "s.npy", rng.normal(size=(4, 6)))
    (work / "s.txt").write_text("An image of a\nAn image of b\nAn image of c\nAn image of d\n")
    monkeypatch.chdir(work)
    args = ["describe", "imgs", "--image-embeddings", "x.npy", "--sentence-embeddings", "s.npy", "--sentences"]
    r = CliRunner().invoke(
        cli,
        args + ["s.txt", "--predictions", "preds.csv", "--clusters", "2", "--confirm", "0", "--out", "run", "--html"],
        obj={},
    )
    assert r.exit_code == 0, r.output
    monkeypatch.chdir(tmp_path)
    table = pd.read_parquet(_export(work / "run", tmp_path))
    assert table["image"].notna().all() and all(Path(p).is_file() for p in table["image"])
    assert "embedding" not in table.columns  # precomputed, without provenance: no encoder to look them up by
    # the second new user: a run without --html exported no path at all (no images.parquet was written)
    monkeypatch.chdir(work)
    r = CliRunner().invoke(
        cli,
        args + ["s.txt", "--predictions", "preds.csv", "--clusters", "2", "--confirm", "0", "--out", "plain"],
        obj={},
    )
    assert r.exit_code == 0 and "images.parquet" in r.output, r.output
    monkeypatch.chdir(tmp_path)
    table = pd.read_parquet(_export2(work / "plain", tmp_path))
    assert table["image"].notna().all() and all(Path(p).is_file() for p in table["image"])


def test_export_takes_each_image_s_embedding_from_the_cache_its_run_filled(tmp_path):
    """A run that embedded its images (`lbee describe imgs/ --encoder ...`) exports their embeddings from the cache,
    looked up by content: Spotlight's similarity map then works; the command types the column as an Embedding."""
    import numpy as np

    _images_and_predictions(tmp_path, 24, 16, seed=1)
    cache = ["--cache-dir", str(tmp_path / "cache")]
    args = ["describe", str(tmp_path / "imgs"), "--encoder", "spotcheck", "--sentences", "spotcheck"]
    args += ["--predictions", str(tmp_path / "preds.csv"), "--clusters", "2", "--confirm", "0", "-q"]
    r = CliRunner().invoke(cli, [*cache, *args, "--out", str(tmp_path / "run")], obj={})
    assert r.exit_code == 0, r.output
    dest = tmp_path / "e.parquet"
    r = CliRunner().invoke(cli, [*cache, "export", "spotlight", str(tmp_path / "run"), "--out", str(dest)], obj={})
    assert r.exit_code == 0 and "embeddings from the embedding cache" in r.output, r.output
    assert "--dtype embedding=Embedding" in r.output
    emb = np.stack(pd.read_parquet(dest)["embedding"].to_numpy())
    assert emb.shape[0] == 24 and np.allclose(np.linalg.norm(emb, axis=1), 1, atol=1e-4)
    # another cache (another machine): said, and the file still written
    dest2 = tmp_path / "f.parquet"
    other = ["--cache-dir", str(tmp_path / "empty")]
    r = CliRunner().invoke(cli, [*other, "export", "spotlight", str(tmp_path / "run"), "--out", str(dest2)], obj={})
    assert r.exit_code == 0 and "no embedding column: 24 of the 24 images have no embedding in the cache" in r.output
    assert "embedding" not in pd.read_parquet(dest2).columns and "embedding=Embedding" not in r.output


def test_export_of_a_folder_without_a_run_is_one_line(tmp_path):
    r = CliRunner().invoke(cli, ["export", "spotlight", str(tmp_path)], obj={})
    assert r.exit_code == 1 and "holds neither images.parquet nor explanation.json" in r.output
    assert "Traceback" not in r.output


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_spotlight_opens_the_export_in_chromium_with_one_row_per_image(demo_run, tmp_path):
    """Spotlight's own server, started on the exported file, shows it in the browser: all rows, our columns."""
    exe = _spotlight_exe()
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail("Renumics Spotlight is required in CI (make install puts it into .venv-spotlight)")
        pytest.skip("Renumics Spotlight not installed: the Spotlight browser test did NOT run (make install)")
    out, _ = demo_run
    dest = _export(out, tmp_path)
    exported = pd.read_parquet(dest)
    n, cols = len(exported), len(exported.columns)  # with the embedding column
    port = _free_port()
    args = spotlight_command(dest)[1:] + ["--host", "127.0.0.1", "--port", str(port), "--no-browser"]
    env = {**os.environ, "SPOTLIGHT_OPT_OUT": "1", "HOME": str(tmp_path)}  # its settings stay in the test's folder
    log = tmp_path / "spotlight.log"
    with open(log, "wb") as fh:  # a file, not a pipe: a chatty server never blocks on a full pipe
        server = subprocess.Popen(  # a session of its own: its worker processes end with it (they outlived it)
            [exe, *args, "--no-filebrowsing"], stdout=fh, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    driver = None
    try:
        for _ in range(240):  # Spotlight imports a lot before it listens
            try:
                if urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1).status == 200:
                    break
            except OSError:
                time.sleep(0.5)
            assert server.poll() is None, log.read_text(errors="replace")[-2000:]
        driver = _browser(tmp_path)
        driver.set_window_size(2800, 2400)  # every column in view: Spotlight draws only the visible ones
        driver.get(f"http://127.0.0.1:{port}/")
        text = ""
        for _ in range(120):
            text = driver.execute_script("return document.body.innerText")
            if f"{cols} cols / {n} rows" in text and "hypothesis" in text:
                break
            time.sleep(0.5)
        driver.save_screenshot(str(tmp_path / "spotlight.png"))
    finally:
        if driver is not None:
            driver.quit()
        import signal

        for sig in (signal.SIGTERM, signal.SIGKILL):  # the whole group: Spotlight's multiprocessing workers too
            try:
                os.killpg(server.pid, sig)
            except ProcessLookupError:
                break
            try:
                server.wait(30)
            except subprocess.TimeoutExpired:
                continue
            if sig == signal.SIGTERM:
                try:
                    os.killpg(server.pid, signal.SIGKILL)  # workers left behind by a server that ended
                except ProcessLookupError:
                    pass
                break
    assert cols == len(SPOTLIGHT_COLUMNS) + 1 and f"{cols} cols / {n} rows" in text, text[-500:]
    # the similarity map has its embeddings (without them it asks to "Select columns and show at least two rows")
    assert "Select columns" not in text and "Similarity Map" in text
    lines = text.splitlines()
    assert lines[lines.index("All") + 1] == str(n)
    for column in ("image_id", "hypothesis", "sentence", "finding", "finding_statement", "split", "confidence"):
        assert column in lines
    assert "hard" in lines and "easy" in lines
    # the hypothesis cells show (a third user saw the integer column blank as a Category)
    assert any(ln.startswith("group ") for ln in lines) and "none" in lines, lines[:80]
    assert "finding 1" in lines, lines[:80]


def test_export_of_a_run_from_precomputed_embeddings_with_provenance_has_their_rows(tmp_path, monkeypatch):
    """A twenty-first user's run from their own encoder's embeddings (`--image-embeddings emb/embeddings.npy`,
    written with a provenance record): the export had no embedding column ("no embedding in the cache"). The run
    records the file and its data digest; the export reads the same rows, and refuses a file since changed."""
    import numpy as np

    from lbee.io.provenance import make_provenance, write_embeddings

    work = tmp_path / "work"
    rng = _images_and_predictions(work, 40, 8, seed=1)
    x, s = rng.normal(size=(40, 6)), rng.normal(size=(4, 6))
    ident = {"encoder": "mine", "model": "m", "weights": "w1"}
    write_embeddings(work / "x.npy", x, make_provenance("image_embeddings", x, identity=ident, tau=0.2))
    texts = ["An image of a", "An image of b", "An image of c", "An image of d"]
    (work / "s.txt").write_text("\n".join(texts) + "\n")
    write_embeddings(
        work / "s.npy", s, make_provenance("sentence_embeddings", s, identity=ident, tau=0.2, sentences=texts)
    )
    monkeypatch.chdir(work)
    args = ["describe", "imgs", "--image-embeddings", "x.npy", "--sentence-embeddings", "s.npy", "--sentences"]
    args += ["s.txt", "--predictions", "preds.csv", "--clusters", "2", "--confirm", "0", "--out", "run"]
    r = CliRunner().invoke(cli, args, obj={})
    assert r.exit_code == 0, r.output
    monkeypatch.chdir(tmp_path)  # exported from another folder: the run recorded 'x.npy' (trial 25 found none)
    table = pd.read_parquet(_export(work / "run", tmp_path))
    ids = table["image_id"].tolist()
    order = [sorted(p.name for p in (work / "imgs").iterdir()).index(Path(i).name) for i in ids]
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    got = np.stack(table["embedding"].to_numpy())
    assert np.allclose(got / np.linalg.norm(got, axis=1, keepdims=True), unit[order], atol=1e-6)
    # trial 28: a copy of the run elsewhere (as `lbee submit --out` fetches one) with --images the data folder
    import shutil

    shutil.copytree(work / "run", tmp_path / "fetched")
    r = CliRunner().invoke(
        cli, ["export", "spotlight", str(tmp_path / "fetched"), "--images", str(work), "--out", "f.parquet"], obj={}
    )
    assert r.exit_code == 0 and "embeddings from" in r.output, r.output
    assert np.allclose(np.stack(pd.read_parquet("f.parquet")["embedding"].to_numpy()), got)
    y = x.copy()
    y[0] += 1  # the file replaced since the run (with its own, consistent record)
    write_embeddings(work / "x.npy", y, make_provenance("image_embeddings", y, identity=ident, tau=0.2))
    r = CliRunner().invoke(cli, ["export", "spotlight", str(work / "run"), "--out", str(tmp_path / "b.parquet")])
    assert r.exit_code == 0 and "digest differs" in r.output, r.output
    assert "embedding" not in pd.read_parquet(tmp_path / "b.parquet").columns
