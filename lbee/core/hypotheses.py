"""One hypothesis per failure: merge the pieces of one failure, rank failures by error concentration.

Ward cuts a failure into pieces along attributes it does not depend on (the
background colour of a blindspot's images), and ranking groups by size puts
large clusters of stray errors first. With a grammar, every group has a
*profile*: the conjunction of the literals that hold for at least
``min_conditional`` (85 %) of its images and are characteristic on their own
(more frequent among the hard images than the easy ones by ≥ 25 %), kept
while the whole conjunction holds for ``min_support`` of the group. A
conjunction has a *region*: the images it holds for (soft, P(c) per image).

**Error concentration** of a conjunction: the share of hard images among the
hard and easy images of its region, H / (H + E) with H = Σ_hard P(c),
E = Σ_easy P(c).

**Merging** two groups A and B: their profiles may disagree (the same
attribute, another value) on at most one attribute — Ward cuts a failure one
attribute at a time, and two failures differ in at least two (SpotCheck's
ambiguity constraint); the profile U of their union must hold for
``min_support`` of each; U's error concentration must be at least ``ratio``
× the lower of A's and B's; and the *remainder* — the images U holds for
but neither A's nor B's profile does — must be concentrated too (at least
half the higher), when it holds any mass (≥ 5 images): the pieces of one
failure differ only in what it does not depend on, so the remainder is more
of the failure. Pairs are merged greedily, those that agree on every
attribute first, then the most concentrated union. Only groups whose profile
holds for at least ``MIN_PIECE`` hard images take part: a handful of stray
errors that happens to sit between two failures would otherwise chain them.

**Ranking**: by the lower end of the 95 % Wilson interval of the profile's
error concentration (concentration with its sample size), with the one-sided
binomial p-value against the base rate n_hard / (n_hard + n_easy) beside it.
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


REMAINDER_RATIO = 0.5
#: Attributes on which two pieces of one failure may disagree.
MAX_CONFLICTS = 1
#: The share of each piece a union's profile must hold for.
UNION_SUPPORT = 0.6
#: Hard images (soft count) a group's profile must hold for to be merged.
MIN_PIECE = 20.0


def _conflicts(search, lits_a, lits_b):
    """How many attributes two profiles give different values (presence included, implied presences counted)."""
    ca = search.grammar.implied(dict(search._keys[j] for j in lits_a))
    cb = search.grammar.implied(dict(search._keys[j] for j in lits_b))
    return sum(1 for key, v in ca.items() if key in cb and cb[key] != v)
MIN_REMAINDER = 5.0


def wilson_lower(k, n, z=1.96):
    """Lower end of the Wilson score interval of k successes in n (0 when n is 0)."""
    if n <= 0:
        return 0.0
    p = k / n
    denom = 1 + z * z / n
    centre = p + z * z / (2 * n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return float(max(0.0, (centre - half) / denom))


class _Profiles:
    """Profiles and regions of hard groups over one :class:`~lbee.core.compose.ComposeSearch`'s literals."""

    def __init__(self, search, hard_mask):
        self.search = search
        self.q = search._q
        self.hard_idx = np.flatnonzero(hard_mask)
        self.easy_idx = search.easy
        self.base = len(self.hard_idx) / max(len(self.hard_idx) + len(self.easy_idx), 1)

    def profile(self, pieces, *, union=False):
        """Literal indices of the profile of the union of ``pieces`` (each must keep ``min_support``).

        A union's profile admits literals that hold for ``UNION_SUPPORT`` of each
        piece, and keeps that share of each (not ``min_conditional`` and
        ``min_support``): a piece that holds a fifth of stray errors still
        shares its failure's conditions with the others.
        """
        s = self.search
        keep = UNION_SUPPORT if union else s.min_conditional
        floor = UNION_SUPPORT if union else s.min_support
        means = np.stack([self.q[p].mean(0) for p in pieces])  # (pieces, L)
        order = np.argsort(-means.min(0), kind="stable")
        characteristic = s.characteristic(np.concatenate(pieces))
        conds, lits = {}, []
        vecs = [np.ones(len(p), np.float32) for p in pieces]
        for j in order:
            if means[:, j].min() < keep:
                break
            if not characteristic[j]:
                continue
            new = s._ok(conds, j)
            if new is None:
                continue
            nv = [v * s.factor(lits, j, p) for v, p in zip(vecs, pieces)]
            if any(x.mean() < floor or x.sum() < keep * v.sum() for x, v in zip(nv, vecs)):
                continue
            conds, vecs = new, nv
            lits.append(int(j))
        return tuple(lits)

    def region(self, lits):
        return self.search.region(lits)

    def counts(self, p):
        return float(p[self.hard_idx].sum()), float(p[self.easy_idx].sum())


