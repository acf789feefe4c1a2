"""Sweep 30: what a job's files name is shown to every reader of the job.

The other findings of the sweep are tested where their rules live: a presence another's `requires` implies
(tests/test_grammar.py), a null τ beside a number (tests/test_provenance.py) and a fetched copy of a served run
(tests/test_report.py).
"""

import pytest
from PIL import Image


def test_a_jobs_manifest_names_its_images_relative_to_its_folder(tmp_path):
    """A manifest naming images by absolute path inside the root made every image id, served to any read token in
    explanation.json, images.parquet and the report, show the server's root. Under a data root it is refused; on
    the command line it stays the user's choice."""
    from lbee.io.confinement import PathEscape, confined_to
    from lbee.io.images import discover_images

    root = tmp_path / "root"
    (root / "imgs").mkdir(parents=True)
    Image.new("RGB", (8, 8)).save(root / "imgs" / "a.png")
    Image.new("RGB", (8, 8)).save(root / "imgs" / "b.png")
    (root / "abs.csv").write_text(f"path\nimgs/a.png\n{root / 'imgs' / 'b.png'}\n")
    (root / "rel.csv").write_text("path\nimgs/a.png\nimgs/b.png\n")
    assert discover_images(root / "abs.csv").ids[1] == str(root / "imgs" / "b.png")  # the command line: any path
    with confined_to(root):
        assert discover_images(root / "rel.csv").ids == ["imgs/a.png", "imgs/b.png"]
        with pytest.raises(PathEscape, match="row 2, column 'path': an absolute path") as err:
            discover_images(root / "abs.csv")
    assert str(root) not in str(err.value).split(":", 1)[1]  # the message shows the file's name, not the root
