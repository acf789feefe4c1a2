"""Sweep 32s: what 32r's fixes left open, and what the run list's findings opened."""

import hashlib
import json
import logging
import os
import shutil
import threading

import numpy as np
import pytest
from test_sweep32r import _images  # the same two folders of images: a colour one and a white one


def test_a_folder_swapped_between_hashing_and_decoding_poisons_no_cache(tmp_path, monkeypatch):
    """B2: embed_images hashed each file, then opened it again by path to decode it: a folder swapped between the two
    stored the other images' embeddings under the first files' digests, and every later run read them."""
    import lbee.encoders.embedding as embedding
    from lbee.encoders import create_encoder
    from lbee.io.cache import EmbeddingCache

    _images(tmp_path / "imgs", 6)
    _images(tmp_path / "white", 6, colour=(255, 255, 255))
    paths = sorted(str(p) for p in (tmp_path / "imgs").iterdir())
    as_read = [os.path.realpath(p) for p in paths]
    digests = [hashlib.sha256(open(p, "rb").read()).hexdigest() for p in paths]
    real, calls = embedding.file_sha256, []

    def hashed_then_swapped(*args, **kwargs):
        out = real(*args, **kwargs)
        calls.append(out)
        if len(calls) == len(paths):  # every file hashed: the folder is swapped before any is decoded
            os.rename(tmp_path / "imgs", tmp_path / "imgs.old")
            os.symlink(tmp_path / "white", tmp_path / "imgs")
        return out

    monkeypatch.setattr(embedding, "file_sha256", hashed_then_swapped)
    enc = create_encoder("spotcheck")
    res = embedding.embed_images(enc, paths, cache_dir=tmp_path / "cache", num_workers=0, warn=False)
    assert not res.ok.any() and all("changed after lbee hashed it" in why for _, why in res.failures)
    assert EmbeddingCache(enc.identity(), tmp_path / "cache").get_images(digests) == {}  # nothing cached under them
    # the paths recorded are the hashed files' real paths (where the kernel finds them), never the swapped-in folder's
    assert not any("white" in p for p in res.real_paths)
    assert [os.path.basename(p) for p in res.real_paths] == [os.path.basename(p) for p in as_read]


def test_a_link_in_the_thumbnail_cache_is_never_served(tmp_path):
    """B4: the thumbnail cache followed a link planted under an image's key, and served another file as its
    thumbnail."""
    from lbee.io.images import ImageFile
    from lbee.reports.thumbnails import ThumbnailCache

    _images(tmp_path / "a", 1)
    path = tmp_path / "a" / "img00.png"
    source = ImageFile(str(path), hashlib.sha256(path.read_bytes()).hexdigest())
    thumbs = ThumbnailCache(tmp_path / "cache")
    made = thumbs.jpeg(source)
    assert made[:3] == b"\xff\xd8\xff"
    cached = next((tmp_path / "cache" / "thumbnails").rglob("*.jpg"))
    secret = tmp_path / "secret.txt"
    secret.write_bytes(b"\xff\xd8\xff top secret")
    cached.unlink()
    cached.symlink_to(secret)
    again = ThumbnailCache(tmp_path / "cache").jpeg(source)  # made afresh from the image, not read through the link
    assert again is not None and b"top secret" not in again


def describe_args(folder):
    """`lbee describe` on `stored_run`'s inputs in ``folder`` (without --out)."""
    args = ["describe", "--image-embeddings", str(folder / "img.npy"), "--sentence-embeddings"]
    return args + [
        str(folder / "sen.npy"),
        "--sentences",
        str(folder / "s.txt"),
        "--predictions",
        str(folder / "p.csv"),
    ]


@pytest.fixture
def stored_run(tmp_path):
    import pandas as pd
    from click.testing import CliRunner

    from lbee.cli import cli

    rng = np.random.default_rng(0)
    np.save(tmp_path / "img.npy", rng.normal(size=(60, 8)))
    np.save(tmp_path / "sen.npy", np.eye(8))
    (tmp_path / "s.txt").write_text("\n".join(f"sentence {j}" for j in range(8)) + "\n")
    pd.DataFrame({"image": [f"{i}.png" for i in range(60)], "confidence": rng.random(60)}).to_csv(tmp_path / "p.csv")
    args = describe_args(tmp_path)
    r = CliRunner().invoke(cli, [*args, "--clusters", "2", "--out", str(tmp_path / "out" / "run")], obj={})
    assert r.exit_code == 0, r.output
    return tmp_path / "out"


