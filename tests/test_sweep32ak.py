"""Sweep 32ak: lbee's own stores (the cache, its thumbnails and Vega bundle, a bench's records) under a loose umask,
in a sticky folder, or behind an ACL; the token database's mode; an ids.txt of another embedding run."""

import os
import stat

import numpy as np
import pytest

needs_root = pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="needs root to chown")


def _mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_the_cache_is_made_for_this_user_alone_whatever_the_umask(tmp_path):
    """B1 (a): under umask 000 the cache's inner folders were 0777, its shards 0666; another user's shard was read."""
    from lbee.io.cache import EmbeddingCache

    (tmp_path / "cache").mkdir(mode=0o755)  # the base, made under the usual umask (a new one under 000 is refused)
    old = os.umask(0)
    try:
        cache = EmbeddingCache({"encoder": "x"}, tmp_path / "cache")
        cache.put_images(["h1"], np.ones((1, 4)))
        cache.put_sentences(["a sentence"], np.ones((1, 4)))
    finally:
        os.umask(old)
    made = [p for p in (tmp_path / "cache").rglob("*")]
    assert made and all(_mode(p) & 0o022 == 0 for p in made), {str(p): oct(_mode(p)) for p in made}
    assert EmbeddingCache({"encoder": "x"}, tmp_path / "cache").get_images(["h1"]).keys() == {"h1"}


def test_a_shard_or_folder_another_user_can_write_is_never_read(tmp_path, caplog):
    """B1 (b): a shard of this user's left 0666 by a umask-000 run was rewritten by another user and read back."""
    import logging

    from lbee.io.cache import EmbeddingCache

    cache = EmbeddingCache({"encoder": "x"}, tmp_path / "cache")
    cache.put_images(["h1"], np.ones((1, 4)))
    cache.put_sentences(["s"], np.ones((1, 4)))
    (shard,) = (cache.root / "images").glob("shard-*.npz")
    os.chmod(shard, 0o666)
    (sentences,) = (cache.root / "sentences").glob("*.npz")
    os.chmod(sentences, 0o646)
    fresh = EmbeddingCache({"encoder": "x"}, tmp_path / "cache")
    assert fresh.get_images(["h1"]) == {} and fresh.get_sentences(["s"]) is None  # encoded again
    # a folder of its own another user can write (an earlier lbee under umask 000): while it was open its files could
    # be renamed among their names, so nothing in it is read, and it is said (sweep 32al BL4 read them once closed)
    os.chmod(shard, 0o644)
    os.chmod(cache.root / "images", 0o777)
    with caplog.at_level(logging.WARNING, logger="lbee"):
        again = EmbeddingCache({"encoder": "x"}, tmp_path / "cache")
        assert again.get_images(["h1"]) == {}
        again.put_images(["h2"], np.ones((1, 4)))  # nor written into
    assert _mode(cache.root / "images") == 0o777 and [p.name for p in (cache.root / "images").iterdir()] == [shard.name]
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and "writable by every user" in said[0] and "Remove it" in said[0], said


@needs_root
def test_entries_another_user_made_in_a_sticky_cache_folder_are_passed_over(tmp_path, caplog):
    """B8: with --cache-dir /tmp, another user made /tmp/embeddings/<key>/images first, and lbee read their shard;
    their /tmp/vega bundle was inlined in a report. Also B1 (c): their thumbnail in a folder of theirs."""
    import logging

    from lbee.io.cache import EmbeddingCache
    from lbee.reports import vega

    sticky = tmp_path / "sticky"
    sticky.mkdir()
    os.chmod(sticky, 0o1777)
    theirs = EmbeddingCache({"encoder": "x"}, sticky)
    theirs.put_images(["h1"], np.full((1, 4), 7.0))  # as if made by the other user: then handed to them
    for p in [sticky / "embeddings", *(sticky / "embeddings").rglob("*")]:
        os.chown(p, 65534, 65534, follow_symlinks=False)
    with caplog.at_level(logging.WARNING, logger="lbee"):
        mine = EmbeddingCache({"encoder": "x"}, sticky)
        assert mine.get_images(["h1"]) == {}  # not read
        mine.put_images(["h2"], np.ones((1, 4)))  # nor written into theirs
    assert not any(p.stat().st_uid != 65534 for p in (sticky / "embeddings").rglob("*"))
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and "owned by user" in said[0] and "embeddings" in said[0], said
    # their Vega bundle, in a folder of theirs: never inlined
    pytest.importorskip("vl_convert")
    real = vega.vega_bundle(tmp_path / "own")
    (sticky / "vega").mkdir()
    name = next((tmp_path / "own" / "vega").iterdir()).name
    (sticky / "vega" / name).write_text(real + ";window.PWNED=1;")
    os.chown(sticky / "vega", 65534, 65534)
    os.chown(sticky / "vega" / name, 65534, 65534)
    assert "PWNED" not in vega.vega_bundle(sticky)


