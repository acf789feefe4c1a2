"""Sweep 29: a hostile server against the client, and VQA's answer cache and output.

Each hang is asserted with a generous time bound (the fix ends it within a second or two): B1, a server that holds
the client forever with its status line, headers or chunk framing; B2, an answer-cache shard that is a FIFO or a
deflate bomb. B3, a VQA table written in place (a kill left 0 bytes), and B4, cached answers used unchecked.
"""

import os
import socket
import threading
import time

import numpy as np
import pytest

from lbee.service.client import Client, ServiceError


def bounded(call, seconds):
    """``call()``'s outcome, ("ok", value) or ("raised", exception), or None when it is still running after
    ``seconds``: a hang bound, not a timing (the call is left in a daemon thread)."""
    done = []

    def run():
        try:
            done.append(("ok", call()))
        except BaseException as exc:  # noqa: BLE001  (reported to the test)
            done.append(("raised", exc))

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    return done[0] if done else None


JOB = b'{"id": "j1", "status": "done", "phase": "done", "runs": []}'
CHUNKED = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"


def _hostile(mode, stop):
    """Answer each connection as ``mode`` says, until ``stop`` is set (or the client hangs up)."""

    def endless(c, data, pause=0.0):
        while not stop.is_set():
            c.sendall(data)
            if pause:
                time.sleep(pause)

    def answer(c):
        try:
            c.settimeout(5)
            req = b""
            while b"\r\n\r\n" not in req:
                req += c.recv(65536)
            if mode == "continue_flood":  # http.client skips 100 Continue answers without end
                endless(c, b"HTTP/1.1 100 Continue\r\n\r\n" * 100)
            elif mode == "trailer_flood":  # a whole chunked answer, then trailer lines without end
                c.sendall(CHUNKED + b"%x\r\n" % len(JOB) + JOB + b"\r\n0\r\n")
                endless(c, b"X-T: y\r\n" * 100)
            elif mode == "header_drip":  # one byte of a header every 0.2 s: never past the per-read timeout
                c.sendall(b"HTTP/1.1 200 OK\r\nX-A: ")
                endless(c, b"a", 0.2)
            elif mode == "chunksize_drip":
                c.sendall(CHUNKED + b"1\r\n{\r\n")
                endless(c, b"0", 0.2)
            elif mode == "header_flood":  # more than http.client's 100 headers: a traceback before
                c.sendall(b"HTTP/1.1 200 OK\r\n" + b"X: y\r\n" * 200 + b"\r\n")
        except OSError:
            pass
        finally:
            c.close()

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    srv.settimeout(0.2)

    def serve():
        while not stop.is_set():
            try:
                c, _ = srv.accept()
            except OSError:
                continue
            threading.Thread(target=answer, args=(c,), daemon=True).start()
        srv.close()

    threading.Thread(target=serve, daemon=True).start()
    return f"http://127.0.0.1:{srv.getsockname()[1]}"


@pytest.mark.parametrize("mode", ["continue_flood", "trailer_flood", "header_drip", "chunksize_drip"])
def test_b1_a_server_never_holds_the_client_past_its_deadline(mode):
    """With a 1 s timeout, each request ends in a ServiceError within a few seconds (before: still held at 30 s)."""
    stop = threading.Event()
    url = _hostile(mode, stop)
    try:
        outcome = bounded(lambda: Client(url, token="t", timeout=1.0).job("j1"), 30)
        assert outcome is not None, "still held by the server after 30 s"
        kind, exc = outcome
        assert kind == "raised" and isinstance(exc, ServiceError), exc
        assert "did not arrive in time" in str(exc) or "not HTTP an lbee server sends" in str(exc)
    finally:
        stop.set()


def test_b1_an_answer_that_is_not_http_is_one_clear_error_not_a_traceback():
    stop = threading.Event()
    url = _hostile("header_flood", stop)
    try:
        with pytest.raises(ServiceError, match="not HTTP an lbee server sends"):
            Client(url, token="t", timeout=2.0).job("j1")
    finally:
        stop.set()


# ---- VQA: the answer cache and the output table


def _vqa_inputs(tmp_path):
    from PIL import Image

    imgs = tmp_path / "imgs"
    imgs.mkdir()
    for i in range(6):
        Image.new("RGB", (8, 8), (40 * i, 0, 0)).save(imgs / f"im{i}.png")
    sentences = ["An image taken at night", "An image taken in the snow", "An image of a dog"]
    (tmp_path / "s.txt").write_text("\n".join(sentences) + "\n")
    rows = [f"im{i}.png,{s},{int((i + j) % 2 == 0)}" for i in range(6) for j, s in enumerate(sentences)]
    (tmp_path / "meta.csv").write_text("image,sentence,relevant\n" + "\n".join(rows) + "\n")
    return imgs


def _vqa(tmp_path, out, *extra):
    from click.testing import CliRunner

    from lbee.cli import cli

    args = ["vqa", "--images", str(tmp_path / "imgs"), "--sentences", str(tmp_path / "s.txt")]
    args += ["--backend", "metadata", "--metadata", str(tmp_path / "meta.csv"), "--out", str(out), *extra]
    return CliRunner().invoke(cli, args, obj={}, env={"LBEE_CACHE_DIR": str(tmp_path / "cache")})


