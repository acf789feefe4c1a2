"""One hypothesis per failure: merge the pieces of one failure, rank failures by error concentration.

Ward cuts a failure into pieces along attributes it does not depend on (the
background colour of a blindspot's images), and ranking groups by size puts
large clusters of stray errors first. With a grammar, each hard group has a
description (its best conjunction, :mod:`lbee.core.compose`), and a
description has a *region*: the images it holds for (soft, P(c) per image).

**Error concentration** of a description: the share of hard images among the
hard and easy images of its region, H / (H + E) with H = Σ_hard P(c),
E = Σ_easy P(c). A failure's region is made of hard images; a piece of stray
errors is described by something that holds for many easy images too.

**Merging**: two groups are pieces of one failure when the conditions their
descriptions share (same attribute, same value) describe their union at least
as sharply — the shared conjunction holds for ``min_support`` of each piece
and its error concentration is at least ``ratio`` × the lower of the two
pieces' own. Two failures differ in conditions (SpotCheck's ambiguity
constraint: at least two), so what they share holds for many easy images and
the test fails. Pairs are merged greedily, the most concentrated first, and
the merged group is described afresh.

**Ranking**: by the lower end of the 95 % Wilson interval of the error
concentration (concentration with its sample size), with the one-sided
binomial p-value against the base rate n_hard / (n_hard + n_easy) reported
beside it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MERGE_RATIO = 0.9


@dataclass
class Hypothesis:
    """A hard group with its description and how concentrated its errors are.

    Attributes
    ----------
    indices : ndarray of int
    description : Conjunction
    concentration : float
        H / (H + E) of the description's region.
    lower_bound : float
        Its 95 % Wilson lower bound (the ranking key).
    p_value : float
        One-sided binomial test of the region's hard count against the base rate.
    pieces : int
        How many of the slicer's groups were merged into it.
    """

    indices: np.ndarray
    description: object
    concentration: float
    lower_bound: float
    p_value: float
    pieces: int = 1


def _region(search, literals_idx, hard_idx):
    """Soft hard and easy counts of the region of a conjunction given by literal indices."""
    q = search._q
    p = np.ones(q.shape[0], np.float32)
    for j in literals_idx:
        p = p * q[:, j]
    return float(p[hard_idx].sum()), float(p[search.easy].sum())


def _literals_of(search, conditions):
    idx = {k: i for i, k in enumerate(search._keys)}
    return tuple(idx[(k, v)] for k, v in conditions.items() if (k, v) in idx)


def wilson_lower(k, n, z=1.96):
    """Lower end of the Wilson score interval of k successes in n (0 when n is 0)."""
    if n <= 0:
        return 0.0
    p = k / n
    denom = 1 + z * z / n
    centre = p + z * z / (2 * n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return float(max(0.0, (centre - half) / denom))


def _score(search, group, hard_idx, base_rate, k):
    from scipy.stats import binom

    desc = search.search(group, k=k)
    best = desc[0]
    h, e = _region(search, best.literals, hard_idx)
    n = h + e
    conc = h / n if n > 0 else 0.0
    p_value = float(binom.sf(int(round(h)) - 1, max(int(round(n)), 1), base_rate)) if n > 0 else 1.0
    return desc, conc, wilson_lower(h, n), p_value


def one_hypothesis_per_failure(search, groups, hard_mask, *, ratio=MERGE_RATIO, k=3):
    """Merge the pieces of each failure and rank the hypotheses by error concentration.

    Parameters
    ----------
    search : ComposeSearch
        Over the n images, its easy set the easy split.
    groups : list of ndarray of int
        The slicer's hard groups.
    hard_mask : ndarray of bool, shape (n,)
    ratio : float, default=0.9
        A merge keeps at least this share of the pieces' lower error concentration.
    k : int, default=3
        Descriptions kept per hypothesis.

    Returns
    -------
    hypotheses : list of Hypothesis
        Most concentrated first.
    descriptions : list of list of Conjunction
        The ``k`` descriptions of each hypothesis, in the same order.
    """
    hard_idx = np.flatnonzero(hard_mask)
    n_easy = len(search.easy)
    base = len(hard_idx) / max(len(hard_idx) + n_easy, 1)
    items = []
    for g in groups:
        g = np.asarray(g, dtype=np.int64)
        desc, conc, lb, p = _score(search, g, hard_idx, base, k)
        items.append([g, desc, conc, lb, p, 1])
    while len(items) > 1:
        best = None
        for i in range(len(items)):
            for j in range(i + 1, len(items)):
                a, b = items[i][1][0].conditions, items[j][1][0].conditions
                shared = {key: v for key, v in a.items() if b.get(key) == v}
                if not shared:
                    continue
                lits = _literals_of(search, shared)
                if not lits:
                    continue
                ok = True
                for g in (items[i][0], items[j][0]):
                    p = np.ones(len(g), np.float32)
                    for m in lits:
                        p = p * search._q[g, m]
                    ok &= float(p.mean()) >= search.min_support
                if not ok:
                    continue
                h, e = _region(search, lits, hard_idx)
                conc = h / (h + e) if h + e > 0 else 0.0
                if conc >= ratio * min(items[i][2], items[j][2]) and (best is None or conc > best[0]):
                    best = (conc, i, j)
        if best is None:
            break
        _, i, j = best
        g = np.union1d(items[i][0], items[j][0])
        desc, conc, lb, p = _score(search, g, hard_idx, base, k)
        merged = [g, desc, conc, lb, p, items[i][5] + items[j][5]]
        items = [it for t, it in enumerate(items) if t not in (i, j)] + [merged]
    items.sort(key=lambda it: (-it[3], -len(it[0])))
    hyps = [Hypothesis(it[0], it[1][0], float(it[2]), float(it[3]), float(it[4]), int(it[5])) for it in items]
    return hyps, [it[1] for it in items]
