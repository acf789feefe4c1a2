"""Sweep 32u: what the folder-trust rule and 32t's fixes left open."""

import os
import threading

import numpy as np
import pytest
from test_sweep32s import describe_args, stored_run  # noqa: F401  (a fixture: a stored run of 60 images)

from lbee.io.folder_trust import TRUST_ENV, SharedFolderError, untrusted_folder

needs_root = pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="needs root to chown")


@pytest.fixture(autouse=True)
def _no_trust(monkeypatch):
    monkeypatch.delenv(TRUST_ENV, raising=False)


@needs_root
def test_a_stage_folder_another_user_makes_in_the_gap_is_refused(tmp_path, monkeypatch):
    """B1: the library checked a folder that did not exist yet, then made it with exist_ok: another user who made it
    first (owning it) had it accepted, and swapped the stage; a root-only folder's report.md was replaced."""

    from lbee.io.staging import staged_entries

    home = tmp_path / "new"

    def made_by_another(real_mkdir):  # the racer wins: the folder is theirs when lbee's mkdir runs
        real_mkdir(str(home))
        os.chown(home, 65534, 65534)

    _racing_mkdir(monkeypatch, home, made_by_another)
    with pytest.raises(SharedFolderError, match="owned by user"):
        with staged_entries(home / "run"):
            pytest.fail("a stage was made in the other user's folder")
    assert list(home.iterdir()) == []


def test_a_group_another_user_has_as_primary_group_is_not_private(tmp_path, monkeypatch):
    """B2: "your own private group" looked only at the group's listed members; a user whose primary group it is
    (openSUSE's `users`, a lab's LDAP group) could change a group-writable folder and swapped a stage."""
    import pwd

    folder = tmp_path / "g"
    folder.mkdir()
    os.chmod(folder, 0o775)
    os.chown(folder, os.geteuid(), os.getegid())
    me = pwd.getpwuid(os.geteuid())
    monkeypatch.setattr("grp.getgrgid", lambda gid: type("G", (), {"gr_mem": [], "gr_name": me.pw_name})())
    monkeypatch.setattr("pwd.getpwall", lambda: [me])
    assert untrusted_folder(folder / "run") is None  # alone in the group: as umask 002 makes folders
    other = pwd.struct_passwd(("_apt", "x", me.pw_uid + 4242, os.getegid(), "", "/", "/bin/sh"))
    monkeypatch.setattr("pwd.getpwall", lambda: [me, other])
    assert untrusted_folder(folder / "run") == (str(folder), f"writable by group {me.pw_name}")


def test_a_fifo_swapped_onto_a_stored_runs_table_never_blocks_its_reader(stored_run, monkeypatch):  # noqa: F811
    """B3: stored_images_table checked images.parquet by path, then read it by path: a FIFO swapped in between
    blocked the server's threads for good (and SIGTERM then)."""
    import lbee._files as files
    from lbee.reports.stored_table import stored_images_table

    run = stored_run / "run"
    table = run / "assignments.parquet"
    real = files.check_regular_file

    def checked_then_swapped(path, what):
        real(path, what)
        if str(path) == str(table):  # the swap lands after the check
            table.unlink()
            os.mkfifo(table)

    monkeypatch.setattr(files, "check_regular_file", checked_then_swapped)
    said = []

    def read():
        try:
            stored_images_table(run)
        except ValueError as exc:
            said.append(str(exc))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(10)
    assert not reader.is_alive() and said and "not a regular file" in said[0]


def test_no_cache_write_goes_through_a_link_at_any_level_and_a_cache_of_another_users_is_refused(tmp_path):
    """B4: the embedding cache checked only its last folder for a link: a link at embeddings/<key> replaced a file
    outside the cache; a cache in another user's folder was used without a word."""
    from lbee.io.cache import EmbeddingCache

    cache = EmbeddingCache({"encoder": "x"}, tmp_path / "cache")
    outside = tmp_path / "outside"
    (outside / "sentences").mkdir(parents=True)
    planted = outside / "sentences" / cache._sentence_path(["a", "b"]).name
    planted.write_bytes(b"PLANTED")
    cache.root.parent.mkdir(parents=True)
    cache.root.symlink_to(outside)
    cache.put_sentences(["a", "b"], np.ones((2, 4)))
    cache.put_images(["h1"], np.ones((1, 4)))
    assert planted.read_bytes() == b"PLANTED" and sorted(p.name for p in outside.iterdir()) == ["sentences"]
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    with pytest.raises(SharedFolderError, match="writable by every user"):
        EmbeddingCache({"encoder": "x"}, shared / "cache")


