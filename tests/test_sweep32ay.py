"""Sweep 32ay: file: URLs naming this machine by another name, Γ and ω tables of another folder's images, a
grammar whose count of conjunctions grew huge before its refusal, and a dead writer's stage rolled over a folder
the user put back."""

import socket

import pytest
from conftest import killed_after_commit, two_photo_folders


def test_a_file_url_naming_this_machine_by_any_name_names_the_file_here(tmp_path):
    """B1: file://127.0.0.1/…/photos2/p0.png (or the hostname, user@localhost, localhost:80) was taken for another
    host's file, matched the image photos/p0.png by its end, and another folder's predictions were used."""
    from lbee.io.matching import local_path, match_table_rows

    ids, paths = two_photo_folders(tmp_path)
    for host in ("127.0.0.1", socket.gethostname(), "user@localhost", "localhost:80", "[::1]", "anotherhost"):
        url = f"file://{host}{tmp_path}/photos2/p0.png"
        assert local_path(url) == f"{tmp_path}/photos2/p0.png", url
        assert match_table_rows([url], ids, paths)[0].tolist() == [-1], url
        assert match_table_rows([f"file://{host}{tmp_path}/photos/p0.png"], ids, paths)[0].tolist() == [0]  # itself
    # a path that is not here still matches by its end, whichever host
    assert match_table_rows(["file://127.0.0.1/nowhere/here/p0.png"], ids, paths)[0].tolist() == [0]


def test_relevance_and_performance_tables_of_another_folders_files_match_no_image(tmp_path):
    """B4: a Γ table whose ids were the absolute paths (or file: URLs) of another folder's existing images was
    matched to the run's images by their file names and scored the run in silence (AHR 1.0 → 0.0); the same ids in
    a predictions table were refused. Γ and ω tables now get the images' paths too."""
    import numpy as np
    import pandas as pd
    import pytest

    from lbee.io.relevance import check_relevance_table, load_relevance
    from lbee.io.schemas import validate_performance

    ids, paths = two_photo_folders(tmp_path)
    sentences = ["a dark photo", "a bright photo"]
    for other in (f"{tmp_path}/photos2/p0.png", f"file://{tmp_path}/photos2/p0.png"):
        table = pd.DataFrame({"image": [other], "a dark photo": [True], "a bright photo": [False]})
        table.to_csv(tmp_path / "g.csv", index=False)
        with pytest.raises(ValueError, match="none of its 1 row"):
            load_relevance(tmp_path / "g.csv", ids, sentences, image_paths=paths)
        with pytest.raises(ValueError, match="none of its 1 row"):
            check_relevance_table(tmp_path / "g.csv", ids, sentences, paths)
        with pytest.raises(ValueError, match="has no row for 1 of the run's 1 images"):
            validate_performance(
                pd.DataFrame({"image": [other], "performance": [1.0]}), image_ids=ids, image_paths=paths
            )
    mine = f"{tmp_path}/photos/p0.png"  # the image's own path matches it
    pd.DataFrame({"image": [mine], "a dark photo": [True], "a bright photo": [False]}).to_csv(
        tmp_path / "g.csv", index=False
    )
    rel = load_relevance(tmp_path / "g.csv", ids, sentences, image_paths=paths)
    assert rel.tolist() == [[True, False]]
    omega = validate_performance(
        pd.DataFrame({"image": [mine], "performance": [0.0]}), image_ids=ids, image_paths=paths
    )
    assert np.array_equal(omega, [0.0])


