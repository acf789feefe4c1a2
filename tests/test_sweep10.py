"""The tenth hostile-input sweep's findings (issue 32): each one reproduced, and refused or right now."""

import zipfile

import numpy as np
import pytest

from lbee.io.confinement import PathEscape, confined_to


def test_files_read_late_in_a_job_are_confined_when_they_are_opened(tmp_path):
    """S1: a job's predictions and Γ were checked at the start and read after the embedding; a file (or its folder)
    swapped for a link out in between was read, and the job error quoted the outside file's first line."""
    from lbee.io.arrays import load_npy
    from lbee.io.table_reader import read_table
    from lbee.scoring.classifier import _load_state_dict

    root, out, outside = tmp_path / "root", tmp_path / "out", tmp_path / "secret"
    for d in (root / "r", out, outside):
        d.mkdir(parents=True)
    (outside / "passwd").write_text("root:x:0:0:hunter2-password:/root:/bin/bash\n")
    np.save(outside / "g.npy", np.ones((2, 2)))
    (root / "r" / "preds.csv").symlink_to(outside / "passwd")
    (root / "r" / "rel.npy").symlink_to(outside / "g.npy")
    (root / "r" / "w.pt").symlink_to(outside / "passwd")
    (root / "r2").symlink_to(outside)  # a folder swapped for a link
    (out / "mine.csv").write_text("image,confidence\na.png,0.5\n")
    with confined_to(root, out):
        for read in (
            lambda: read_table(root / "r" / "preds.csv"),
            lambda: read_table(root / "r2" / "passwd.csv"),
            lambda: load_npy(root / "r" / "rel.npy", "relevance"),
            lambda: _load_state_dict(None, root / "r" / "w.pt"),
        ):
            with pytest.raises(PathEscape, match="leads outside the data root") as err:
                read()
            assert "hunter2" not in str(err.value) and str(outside) not in str(err.value)
        assert len(read_table(out / "mine.csv")) == 1  # the job's own output folder is readable
        from lbee.io.sentences import load_sentence_set

        assert load_sentence_set("spotcheck").sentences  # and lbee's own sentence sets
    assert read_table(root / "r" / "preds.csv").columns.tolist()  # the command line: a user's own links are theirs


def test_a_compressed_weights_archive_is_refused_before_it_inflates(tmp_path):
    """H1: a 4 MB deflated state dict inflated to 4.8 GB in the worker; torch.save writes entries stored."""
    torch = pytest.importorskip("torch")
    from lbee.scoring.classifier import _load_state_dict

    good = tmp_path / "good.pt"
    torch.save({"w": torch.zeros(3)}, good)
    bomb = tmp_path / "bomb.pt"
    with zipfile.ZipFile(good) as src, zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info.filename))
    assert torch.load(bomb, weights_only=True)["w"].shape == (3,)  # torch itself reads it
    with pytest.raises(ValueError, match="has compressed entries"):
        _load_state_dict(torch.nn.Linear(3, 1), bomb)
    with pytest.raises(ValueError, match="lacks|missing|parameter"):  # a stored archive goes on to the check
        _load_state_dict(torch.nn.Linear(3, 1), good)


def test_the_client_never_follows_a_redirect_with_the_token(tmp_path):
    """S2: `lbee submit` followed a 302 to another host with the bearer token, and took a GET's answer there as
    the job it had submitted."""
    import http.server
    import threading

    from lbee.service.client import Client, ServiceError

    seen = []

    class Other(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            seen.append(self.headers.get("Authorization"))
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b'{"id": "abc", "status": "done"}')

        def log_message(self, *args):
            pass

    other = http.server.HTTPServer(("127.0.0.1", 0), Other)

    class Redirector(http.server.BaseHTTPRequestHandler):
        def _go(self):
            self.send_response(302)
            self.send_header("Location", f"http://127.0.0.1:{other.server_port}{self.path}")
            self.end_headers()

        do_GET = do_POST = _go  # noqa: N815

        def log_message(self, *args):
            pass

    first = http.server.HTTPServer(("127.0.0.1", 0), Redirector)
    for server in (first, other):
        threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        client = Client(f"http://127.0.0.1:{first.server_port}", token="lbee_SECRET")
        with pytest.raises(ServiceError, match="answered with a redirect to .*never redirects, so the token"):
            client.submit({"name": "x", "spotcheck": {"seed": 0}})
        with pytest.raises(ServiceError, match="redirect"):
            client.job("abc")
    finally:
        first.shutdown()
        other.shutdown()
    assert seen == []
