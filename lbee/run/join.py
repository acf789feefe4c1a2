"""``join``: hard groups a user takes for pieces of one failure, joined into one group before describing.

The clustering follows what the encoder sees most (a background, say), so one failure can come out as several
groups. lbee says when groups read alike (`alike_groups`); with a grammar's sentences it merges such
pieces itself (`lbee.core.hypotheses`). ``join`` is the user's word for the rest: ``--join 1,2,3`` or, in YAML and
the library, ``join: [[1, 2, 3]]``, numbered as a run without it prints its groups.
"""

from __future__ import annotations

import numbers

from .limits import MAX_CLUSTERS


def parse_join(value, bad):
    """``join``'s value as a tuple of sorted group-number tuples, each of two or more groups, none in two.

    Parameters
    ----------
    value : str, list of int, or a list of either
        ``"1,2,3"`` (the CLI's form) or ``[1, 2, 3]``, one per joined group.
    bad : callable
        ``bad(expected)`` makes the knob's ValueError.

    Returns
    -------
    tuple of tuple of int
    """
    if isinstance(value, (str, bytes)) or (
        isinstance(value, (list, tuple)) and value and all(isinstance(v, numbers.Integral) for v in value)
    ):
        value = [value]  # one joined group given alone
    if not isinstance(value, (list, tuple)):
        raise bad("a list of groups to join, each a list of group numbers such as [1, 2, 3] (or '1,2,3')")
    out, seen = [], set()
    for entry in value:
        if isinstance(entry, str):
            parts = [part.strip() for part in entry.split(",")]
            if not all(part.isascii() and part.isdigit() and len(part) <= 6 for part in parts):  # int() would read
                # '٣' as 3, and refuses 5,000 digits in Python's words
                raise bad("group numbers separated by commas, such as '1,2,3'")
            entry = [int(part) for part in parts]
        if not isinstance(entry, (list, tuple)) or not all(
            isinstance(g, numbers.Integral) and not isinstance(g, bool) for g in entry
        ):
            raise bad("each entry a list of group numbers such as [1, 2, 3] (or '1,2,3')")
        groups = tuple(sorted({int(g) for g in entry}))
        if len(groups) < 2:
            raise bad("at least two different groups in each entry (a group alone is already one)")
        if groups[0] < 0 or groups[-1] >= MAX_CLUSTERS:
            raise bad(f"group numbers in [0, {MAX_CLUSTERS - 1}]")
        if seen & set(groups):
            raise bad(f"each group in one entry at most; group {min(seen & set(groups))} is in two")
        seen.update(groups)
        out.append(groups)
    return tuple(out)


def joined_words(join):
    """``1+2+3 and 0+4``: the joined groups in the words the terminal and the report say them."""
    return " and ".join("+".join(map(str, entry)) for entry in join or ())


def join_groups(part, join, shown):
    """Join ``part``'s hard groups as ``join`` says, numbered as ``shown`` (`lbee.core.partition.Partition.join`).

    Parameters
    ----------
    part : lbee.core.partition.Partition
    join : tuple of tuple of int
        Numbers of the groups as a run shows them (ranked: `lbee.run.confirm.confirm_run`).
    shown : list of lbee.core.explanation.HardCluster
        The groups in the order shown.

    Raises
    ------
    ValueError
        When a number names no hard group of this run.
    """
    n = len(shown)
    missing = sorted({g for entry in join for g in entry if g >= n})
    if missing:
        raise ValueError(
            f"`join` names group {missing[0]}, but this run has hard groups 0 to {n - 1}; number them as the run "
            "without `join` prints them."
        )
    # a group is known by its first image (the groups are disjoint and never empty)
    place = {int(g[0]): i for i, g in enumerate(part.hard_groups_)}
    part.join([[place[int(shown[g].indices[0])] for g in entry] for entry in join])
    part.joined_ = [list(entry) for entry in join]  # recorded as the user numbered them
    return part


def alike_groups(result):
    """Lines naming hard groups that read alike for most describers: perhaps one failure, cut in pieces.

    Two groups read alike for a describer when the first sentence of one is among the other's sentences. With a
    grammar's sentences lbee merges such pieces itself (`lbee.core.hypotheses`); with a plain sentence file it
    cannot tell one failure from two that read alike, so it says so, and ``--join`` is the user's word.
    """
    from .text import FEW_IMAGES, group_order

    exps = {m: e for m, e in result.explanations.items() if m != "compose"}
    if len(exps) < 2 or "compose" in result.explanations:
        return []
    first = next(iter(exps.values()))
    sets = [[e.hard_clusters[i].sentences for e in exps.values()] for i in range(len(first.hard_clusters))]
    out, seen = [], set()
    for i in group_order(first.hard_clusters, result.performance, result.extra.get("confirmation")):
        if i in seen or len(first.hard_clusters[i].indices) < FEW_IMAGES:
            continue
        same = [
            j
            for j in range(len(sets))
            if j != i
            and j not in seen
            and len(first.hard_clusters[j].indices) >= FEW_IMAGES
            and _agree(sets[i], sets[j]) * 2 > len(exps)
        ]
        if same:
            seen.update([i, *same])
            names = ", ".join(map(str, [i, *same]))
            out.append(
                f"Groups {names} read alike (for most describers, the first sentence of one is among the other's): "
                "they may be one failure that the clustering cut in pieces. Look at their images; if they are, "
                f"--join {','.join(map(str, sorted([i, *same])))} describes them as one group."
            )
    return out


def _agree(a, b):
    """For how many describers the first sentence of one group is among the other's (per describer, a list)."""
    return sum(1 for x, y in zip(a, b) if x and y and (x[0] in y or y[0] in x))


def others_agree(explanations, lead, i):
    """The first sentence most other describers put first for hard group ``i`` where ``lead`` puts another: a line.

    Shown under the lead describer's sentence when the others are not (``lbee describe`` without ``-v``): where
    'compose' names part of a failure, the others can agree on all of it (trial 33: compose said "against a grey
    overcast sky", four other describers "of sun glare, against a grey overcast sky", seen only with -v).
    None when fewer than two, or not most, of the others agree.
    """
    from collections import Counter

    others = {m: e.cluster_sentences(i) for m, e in explanations.items() if m != lead}
    firsts = Counter(str(said[0]) for said in others.values() if len(said))
    if not firsts or lead not in explanations:
        return None
    text, count = firsts.most_common(1)[0]
    mine = [str(t) for t in explanations[lead].cluster_sentences(i)]
    if count < 2 or 2 * count <= len(others) or (mine and mine[0] == text):
        return None
    who = ", ".join(m for m, said in others.items() if len(said) and str(said[0]) == text)
    return f"{text} (first for {who}; lbee -v describe shows each)"
