"""Sweep 32ax: table ids written as file: URLs of other files."""

import pytest
from PIL import Image


def test_a_file_url_of_another_existing_file_names_that_file(tmp_path):
    """B1: 'file:///w/photos2/p0.png' matched the image 'p0.png' of /w/photos by its end, as the plain path did
    before sweep 32aw's fix: another folder's predictions were applied in silence."""
    from lbee.io.matching import local_path, match_table_rows
    from lbee.run.scores import align_scores

    for folder in ("photos", "photos2", "with space"):
        (tmp_path / folder).mkdir()
        Image.new("RGB", (8, 8)).save(tmp_path / folder / "p0.png")
    ids, paths = ["p0.png"], [str(tmp_path / "photos" / "p0.png")]
    other = f"file://{tmp_path}/photos2/p0.png"
    assert match_table_rows([other], ids, paths)[0].tolist() == [-1]
    assert match_table_rows([other.replace("file://", "FILE://localhost")], ids, paths)[0].tolist() == [-1]
    spaced = f"file://{tmp_path}/with%20space/p0.png"  # percent-encoded, as URLs are written
    assert local_path(spaced) == str(tmp_path / "with space" / "p0.png")
    assert match_table_rows([spaced], ids, paths)[0].tolist() == [-1]
    with pytest.raises(ValueError, match=r"Its ids are paths of other files, first: 'file://.*photos2/p0"):
        align_scores(ids, paths, [other])
    assert match_table_rows([f"file://{tmp_path}/photos/p0.png"], ids, paths)[0].tolist() == [0]  # itself
    # a URL of a file that is not here (another machine's, another host's) still matches by its end
    assert match_table_rows(["file:///elsewhere/machine/p0.png"], ids, paths)[0].tolist() == [0]
    assert match_table_rows([f"file://otherhost{tmp_path}/photos2/p0.png"], ids, paths)[0].tolist() == [0]
    assert local_path("s3://bucket/p0.png") is None and local_path("photos/p0.png") is None
