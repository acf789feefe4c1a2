"""Sweep 32: an output named through a folder that does not exist yet is checked where it will land."""

import pytest
from click.testing import CliRunner

from lbee.cli import cli


@pytest.mark.parametrize("via", ["a/..", "a/b/../.."])
def test_an_output_through_a_missing_folder_and_back_replaces_nothing(tmp_path, monkeypatch, via):
    """`--out a/../notes.txt` with no `a/` passed the check (the path as written did not exist); the writer then
    made `a/`, and its file replaced ./notes.txt, the input grammar or the class list without --overwrite."""
    import shutil
    from pathlib import Path

    grammar = Path("sentence_sets/object_photos.grammar.yaml").resolve()
    monkeypatch.chdir(tmp_path)
    shutil.copy(grammar, tmp_path / "g.grammar.yaml")
    (tmp_path / "notes.txt").write_text("mine\n")
    (tmp_path / "classes.txt").write_text("cat\ndog\n")
    runs = {
        "notes.txt": ["spotcheck", "--max-conditions", "1"],
        "g.grammar.yaml": ["g.grammar.yaml", "--max-conditions", "1"],
        "classes.txt": ["object_photos", "--classes", "classes.txt", "--max-conditions", "1"],
    }
    for target, head in runs.items():
        before = (tmp_path / target).read_bytes()
        r = CliRunner().invoke(cli, ["sentences", "generate", *head, "--out", f"{via}/{target}"])
        assert r.exit_code != 0 and ("already exists" in r.output or "input file" in r.output), (target, r.output)
        assert "Traceback" not in r.output and (tmp_path / target).read_bytes() == before, target
