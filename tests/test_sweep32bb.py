"""Sweep 32bb: a path written with backslashes naming another folder's file, ..."""

from PIL import Image


def _two_folders(tmp_path):
    for folder in ("photos", "photos2"):
        (tmp_path / folder).mkdir()
        Image.new("RGB", (8, 8)).save(tmp_path / folder / "p0.png")
    return ["p0.png"], [str(tmp_path / "photos" / "p0.png")]


def test_a_path_with_backslashes_naming_another_folders_file_matches_no_image(tmp_path):
    """B2: /w/photos2\\p0.png names no file as written; matched with its backslashes read as '/', it named the
    image p0.png of /w/photos by its end, and the run took another folder's predictions (and Γ) in silence."""
    from lbee.io.matching import file_here, match_table_rows

    ids, paths = _two_folders(tmp_path)
    for other in (f"{tmp_path}/photos2\\p0.png", f"{tmp_path}\\photos2\\p0.png", f"file://{tmp_path}/photos2%5Cp0.png"):
        assert file_here(other) == f"{tmp_path}/photos2/p0.png", other
        assert match_table_rows([other], ids, paths)[0].tolist() == [-1], other
    for mine in (f"{tmp_path}/photos\\p0.png", "photos\\p0.png", "C:\\data\\photos\\p0.png"):  # itself; not here
        assert match_table_rows([mine], ids, paths)[0].tolist() == [0], mine
    # under a data root, a backslash path out of it names no file there (nothing outside it is stat'ed)
    from lbee.io.confinement import confined_to

    with confined_to(tmp_path / "photos"):
        assert file_here(f"{tmp_path}/photos\\..\\photos2\\p0.png") is None
        assert file_here(f"{tmp_path}/photos\\p0.png") == f"{tmp_path}/photos/p0.png"