def test_a_cached_vega_bundle_or_thumbnail_another_user_can_write_is_not_used(tmp_path):
    """B2: under umask 000 the bundle was 0666 in a 0777 folder; another user's script was inlined in every report."""
    pytest.importorskip("vl_convert")
    from lbee.reports import vega
    from lbee.reports.thumbnails import ThumbnailCache

    (tmp_path / "cache").mkdir(mode=0o755)
    old = os.umask(0)
    try:
        real = vega.vega_bundle(tmp_path / "cache")
    finally:
        os.umask(old)
    (bundle,) = (tmp_path / "cache" / "vega").iterdir()
    assert _mode(tmp_path / "cache" / "vega") == 0o755 and _mode(bundle) == 0o644
    bundle.write_text(real + ";window.PWNED=1;")
    os.chmod(bundle, 0o666)
    assert "PWNED" not in vega.vega_bundle(tmp_path / "cache")
    # a thumbnail: made for this user alone, and one another user can write is made again
    thumbs = ThumbnailCache(tmp_path / "cache")
    source = np.zeros((40, 40, 3), np.uint8)
    first = thumbs.data_uri(source)
    jpgs = list((tmp_path / "cache" / "thumbnails").rglob("*.jpg"))
    assert first and jpgs and all(_mode(p) & 0o022 == 0 for p in jpgs)


def _set_acl(path, entries):
    import struct

    raw = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in entries)
    try:
        os.setxattr(path, "system.posix_acl_access", raw)
    except OSError as exc:  # a file system without ACLs
        pytest.skip(f"no POSIX ACLs here: {exc}")


def test_a_folder_another_user_may_write_through_an_acl_is_not_trusted(tmp_path):
    """B4: `775 me me` with the ACL entry u:nobody:rwx was trusted as this user's; their shard was read."""
    from lbee.io.cache import EmbeddingCache
    from lbee.io.folder_trust import untrusted_folder

    folder = tmp_path / "acl"
    folder.mkdir()
    os.chmod(folder, 0o775)
    any_id = 0xFFFFFFFF
    _set_acl(folder, [(0x01, 7, any_id), (0x02, 7, 65534), (0x04, 5, any_id), (0x10, 7, any_id), (0x20, 5, any_id)])
    assert untrusted_folder(folder / "out") == (str(folder), "writable by user nobody through an ACL")
    # a named user who may only read, or a mask that takes write away: trusted
    _set_acl(folder, [(0x01, 7, any_id), (0x02, 5, 65534), (0x04, 5, any_id), (0x10, 7, any_id), (0x20, 5, any_id)])
    assert untrusted_folder(folder / "out") is None
    _set_acl(folder, [(0x01, 7, any_id), (0x02, 7, 65534), (0x04, 5, any_id), (0x10, 5, any_id), (0x20, 5, any_id)])
    assert untrusted_folder(folder / "out") is None
    # inside a cache, such a folder of this user's is passed over
    cache = EmbeddingCache({"encoder": "x"}, tmp_path / "cache")
    cache.put_images(["h1"], np.ones((1, 4)))
    images = cache.root / "images"
    os.chmod(images, 0o775)
    _set_acl(images, [(0x01, 7, any_id), (0x02, 7, 65534), (0x04, 5, any_id), (0x10, 7, any_id), (0x20, 5, any_id)])
    assert untrusted_folder(images / "x") == (str(images), "writable by user nobody through an ACL")
    assert EmbeddingCache({"encoder": "x"}, tmp_path / "cache").get_images(["h1"]) == {}


def test_a_token_database_another_user_can_write_is_refused(tmp_path):
    """B6: a 0666 lbee.db of this user's (touched under umask 000) was accepted; another user inserted a token row of
    their own, and the server took their token. SQLite gives its -wal and -shm files the database's mode."""
    from lbee.io.folder_trust import SharedFolderError, check_database_file

    db = tmp_path / "lbee.db"
    db.write_bytes(b"")
    os.chmod(db, 0o666)
    with pytest.raises(SharedFolderError, match="a database file writable by every user .chmod 600 it."):
        check_database_file(db)
    os.chmod(db, 0o600)
    assert check_database_file(db) == str(db)
    (tmp_path / "lbee.db-wal").write_bytes(b"")
    os.chmod(tmp_path / "lbee.db-wal", 0o646)
    with pytest.raises(SharedFolderError, match="lbee.db-wal"):
        check_database_file(db)


