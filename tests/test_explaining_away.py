"""A confounder the search added is explained away by the failure's own conditions (lbee.core.explaining_away)."""

import pytest

from lbee.bench.world_bench import run_world


def _compose_rows(monkeypatch, keep_all):
    if keep_all:  # the search as it was: every literal it found stays
        import lbee.core.discovery as discovery
        import lbee.core.pruning as pruning

        for module in (pruning, discovery):
            monkeypatch.setattr(module, "explained_away", lambda search, lits, weight=None: list(lits))
    run = run_world("camera_traps", level=0.97, seed=4, methods=["compose"])
    return {r["failure"]: r for r in run.rows}


@pytest.mark.parametrize("keep_all", [False, True])
def test_a_confounder_at_90_percent_inside_and_half_outside_is_dropped(monkeypatch, keep_all):
    """In this camera-trap world, "a nearby wild boar, where a deer is grazing" fails, and "in fog" holds for 90 % of
    its images against a quarter to half of the others. The search adds it: it halves the images the noisy atoms
    wrongly let in. The images it keeps out fail like the failure's, so it goes, and the first sentence is the
    failure exactly."""
    rows = _compose_rows(monkeypatch, keep_all)
    failure = "A camera-trap photo with a nearby wild boar, where a deer is grazing"
    row = rows[failure]
    assert row["confounder"] == "A camera-trap photo in fog"
    if keep_all:
        assert "in fog" in row["sentence"] and row["exact"] == 0.0  # what the fix changes
    else:
        assert row["sentence"] == failure and row["exact"] == 1.0