def _shard_folder(tmp_path):
    (folder,) = list((tmp_path / "cache" / "embeddings").glob("*/answers"))
    return folder


def _relevant(path):
    import pandas as pd

    t = pd.read_csv(path)
    return sorted(zip(t["image"], t["sentence"], t["relevant"]))


def test_b2_b4_a_foreign_or_damaged_answer_shard_is_a_miss(tmp_path):
    """A FIFO shard blocked for ever, a deflated one took 1.3 GB, flipped values were used as they were: each is
    now a miss, and the answers are asked again (the metadata table's)."""
    import io
    import zipfile

    _vqa_inputs(tmp_path)
    r = _vqa(tmp_path, tmp_path / "r1.csv")
    assert r.exit_code == 0, r.output
    truth = _relevant(tmp_path / "r1.csv")
    folder = _shard_folder(tmp_path)
    (shard,) = list(folder.glob("shard-*.npz"))
    data = dict(np.load(shard))
    flipped = 1.0 - data["values"]
    flipped[0] = 7.0
    np.savez(shard, **{**data, "values": flipped})  # damaged in place
    os.mkfifo(folder / "shard-fifo.npz")
    values = io.BytesIO()
    np.save(values, np.zeros(2_000_000))
    keys = io.BytesIO()
    np.save(keys, np.array(["a"]))
    with zipfile.ZipFile(folder / "shard-bomb.npz", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("keys.npy", keys.getvalue())
        z.writestr("values.npy", values.getvalue())
    outcome = bounded(lambda: _vqa(tmp_path, tmp_path / "r2.csv"), 120)
    assert outcome is not None, "blocked on the FIFO shard"
    r = outcome[1]
    assert outcome[0] == "ok" and r.exit_code == 0, r
    assert _relevant(tmp_path / "r2.csv") == truth
    import pandas as pd

    p = pd.read_csv(tmp_path / "r2.csv")["metadata_p"]
    assert p.between(0, 1).all()


def test_b4_a_shard_whose_rows_moved_is_a_miss(tmp_path):
    """Values in range, but each moved to another key: the digest of each key with its value shows it."""
    _vqa_inputs(tmp_path)
    assert _vqa(tmp_path, tmp_path / "r1.csv").exit_code == 0
    truth = _relevant(tmp_path / "r1.csv")
    (shard,) = list(_shard_folder(tmp_path).glob("shard-*.npz"))
    data = dict(np.load(shard))
    data["values"] = np.roll(data["values"], 1)
    np.savez(shard, **data)
    assert _vqa(tmp_path, tmp_path / "r2.csv").exit_code == 0
    assert _relevant(tmp_path / "r2.csv") == truth


def test_b3_the_vqa_table_is_replaced_whole_or_not_at_all(tmp_path, monkeypatch):
    """--overwrite wrote onto the file itself: a kill left 0 bytes, or a well-formed table of 138 of 1,500 images.
    Now a failure while writing leaves the old table whole."""
    _vqa_inputs(tmp_path)
    out = tmp_path / "r.csv"
    assert _vqa(tmp_path, out).exit_code == 0
    before = out.read_bytes()

    def dies(fd, *args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", dies)
    r = _vqa(tmp_path, out, "--overwrite")
    assert r.exit_code != 0
    assert out.read_bytes() == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]


def test_the_vqa_table_format_follows_its_suffix_or_is_refused(tmp_path):
    """--out rel.tsv was written as parquet under a .tsv name."""
    _vqa_inputs(tmp_path)
    r = _vqa(tmp_path, tmp_path / "rel.tsv")
    assert r.exit_code == 2 and "expected .csv or .parquet" in r.output
    assert not (tmp_path / "rel.tsv").exists()


@pytest.mark.parametrize("kind", ["fifo", "dangling"])
def test_submit_refuses_an_out_that_is_no_folder_before_the_job_runs(tmp_path, kind):
    """--out a FIFO or a dangling link was refused only after the job had run, as "File exists"."""
    from click.testing import CliRunner

    from lbee.cli import cli

    out = tmp_path / "out"
    if kind == "fifo":
        os.mkfifo(out)
    else:
        out.symlink_to(tmp_path / "nowhere")
    (tmp_path / "entry.yaml").write_text("name: x\nspotcheck: {seed: 0}\n")
    # a port nothing listens on: a job submitted there would say it cannot reach the server
    args = ["submit", str(tmp_path / "entry.yaml"), "--url", "http://127.0.0.1:9", "--token", "t", "--out", str(out)]
    r = CliRunner().invoke(cli, args, obj={})
    assert r.exit_code != 0 and "--out" in r.output and "not a writable folder" in r.output, r.output
    assert "Cannot reach" not in r.output and "File exists" not in r.output  # what is there, in words (sweep 32m)
    said = " ".join(r.output.split())
    assert ("it is a FIFO" if kind == "fifo" else "is a symbolic link to nothing") in said, said