def test_a_grammar_far_over_the_limit_is_refused_from_the_counts_magnitude(tmp_path):
    """B3: a 700 kB grammar of 16,000 deniable subjects with max_conditions 16,000 spent 190 s summing integers of
    thousands of digits, only to refuse it. The magnitude comes from the same sums in the log domain; the exact
    count only where it is near the limit."""
    import math
    import random

    import pytest

    from lbee.grammar import count_conjunctions, generate, load_grammar
    from lbee.grammar._generate import _log10_bound

    rng = random.Random(0)
    for _ in range(20):
        sizes = [rng.randint(1, 6) for _ in range(rng.randint(1, 40))]
        k = rng.randint(1, len(sizes))
        grammar = type("G", (), {"keys": lambda self, s=sizes: [(None, [0] * m) for m in s]})()
        magnitude, whole = _log10_bound(sizes, k)
        assert whole and magnitude == pytest.approx(math.log10(count_conjunctions(grammar, k)), rel=1e-9)
    n = 3000
    lines = ["name: c", "description: x", "lead: A photo with", "bare: A photo", f"max_conditions: {n}", "subjects:"]
    lines += [f"- {{id: s{i}, noun: n{i}, deniable: true}}" for i in range(n)]
    (tmp_path / "c.grammar.yaml").write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"allows up to about 10\^1,\d{3} conjunctions, over the limit of 200,000"):
        generate(load_grammar(tmp_path / "c.grammar.yaml"))


def test_a_killed_writers_swap_is_not_finished_over_files_put_there_since(tmp_path):
    """B2: `lbee embed --overwrite` killed in its swap; the user removed the folder and put back a file of their own;
    the next writer into it, without --overwrite, finished the dead swap: the user's file was moved aside and
    deleted. Now the next writer refuses, moves nothing, and says where the killed writer's files are kept."""
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    import pytest

    from lbee.io.rollforward import OutputChangedError
    from lbee.io.staging import staged_entries

    out = tmp_path / "K"
    out.mkdir()
    for name in ("a.txt", "b.txt"):
        (out / name).write_text(f"old {name}")
    code = (
        "import sys\nfrom pathlib import Path\nfrom lbee.io.staging import staged_entries\n"
        "with staged_entries(Path(sys.argv[1])) as st:\n"
        "    (st / 'a.txt').write_text('new a.txt'); (st / 'b.txt').write_text('new b.txt')\n"
    )
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "LBEE_TEST_KILL_AT": "swapping", "PYTHONPATH": root}
    proc = subprocess.run([sys.executable, "-c", code, str(out)], env=env, timeout=120)
    assert proc.returncode == -9 and (out / "a.txt").read_text() == "new a.txt" and not (out / "b.txt").exists()
    shutil.rmtree(out)  # the user puts back a folder of their own
    out.mkdir()
    (out / "b.txt").write_text("mine")
    with pytest.raises(OutputChangedError, match=r"was changed \(b.txt\) after an lbee command writing it was killed"):
        with staged_entries(out) as st:
            (st / "c.txt").write_text("c")
    assert sorted(p.name for p in out.iterdir()) == ["b.txt"] and (out / "b.txt").read_text() == "mine"
    kept = {p.name.split(".lbee-")[1].split("-")[0]: p for p in tmp_path.iterdir() if ".lbee-" in p.name}
    assert (kept["staging"] / "b.txt").read_text() == "new b.txt"  # the killed writer's new file, kept
    assert (kept["replaced"] / "b.txt").read_text() == "old b.txt"  # and those it replaced
    # the user removes them: the next writer goes on
    for folder in kept.values():
        shutil.rmtree(folder)
    with staged_entries(out) as st:
        (st / "c.txt").write_text("c")
    assert sorted(p.name for p in out.iterdir()) == ["b.txt", "c.txt"] and (out / "b.txt").read_text() == "mine"


def test_evaluate_reads_the_images_paths_of_its_run_only_where_they_are_the_runs_images(tmp_path, capsys):
    """B4 for `lbee evaluate`: the Γ and ω tables get the paths of the run's images.parquet, read only where its
    images are the explanation's (an edited or another run's table is said by the run-file checks)."""
    import pandas as pd

    from lbee.cli.evaluate import _image_paths

    assert _image_paths(tmp_path, ["a.png"]) is None  # no images.parquet: ids alone
    assert "no images.parquet beside the explanation: the Γ and ω tables' ids are matched by" in capsys.readouterr().err
    pd.DataFrame({"image": ["a.png", "b.png"], "path": ["/d/a.png", None]}).to_parquet(tmp_path / "images.parquet")
    assert _image_paths(tmp_path, ["a.png", "b.png"]) == ["/d/a.png", None]
    assert capsys.readouterr().err == ""
    assert _image_paths(tmp_path, ["b.png", "a.png"]) is None
    assert "does not list the explanation's images" in capsys.readouterr().err  # sweep 32az N3: said, not silent
    pd.DataFrame({"image": ["a.png"], "path": ["d/a.png"]}).to_parquet(tmp_path / "images.parquet")
    assert _image_paths(tmp_path, ["a.png"]) is None  # a relative path: nothing to compare a table's file with
    assert "with their absolute paths" in capsys.readouterr().err