def test_the_run_list_shows_no_findings_of_another_runs_explanation(stored_run, tmp_path):  # noqa: F811
    """B5: another run's whole, valid explanation.json copied into a run's folder: the run list showed its findings
    as the run's own, while the run's /explanation answered 409."""
    import shutil

    from click.testing import CliRunner

    from lbee.cli import cli
    from lbee.service.views import stored_findings

    assert stored_findings(stored_run, "run") is not None
    args = describe_args(tmp_path)
    r = CliRunner().invoke(cli, [*args, "--clusters", "3", "--a", "0.1", "--out", str(stored_run / "other")], obj={})
    assert r.exit_code == 0, r.output
    assert stored_findings(stored_run, "other") is not None
    shutil.copy(stored_run / "other" / "explanation.json", stored_run / "run" / "explanation.json")
    assert stored_findings(stored_run, "run") is None


def test_an_output_spelled_through_a_link_and_dotdot_is_checked_where_the_kernel_resolves_it(tmp_path):
    """N1: `--out l/../run` (l a link into another folder) was made where the kernel resolves it, then probed where
    Python's lexical path put it: "not a writable folder", and a probe file made in the lexical folder."""
    from lbee.cli._base import check_writable_folder

    (tmp_path / "B" / "sub").mkdir(parents=True)
    (tmp_path / "l").symlink_to(tmp_path / "B" / "sub")
    check_writable_folder(os.path.join(tmp_path, "l", "..", "run"), "--out")
    assert (tmp_path / "B" / "run").is_dir() and not (tmp_path / "run").exists()


@needs_root
def test_a_link_put_where_a_stage_folder_is_being_made_is_refused(tmp_path, monkeypatch):
    """Sweep 32v B1: the folder holding a stage was checked after it was made, but through a link another user put
    there in the gap (in a sticky folder they may write), which they repointed later: the stage went elsewhere."""

    from lbee.io.staging import staged_entries

    home, safe = tmp_path / "new", tmp_path / "safe"
    safe.mkdir()

    def linked(real_mkdir):  # the racer's link lands first
        home.symlink_to(safe)
        os.lchown(home, 65534, 65534)

    _racing_mkdir(monkeypatch, home, linked)
    with pytest.raises(SharedFolderError, match="a symbolic link owned by user"):
        with staged_entries(home / "run"):
            pytest.fail("a stage was made through the link")
    assert list(safe.iterdir()) == []


def test_the_digest_of_a_runs_explanation_never_waits_or_swells(tmp_path):
    """Sweep 32v B2: `lbee evaluate` and `export spotlight` read explanation.json by path, unbounded, before any
    check: a FIFO hung them, a link to /dev/zero took 18 GB."""
    from lbee.run.outputs import run_digest

    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "explanation.json").symlink_to("/dev/zero")
    assert run_digest(tmp_path / "a") is None
    (tmp_path / "b").mkdir()
    os.mkfifo(tmp_path / "b" / "explanation.json")
    said = []
    reader = threading.Thread(target=lambda: said.append(run_digest(tmp_path / "b")), daemon=True)
    reader.start()
    reader.join(10)
    assert said == [None]


def test_the_vega_bundle_is_never_read_or_written_through_a_link_in_the_cache(tmp_path):
    """Sweep 32v B3: a link at <cache>/vega took the bundle outside the cache, and a bundle planted through it was
    inlined as a <script> into root's report."""
    from lbee.reports.vega import vega_bundle

    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "vega").symlink_to(outside)
    vega_bundle.cache_clear()
    first = vega_bundle(tmp_path / "cache")
    assert first and list(outside.iterdir()) == []  # nothing written through the link
    vega_bundle.cache_clear()
    vega_bundle(tmp_path / "plain")  # without a link: the bundle is kept, under its own name
    (name,) = [p.name for p in (tmp_path / "plain" / "vega").iterdir()]
    (outside / name).write_text("PLANTED")  # what another user put where the link points
    vega_bundle.cache_clear()
    assert "PLANTED" not in vega_bundle(tmp_path / "cache")
    vega_bundle.cache_clear()


def _racing_mkdir(monkeypatch, home, racer):
    """Make the ``mkdir`` of ``home`` run ``racer(real_mkdir)`` first, once (another user's move in the gap)."""
    real_mkdir = os.mkdir

    def mkdir(path, *args, dir_fd=None, **kwargs):
        full = os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), path) if dir_fd is not None else str(path)
        if full == str(home) and not os.path.lexists(home):
            racer(real_mkdir)
        return real_mkdir(path, *args, dir_fd=dir_fd, **kwargs)

    monkeypatch.setattr(os, "mkdir", mkdir)
