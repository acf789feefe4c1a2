"""The twelfth hostile-input sweep's findings, each reproduced and fixed (sweep report: 3 security, 4 hang, 1 silently
wrong, 7 lower)."""

import re

import numpy as np
import pytest

from lbee.io.confinement import confined_to


def _outside(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "secret"
    root.mkdir()
    outside.mkdir()
    (outside / "passwd").write_text("root:x:0:0:hunter2-password\n")
    return root, outside / "passwd"


def _swap_after_check(monkeypatch, secret):
    """Every sidecar checked is then swapped for a link to ``secret``: the race, made certain."""
    import lbee.io.confinement as confinement

    checked = confinement.sidecar

    def then_swapped(path, **kw):
        found = checked(path, **kw)
        if found is not None:
            found.unlink()
            found.symlink_to(secret)
        return found

    monkeypatch.setattr(confinement, "sidecar", then_swapped)


def _row_ids(emb):
    from lbee.io.row_ids import check_row_ids

    check_row_ids(emb, 1, ["b.png"], "image_embeddings", against="the predictions table 'p.csv'")


def _provenance(emb):
    from lbee.io.provenance import read_provenance

    read_provenance(emb, "image_embeddings")


@pytest.mark.parametrize(
    "sidecar, text, read",
    [("e.ids.txt", "a.png\n", _row_ids), ("e.provenance.json", '{"kind": "image_embeddings"}', _provenance)],
)
def test_a_sidecar_swapped_for_a_link_after_its_check_is_never_read(tmp_path, monkeypatch, sidecar, text, read):
    """S1: the ids.txt beside embeddings (and the provenance record) was checked, then read by path; a flip race
    quoted an outside file's first line in the job error (3 of 25 jobs). It is now read through the descriptor
    checked."""
    root, secret = _outside(tmp_path)
    emb = root / "e.npy"
    np.save(emb, np.eye(1, 4))
    (root / sidecar).write_text(text)
    _swap_after_check(monkeypatch, secret)
    with confined_to(root), pytest.raises(ValueError, match="leads outside the data root") as err:
        read(emb)
    assert "hunter2" not in str(err.value) and "root:x" not in str(err.value)


def test_a_report_thumbnail_is_never_made_from_a_file_outside_the_root(tmp_path):
    """S2: thumbnails were opened by the images' paths with no root check; an image replaced by a link out after
    the embedding put the outside image into report.html (75 of 95 thumbnails)."""
    from PIL import Image

    from lbee.reports.thumbnails import ThumbnailCache

    root, _ = _outside(tmp_path)
    secret = tmp_path / "secret" / "red.png"
    Image.new("RGB", (32, 32), (255, 0, 0)).save(secret)
    inside = root / "ok.png"
    Image.new("RGB", (32, 32), (0, 0, 255)).save(inside)
    swapped = root / "swapped.png"
    swapped.symlink_to(secret)
    thumbs = ThumbnailCache(tmp_path / "cache")
    with confined_to(root):
        assert thumbs.data_uri(inside).startswith("data:image/jpeg;base64,")
        assert thumbs.data_uri(swapped) is None
    assert thumbs.data_uri(swapped) is not None  # on the command line (no root) a link is the user's own file


@pytest.fixture
def hostile_server():
    """A local HTTP server answering as a hostile lbee would: ``mode`` picks the answer."""
    import http.server
    import threading
    import time

    state = {"mode": None}

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _answer(self):
            mode = state["mode"]
            if mode == "huge_error":  # 100 MB of an error page
                self.send_response(500)
                self.send_header("content-length", str(100 << 20))
                self.end_headers()
                try:
                    for _ in range(100 << 4):
                        self.wfile.write(b"A" * (64 << 10))
                except OSError:
                    pass
            elif mode == "error_drip":  # an error whose message comes one byte at a time
                self.send_response(500)
                self.send_header("content-length", "100000")
                self.end_headers()
                try:
                    for _ in range(60):
                        self.wfile.write(b"x")
                        self.wfile.flush()
                        time.sleep(0.3)
                except OSError:
                    pass
            elif mode == "short":  # a job state that declares more bytes than it sends, then closes
                self.send_response(200)
                self.send_header("content-length", state.get("length", "1000"))
                self.send_header("connection", "close")
                self.end_headers()
                self.wfile.write(b'{"id": "j1", "status": "done"}')
                self.close_connection = True
            elif mode == "big":  # every result 65 MiB of 'x'
                size = 65 << 20
                self.send_response(200)
                self.send_header("content-length", str(size))
                self.end_headers()
                try:
                    for _ in range(size >> 20):
                        self.wfile.write(b"x" * (1 << 20))
                except OSError:
                    pass
            elif mode == "unauthorized":
                body = b'{"detail": "missing bearer token (lbee serve token create NAME)"}'
                self.send_response(401)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            elif mode == "drip":  # one byte at a time, for ever
                self.send_response(200)
                self.send_header("content-length", "100000")
                self.end_headers()
                try:
                    for _ in range(60):
                        self.wfile.write(b"{")
                        self.wfile.flush()
                        time.sleep(0.3)
                except OSError:
                    pass
            else:  # a job whose texts carry terminal escapes
                body = (
                    b'{"id": "j1", "status": "failed", "phase": "embedding\\u001b]0;PWNED\\u0007\\u001b[2J\\r", '
                    b'"error": "boom\\u001b[31m", "log": ["phase: x\\u001b[K"]}'
                )
                self.send_response(200)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        do_GET = do_POST = _answer

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield state, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_submit_reads_a_bounded_error_and_gives_up_on_a_drip_fed_answer(hostile_server):
    """H4: an HTTP error body was read whole (3.9 GB, then out of memory), and a server sending one byte every 20 s
    held `lbee submit` past its 60 s timeout (the timeout bounds each read, not the answer)."""
    import time

    from lbee.service.client import Client, ServiceError

    state, url = hostile_server
    client = Client(url, "tok", timeout=1.0)
    state["mode"] = "huge_error"
    t0 = time.monotonic()
    with pytest.raises(ServiceError, match="HTTP 500") as err:
        client.job("j1")
    assert len(str(err.value)) < 2200 and time.monotonic() - t0 < 10
    state["mode"] = "drip"
    t0 = time.monotonic()
    with pytest.raises(ServiceError, match="did not arrive in time"):
        client.job("j1")
    assert time.monotonic() - t0 < 5


def test_a_server_s_texts_reach_the_terminal_without_their_escape_sequences(hostile_server):
    """S4: `lbee submit` printed a server's job fields raw: an OSC sequence set the window title, CSI cleared the
    screen and '\\r' could overwrite 'failed'."""
    from lbee.service.client import Client

    state, url = hostile_server
    state["mode"] = "escapes"
    job = Client(url, "tok", timeout=5.0).job("j1")
    texts = [job["phase"], job["error"], *job["log"]]
    assert not any(ord(c) < 32 or 127 <= ord(c) < 160 for t in texts for c in t), texts
    assert job["phase"] == "embedding\\x1b]0;PWNED\\x07\\x1b[2J\\x0d" and job["error"] == "boom\\x1b[31m"


def test_a_parquet_of_one_long_value_repeated_through_its_dictionary_is_refused(tmp_path, monkeypatch):
    """H1: a dictionary-encoded column counts its dictionary once in the footer: a 37 KB file declaring 12 MB took
    more than 4.3 GB once decoded (a 13 KB one was read whole, at 2.7 GB). Here scaled down."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    import lbee.io.table_header as header
    from lbee.io.table_reader import read_table

    monkeypatch.setattr(header, "PARQUET_FREE_BYTES", 1 << 20)
    note = "x" * 200_000
    n = 400  # 80 MB decoded; the footer counts the value once
    table = pa.table({"image": [f"{i:04d}.png" for i in range(n)], "confidence": [0.5] * n, "note": [note] * n})
    pq.write_table(table, tmp_path / "d.parquet", compression="zstd", use_dictionary=True)
    size = (tmp_path / "d.parquet").stat().st_size
    meta = pq.read_metadata(tmp_path / "d.parquet")
    assert sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups)) < (1 << 20) + 64 * size
    with pytest.raises(ValueError, match=r"decodes to 80,[\d,]+ bytes of text, binary and decimal values from [\d,]+"):
        read_table(tmp_path / "d.parquet")
    # the same table without the repeated value reads as before
    pq.write_table(table.drop(["note"]), tmp_path / "ok.parquet", use_dictionary=True)
    assert len(read_table(tmp_path / "ok.parquet")) == n


def test_sensitivity_noise_levels_are_bounded_and_copies_made_batch_by_batch(monkeypatch):
    """H2: `--trials` was bounded but not the number of `--sigmas`: 200 σ × 100 trials built 40,000 noisy copies of
    one image at once (3.5 GB, then an allocation failure); `30,,60` and 1e308 were accepted."""
    from click.testing import CliRunner

    import lbee.analyses.sensitivity as sens
    from lbee.analyses.sensitivity import MAX_SIGMAS, check_sigmas
    from lbee.cli import cli

    assert check_sigmas([30, 60.5]) == [30.0, 60.5]
    for bad, said in [
        ([], "1 to 32 numbers"),
        (list(range(MAX_SIGMAS + 1)), "received 33 value(s)"),
        ([1e308], "in [0, 255]"),
        ([float("nan")], "in [0, 255]"),
        ([30, 30], "lists 30 more than once"),
    ]:
        with pytest.raises(ValueError, match=re.escape(said)):
            check_sigmas(bad)
    r = CliRunner().invoke(cli, ["sensitivity", "--ec", ".", "--sigmas", "30,,60", "--out", "o"], obj={})
    assert r.exit_code == 2 and "none left empty" in r.output, r.output
    # the copies are made as they are scored: never more than one batch of them at once
    import torch

    alive, most = [0], [0]
    made = sens.region_noise

    def counted(x, m, sigma, gen):
        fg, bg = made(x, m, sigma, gen)
        alive[0] += 2
        most[0] = max(most[0], alive[0])
        return fg, bg

    monkeypatch.setattr(sens, "region_noise", counted)

    class Model(torch.nn.Module):
        def forward(self, batch):
            alive[0] -= len(batch)  # scored: these copies are done with
            return torch.zeros(len(batch), 2)

    class Pre:
        @staticmethod
        def normalize(t):
            return t

    x, m = torch.rand(3, 8, 8), (torch.rand(8, 8) > 0.5).float()
    out = sens._one_image(Model(), x, m, 0, [10.0, 20.0, 30.0], 20, "k", Pre(), 8, "cpu")
    assert out["p_fg"].shape == (3, 20) and most[0] <= 8 + 2, most


def test_slicer_options_are_bounded_by_their_work_and_checked_before_any_run():
    """H3: Domino's in-range options (100,000 iterations of 1,000 components) were about 8 hours of a job worker;
    lower 3: PlaneSpot's reducer 'umap' and min_components > max_components were accepted (202) and failed in it."""
    from lbee import RunSettings

    assert RunSettings(slicers=[{"domino": {"max_iter": 400, "n_mixture_components": 250}}])  # 100,000: allowed
    for options, said in [
        ({"domino": {"max_iter": 1000, "n_mixture_components": 1000}}, "at most 100,000 component-iterations"),
        ({"domino": {"max_iter": 100_000}}, "expected an integer in [1, 1000]"),
        ({"domino": {"init_params": "bogus"}}, "`init_params` must be 'confusion', 'random' or 'kmeans'"),
        ({"planespot": {"reducer": "umap"}}, "`reducer` must be 'scvis', 'tsne' or 'pca'"),
        ({"planespot": {"min_components": 50, "max_components": 2}}, "must not exceed `max_components`"),
        ({"planespot": {"scvis_iter": 5_001}}, "expected an integer in [1, 5000]"),
    ]:
        with pytest.raises(ValueError, match=re.escape(said)):
            RunSettings(slicers=[options])


def test_two_different_confusions_never_read_as_one_pair():
    """Lower 1: with classes 'a' and 'a → a', the pairs (a, a → a) and (a → a, a) were both 'a → a → a': one
    filter option showed two different confusions."""
    import pandas as pd

    from lbee.reports.browse import IMAGE_COLUMNS, pair_text
    from lbee.reports.group_page import group_page

    rows = [("a", "a → a")] * 3 + [("a → a", "a")] * 2 + [("cat", "dog")]
    table = pd.DataFrame(
        {
            "image": [f"{i}.png" for i in range(len(rows))],
            "path": [f"/d/{i}.png" for i in range(len(rows))],
            "split": "hard",
            "group": 0,
            "sentence": None,
            "holds": None,
            "confidence": np.linspace(0.1, 0.2, len(rows)),
            "performance": 0.0,
            "label": [r[0] for r in rows],
            "prediction": [r[1] for r in rows],
        }
    )[list(IMAGE_COLUMNS)]
    page = group_page(table, 0)
    assert page["pairs"] == [('a → "a → a"', 3), ('"a → a" → a', 2), ("cat → dog", 1)]
    assert pair_text("cat", "dog") == "cat → dog"  # ordinary names read as before
    assert len(group_page(table, 0, pair='"a → a" → a')["rows"]) == 2


def test_an_error_says_when_its_message_came_too_slowly_and_a_401_names_the_token_flag(hostile_server):
    """Sweep 31: an error body sent one byte at a time ended as 'HTTP 500: ' and nothing more. Trial 20: a 401 from
    `lbee submit` named `lbee serve token create` but not how to give the token (--token, $LBEE_TOKEN)."""
    import time

    from lbee.service.client import Client, ServiceError

    state, url = hostile_server
    state["mode"] = "error_drip"
    t0 = time.monotonic()
    with pytest.raises(ServiceError, match=r"HTTP 500: \(its message did not arrive whole in time\)"):
        Client(url, "tok", timeout=1.0).job("j1")
    assert time.monotonic() - t0 < 5
    state["mode"] = "unauthorized"
    with pytest.raises(ServiceError, match=r"HTTP 401: missing bearer token .*--token or \$LBEE_TOKEN") as err:
        Client(url, None, timeout=1.0).job("j1")
    assert err.value.status == 401
    state["mode"] = "short"  # sweep 32: a report cut by a closed connection was written as whole
    with pytest.raises(ServiceError, match="ended after 30 of the 1,000 bytes it declared"):
        Client(url, "tok", timeout=2.0).job("j1")
    state["length"] = "+1_000"  # as int() and http.client read it (sweep 32c)
    with pytest.raises(ServiceError, match="ended after 30 of the 1,000 bytes it declared"):
        Client(url, "tok", timeout=2.0).job("j1")


def test_fetch_holds_one_result_at_a_time_and_a_json_result_at_most_64_mib(hostile_server, tmp_path):
    """Sweep 32d H-1: `fetch` held all four result files in memory before writing (2.7 GB from a hostile server
    sending 512 MiB each) and wrote 512 MiB of 'x' as explanation.json. A JSON result over the client's JSON bound
    is refused, and nothing is written."""
    from lbee.service.client import Client, ServiceError

    state, url = hostile_server
    state["mode"] = "big"
    with pytest.raises(ServiceError, match="explanation.*larger than 64 MiB"):
        Client(url, "tok", timeout=5.0).fetch("j1", tmp_path / "res")
    assert not (tmp_path / "res").exists() or not any((tmp_path / "res").iterdir())
