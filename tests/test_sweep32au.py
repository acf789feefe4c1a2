"""Sweep 32au's blocking cases: a file named with a backslash, camelCase label columns, another array's
provenance record given to `lbee.audit`, and the row check's quadratic cost."""

import re

import numpy as np
import pandas as pd
import pytest


def test_a_backslash_in_a_file_name_is_no_folder_where_it_would_swap_two_images(tmp_path):
    """B1: 'z/x.png' and a file named 'z\\x.png' (unzip's name for a Windows zip's entry) were one id: listed in the
    other order, the two rows passed, swapped. Where the run has both, only the same id matches either."""
    from lbee.io.row_ids import _ambiguous_rows, check_row_ids

    run_ids = ["a.png", "z\\x.png", "z/x.png"]
    (tmp_path / "ids.txt").write_text("a.png\nz/x.png\nz\\x.png\n")
    with pytest.raises(ValueError, match=r"row 2 is the image 'z/x.png'"):
        check_row_ids(tmp_path / "e.npy", 3, run_ids, "image_embeddings", against="the manifest")
    assert _ambiguous_rows(["a.png", "z\\x.png", "z/x.png"], run_ids) == set()  # the same order passes
    # an id written on Windows still matches its image where no other differs from it by a backslash
    assert _ambiguous_rows(["sub\\a.png", "b.png"], ["sub/a.png", "data/b.png"]) == set()
    assert _ambiguous_rows(["sub\\a.png", "a.png"], ["a.png", "sub/a.png"]) == {0, 1}


def test_the_row_check_is_linear_where_every_image_has_one_file_name(monkeypatch):
    """B4: 20,000 images all named 'rgb.png', listed with a prefix, took 147 s: each row was compared with every
    image of its name. The run's ids are now indexed by their ends (counted here in calls, not timed)."""
    import lbee.io.matching as matching
    from lbee.io.row_ids import _ambiguous_rows

    calls = []
    posix = matching._posix
    monkeypatch.setattr(matching, "_posix", lambda t: calls.append(1) or posix(t))
    n = 5000
    run_ids = [f"data/scene_{i:05d}/rgb.png" for i in range(n)]
    assert _ambiguous_rows([f"scene_{i:05d}/rgb.png" for i in range(n)], run_ids) == set()
    assert len(calls) <= 4 * n, len(calls)  # each id's form once, or twice: not n per row
    swapped = [f"scene_{i ^ 1:05d}/rgb.png" for i in range(n)]
    assert _ambiguous_rows(swapped, run_ids) == set(range(n))


@pytest.mark.parametrize(
    "column",
    ["trueLabel", "TrueLabel", "labelName", "className", "TrueClass", "GroundTruthLabel", "GTLabel", "ytrue",
     "truelabel", "true_cls", "gold"],
)  # fmt: skip
def test_camel_case_and_glued_label_columns_are_refused(column):
    """B2: 'true_label' was refused, 'trueLabel' and others not: the run split by the model's uncertainty."""
    from lbee.io.label_lookalike import label_lookalike

    table = pd.DataFrame({"image": list("abc"), "prob_cat": [0.9, 0.2, 0.6], "prob_dog": [0.1, 0.8, 0.4]})
    assert label_lookalike(table.assign(**{column: ["cat", "cat", "dog"]})) == column
    assert label_lookalike(table.assign(**{column: [0, 0, 1]})) == column  # classes by their index


def test_a_column_of_the_classes_names_is_a_label_whatever_its_name():
    """B2: 'category' holding the classes, unlike the most probable class on some row, is the true classes."""
    from lbee.io.label_lookalike import label_lookalike

    table = pd.DataFrame({"image": list("abc"), "prob_cat": [0.9, 0.2, 0.6], "prob_dog": [0.1, 0.8, 0.4]})
    assert label_lookalike(table.assign(category=["cat", "cat", "dog"])) == "category"
    assert label_lookalike(table.assign(category=["cat", "dog", "cat"])) is None  # the model's top class: a prediction
    assert label_lookalike(table.assign(category=["cat", "cat", "cat"])) is None  # one value: not told apart
    assert label_lookalike(table.assign(category=["cat", "cat", "bird"])) is None  # not the classes
    assert label_lookalike(table.assign(predicted=["cat", "cat", "dog"])) is None  # named the model's


@pytest.mark.parametrize(
    "column, values",
    [("top1_class", ["cat", "dog", "cat"]), ("argmax_class", [0, 1, 0]), ("class_hat", ["cat", "dog", "cat"]),
     ("label_noise", [0.1, 0.2, 0.05]), ("has_label", [True, False, True]), ("label_smoothing", [0.1, 0.1, 0.1])],
)  # fmt: skip
def test_the_models_classes_and_metadata_are_not_taken_for_labels(column, values):
    """N1: 'top1_class' was refused with advice to rename it 'label' (the prediction against itself); float and
    flag columns about labels were refused too."""
    from lbee.io.label_lookalike import label_lookalike

    table = pd.DataFrame({"image": list("abc"), "prob_cat": [0.9, 0.2, 0.6], "prob_dog": [0.1, 0.8, 0.4]})
    assert label_lookalike(table.assign(**{column: values})) is None


