"""The images outside every hypothesis, browsable in the report as a hard group's images are.

A report's groups hold only the hard images its hypotheses kept. The others are
shown in up to four browsers at the end of each slicer's section, so that every
image of a run can be looked at: the hard images in no hypothesis (errors lbee
could not describe), the easy images, the images in neither split (the middling
confidences the split leaves out) and, when the run confirmed its statements, the
held-out images they were tested on. Each lists at most `OTHER_MAX_ROWS` images,
the least confident first; every image is in ``images.parquet`` (``lbee export
spotlight`` opens it).
"""

from __future__ import annotations

import numpy as np

from .browse import _lead, browse_view

#: Most images one of these browsers lists (the least confident first), so that a large run's page stays a few MB.
OTHER_MAX_ROWS = 2000

#: The sets, in the order the page shows them: (key, heading, what the set is).
OTHER_SETS = (
    (
        "unassigned",
        "hard images in no hypothesis",
        "Hard by the split, but in no group: a hypothesis keeps the images its description picks out, as the "
        "encoder sees them. An error here is a failure lbee did not describe, or an image of a described failure "
        "in which the encoder did not see the description.",
    ),
    ("easy", "easy images", "The images the model is surest of: each hard group is compared with its closest one."),
    (
        "neutral",
        "images in neither split",
        "Neither hard nor easy: the middling confidences the split leaves out of the comparison.",
    ),
    (
        "held-out",
        "held-out images",
        "Set aside before the search (stratified by hard / easy, seeded): the images the statements were confirmed "
        "on. No group is formed from them.",
    ),
)


def other_views(run, slicer, exps, short, anchor, page_groups=1):
    """The report's browsers of the images in no hard group of ``slicer``: one dict per non-empty set.

    Parameters
    ----------
    run : lbee.reports.page.ReportRun
    slicer : str
    exps : dict of str to Explanation
        The slicer's explanations (the first one's split is used: they share it).
    short : list of str
        Short image names, one per image of the run.
    anchor : str
        The slicer's part of the browsers' element ids (`lbee.reports.page.slug`).
    page_groups : int, default=1
        Browsers on the whole page (they share its budget of offered sentences, `lbee.reports.browse`).

    Returns
    -------
    list of dict
        ``key``, ``title``, ``note``, ``n`` (images in the set), ``listed`` (how many the browser holds),
        ``anchor``, ``member_order`` (indices, least confident first) and ``browse`` (`browse_view`).
    """
    first = next(iter(exps.values()))
    n = len(run.image_ids)
    split, group = first.split_and_group(n)
    held = np.zeros(n, dtype=bool)
    listed_held = (run.confirmations.get(slicer) or {}).get("held_out") or []
    held[np.asarray(listed_held, dtype=np.int64)] = True
    members = {
        "unassigned": (split == "hard") & (group < 0),
        "easy": split == "easy",
        "neutral": (split == "neutral") & ~held,
        "held-out": held,
    }
    views = []
    for key, title, note in OTHER_SETS:
        idx = np.flatnonzero(members[key])
        if not idx.size:
            continue
        order = idx[np.argsort(run.confidence[idx], kind="stable")][:OTHER_MAX_ROWS]
        # the statements to check these images against (with Γ): the confirmed ones for the held-out images, on
        # which they were tested; the hypotheses' for the others (which of them a failure's images are)
        statements, label = [], ""
        if run.relevance is not None and key == "held-out":
            statements, label = _confirmed(run, slicer), "the confirmed statements"
        elif run.relevance is not None:  # the easy and middling ones too: where a failure's statement holds there
            statements, label = _statements(exps), "the hypotheses’ statements"
        browse = browse_view(
            run,
            order,
            statements[0] if statements else None,
            f"g-{anchor}-{key}",
            short,
            statements,
            n_groups=page_groups,
            own_label=label,
        )
        if statements:  # how many of these images the statements offered hold for (a sixteenth user read the
            # hard images' count under the held-out images)
            counted = _holding(run.relevance, idx, statements)
            if counted.any():
                note += _holding_note(run.relevance, idx, statements, counted, key == "held-out")
        browse["what"] = (
            (f"all {idx.size:,} {title}" if idx.size > 1 else f"the 1 {title.replace('images', 'image', 1)}")
            if order.size == idx.size
            else f"the {order.size:,} least confident of the {idx.size:,} {title}"
        )
        views.append(
            {
                "key": key,
                "title": f"{idx.size:,} {title}",
                "note": note,
                "n": int(idx.size),
                "listed": int(order.size),
                "anchor": f"g-{anchor}-{key}",
                "member_order": order.tolist(),
                "browse": browse,
            }
        )
    return views


def _holding_note(relevance, idx, statements, counted, confirmed):
    """The browser's sentence on how many of its images the statements offered hold for, by Γ.

    With several statements the first one's count comes first: a seventeenth user read the count of all the
    confirmed statements (130, with the companions) beside the strongest one's region (48).
    """
    whose = "confirmed statement" if confirmed else "hypothesis’s statement"
    if len(statements) == 1:
        return (
            f" By the given Γ, the {whose} holds for {int(counted.sum())} of these {idx.size}: pick it under "
            "“holds?” and “where it holds” to list only those."
        )
    first = int(_holding(relevance, idx, statements[:1]).sum())
    lead = "the strongest confirmed statement" if confirmed else "the first hypothesis’s statement"
    return (
        f" By the given Γ, {lead} holds for {first} of these {idx.size}, and one of the {len(statements)} "
        f"{'confirmed statements' if confirmed else 'hypotheses’ statements'} for {int(counted.sum())}: pick one "
        "under “holds?” and “where it holds” to list only those."
    )


def _statements(exps):
    """Each hard group's top sentence by the describer read first (`lbee.run.text.first_method`), once each."""
    tops = [int(c.sentences[0]) for c in _lead(exps).hard_clusters if len(c.sentences)]
    return list(dict.fromkeys(tops))


def _holding(relevance, idx, statements):
    """Per image of ``idx``, whether one of ``statements`` holds for it by Γ: bool, shape (len(idx),)."""
    return np.asarray(relevance[np.ix_(np.asarray(idx, dtype=np.int64), statements)], dtype=bool).any(axis=1)


def unassigned_holding(exps, relevance):
    """Of the hard images in no hypothesis, those a hypothesis's statement holds for by Γ: bool, shape (m,).

    ``m`` is the number of hard images in no hypothesis (the first explanation's ``unassigned``). Such an image is
    of a described failure, but the encoder did not see the description in it (a trial's 29 of 85).
    """
    left = next(iter(exps.values())).unassigned
    statements = _statements(exps)
    if left is None or not len(left) or relevance is None or not statements:
        return np.zeros(0 if left is None else len(left), dtype=bool)
    return _holding(relevance, left, statements)


def _confirmed(run, slicer):
    """The sentences of the run's confirmed statements, strongest first, that Γ has a column for."""
    conf = run.confirmations.get(slicer) or {}
    statements = conf.get("statements") or []
    width = run.relevance.shape[1]
    picked = [statements[j].get("sentence") for j in conf.get("ranked") or () if j < len(statements)]
    return list(dict.fromkeys(int(j) for j in picked if type(j) is int and 0 <= j < width))
