"""A stored run read back: its ``explanation.json`` validated, with the hard images in no hypothesis."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def load_explanations(path):
    """Read an ``explanation.json``: (dict of method -> Explanation, the whole payload)."""
    from ..io.confinement import check_regular_file

    check_regular_file(path := Path(path), "Explanation file")  # /dev/zero or a FIFO would never end
    from .._validation import loads_each_key_once  # a key twice: the last would win, unseen by the digest
    from ..io.confinement import read_text_file

    try:
        payload = loads_each_key_once(read_text_file(path, "Explanation file"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:  # nested 100k deep
        raise ValueError(f"Cannot read explanation file {str(path)!r}: {exc}") from None
    return explanations_of(payload, path), payload


def explanations_of(payload, path):
    """The explanations (dict of method -> Explanation) of an ``explanation.json`` already read.

    Checked as `load_explanations` checks the file: its digest, its confirmation block, its images' places. ``path``
    names it in messages.
    """
    from ..core.explanation_payload import validate_explanation_payload

    exps = validate_explanation_payload(payload, source=str(path))
    from .confirmation_record import check_confirmation_record

    first = next(iter(exps.values()), None)
    sizes = None if first is None else [len(c.indices) for c in first.hard_clusters]
    check_confirmation_record(payload, f"Explanation file {str(path)!r}", None if sizes is None else len(sizes), sizes)
    unassigned = _unassigned_of(payload, path)
    if unassigned is not None and exps:  # each image in one place: not twice, not also in a cluster
        placed = [np.asarray(c.indices) for c in (*first.hard_clusters, *first.easy_clusters)]
        if len(np.unique(unassigned)) != len(unassigned) or (
            placed and np.isin(unassigned, np.concatenate(placed)).any()
        ):
            raise ValueError(
                f"Explanation file {str(path)!r}: 'unassigned_hard' repeats an image or names one of a cluster; "
                "expected the file lbee wrote."
            )
    held = (payload.get("confirmation") or {}).get("held_out")
    if held and exps:  # the held-out images are set aside before the search: in no cluster, hard in no hypothesis
        placed = [np.asarray(c.indices) for c in (*first.hard_clusters, *first.easy_clusters)]
        if np.isin(held, np.concatenate([*placed, unassigned if unassigned is not None else []])).any():
            raise ValueError(
                f"Explanation file {str(path)!r}: 'confirmation.held_out' names an image of a cluster or of "
                "'unassigned_hard'; expected the file lbee wrote (held-out images are in no group)."
            )
    for e in exps.values():
        e.unassigned = unassigned
    return exps


def _unassigned_of(payload, path):
    """The payload's ``unassigned_hard``: image indices, checked (None when absent)."""
    raw = payload.get("unassigned_hard")
    if raw is None:
        return None
    n = len(payload.get("images") or ())
    if not isinstance(raw, list) or not all(type(i) is int and 0 <= i < n for i in raw):
        raise ValueError(
            f"Explanation file {str(path)!r}: 'unassigned_hard' must be a list of image indices in [0, {n}); "
            "expected the file lbee wrote."
        )
    return np.asarray(raw, dtype=np.int64)