def test_the_run_list_shows_no_edited_findings_and_never_waits_on_a_fifo(stored_run):
    """B5: an edited explanation.json's findings were listed while its run's /explanation answered 409. N4: a FIFO
    put in its place blocked the run list's threads for good; a deeply nested or huge one made it fail or swell."""
    from lbee.service.views import MAX_FINDINGS_FILE_BYTES, _findings, stored_findings

    path = stored_run / "run" / "explanation.json"
    said = stored_findings(stored_run, "run")
    assert said is not None and "that confirmation needs" in said["untested"]
    payload = json.loads(path.read_text())
    payload["confirmation"]["reason"] = "edited"
    path.write_text(json.dumps(payload))
    assert stored_findings(stored_run, "run") is None  # its digest no longer holds
    fifo = stored_run / "fifo.json"
    os.mkfifo(fifo)
    done = []
    reader = threading.Thread(target=lambda: done.append(_findings(str(fifo), 0, 0)), daemon=True)
    reader.start()
    reader.join(10)
    assert done == [None]
    deep = stored_run / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    assert _findings(str(deep), 1, 1) is None
    big = stored_run / "big.json"
    with open(big, "wb") as fh:
        fh.truncate(MAX_FINDINGS_FILE_BYTES + 1)
    assert _findings(str(big), 2, 2) is None
    shutil.rmtree(stored_run / "run")


def test_nothing_is_written_through_a_link_planted_in_a_cache(tmp_path, caplog):
    """Sweep 32t: the thumbnail cache read no link, but wrote a thumbnail through a shard folder linked out of it
    (a file outside the cache replaced); the embedding cache's shard folders likewise."""
    from lbee.io.cache import EmbeddingCache
    from lbee.io.images import ImageFile
    from lbee.reports.thumbnails import ThumbnailCache

    _images(tmp_path / "a", 1)
    path = tmp_path / "a" / "img00.png"
    source = ImageFile(str(path), hashlib.sha256(path.read_bytes()).hexdigest())
    thumbs = ThumbnailCache(tmp_path / "cache")
    key = thumbs._key(source)
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / f"{key}.jpg"
    victim.write_bytes(b"\xff\xd8\xff mine")
    (tmp_path / "cache" / "thumbnails").mkdir(parents=True)
    (tmp_path / "cache" / "thumbnails" / key[:2]).symlink_to(outside)
    made = thumbs.jpeg(source)
    assert made is not None and b"mine" not in made and victim.read_bytes() == b"\xff\xd8\xff mine"
    cache = EmbeddingCache({"encoder": "x"}, tmp_path / "ecache")
    cache.root.mkdir(parents=True)
    (cache.root / "images").symlink_to(outside)
    with caplog.at_level(logging.WARNING, logger="lbee"):
        cache.put_images(["h1"], np.ones((1, 4)))
        cache.put_images(["h2"], np.ones((1, 4)))
    assert sorted(p.name for p in outside.iterdir()) == [victim.name]  # nothing written through the link
    said = [r.getMessage() for r in caplog.records if "symbolic link" in r.getMessage()]  # and said, once (32ae)
    assert len(said) == 2 and "Remove it to cache" in said[1], said  # the thumbnails' link, then the embeddings'
    assert repr(str(tmp_path / "cache" / "thumbnails" / key[:2])) in said[0]
    assert repr(str(cache.root / "images")) in said[1]


def test_a_fifo_swapped_in_after_the_check_never_blocks_a_reader(tmp_path, monkeypatch):
    """Sweep 32t: GET /v1/jobs/<id>/explanation read the stored file by path after checking it; a FIFO swapped in
    between blocked ten server threads for good (and SIGTERM then). Every reader now opens the file once, without
    waiting, and checks what it opened."""
    import lbee._files as files

    fifo = tmp_path / "explanation.json"
    os.mkfifo(fifo)
    monkeypatch.setattr(files, "check_regular_file", lambda path, what: None)  # the swap lands after the check
    said = []

    def read():
        try:
            files.read_bytes_file(fifo, "Explanation file")
        except ValueError as exc:
            said.append(str(exc))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(10)
    assert said and "not a regular file" in said[0]