def test_a_reports_run_folder_is_never_left_open_nor_reused_when_another_user_can_write_it(tmp_path):
    """B3: `lbee report` under umask 000 left its run folder 0777; a later report moved its files in beside another
    user's planted file and link."""
    from lbee.io.folder_trust import SharedFolderError
    from lbee.io.staged_tree import staged_tree

    root = tmp_path / "rep"
    root.mkdir()
    old = os.umask(0)
    try:
        with staged_tree(root, [root / "demo"], replaces=("*.md",)) as stage:
            (stage / "demo").mkdir()
            (stage / "demo" / "report.md").write_text("the run")
            (stage / "index.html").write_text("the index")
    finally:
        os.umask(old)
    assert (root / "demo" / "report.md").read_text() == "the run" and _mode(root / "demo") & 0o022 == 0
    os.chmod(root / "demo", 0o777)  # as an earlier lbee left it
    (root / "demo" / "notes.html").write_text("theirs")
    with pytest.raises(SharedFolderError, match="writable by every user"):
        with staged_tree(root, [root / "demo"], replaces=("*.md",)) as stage:
            (stage / "demo").mkdir()
            (stage / "demo" / "report.md").write_text("the next run")
            (stage / "index.html").write_text("the next index")
    assert (root / "demo" / "report.md").read_text() == "the run"
    assert not [p for p in tmp_path.rglob("*") if ".lbee-" in p.name]  # no stage left behind


def test_a_bench_never_reads_a_record_another_user_can_write(tmp_path, monkeypatch):
    """B7: under umask 000 `out/ecs` was 0777; another user's record was tabulated as the bench's (AHR 0.123)."""
    import json

    import lbee.spotcheck
    from lbee import bench

    made = []

    def fake_make_ec(seed, **kwargs):
        made.append(seed)
        raise lbee.spotcheck.ECGenerationError("No EC passed", [])

    monkeypatch.setattr(lbee.spotcheck, "make_ec", fake_make_ec)
    old = os.umask(0)
    try:
        bench.run_benchmark(1, tmp_path / "out", encoder=None, per_combination=(2, 2, 2))
    finally:
        os.umask(old)
    record = tmp_path / "out" / "ecs" / "ec_0000.json"
    assert made == [0] and _mode(tmp_path / "out" / "ecs") == 0o755 and _mode(record) == 0o644
    assert len(bench.run_benchmark(1, tmp_path / "out", encoder=None, per_combination=(2, 2, 2))) == 1
    assert made == [0]  # its own record: resumed
    forged = {**json.loads(record.read_text()), "failed": "forged"}
    record.write_text(json.dumps(forged))
    os.chmod(record, 0o666)
    logs = []
    again = bench.run_benchmark(1, tmp_path / "out", encoder=None, per_combination=(2, 2, 2), log=logs.append)
    assert made == [0, 0] and "forged" not in again[0]["failed"]  # recomputed, and said
    assert any("another user's, or one they can write" in line for line in logs), logs


def test_a_kept_world_another_user_can_change_is_generated_again(tmp_path):
    """B7: `--worlds`' ec_NNNN folders (renders, labels, classifier) were made 0777 under umask 000 and read back."""
    import json

    from lbee.bench.driver import WORLD_FILE, load_world

    folder = tmp_path / "worlds" / "ec_0000"
    (folder / "images" / "test").mkdir(parents=True)
    (folder / WORLD_FILE).write_text(json.dumps({"seed": 0, "generation": {"g": 1}}))
    os.chmod(folder / "images" / "test", 0o777)
    logs = []
    assert load_world(tmp_path / "worlds", 0, {"g": 1}, log=logs.append) is None
    assert "is not this user's alone" in logs[0] and "images/test: writable by every user" in logs[0], logs


def test_lbee_serve_writes_nothing_another_user_can_change_whatever_its_umask(tmp_path):
    """Sweep 32al BL2: started under umask 000, a job's report.html was 0666 until its digest was recorded, and a
    script another user appended to it was served."""
    pytest.importorskip("fastapi")
    from lbee.service.app import create_app
    from lbee.service.settings import ServiceSettings

    (tmp_path / "root").mkdir()
    (tmp_path / "out").mkdir()
    old = os.umask(0)
    try:
        settings = ServiceSettings(root=tmp_path / "root", output=tmp_path / "out", db_url=f"sqlite:///{tmp_path}/x.db")
        create_app(settings, start_workers=False)
        now = os.umask(0o022)
    finally:
        os.umask(old)
    assert now & 0o022 == 0o022