def test_audit_refuses_the_provenance_record_of_other_rows_or_other_ids():
    """B3: the record of another array of the same shape gave the run its encoder, τ and digest; ids in another
    order than the record's ids.txt named each row as another image. The command line refuses both."""
    import hashlib
    import warnings

    import lbee
    from lbee.io.provenance import array_digest
    from lbee.io.row_ids import ids_bytes

    rng = np.random.default_rng(0)
    X, S = rng.normal(size=(60, 8)).astype(np.float32), rng.normal(size=(4, 8)).astype(np.float32)
    probs, labels = rng.dirichlet(np.ones(2), size=60), rng.integers(0, 2, 60)
    ids = [f"i{k:02d}.png" for k in range(60)]
    record = {"lbee_provenance": 1, "kind": "image_embeddings", "encoder": {"encoder": "test", "weights": "w"}}
    record.update(tau=0.3, shape=[60, 8], data_sha256=array_digest(X))
    record["ids_sha256"] = hashlib.sha256(ids_bytes(ids)).hexdigest()
    args = dict(sentences=["a", "b", "c", "d"], probs=probs, labels=labels, provenance=record)
    other = X[::-1].copy()
    with pytest.raises(ValueError, match="`provenance` records rows of digest .* expected the record of these"):
        lbee.audit(other, S, **args)
    with pytest.raises(ValueError, match="`image_ids` are not the ids written with these embeddings"):
        lbee.audit(X, S, image_ids=ids[::-1], **args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = lbee.audit(X.astype(np.float64), S, image_ids=ids, **args)  # the same rows, as float64
    assert result.main.encoder["image_embeddings_sha256"] == array_digest(X)


def test_a_relative_id_is_read_in_the_embedded_images_folder_first():
    """N2: ids.txt 'a.png', 'sub/a.png' against the run's '/d/a.png', '/d/sub/a.png' (the same images, in order)
    was refused: 'a.png' ends both. The provenance's images folder says which it is."""
    from lbee.io.row_ids import _ambiguous_rows

    listed, run_ids = ["a.png", "sub/a.png"], ["/d/a.png", "/d/sub/a.png"]
    assert _ambiguous_rows(listed, run_ids) == {0}
    assert _ambiguous_rows(listed, run_ids, "/d") == set()
    assert _ambiguous_rows(listed[::-1], run_ids, "/d") == {0, 1}  # swapped: still refused


@pytest.mark.parametrize(
    "change",
    [{"data_sha256": "z" * 64}, {"encoder": {"encoder": "x", "weights": ["a"]}}, {"encoder": 3},
     {"shape": [True, 8]}, {"ids_sha256": "g" * 64}],
)  # fmt: skip
def test_a_record_of_malformed_values_is_refused(change):
    """N3: a digest of 64 non-hex characters, weights as a list, an encoder as a number, a shape of booleans were
    accepted, and carried into explanation.json."""
    from lbee.io.provenance_record import record_problems

    record = {"lbee_provenance": 1, "kind": "image_embeddings", "encoder": {"encoder": "test", "weights": "w"}}
    record.update(tau=0.3, shape=[60, 8], data_sha256="ab" * 32)
    assert record_problems(record) == []
    assert record_problems({**record, **change})


def test_the_lookalike_check_reads_a_name_given_twice_as_no_column():
    """A hostile try of the new check: a column name given twice made it fail with an AttributeError."""
    from lbee.io.label_lookalike import label_lookalike

    rows = [["a", 0.9, 0.1, "cat", "cat"], ["b", 0.2, 0.8, "cat", "dog"], ["c", 0.6, 0.4, "dog", "dog"]]
    assert label_lookalike(pd.DataFrame(rows, columns=["image", "prob_cat", "prob_dog", "kind", "kind"])) is None
    assert label_lookalike(pd.DataFrame(rows, columns=["image", "prob_cat", "prob_dog", "kind", "gt"])) == "gt"


@pytest.mark.parametrize("secret", ["root:*:20228:0:99999:7:::", "api_key: hunter2\n", "[1, 2]\n"])
def test_a_grammar_line_naming_a_file_that_is_no_grammar_quotes_none_of_it(tmp_path, secret):
    """Sweep 32au N6: '# grammar: /etc/shadow' printed the file's first line inside its error."""
    from click.testing import CliRunner

    from lbee.cli import cli
    from lbee.io.sentences import load_sentence_set

    out = tmp_path / "sc.txt"
    assert CliRunner().invoke(cli, ["sentences", "generate", "spotcheck", "--out", str(out)]).exit_code == 0
    private = tmp_path / "private" / "notes.yaml"
    private.parent.mkdir()
    private.write_text(secret)
    table = tmp_path / "sc.conditions.tsv"
    lines = table.read_text().splitlines()
    lines[0] = f"# grammar: {private}"
    table.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match="names .*notes.yaml'?, which is not a grammar lbee can read") as err:
        load_sentence_set(out)
    assert not any(part in str(err.value) for part in ("20228", "hunter2", "[1, 2]", "api_key"))


def test_report_md_opens_no_raw_html_from_ids_sentences_or_names(tmp_path):
    """Sweep 32au N4: 19 copies of an `<img onerror>` payload from ids, names and sentences reached report.md."""
    import lbee

    payload = "<img src=x onerror=alert(1)>"
    rng = np.random.default_rng(0)
    X, S = rng.normal(size=(60, 8)).astype(np.float32), rng.normal(size=(4, 8)).astype(np.float32)
    probs, labels = rng.dirichlet(np.ones(2), size=60), rng.integers(0, 2, 60)
    ids = [f"{payload}{k:02d}.png" for k in range(60)]
    sentences = [f"a {payload} {k}" for k in range(4)]
    result = lbee.audit(X, S, sentences=sentences, probs=probs, labels=labels, image_ids=ids)
    lbee.write_run_folder(result, tmp_path / "run", name=payload, model=payload)
    md = (tmp_path / "run" / "report.md").read_text()
    # a code span shows its text as typed, HTML as text (sweep 32bb N8: an escaped '&lt;' showed literally there)
    outside = re.sub(r"(`+)[^`\n]*?\1", "", md)
    assert "&lt;img src=x onerror=alert(1)>" in md and "<img" not in outside and "`<img src=x onerror" in md
