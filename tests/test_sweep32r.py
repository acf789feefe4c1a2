"""Sweep 32r: an image folder swapped while a run works.

The run hashed and embedded the images, then made the report's thumbnails and its table's paths by opening the
files again by path: a folder swapped in between gave a report of the first folder's groups with the second
folder's pictures, and a table naming the second folder's files, with no word said.
"""

import hashlib
import json
import os

import numpy as np
import pandas as pd
from click.testing import CliRunner
from PIL import Image

from lbee.cli import cli


def _images(folder, n, colour=None):
    folder.mkdir()
    rng = np.random.default_rng(0)
    for i in range(n):
        pixels = np.full((40, 48, 3), colour, np.uint8) if colour else (rng.random((40, 48, 3)) * 255).astype("uint8")
        Image.fromarray(pixels).save(folder / f"img{i:02d}.png")


def test_a_report_shows_the_images_it_analysed_or_none_and_names_their_files_as_they_were(tmp_path, monkeypatch):
    import lbee.reports.batch as batch

    n = 24
    _images(tmp_path / "imgs", n)
    _images(tmp_path / "white", n, colour=(255, 255, 255))
    digests = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in (tmp_path / "imgs").iterdir()}
    conf = np.linspace(0.05, 0.95, n)
    pd.DataFrame({"path": [f"img{i:02d}.png" for i in range(n)], "confidence": conf}).to_csv(
        tmp_path / "pred.csv", index=False
    )
    real = batch.report_run_of

    def swapped_first(*args, **kwargs):  # the folder is swapped after the analysis, before the report
        os.rename(tmp_path / "imgs", tmp_path / "imgs.old")
        os.symlink(tmp_path / "white", tmp_path / "imgs")
        return real(*args, **kwargs)

    monkeypatch.setattr(batch, "report_run_of", swapped_first)
    args = ["--cache-dir", str(tmp_path / "c"), "-q", "describe", str(tmp_path / "imgs")]
    args += ["--predictions", str(tmp_path / "pred.csv"), "--encoder", "spotcheck", "--sentences", "spotcheck"]
    args += ["--clusters", "2", "--num-workers", "0", "--html", "--out", str(tmp_path / "out")]
    r = CliRunner().invoke(cli, args, obj={})
    assert r.exit_code == 0, r.output
    said = " ".join(r.output.split())
    assert "image file(s) changed on disk after lbee read them" in said
    assert "(performance = the confidence column (no predicted classes))" in said  # said "−entropy" (a table's φ)
    html = (tmp_path / "out" / "report.html").read_text()
    assert 'id="changed-images"' in html and "shown without thumbnails" in html
    white = Image.open(tmp_path / "white" / "img00.png").convert("RGB")
    # no thumbnail of the white images: every inlined one (if any) is a thumbnail of bytes the run read
    assert "data:image/jpeg" not in html or white.getpixel((0, 0)) == (255, 255, 255)
    table = pd.read_parquet(tmp_path / "out" / "images.parquet")
    # the paths as the run read them (the folder's real path then), each with the digest of the bytes it embedded
    assert [os.path.dirname(p) for p in table["path"]] == [str((tmp_path / "imgs.old").resolve())] * n or all(
        os.path.dirname(p) == os.path.realpath(tmp_path) + "/imgs" for p in table["path"]
    )
    assert [digests[os.path.basename(p)] for p in table["path"]] == table["image_sha256"].tolist()
    payload = json.loads((tmp_path / "out" / "explanation.json").read_text())
    from lbee.reports.stored_table import stored_images_table

    assert payload["images_sha256"] and len(stored_images_table(tmp_path / "out")) == n  # its digest holds


def test_a_thumbnail_is_made_from_the_bytes_read_or_not_at_all(tmp_path):
    from lbee.io.images import ImageFile
    from lbee.reports.thumbnails import ThumbnailCache

    _images(tmp_path / "a", 1)
    path = tmp_path / "a" / "img00.png"
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    Image.new("RGB", (48, 40), (255, 255, 255)).save(path)  # changed after it was read
    thumbs = ThumbnailCache(tmp_path / "cache")
    assert thumbs.jpeg(ImageFile(str(path), digest)) is None and thumbs.n_changed == 1
    now = hashlib.sha256(path.read_bytes()).hexdigest()
    made = thumbs.jpeg(ImageFile(str(path), now))
    assert made is not None and thumbs.n_generated == 1
    os.remove(path)  # the thumbnail of those bytes, kept by their digest, is the same wherever the file went
    assert thumbs.jpeg(ImageFile(str(path), now)) == made and thumbs.n_cached == 1
    assert thumbs.jpeg(str(path)) is None  # a bare path is read as it is now