def test_evaluate_refuses_a_run_a_killed_writer_left_half_swapped(tmp_path):
    """Sweep 32az N2: `lbee evaluate` on a run whose `describe --overwrite` was killed mid-swap said only that
    explanation.json was missing; it says what happened and what settles it, as every reader of a run does."""
    from conftest import lbee_cli

    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "explanation.json").write_text("{}")
    (tmp_path / ".run.lbee-staging-99999.0-aaaaaaaaaaaa").mkdir()  # a dead writer's stage beside the run
    (tmp_path / "rel.npy").write_bytes(b"")
    r = lbee_cli("evaluate", tmp_path / "run", "--relevance", tmp_path / "rel.npy", "--out", tmp_path / "m.csv")
    assert r.exit_code == 1 and "was being rewritten by an lbee command that was killed" in r.output, r.output


def test_a_long_file_name_a_non_file_and_huge_confidences_are_said_briefly(tmp_path):
    """Non-blocking N3, N4, N6: a 5,000-character --sentences name was echoed whole, /dev/stdin was said not to
    exist, and confidences of ±1e308 printed numpy's overflow warnings."""
    import warnings

    import numpy as np
    from conftest import lbee_cli

    result = lbee_cli("sentences", "show", "x" * 5000)
    assert result.exit_code != 0 and "File name too long" in result.output
    assert "(5,000 characters)" in result.output and len(result.output) < 500, result.output
    result = lbee_cli("sentences", "show", "/dev/null")
    assert result.exit_code != 0 and "'/dev/null' is not a regular file" in result.output, result.output

    from lbee.core.split import resolve_split

    phi = np.linspace(0.0, 1.0, 40)
    phi[:2], phi[2:4] = 1e308, -1e308
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's overflow warnings were errors here
        hard, easy = resolve_split(40, confidence=phi)
        assert hard[2:4].all() and easy[:2].all()
        with np.testing.assert_raises(ValueError):  # the split fails: its message, not a warning
            resolve_split(40, confidence=np.r_[np.full(38, 0.5), 1e308, -1e308], a=5.0)


def test_a_sensitivity_table_of_another_folders_files_matches_no_image(tmp_path):
    """Left from B4: a sensitivity table was matched to the images by their ids alone, so another folder's existing
    files gave the run their iRFS by file name. It gets the images' paths, as every table does."""
    import pandas as pd
    import pytest

    from lbee.analyses.sensitivity_outputs import confidence_from_sensitivity

    ids, paths = two_photo_folders(tmp_path)
    mine = pd.DataFrame({"image": paths, "irfs": [0.3]})
    assert confidence_from_sensitivity(mine, ids, image_paths=paths).tolist() == [0.3]
    other = pd.DataFrame({"image": [str(tmp_path / "photos2" / "p0.png")], "irfs": [0.3]})
    assert confidence_from_sensitivity(other, ids).tolist() == [0.3]  # without the paths: by its end, as before
    with pytest.raises(ValueError, match="has no row for 1 of the 1 images"):
        confidence_from_sensitivity(other, ids, image_paths=paths)


