"""Hard groups joined into one each: pieces of one failure the clustering cut apart (`Partition.join`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..typing import IntArray


def joined_groups(
    groups: Sequence[IntArray], entries: Sequence[Sequence[int]]
) -> tuple[list[IntArray], list[list[int]]]:
    """``groups`` with each entry's groups joined, in place of its lowest-numbered one (the others move up).

    Parameters
    ----------
    groups : list of ndarray of int
        The hard groups' image indices.
    entries : list of list of int
        Each: two or more numbers of ``groups``, no number in two entries.

    Returns
    -------
    joined : list of ndarray of int
    entries : list of list of int
        The entries, each sorted.
    """
    n = len(groups)
    sorted_entries = [sorted({int(g) for g in entry}) for entry in entries]
    used = [g for entry in sorted_entries for g in entry]
    if any(len(e) < 2 for e in sorted_entries) or len(used) != len(set(used)) or not all(0 <= g < n for g in used):
        raise ValueError(
            f"`groups` must list two or more of hard groups 0 to {n - 1} per entry, each group at most once; "
            f"received {sorted_entries}."
        )
    lead = {entry[0]: entry for entry in sorted_entries}
    joined = [
        np.sort(np.concatenate([groups[j] for j in lead[i]])) if i in lead else g
        for i, g in enumerate(groups)
        if i in lead or i not in used
    ]
    return joined, sorted_entries
