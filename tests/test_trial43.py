"""Trial 43 (a mushroom-species audit by a new user): what it found, fixed."""

import json

import pytest

from lbee.run.finding_places import unplaced_line


@pytest.mark.parametrize("n_groups, said", [(4, "1 in 1 other group and"), (5, "2 in 2 other groups and")])
def test_a_findings_other_groups_are_counted_in_words_that_agree(n_groups, said):
    """The terminal said "1 in 1 other groups"."""
    groups = [(i, 1) for i in range(n_groups)]
    place = {"number": 2, "text": "a cap", "n": n_groups + 3, "groups": groups, "unassigned": 3, "elsewhere": 0}
    assert said in unplaced_line(place)


def test_evaluate_names_the_metrics_it_writes_beside_as_the_runs_own(tmp_path, capsys):
    """`lbee evaluate RUN` said describe's metrics.json held "another command's metrics (a report's)"."""
    from lbee.cli.evaluate import _default_target

    (tmp_path / "metrics.json").write_text(json.dumps([{"method": "pdiff", "AHR": 0.5, "describer": "x"}]))
    assert _default_target(tmp_path).name == "evaluate_metrics.json"
    said = capsys.readouterr().err
    assert "the run's own metrics (as lbee describe and lbee report write them" in said
    assert "a report's" not in said