def _killed_report(root, monkeypatch):
    """A report into ``root`` (index.html, run folder a/) committed, then killed before its swap."""
    import pytest

    import lbee.io.staged_tree as st
    from lbee.run.outputs import RUN_ENTRIES

    (root / "a").mkdir(parents=True)
    (root / "index.html").write_text("old index")
    (root / "a" / "explanation.json").write_text("old run")

    def killed(*args, **kwargs):
        raise KeyboardInterrupt  # as a kill between the commit and the swap

    monkeypatch.setattr(st, "_swap", killed)
    with pytest.raises(KeyboardInterrupt):
        with st.staged_tree(root, [root / "a"], replaces=RUN_ENTRIES) as stage:
            (stage / "a").mkdir()
            (stage / "a" / "explanation.json").write_text("new run")
            (stage / "index.html").write_text("new index")
    monkeypatch.undo()


def test_a_killed_reports_swap_is_not_finished_over_a_run_folder_changed_since(tmp_path, monkeypatch):
    """Left from B2: a report's swap (`lbee.io.staged_tree`) had no record of what its folders held at its commit,
    so the next report finished a killed one's swap over a run file the user had put back (and deleted it)."""
    import pytest

    from lbee.io.rollforward import OutputChangedError
    from lbee.io.staged_tree import recover_tree
    from lbee.run.outputs import RUN_ENTRIES

    root = tmp_path / "rr"
    _killed_report(root, monkeypatch)
    (root / "a" / "explanation.json").unlink()  # restored from a backup: the same name, another file
    (root / "a" / "explanation.json").write_text("mine")
    with pytest.raises(OutputChangedError, match=r"rr/a' was changed \(explanation.json\)"):
        recover_tree(root, RUN_ENTRIES)
    assert (root / "a" / "explanation.json").read_text() == "mine"
    assert (root / "index.html").read_text() == "old index"  # nothing moved, in any folder

    # sweep 32ba: a file of the run's names made after the kill (the run's old one never was) was deleted
    later = tmp_path / "later" / "rr"
    _killed_report(later, monkeypatch)
    (later / "a" / "assignments.parquet").write_text("mine")
    with pytest.raises(OutputChangedError, match=r"rr/a' was changed \(assignments.parquet\)"):
        recover_tree(later, RUN_ENTRIES)
    assert (later / "a" / "assignments.parquet").read_text() == "mine"

    fresh = tmp_path / "fresh" / "rr"  # unchanged: the killed report is finished, as before
    _killed_report(fresh, monkeypatch)
    recover_tree(fresh, RUN_ENTRIES)
    assert (fresh / "a" / "explanation.json").read_text() == "new run"
    assert (fresh / "index.html").read_text() == "new index"
    assert not [p for p in fresh.parent.iterdir() if ".lbee-" in p.name]


def test_a_grammar_of_very_many_keys_is_refused_from_a_partial_sum(monkeypatch, tmp_path):
    """Sweep 32az: the log-domain sums still cost keys × max_conditions: 120,000 deniable subjects with as many
    conditions held `lbee sentences generate` for minutes. The j-condition sums are at least C(keys, j), so past
    30 digits the rest is not summed, and the message says "more than"."""
    import math

    import pytest

    from lbee.grammar import generate, load_grammar
    from lbee.grammar._generate import _log10_bound

    magnitude, whole = _log10_bound([2] * 200, 200, budget=1_000)
    assert not whole and 30 <= magnitude < math.log10(3) * 200  # a lower bound of the count (3^200 − 1), past 30
    assert _log10_bound([2] * 200, 200)[1]  # within the budget: whole
    n = 300
    lines = ["name: c", "description: x", "lead: A photo with", "bare: A photo", f"max_conditions: {n}", "subjects:"]
    lines += [f"- {{id: s{i}, noun: n{i}, deniable: true}}" for i in range(n)]
    (tmp_path / "c.grammar.yaml").write_text("\n".join(lines) + "\n")
    monkeypatch.setitem(_log10_bound.__kwdefaults__, "budget", 1_000)
    with pytest.raises(ValueError, match=r"allows more than 10\^\d+ conjunctions, over the limit of 200,000"):
        generate(load_grammar(tmp_path / "c.grammar.yaml"))