def _concentration(h, e):
    return h / (h + e) if h + e > 0 else 0.0


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
        A merge keeps at least this share of the pieces' higher error concentration.
    k : int, default=3
        Descriptions kept per hypothesis.

    Returns
    -------
    hypotheses : list of Hypothesis
        Most concentrated first.
    descriptions : list of list of Conjunction
        The ``k`` descriptions of each hypothesis (:meth:`ComposeSearch.search`), in the same order.
    """
    from scipy.stats import binom

    pr = _Profiles(search, hard_mask)
    items = []  # [indices, profile literals, concentration, pieces, mergeable]
    for g in groups:
        g = np.asarray(g, dtype=np.int64)
        lits = pr.profile([g])
        h, e = pr.counts(pr.region(lits)) if lits else (0.0, 0.0)
        items.append([g, lits, _concentration(h, e), 1, bool(lits) and h >= MIN_PIECE])
    while len(items) > 1:
        best = None
        for i in range(len(items)):
            for j in range(i + 1, len(items)):
                a, b = items[i], items[j]
                if not (a[4] and b[4]):
                    continue
                conflicts = _conflicts(search, a[1], b[1])
                if conflicts > MAX_CONFLICTS:
                    continue
                lits = pr.profile([a[0], b[0]], union=True)
                if not lits:
                    continue
                p_u = pr.region(lits)
                conc = _concentration(*pr.counts(p_u))
                floor = max(a[2], b[2])
                if conc < ratio * floor or (best is not None and (conflicts, -conc) >= best[0]):
                    continue
                extra_a = pr.region([m for m in a[1] if m not in lits])
                extra_b = pr.region([m for m in b[1] if m not in lits])
                h_r, e_r = pr.counts(p_u * (1 - extra_a) * (1 - extra_b))
                if h_r + e_r >= MIN_REMAINDER and _concentration(h_r, e_r) < REMAINDER_RATIO * floor:
                    continue
                best = ((conflicts, -conc), i, j, lits)
        if best is None:
            break
        (_, neg_conc), i, j, lits = best
        conc = -neg_conc
        merged = [np.union1d(items[i][0], items[j][0]), lits, conc, items[i][3] + items[j][3], True]
        items = [it for t, it in enumerate(items) if t not in (i, j)] + [merged]
    hyps, descs = [], []
    for g, lits, conc, pieces, _ in items:
        h, e = pr.counts(pr.region(lits)) if lits else (float(len(g)), float("inf"))
        n = h + e
        p_value = float(binom.sf(int(round(h)) - 1, max(int(round(n)), 1), pr.base)) if lits and n > 0 else 1.0
        desc = search.search(g, k=k)
        hyps.append(Hypothesis(g, desc[0], float(conc), wilson_lower(h, n) if lits else 0.0, p_value, pieces))
        descs.append(desc)
    order = sorted(range(len(hyps)), key=lambda t: (-hyps[t].lower_bound, -len(hyps[t].indices)))
    return [hyps[t] for t in order], [descs[t] for t in order]
