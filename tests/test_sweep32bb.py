"""Sweep 32bb: another folder's files named with backslashes or in an ids.txt, a file edited in place with its
mtime put back, a run of a killed report."""

import pytest
from conftest import killed_after_commit, two_photo_folders
from PIL import Image


def test_a_path_with_backslashes_naming_another_folders_file_matches_no_image(tmp_path):
    """B2: /w/photos2\\p0.png names no file as written; matched with its backslashes read as '/', it named the
    image p0.png of /w/photos by its end, and the run took another folder's predictions (and Γ) in silence."""
    from lbee.io.matching import file_here, match_table_rows

    ids, paths = two_photo_folders(tmp_path)
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


@pytest.mark.parametrize("edited", ["sub/f.txt", "g.txt"])
def test_a_killed_swap_is_not_finished_over_a_file_edited_in_place_with_its_mtime_put_back(
    tmp_path, monkeypatch, edited
):
    """B4: after a killed writer's commit, the user edited a file of the old output in place (the same size) and
    put its mtime back (``touch -r``); the next writer took it for the recorded one and finished the swap over the
    edit (a report's run file was lost). A file's ctime, which no user sets, is part of what the record names: of a
    file the swap replaces, and of the files in a folder it replaces."""
    import os
    import time

    import lbee.io.staging as staging
    from lbee.io.rollforward import OutputChangedError, contents

    out = tmp_path / "K"
    out.mkdir()
    (out / "sub").mkdir()
    (out / "sub" / "f.txt").write_text("old f")
    (out / "g.txt").write_text("old g")

    killed_after_commit(out, monkeypatch, {"sub/f.txt": "new f", "g.txt": "new g"})
    before = contents(out / "sub")
    st = os.stat(out / edited)
    time.sleep(0.05)  # file times advance by the kernel's tick (a few ms): the user's edit comes later than that
    (out / edited).write_text("MY f!")  # the same size, the mtime put back
    os.utime(out / edited, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(out / edited).st_mtime_ns == st.st_mtime_ns
    assert (contents(out / "sub") != before) == (edited == "sub/f.txt")
    with pytest.raises(OutputChangedError, match=rf"was changed \({edited.split('/')[0]}\)"):
        with staging.staged_entries(out) as st:
            (st / "c.txt").write_text("c")
    assert (out / edited).read_text() == "MY f!"


def test_embeddings_whose_ids_are_another_folders_files_are_refused(tmp_path):
    """B3: embeddings of photos2/ listed in their ids.txt by absolute paths were used for a run on photos/ (the same
    file names, other pictures): the ids matched by their ends. A listed path of a file here names that file."""
    import numpy as np
    import pytest

    from lbee.io.provenance import check_row_ids

    for folder, shade in (("photos", 0), ("photos2", 200)):
        (tmp_path / folder).mkdir()
        for i in range(3):
            Image.new("RGB", (8, 8), (shade, i, 0)).save(tmp_path / folder / f"p{i}.png")
    (tmp_path / "e").mkdir()
    np.save(tmp_path / "e" / "embeddings.npy", np.eye(3, 4, dtype=np.float32))
    ids, files = [f"p{i}.png" for i in range(3)], [str(tmp_path / "photos" / f"p{i}.png") for i in range(3)]

    def check(folder):
        (tmp_path / "e" / "ids.txt").write_text("".join(f"{tmp_path}/{folder}/p{i}.png\n" for i in range(3)))
        check_row_ids(tmp_path / "e" / "embeddings.npy", 3, ids, "image_embeddings", against="the run", run_files=files)

    with pytest.raises(ValueError, match=r"row 1 was embedded from '.*photos2/p0.png' but row 1 of the run is"):
        check("photos2")
    check("photos")  # its own files
    for i in range(3):  # a copy of the same pictures is the same images
        (tmp_path / "photos2" / f"p{i}.png").write_bytes((tmp_path / "photos" / f"p{i}.png").read_bytes())
    check("photos2")


def test_a_run_of_a_killed_report_half_swapped_is_refused_to_evaluate(tmp_path):
    """N1: `lbee report --overwrite` killed while moving its runs in left out/shapes/m1 half new, its leftovers
    beside out/ (not beside the run folder); `lbee evaluate` scored that run and wrote its metrics into it."""
    import subprocess
    import sys

    import pytest

    from lbee.io.rollforward import refuse_interrupted

    run = tmp_path / "out" / "shapes" / "m1"
    run.mkdir(parents=True)
    (run / "explanation.json").write_text("{}")
    refuse_interrupted(run / "explanation.json", "Explanation file")  # no leftovers: read
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    leftover = tmp_path / f".out.lbee-report-staging-{gone.stdout.strip()}-0123456789ab"  # its process has ended
    leftover.mkdir()
    with pytest.raises(ValueError, match=r"output of an `lbee report` that was killed .* \.out\.lbee-report-\*"):
        refuse_interrupted(run / "explanation.json", "Explanation file")
    leftover.rename(tmp_path / "out" / "shapes" / leftover.name.replace(".out.", ".m1."))  # beside the run itself
    with pytest.raises(ValueError, match=r"\.m1\.lbee-report-\*"):
        refuse_interrupted(run / "explanation.json", "Explanation file")


def test_evaluate_refuses_an_images_table_whose_values_are_not_the_runs(tmp_path):
    """N9: `lbee evaluate` read images.parquet's paths without its digest: a table whose paths were edited to another
    folder made that folder's Γ ids match the run's images (docs/errors.md says such a table is refused)."""
    import pandas as pd

    from lbee.cli.evaluate import _image_paths
    from lbee.reports.browse import TABLE_COLUMNS
    from lbee.run.outputs import table_digest

    table = pd.DataFrame({"image": ["a.png"], "path": ["/d/a.png"]})
    table.to_parquet(tmp_path / "images.parquet")
    recorded = table_digest(table, TABLE_COLUMNS)
    assert _image_paths(tmp_path, ["a.png"], recorded) == ["/d/a.png"]
    pd.DataFrame({"image": ["a.png"], "path": ["/d2/a.png"]}).to_parquet(tmp_path / "images.parquet")
    with pytest.raises(ValueError, match="its values differ from the ones its run recorded"):
        _image_paths(tmp_path, ["a.png"], recorded)
    assert _image_paths(tmp_path, ["a.png"]) == ["/d2/a.png"]  # a run that recorded none (an older lbee's)


@pytest.mark.parametrize(
    "text, kind", [("{a: 1}: 2\n", "mapping"), ("[1, 2]: 3\n", "list"), ("? !!binary aGk=\n: 1\n", "binary value")]
)
def test_a_yaml_key_that_is_not_a_name_is_said_in_yamls_words(text, kind):
    """N6: a config whose key was a mapping said "found a LineMapping", a class of lbee's own."""
    from lbee._yaml import load_yaml

    with pytest.raises(Exception, match=rf"a mapping key must be a plain name, found a {kind}\b") as err:
        load_yaml(text, source="c.yaml")
    assert "LineMapping" not in str(err.value)


def test_the_word_left_over_is_the_one_click_left_not_an_earlier_one_like_it(tmp_path):
    """N7: `evaluate --overwrite X --relevance G X` blamed the X after --overwrite (the explanation), not the last X."""
    from click.testing import CliRunner

    from lbee.cli import cli

    for name in ("X", "G"):
        (tmp_path / name).write_text("x")
    runner = CliRunner()
    x, g = str(tmp_path / "X"), str(tmp_path / "G")
    said = runner.invoke(cli, ["evaluate", "--overwrite", x, "--relevance", g, x])
    assert said.exit_code == 2 and "is a flag" not in said.output, said.output
    assert f"unexpected extra argument ({x})" in said.output
    said = runner.invoke(cli, ["evaluate", str(tmp_path / "X"), "--overwrite", "Y", "--relevance", str(tmp_path / "G")])
    assert "--overwrite is a flag and takes no value: 'Y' is left over" in said.output, said.output


def test_a_long_path_click_refuses_is_cut_in_its_message(tmp_path):
    """N3: a 5,000-character path that click's own check refused (--predictions, IMAGES) was echoed whole."""
    from click.testing import CliRunner

    from lbee.cli import cli

    long = str(tmp_path / ("a" * 5000)) + ".csv"
    for args in (["describe", str(tmp_path), "--predictions", long], ["evaluate", long]):
        said = CliRunner().invoke(cli, args)
        assert said.exit_code == 2 and "does not exist" in said.output and len(said.output) < 1000, said.output[-300:]


def test_the_suffix_hint_reads_the_ids_as_written():
    """N4: ids 'a//img001.png' or 'a/img001.png/' got the hint "the table's ids end in '.png' where the images' end
    in '.png'" (pathlib had read them as 'a/img001.png')."""
    from lbee.run.scores import _other_suffix

    images = ["a/img001.png", "a/img002.png"]
    assert _other_suffix(images, ["a//img001.png", "a/img002.png/"]) == ""
    assert "ids end in '.jpg' where the images' end in '.png'" in _other_suffix(images, ["a/img001.jpg", "a/img002"])
    assert "ids have no file suffix where the images' end in '.png'" in _other_suffix(images, ["a/img001", "a/img002"])


def test_the_noun_index_finds_every_noun_the_case_blind_pattern_finds():
    """Sweep 32bc: U+0345, a combining mark re.IGNORECASE takes for "ι", was folded to that letter, so the words
    "where the box\\u0345 is up" were one word "boxι" to the index and the box was said again. A differential over
    random text of the letters case folding treats apart."""
    import random
    import re
    from types import SimpleNamespace

    from lbee.grammar._grammar import Grammar
    from lbee.grammar._words import _says

    def found(noun, words):
        subject = SimpleNamespace(id="s", noun=noun)
        return bool(Grammar._may_say(SimpleNamespace(subjects=[subject], _nouns={}), words))

    rng = random.Random(0)
    # letters case folding or NFKC treat apart or together, combining marks (a noun may end in one: 32bd), ligatures
    letters = list("abkKsıİiSſς σΣ\u0345ιΙ\u1fbeßẞ-.'\u212aωῳ\u0301eé\u093fबﬁfＢ")
    for _ in range(20000):
        noun = "".join(rng.choices(letters, k=rng.randint(1, 3))).strip()
        said = "".join(rng.choices(letters, k=rng.randint(0, 3))) + rng.choice([noun, noun.upper(), noun.lower()])
        said += "".join(rng.choices(letters, k=rng.randint(0, 3)))
        if re.search(r"\w", noun) and _says(SimpleNamespace(noun=noun), said):
            assert found(noun, said), (noun, said)


def test_a_new_folders_record_holds_when_a_hard_link_to_its_files_goes(tmp_path):
    """A report links a run's kept world into its new run (hard links) and removes the old one after the swap: the
    new folder's files' ctimes change. Its record as a new entry leaves ctimes out (a killed cleanup's rerun was
    otherwise refused as "changed"), the record of an old one keeps them (B4)."""
    import os
    import time

    from lbee.io.rollforward import entry_identity, same

    (tmp_path / "new").mkdir()
    (tmp_path / "new" / "ec.json").write_text("{}")
    ident = lambda moved: entry_identity(os.lstat(tmp_path / "new"), tmp_path / "new", moved=moved)  # noqa: E731
    made, was = ident(True), ident(False)
    time.sleep(0.05)  # past the kernel's tick, as any later change is
    os.link(tmp_path / "new" / "ec.json", tmp_path / "old.json")
    os.unlink(tmp_path / "old.json")  # the old twin removed: the file's ctime changes, nothing else
    now = ident(False)
    assert same(now, made) and not same(now, was)
