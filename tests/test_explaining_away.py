"""A confounder the search added is explained away by the failure's own conditions (lbee.core.explaining_away)."""

import numpy as np
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


def test_a_confounder_the_calibrated_probabilities_hid_is_dropped():
    """ "in daylight" holds for 90 % of the failure's frames. Over the night frames it keeps out, the others' mean P
    (0.77) overstated how many held them: the images kept out are chosen where the confounder is unlikely, and the
    failure's conditions go with it. Read against the joint base rate, the others hold for fewer of those frames,
    and daylight goes."""
    run = run_world("street_scenes", level=0.97, seed=2, methods=["compose"])
    row = {r["failure"]: r for r in run.rows}["A street scene on a dry road, in fog, with strong sun glare"]
    assert row["confounder"] == "A street scene in daylight"
    assert row["sentence"] == row["failure"] and row["exact"] == 1.0


def _calibrated(truth, rng, separation):
    """P(literal) of a noisy encoder, calibrated over every image: the posterior of two unit Gaussians."""
    s = rng.normal(np.where(truth, separation, 0.0), 1.0)
    base = truth.mean()
    odds = base / (1 - base) * np.exp(separation * s - separation**2 / 2)
    return odds / (1 + odds)


@pytest.mark.parametrize("inside", [0.9, 0.5])
def test_the_expectations_follow_the_joint_base_rate_of_the_images_kept_out(inside):
    """Calibrated P's over every image (atom ROC-AUC 0.97), the images kept out chosen where the literal is
    unlikely. Where the literal goes with the others (90 % of their images, against half of the rest), the images
    kept out hold the others less often than their mean P says: both expectations move towards the true shares.
    Where it is independent of them, they stay as the mean P's put them."""
    from lbee.core.explaining_away import _expected

    rng = np.random.default_rng(0)
    n = 200_000
    rest = rng.random(n) < 0.05
    lit = rng.random(n) < np.where(rest, inside, 0.5)
    p_rest, p_j = _calibrated(rest, rng, 2.66), _calibrated(lit, rng, 2.66)
    kept_out = (p_rest >= 0.5) & (p_rest * p_j < 0.5)
    needed, free = _expected(p_rest, p_j, kept_out, np.ones(n, bool))
    raw_needed, raw_free = (p_rest * p_j)[kept_out].mean(), p_rest[kept_out].mean()
    true_needed, true_free = (rest & lit)[kept_out].mean(), rest[kept_out].mean()
    if inside == 0.9:
        assert raw_free - true_free > 0.1 and true_needed - raw_needed > 0.1  # the mean P's, far off
        assert abs(free - true_free) < abs(raw_free - true_free) - 0.02
        assert abs(needed - true_needed) < abs(raw_needed - true_needed) - 0.04
    else:
        assert abs(free - raw_free) < 0.01 and abs(needed - raw_needed) < 0.01
