"""``join``: hard groups a user takes for pieces of one failure, joined before describing (trial 6: one planted
failure came out as four groups with a plain sentence file, and nothing could put them back together)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from lbee import RunSettings
from lbee.core.partition import Partition
from tests.test_first_day import _describe, confident_errors  # noqa: F401  (the fixture)


def test_settings_read_join_from_the_cli_yaml_and_library_forms_alike():
    assert RunSettings(join=("3,1,2",)).join == ((1, 2, 3),)
    assert RunSettings(join=[[4, 0], [2, 1]]).join == ((0, 4), (1, 2))
    assert RunSettings(join=[1, 2]).join == ((1, 2),)  # one entry given alone
    assert RunSettings().join == ()
    for bad, said in [
        (("1",), "at least two different groups"),
        (("1,1",), "at least two different groups"),
        (("1,a",), "group numbers separated by commas"),
        ([[1, 2], [2, 3]], "group 2 is in two"),
        ([[-1, 2]], "group numbers in [0, 999]"),
        ([[1.5, 2]], "each entry a list of group numbers"),
        ([[True, 2]], "each entry a list of group numbers"),
        ({"a": 1}, "a list of groups to join"),
    ]:
        with pytest.raises(ValueError, match=re.escape(said)):
            RunSettings(join=bad)
    with pytest.raises(ValueError, match="received `per_class`"):
        RunSettings(join=[[0, 1]], per_class="errors")
    with pytest.raises(ValueError, match="received 2 `slicers`"):
        RunSettings(join=[[0, 1]], slicers=("ward", "domino"))


def test_partition_join_puts_the_union_in_place_of_its_first_piece():
    rng = np.random.default_rng(0)
    part = Partition(n_clusters=5).fit(rng.normal(size=(300, 8)), confidence=rng.random(300))
    before = [g.copy() for g in part.hard_groups_]
    part.join([[3, 1]])
    assert len(part.hard_groups_) == 4
    np.testing.assert_array_equal(part.hard_groups_[1], np.sort(np.concatenate([before[1], before[3]])))
    for new, old in zip([0, 2, 3], [0, 2, 4]):
        np.testing.assert_array_equal(part.hard_groups_[new], before[old])
    assert part.joined_ == [[1, 3]] and len(part.matches_) == 4
    with pytest.raises(ValueError, match="hard groups 0 to 3"):
        part.join([[0, 9]])


def test_describe_joins_the_groups_as_the_run_printed_them(confident_errors):
    p, _ = confident_errors
    r = _describe(p, "pred.csv", "plain", "--clusters", "4")
    assert r.exit_code == 0, r.output
    assert "4 hard groups." in r.output  # --clusters given: no word on the default
    plain = pd.read_parquet(p / "plain" / "assignments.parquet")
    # the printed numbers are the groups' places in harm order, not the clustering's: join two that are not the
    # clustering's first ones
    r = _describe(p, "pred.csv", "joined", "--clusters", "4", "--join", "3,1")
    assert r.exit_code == 0, r.output
    assert "3 hard groups: the clustering's 4, with groups 1+3 joined (--join)." in " ".join(r.output.split())
    joined = pd.read_parquet(p / "joined" / "assignments.parquet")
    hard = (plain["split"] == "hard").to_numpy()
    before, after = plain["cluster"].to_numpy()[hard], joined["cluster"].to_numpy()[hard]
    assert set(after[np.isin(before, [1, 3])]) == {after[before == 1][0]}  # one group now
    assert len(set(after)) == 3
    for g in (0, 2):  # the others kept whole
        assert len(set(after[before == g])) == 1 and not np.isin(after[before == g], after[before == 1]).any()
    import json

    assert json.loads((p / "joined" / "explanation.json").read_text())["params"]["joined"] == [[1, 3]]
    r = _describe(p, "pred.csv", "bad", "--clusters", "4", "--join", "1,7")
    assert r.exit_code != 0
    assert "--join names group 7, but this run has hard groups 0 to 3" in " ".join(r.output.split())


def test_the_groups_line_says_what_merging_and_joining_made():
    """With a grammar the clustering's groups are merged first; --join then joins the hypotheses as printed."""
    from lbee.run.text import groups_line

    p = {"n_images": 2000, "n_hard": 403, "n_easy": 986, "n_clusters": 15, "n_slicer_groups": 15}
    assert groups_line({**p, "joined": [[0, 2]]}, 4, RunSettings()).endswith(
        "15 hard groups from the clustering, merged into 5 hypotheses (groups that one description covers are "
        "taken as pieces of one failure and merged), with groups 0+2 joined (--join): 4."
    )
    assert groups_line(p, 5, RunSettings()).endswith(
        "merged into 5 hypotheses (groups that one description covers are taken as pieces of one failure and merged)."
    )
    plain = {**p, "n_slicer_groups": None, "n_hard": 55, "n_clusters": 5}
    assert groups_line(plain, 5, RunSettings()).endswith(
        "5 hard groups (the default for 55 hard images, one per 10 below 150; --clusters sets it)."
    )
    assert groups_line({**plain, "joined": [[1, 2, 3], [0, 4]]}, 2, RunSettings(clusters=5)).endswith(
        "2 hard groups: the clustering's 5, with groups 1+2+3 and 0+4 joined (--join)."
    )


def test_the_groups_line_says_how_many_hard_images_no_hypothesis_holds():
    """An eighth user added the demo's groups (194 + 189 + 3 + 3 + 2 = 391) against its '403 hard'."""
    from lbee.run.text import groups_line

    p = {"n_images": 2000, "n_hard": 403, "n_easy": 986, "n_clusters": 15, "n_slicer_groups": 15}
    said = groups_line(p, 5, RunSettings(), in_groups=391)
    assert said.endswith(
        "; 12 hard images are in none of them (a hypothesis keeps what its description picks out, as the encoder "
        "sees it)."
    )
    assert groups_line(p, 5, RunSettings(), in_groups=403).endswith("pieces of one failure and merged).")
    # a fourteenth user: with Γ, how many of them a hypothesis's statement holds for; and one of each in the singular
    held = groups_line(p, 5, RunSettings(), in_groups=391, held=9)
    assert held.endswith("; by the given Γ, a hypothesis's statement holds for 9 of them).")
    one = groups_line({**p, "n_slicer_groups": 2}, 1, RunSettings(), in_groups=402)
    assert "merged into 1 hypothesis (" in one and "; 1 hard image is in none of them" in one


def test_tiny_clusters_are_not_warned_about_once_merged_into_hypotheses():
    """A fourteenth user read '5 of 9 hard clusters have fewer than 5 images' beside 'merged into 2 hypotheses':
    the merging joins a failure's pieces whatever their number, so the clusters before it are not warned about."""
    import warnings

    import numpy as np

    import lbee
    from lbee.core.clustering import cluster_notes

    rng = np.random.default_rng(0)
    X, S = rng.normal(size=(80, 8)), rng.normal(size=(12, 8))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exp = lbee.explain(X, S, confidence=rng.normal(size=80), n_clusters=12, tau=0.0)
    sizes = [len(c.indices) for c in exp.hard_clusters]
    assert np.median(sizes) < 5 and any("fewer than 5 images" in n for n in cluster_notes(exp))
    assert not any("fewer than" in n for n in cluster_notes(exp, group_sizes=sizes))