def test_a_killed_writers_swap_is_not_finished_over_a_folder_whose_contents_changed(tmp_path, monkeypatch):
    """Sweep 32az: a folder's identity was its inode alone, so a folder the user emptied and filled again (or
    removed and made again on the same inode) passed for the one the killed writer recorded, and the next writer
    finished the dead swap over it: the user's file was deleted. A folder's identity names what it holds."""
    import shutil

    import pytest

    import lbee.io.staging as staging
    from lbee.io.output_lock import lock_output, unlock_output
    from lbee.io.rollforward import OutputChangedError

    def killed_writer(out):
        out.mkdir()
        (out / "sub").mkdir()
        (out / "sub" / "f.txt").write_text("old f")
        killed_after_commit(out, monkeypatch, {"sub/f.txt": "new f"})

    out = tmp_path / "K"
    killed_writer(out)
    held = lock_output(out)
    before = held.identity("sub")
    unlock_output(held)
    (out / "sub" / "f.txt").unlink()  # the user empties the folder and puts a file of their own there
    (out / "sub" / "notes.txt").write_text("mine")
    held = lock_output(out)
    assert held.identity("sub")[:2] == before[:2] and held.identity("sub") != before  # the same inode, not the same
    unlock_output(held)
    with pytest.raises(OutputChangedError, match=r"was changed \(sub\)"):
        with staging.staged_entries(out) as st:
            (st / "c.txt").write_text("c")
    assert (out / "sub" / "notes.txt").read_text() == "mine"

    shutil.rmtree(tmp_path)  # unchanged: finished as before
    tmp_path.mkdir()
    killed_writer(out)
    with staging.staged_entries(out) as st:
        (st / "c.txt").write_text("c")
    assert (out / "sub" / "f.txt").read_text() == "new f" and (out / "c.txt").exists()
    assert not [p for p in tmp_path.iterdir() if ".lbee-" in p.name]


def test_under_a_data_root_an_id_through_dotdot_naming_another_image_matches_none(tmp_path):
    """Sweep 32az: in a job, `root/photos/../photos2/p0.png` (or its file: URL, `%2e%2e`) named another existing image
    of the root; the root's rule refuses '..', so the id was taken for a file not here and matched the image
    photos/p0.png by its end. Its '..' are now read in the text first."""
    from lbee.io.confinement import confined_to
    from lbee.io.matching import match_table_rows

    ids, paths = two_photo_folders(tmp_path)
    other = [f"{tmp_path}/photos/../photos2/p0.png", f"file://h{tmp_path}/photos/%2e%2e/photos2/p0.png"]
    with confined_to(tmp_path):
        for key in other:
            assert match_table_rows([key], ids, paths)[0].tolist() == [-1], key
        assert match_table_rows([f"{tmp_path}/photos2/../photos/p0.png"], ids, paths)[0].tolist() == [0]  # itself
        assert match_table_rows(["/elsewhere/../p0.png"], ids, paths)[0].tolist() == [0]  # outside: by its end
    for key in other:  # the command line: the same
        assert match_table_rows([key], ids, paths)[0].tolist() == [-1], key


def test_rendering_a_sentence_does_not_walk_every_subject(tmp_path):
    """Sweep 32az: `Grammar.render` read every subject of the grammar for every sentence (O(sentences × subjects)):
    10,000 one-noun subjects, 10,000 sentences, took about 100 s. A clause's words are matched to the subjects once."""
    from lbee.grammar import generate, load_grammar

    n = 400
    lines = ["name: c", "description: x", "lead: A photo with", "bare: A photo", "max_conditions: 1", "subjects:"]
    lines += ["- id: box", "  noun: box", "  attributes:", "  - id: place", "    kind: clause"]
    lines += ["    values: {high: where the box is high, low: where the box is low}"]
    lines += [f"- {{id: s{i}, noun: n{i}}}" for i in range(n)]
    (tmp_path / "c.grammar.yaml").write_text("\n".join(lines) + "\n")
    grammar = load_grammar(tmp_path / "c.grammar.yaml")
    walks = []

    class Subjects(tuple):  # counts the walks over every subject
        def __iter__(self):
            walks.append(1)
            return super().__iter__()

    object.__setattr__(grammar, "subjects", Subjects(grammar.subjects))
    sentences, _, _ = generate(grammar)
    assert len(sentences) == n + 3 and any(s.endswith("where the box is high") for s in sentences)
    assert len(walks) <= 10, len(walks)  # keys() and a clause's words once each, not once per sentence


