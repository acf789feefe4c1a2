"""Where a finding that no hard group states lies: its images, by group, in no hypothesis, and elsewhere.

A finding is a statement confirmed on held-out images; it is usually some hard group's own statement. It can also be
a sentence found lower in a group's list (a describer's third), whose images the clustering spread over several groups
and the hard images in no hypothesis. Trial 30's second planted failure was such a finding: listed in the findings,
absent from the table of what fails, and 8 of its images were among the "hard images in no hypothesis" with nothing
to tie them to it. The terminal, the report and ``report.md`` now say where each such finding's images lie.
"""

from __future__ import annotations

import numpy as np


def unplaced_findings(conf, hard_clusters, unassigned):
    """The findings no hard group states, each with where the images it holds for lie.

    Parameters
    ----------
    conf : dict or None
        The run's confirmation block (``explanation.json``'s ``confirmation``).
    hard_clusters : list
        The hard groups, in the order the run shows them (each with ``indices``).
    unassigned : array-like of int or None
        The hard images in no hypothesis.

    Returns
    -------
    list of dict
        Per such finding, in the order the findings are listed: ``number`` (1-based, as listed), ``text``, ``n``
        (images it holds for), ``groups`` (``(group, images)`` pairs, the most first), ``unassigned`` (of its
        images, hard ones in no hypothesis) and ``elsewhere`` (its other images: easy, in neither split, held out).
        Empty for a run that tested nothing, or one recorded before findings kept their images.
    """
    from .confirm_text import adds_a_failure, group_verdict

    if not conf or conf.get("status") != "done":
        return []
    statements = conf.get("statements") or []
    stated = set()
    for i in range(len(hard_clusters)):
        v = group_verdict(conf, i)
        if v is not None and v["verdict"] == "confirmed":
            stated.add(v["finding"])
    out = []
    findings = [j for j in conf.get("ranked") or () if adds_a_failure(statements[j])]
    left = set(np.asarray(unassigned if unassigned is not None else [], dtype=np.int64).tolist())
    for number, j in enumerate(findings, 1):
        s = statements[j]
        if s["text"] in stated or s.get("holds_for") is None:
            continue
        idx = set(s["holds_for"])
        groups = [(i, len(idx & set(np.asarray(c.indices).tolist()))) for i, c in enumerate(hard_clusters)]
        groups = sorted((g for g in groups if g[1]), key=lambda g: (-g[1], g[0]))
        n_left = len(idx & left)
        out.append(
            {
                "number": number,
                "text": s["text"],
                "n": len(idx),
                "groups": groups,
                "unassigned": n_left,
                "elsewhere": len(idx) - n_left - sum(c for _, c in groups),
            }
        )
    return out


def unplaced_line(place):
    """One finding of `unplaced_findings` in words: which finding, and where its images lie."""
    parts = [f"{c} in group {i}" for i, c in place["groups"][:3]]
    if len(place["groups"]) > 3:
        others = len(place["groups"]) - 3
        parts.append(f"{sum(c for _, c in place['groups'][3:])} in {others} other group{'s' if others > 1 else ''}")
    if place["unassigned"]:
        parts.append(f"{place['unassigned']} among the hard images in no hypothesis")
    if place["elsewhere"]:
        parts.append(f"{place['elsewhere']} easy, held out or in neither split")
    where = ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1] if parts else "none here"
    return (
        f"Finding {place['number']} (\"{place['text']}\") is no hard group's statement (it was found among a group's "
        f"other sentences): of the {place['n']} images it holds for, {where}."
    )
