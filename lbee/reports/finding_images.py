"""Every image a finding holds for: the report's browser of each confirmed statement that adds a failure.

A finding (a statement confirmed on held-out images, `lbee.run.confirm_text.adds_a_failure`) usually spans
several hard groups, the held-out images and some easy or middling ones; a twenty-second user had to open three
browsers and filter each by hand to see its images. Its run records them (``holds_for`` in the confirmation
block of ``explanation.json``): one browser lists them all, the least confident first, with label and prediction.
"""

from __future__ import annotations

import numpy as np

from .browse import browse_view
from .other_images import OTHER_MAX_ROWS

#: The finding of an image no confirmed statement holds for (or of every image of a run not confirmed).
NO_FINDING = "none"


def image_findings(conf, n):
    """Per image, the strongest finding that holds for it: ``finding`` and ``finding_statement``, shape (n,) each.

    ``finding`` is ``finding 1``, ``finding 2``, ... as the report numbers the confirmed statements that add a
    failure (`lbee.run.confirm_text.adds_a_failure`), or `NO_FINDING`; ``finding_statement`` its text (None).
    From a run's confirmation block (``conf``, None for a run without one); a block written before runs recorded
    each finding's images (``holds_for``) gives none.
    """
    from ..run.confirm_text import adds_a_failure

    number, text = np.full(n, NO_FINDING, dtype=object), np.full(n, None, dtype=object)
    statements = (conf or {}).get("statements") or []
    findings = [j for j in (conf or {}).get("ranked") or () if adds_a_failure(statements[j])]
    for k, j in reversed(list(enumerate(findings, 1))):  # the strongest written last: it wins an image two hold
        idx = np.asarray(statements[j].get("holds_for") or [], dtype=np.int64)
        idx = idx[(idx >= 0) & (idx < n)]
        number[idx], text[idx] = f"finding {k}", statements[j]["text"]
    return {"finding": number, "finding_statement": text}


def finding_views(run, slicer, short, anchor, page_groups=1):
    """One browser per finding of ``slicer``'s run, in the order the findings are listed (strongest first).

    Parameters
    ----------
    run : lbee.reports.page.ReportRun
    slicer : str
    short : list of str
        Short image names, one per image of the run.
    anchor : str
        The slicer's part of the browsers' element ids (`lbee.reports.page.slug`).
    page_groups : int, default=1
        Browsers on the whole page (they share its budget of offered sentences, `lbee.reports.browse`).

    Returns
    -------
    list of dict or None
        Per finding, in the order of `lbee.run.text.confirmed_statements_lines`: None when its run did not record
        its images (a run written before they were), else ``n``, ``note``, ``member_order`` (indices, the least
        confident first, at most `OTHER_MAX_ROWS`) and ``browse`` (`browse_view`).
    """
    from ..run.confirm_text import adds_a_failure, plain_finding
    from ..run.finding_places import unplaced_findings, unplaced_line

    conf = run.confirmations.get(slicer) or {}
    if conf.get("status") != "done":
        return []
    first = next(iter(run.explanations[slicer].values()))
    places = {p["number"]: p for p in unplaced_findings(conf, first.hard_clusters, first.unassigned)}
    binary = bool(np.isin(run.performance, (0.0, 1.0)).all())
    statements = conf.get("statements") or []
    held = np.zeros(len(run.image_ids), dtype=bool)
    held[np.asarray(conf.get("held_out") or [], dtype=np.int64)] = True
    views = []
    for k, j in enumerate(j for j in conf.get("ranked") or () if adds_a_failure(statements[j])):
        idx = statements[j].get("holds_for")
        if idx is None:
            views.append(None)
            continue
        idx = np.asarray(idx, dtype=np.int64)
        order = idx[np.argsort(run.confidence[idx], kind="stable")][:OTHER_MAX_ROWS]
        browse = browse_view(run, order, None, f"{anchor}-finding-{k + 1}", short, n_groups=page_groups)
        n_held = int(held[idx].sum())
        whole = order.size == idx.size
        shown = f"all {idx.size:,}" if whole else f"the {order.size:,} least confident of the {idx.size:,}"
        browse["what"] = f"{shown} images it holds for" if idx.size != 1 else "the 1 image it holds for"
        note = f"{n_held:,} held out (where it was confirmed), {idx.size - n_held:,} among the images it was found on."
        plain = plain_finding(statements[j], conf)
        place = places.get(k + 1)
        if place is not None:  # no hard group states it: a row of its own in the table of what fails (trial 30)
            omega = run.performance[idx]
            place = {
                **place,
                "line": unplaced_line(place),
                "error_rate": 1 - float(omega.mean()) if binary else None,
                "mean_performance": float(omega.mean()),
                "mean_confidence": float(run.confidence[idx].mean()),
            }
        views.append(
            {
                "n": int(idx.size),
                "note": note,
                "plain": plain,
                "member_order": order.tolist(),
                "browse": browse,
                "place": place,
            }
        )
    return views