@pytest.mark.parametrize(
    "noun, said",
    [
        ("thing{i}", "thing{i}"),
        ("thé {i}", "THÉ {i}"),  # sweep 32bb: a noun not plain ASCII was tried for every clause (2,000: minutes)
        ("ﬁsh{i}", "FISH{i}"),  # words said alike (NFKC, case-folded): the index must find them too
        ("straße{i}", "STRAẞE{i}"),
    ],
)
def test_a_clause_of_every_subject_is_matched_to_the_subjects_it_names_by_their_nouns(
    tmp_path, monkeypatch, noun, said
):
    """Sweep 32ba: each new clause's words were tried against every subject (a regex each): 2,000 subjects with a
    clause of their own took 250 s. The nouns are looked up by the clause's words; the sentences are the same."""
    import lbee.grammar._grammar as gm
    from lbee.grammar import generate, load_grammar

    n = 300
    lines = ["name: c", "description: x", "lead: A photo with", "bare: A photo", "max_conditions: 1", "subjects:"]
    for i in range(n):
        lines += [f"- id: s{i}", f"  noun: {noun.format(i=i)}", "  attributes:", "  - id: place", "    kind: clause"]
        w = said.format(i=i)
        lines += [f"    values: {{up: where the {w}s are up, down: where every {w} is down}}"]
    (tmp_path / "c.grammar.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    calls = []
    says = gm._says
    monkeypatch.setattr(gm, "_says", lambda *a, **k: calls.append(1) or says(*a, **k))
    sentences, _, _ = generate(load_grammar(tmp_path / "c.grammar.yaml"))
    w = said.format(i=7)
    # the clause names its subject: the presence it implies goes unsaid ("A photo with a thing7, where ...": not)
    assert f"A photo where the {w}s are up" in sentences and f"A photo where every {w} is down" in sentences
    assert len(sentences) == 3 * n and len(calls) < 20 * n, len(calls)  # not 2n clauses × n subjects


def test_a_nouns_index_key_is_the_same_for_words_said_alike():
    """The noun index (`_word_key`) compares words as `said_alike` does (NFKC, case-folded), as `_says` does."""
    import unicodedata

    from lbee.grammar import said_alike
    from lbee.grammar._words import _word_key

    pairs = [("ſtar", "STAR"), ("σοφός", "ΣΟΦΌΣ"), ("\u212aelvin", "kelvin"), ("ﬁsh", "FISH"), ("Ｂox", "box")]
    pairs += [("straße", "STRASSE"), (unicodedata.normalize("NFD", "café"), "CAFÉ")]
    for a, b in pairs:
        assert said_alike(a) == said_alike(b) and _word_key(a) == _word_key(b), (a, b)
    assert _word_key("red-box") != _word_key("red.box") != _word_key("red box")


def test_a_folders_contents_are_read_without_recursion_however_deep(tmp_path):
    """Sweep 32ba N1: an old output folder 1,200 levels deep stopped `describe --overwrite` with a bare
    RecursionError from the walk that names a folder's contents."""
    import os

    from lbee.io.rollforward import contents

    deep = tmp_path / "top"
    deep.mkdir()
    fd = os.open(deep, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(1300):  # deeper than Python's recursion limit (os.makedirs recurses too)
        os.mkdir("d", dir_fd=fd)
        fd, above = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd), fd
        os.close(above)
    os.close(fd)
    try:
        before = contents(deep)
        assert before == contents(deep)
        (deep / "d" / "d" / "note.txt").write_text("mine")
        assert contents(deep) != before
    finally:
        (deep / "d" / "d" / "note.txt").unlink(missing_ok=True)
        for level in range(1300, 0, -1):  # removed here, deepest first: pytest's own clean-up recurses
            os.rmdir(os.path.join(deep, *["d"] * level))
