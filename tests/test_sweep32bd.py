"""Sweep 32bd: nouns that end in a combining mark or are said alike, nouns told apart only by punctuation, and ids
that reach another folder through a folder that does not exist."""

import unicodedata

from conftest import two_photo_folders


def _grammar(tmp_path, nouns, clause, max_conditions=2):
    lines = [
        "name: c",
        "description: x",
        "lead: A photo with",
        "bare: A photo",
        f"max_conditions: {max_conditions}",
        "subjects:",
    ]
    lines += ["- id: dog", "  noun: dog"]
    for i, noun in enumerate(nouns):
        lines += [f"- id: s{i}", f"  noun: {noun}", "  attributes:", "  - id: place", "    kind: clause"]
        said = clause.format(noun=noun.strip("'"))
        lines += [f"    values: {{up: {said}}}"]
    path = tmp_path / "c.grammar.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_clause_names_a_noun_that_ends_in_a_combining_mark_or_is_written_alike():
    """B1: "बिल्ली" ends in a vowel sign (no word character), where `\\b` found no word's end: the subject was said
    again ("with a बिल्ली and a dog, the बिल्ली where the बिल्ली is sleeping"); so was an NFD "café"."""
    from lbee.grammar import generate, load_grammar

    nfd = unicodedata.normalize("NFD", "café")
    for noun, said in [("बिल्ली", "बिल्ली"), (nfd, nfd), ("café", nfd), ("ﬁsh", "FISH"), ("straße", "STRASSE")]:
        import tempfile
        from pathlib import Path

        with tempfile.TemporaryDirectory() as d:
            clause = "where the " + said + " is up"
            sentences, _, _ = generate(load_grammar(_grammar(Path(d), [noun], clause)))
        assert f"A photo {clause}" in sentences, (noun, sentences)
        assert f"A photo with a dog, {clause}" in sentences, (noun, sentences)
        assert not any(s.count(said) > 1 for s in sentences), (noun, sentences)


def test_nouns_told_apart_only_by_punctuation_are_not_each_tried_for_every_clause(tmp_path, monkeypatch):
    """B2: 2,000 nouns "red-box", "red.box", ... had one index key: every clause tried every subject (120 s)."""
    import lbee.grammar._grammar as gm
    from lbee.grammar import generate, load_grammar

    marks = "-.,:;!?+=~^&*@#$%/|()[]<>"
    nouns = [f"red{a}{b}box" for a in marks for b in marks][:600]
    path = _grammar(tmp_path, [f"'{n}'" for n in nouns], "'where the {noun} is up'", 1)
    calls = []
    says = gm._says
    monkeypatch.setattr(gm, "_says", lambda *a, **k: calls.append(1) or says(*a, **k))
    sentences, _, _ = generate(load_grammar(path))
    assert len(calls) < 20 * 600, len(calls)
    assert "A photo where the red-.box is up" in sentences and "A photo where the red.-box is up" in sentences


def test_a_path_through_a_missing_folder_to_another_folders_file_matches_no_image(tmp_path):
    """B3, B4: /w/gone/../photos2/p0.png names no file as the kernel reads it (gone/ does not exist) and was matched
    to the image p0.png of /w/photos by its end: predictions and Γ of photos2/, and embeddings whose ids.txt lists
    such paths, were taken for photos/ in silence. Without a data root, its '..' are read in the text too."""
    import numpy as np
    import pytest

    from lbee.io.matching import file_here, match_table_rows
    from lbee.io.provenance import check_row_ids

    ids, paths = two_photo_folders(tmp_path)
    (tmp_path / "photos2" / "p0.png").write_bytes(b"another picture")
    other = f"{tmp_path}/photos2/p0.png"
    for written in (f"{tmp_path}/gone/../photos2/p0.png", f"{tmp_path}/photos2\\x\\..\\p0.png"):
        assert file_here(written) == other, written
        assert match_table_rows([written], ids, paths)[0].tolist() == [-1], written
    mine = f"{tmp_path}/gone/../photos/p0.png"
    assert match_table_rows([mine], ids, paths)[0].tolist() == [0]
    (tmp_path / "e").mkdir()
    np.save(tmp_path / "e" / "embeddings.npy", np.eye(1, 4, dtype=np.float32))
    for row in (f"{tmp_path}/gone/../photos2/p0.png", f"file://{tmp_path}/gone/../photos2/p0.png"):
        (tmp_path / "e" / "ids.txt").write_text(row + "\n")
        with pytest.raises(ValueError, match=r"row 1 was embedded from '.*photos2/p0.png'"):
            check_row_ids(
                tmp_path / "e" / "embeddings.npy", 1, ids, "image_embeddings", against="the run", run_files=paths
            )


def test_a_long_value_is_cut_in_every_usage_error():
    """N3: a 5,000-character value of a numeric option (lbee's own check) or a command name was echoed whole."""
    from click.testing import CliRunner

    from lbee.cli import cli

    long = "x" * 5000
    for args, said in (
        (["describe", "--clusters", long, "x"], "--clusters"),
        (["describe", "--a", long, "x"], "--a"),
        ([long], "No such command"),
    ):
        r = CliRunner().invoke(cli, args)
        assert r.exit_code == 2 and said in r.output and len(r.output) < 600, (args[:2], r.output[-300:])


def test_report_md_makes_no_link_from_a_sentence(tmp_path):
    """N1: a sentence "[link](javascript:alert(5))" of the user's file was a link in report.md's table."""
    import re

    import numpy as np

    import lbee

    rng = np.random.default_rng(0)
    X, S = rng.normal(size=(60, 8)).astype(np.float32), rng.normal(size=(4, 8)).astype(np.float32)
    probs, labels = rng.dirichlet(np.ones(2), size=60), rng.integers(0, 2, 60)
    sentences = [f"[link {k}](javascript:alert(5)) a\\|b" for k in range(4)]
    result = lbee.audit(X, S, sentences=sentences, probs=probs, labels=labels, tau=0.25)
    lbee.write_run_folder(result, tmp_path / "run")
    md = (tmp_path / "run" / "report.md").read_text()
    rows = [line for line in md.splitlines() if line.startswith("| 1 |")]
    assert rows and all("\\[link" in r and not re.search(r"(?<!\\)\[link", r) for r in rows), rows
    assert all("a\\\\\\|b" in r for r in rows), rows  # the user's backslash kept, the pipe still a character
