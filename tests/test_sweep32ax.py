"""Sweep 32ax: table ids written as file: URLs of other files, a ./NAME sentence set that names no file, labels under
scikit-learn's names or with zero-padded classes, and a grammar's huge count."""

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
    assert match_table_rows(["file://otherhost/elsewhere/p0.png"], ids, paths)[0].tolist() == [0]
    assert local_path("s3://bucket/p0.png") is None and local_path("photos/p0.png") is None
    assert local_path("file://[x/p0.png") is None  # no URL (urlsplit's ValueError): matched by its end, no traceback
    assert match_table_rows(["file://[x/p0.png"], ids, paths)[0].tolist() == [0]


def test_a_dot_slash_set_name_that_names_no_file_is_refused(tmp_path, monkeypatch):
    """B2: `--sentences ./spotcheck`, as lbee itself advises for a file named like a built-in set, read the built-in
    set in silence when ./spotcheck did not exist."""
    from lbee.io.sentences import UnknownSentenceSet, load_sentence_set

    monkeypatch.chdir(tmp_path)
    for ref in ("./spotcheck", "./conditions", "x/../spotcheck"):
        with pytest.raises(UnknownSentenceSet, match=r"Sentence file '.*' does not exist"):
            load_sentence_set(ref)
    assert len(load_sentence_set("spotcheck").sentences) > 0  # the bare name is the built-in set
    (tmp_path / "spotcheck").write_text("a local sentence\n")
    assert load_sentence_set("./spotcheck").sentences == ("a local sentence",)


def _table(rng, n, classes):
    import numpy as np
    import pandas as pd

    p = rng.dirichlet(np.ones(len(classes)), n)
    return p, pd.DataFrame(
        {"image": [f"{i}.png" for i in range(n)], **{f"prob_{c}": p[:, k] for k, c in enumerate(classes)}}
    )


def test_labels_under_scikit_learn_names_and_zero_padded_classes_are_refused():
    """N1: integer labels named 'y_test' or 'actual' passed for a model right on under half of the rows; N2: with
    prob_00 ... prob_09, an integer column of labels was compared as the text '1' with the class '01'."""
    import numpy as np

    from lbee.io.label_lookalike import label_lookalike

    rng = np.random.default_rng(0)
    p, table = _table(rng, 300, "abcdefghij")
    labels = np.where(rng.random(300) < 0.45, p.argmax(1), rng.integers(0, 10, 300))
    for name in ("y_test", "actual"):
        assert label_lookalike(table.assign(**{name: labels})) == name
    assert label_lookalike(table.assign(actual_size=rng.integers(0, 10, 300))) is None  # a word alone is not enough
    p, table = _table(rng, 300, [f"{k:02d}" for k in range(10)])
    kind = np.where(rng.random(300) < 0.8, p.argmax(1), rng.integers(0, 10, 300))
    assert label_lookalike(table.assign(kind=kind)) == "kind"


def test_a_grammars_huge_conjunction_count_is_said_by_its_magnitude():
    """N3: a grammar over the limit printed a count of about 2,300 digits (3 KB of message)."""
    from lbee.grammar._generate import _count

    assert _count(12_345) == "12,345" and _count(10**2300 + 7) == "about 10^2,300"


def test_labels_that_differ_from_the_classes_only_in_case_are_said_so(tmp_path):
    """Trial 40: labels 'Pass' / 'Defect' beside prob_pass / prob_defect were refused with the class list alone."""
    import pandas as pd

    from lbee.io.images import read_table
    from lbee.scoring.confidence import scores_from_table

    def read_predictions(path):
        return scores_from_table(read_table(path))

    pd.DataFrame(
        {"image": ["a.png", "b.png"], "prob_pass": [0.9, 0.2], "prob_defect": [0.1, 0.8], "label": ["Pass", "Defect"]}
    ).to_csv(tmp_path / "p.csv", index=False)
    with pytest.raises(ValueError, match="differ from the class names only in case"):
        read_predictions(tmp_path / "p.csv")
    pd.DataFrame({"image": ["a.png"], "prob_pass": [0.9], "prob_defect": [0.1], "label": ["good"]}).to_csv(
        tmp_path / "q.csv", index=False
    )
    with pytest.raises(ValueError, match=r"invalid class value\(s\)") as err:
        read_predictions(tmp_path / "q.csv")
    assert "only in case" not in str(err.value)