def test_the_vqa_answer_cache_is_made_and_read_as_the_embedding_cache(tmp_path):
    """Sweep 32al BL1: the answer cache's folders were 0777 and its shards 0666 under umask 000, and a shard of flipped
    answers another user added was read (20 of 20 relevance cells wrong)."""
    from vqa.runner import AnswerCache

    (tmp_path / "cache").mkdir()
    old = os.umask(0)
    try:
        AnswerCache({"backend": "x"}, tmp_path / "cache").put(["k1", "k2"], [0.9, 0.1])
    finally:
        os.umask(old)
    made = list((tmp_path / "cache").rglob("*"))
    assert made and all(_mode(p) & 0o022 == 0 for p in made), {str(p): oct(_mode(p)) for p in made}
    assert AnswerCache({"backend": "x"}, tmp_path / "cache").load() == {"k1": 0.9, "k2": 0.1}
    (shard,) = (tmp_path / "cache").rglob("shard-*.npz")
    os.chmod(shard, 0o666)
    assert AnswerCache({"backend": "x"}, tmp_path / "cache").load() == {}  # asked again
    os.chmod(shard, 0o644)
    os.chmod(shard.parent, 0o777)
    assert AnswerCache({"backend": "x"}, tmp_path / "cache").load() == {}


def test_a_runs_kept_world_another_user_can_change_is_generated_again(tmp_path, monkeypatch):
    """Sweep 32al BL3: `lbee report` reused `<run>/ec` whatever its owner or mode: another user's renders were
    described (every thumbnail theirs, AHR 0.0 where the world gives 0.4)."""
    import lbee.run.inputs as inputs
    import lbee.spotcheck as spotcheck

    class Stop(Exception):
        pass

    loaded, made = [], []
    monkeypatch.setattr(spotcheck.ExperimentalConfiguration, "load", classmethod(lambda cls, f, **k: loaded.append(f)))
    monkeypatch.setattr(spotcheck, "make_ec", lambda seed, log=None: made.append(seed) or (_ for _ in ()).throw(Stop()))
    ds = type("DS", (), {"encoder": "spotcheck", "spotcheck": {"seed": 0}})()
    ec = tmp_path / "run" / "ec"
    ec.mkdir(parents=True)
    (ec / "ec.json").write_text("{}")
    os.chmod(ec / "ec.json", 0o666)
    with pytest.raises(Stop):
        inputs._spotcheck_inputs(ds, tmp_path / "run", "cpu", lambda m: None)
    assert loaded == [] and made == [0]  # not read: generated again
    os.chmod(ec / "ec.json", 0o644)  # its own: read (this stub loads nothing, so it is generated again after)
    with pytest.raises(Stop):
        inputs._spotcheck_inputs(ds, tmp_path / "run", "cpu", lambda m: None)
    assert loaded == [ec]


def test_a_database_journal_that_is_a_link_is_said_to_be_one(tmp_path):
    """Sweep 32al N6: a -shm link of this user's was refused as 'writable by every user (chmod 600 it)'."""
    from lbee.io.folder_trust import SharedFolderError, check_database_file

    (tmp_path / "lbee.db").write_bytes(b"")
    os.chmod(tmp_path / "lbee.db", 0o600)
    (tmp_path / "lbee.db-shm").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(SharedFolderError, match="lbee.db-shm' is a symbolic link: SQLite writes where it points"):
        check_database_file(tmp_path / "lbee.db")


def test_a_job_reads_the_world_kept_in_its_own_output_folder_and_nothing_outside(tmp_path):
    """Sweep 32al N3: a job's second run logged "reusing the world" and then generated it again: the world's renders,
    copied into the job's output folder, were refused as "outside the data root" (only the root was asked), though
    that folder is one a job may read. A render linked out of it is still refused."""
    from PIL import Image

    from lbee.io.confinement import confined_to
    from lbee.io.images import check_image_file
    from lbee.spotcheck._configuration import CorruptECError, _read_png

    root, out, elsewhere = (tmp_path / name for name in ("root", "out", "elsewhere"))
    for folder in (root, out / "ec", elsewhere):
        folder.mkdir(parents=True)
    Image.new("RGB", (4, 4), (255, 0, 0)).save(out / "ec" / "00000.png")
    Image.new("RGB", (4, 4), (0, 0, 255)).save(elsewhere / "secret.png")
    (out / "ec" / "00001.png").symlink_to(elsewhere / "secret.png")
    with confined_to(root, out):
        assert _read_png(out / "ec" / "00000.png")[0, 0].tolist() == [255, 0, 0]
        check_image_file(out / "ec" / "00000.png")
        with pytest.raises(CorruptECError, match="leads outside the data root"):
            _read_png(out / "ec" / "00001.png")
        with pytest.raises(ValueError, match="leads outside the data root"):
            check_image_file(out / "ec" / "00001.png")
    with confined_to(root):  # the output folder not among the readable ones: refused
        with pytest.raises(CorruptECError, match="leads outside the data root"):
            _read_png(out / "ec" / "00000.png")
