"""One hypothesis per failure: merge the pieces of one failure, rank failures by error concentration.

A slicer cuts a failure into pieces along attributes the failure does not
depend on (the background colour, the size of the square), and ranking groups
by size puts large clusters of stray errors first. 'compose'
(`lbee.core.compose`) describes each piece against the whole hard and
easy splits, so the pieces of one failure get descriptions that agree: each
holds for the other's images.

**Merging** two groups A and B: A's best description holds for at least
``min_support`` of B's images and B's for ``min_support`` of A's (mutual
coverage; soft, the mean P over the group). A group of stray errors with a
generic description ("an image with a circle") may be covered by a
failure's description but does not cover the failure, and two failures that
differ in a condition do not cover each other. The pair with the highest
mutual coverage is merged first; the union is described again, and the merge
stands only if its description holds for ``min_support`` of the union. Pairs
are merged until none qualifies.

**Error concentration** of a description: the share of hard images among
the hard and easy images of its region, h / (h + e), soft counts.

**Ranking**: by the lower end of the 95 % Wilson interval of the error
concentration (concentration with its sample size), with the one-sided
binomial p-value against the base rate n_hard / (n_hard + n_easy) beside it.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from ..typing import ArrayLike, BoolArray, FloatArray, IntArray
from .binomial import at_least
from .compose import ComposeSearch, Conjunction
from .discovery import Discovered, discover_failures


@dataclass
class Hypothesis:
    """A hard group with its description and how concentrated its errors are.

    Attributes
    ----------
    indices : ndarray of int
    description : Conjunction
    concentration : float
        h / (h + e) of the description's region.
    lower_bound : float
        Its 95 % Wilson lower bound (the ranking key).
    p_value : float
        One-sided binomial test of the region's hard count against the base rate.
    pieces : int
        How many of the slicer's groups were merged into it (0: found by its description alone,
        `lbee.core.discovery`).
    descriptions : list of Conjunction
        Its ``k`` descriptions, ``description`` first.
    """

    indices: IntArray
    description: Conjunction
    concentration: float
    lower_bound: float
    p_value: float
    pieces: int = 1
    descriptions: list[Conjunction] = field(default_factory=list)


def wilson_lower(k: float, n: float, z: float = 1.96) -> float:
    """Lower end of the Wilson score interval of k successes in n (0 when n is 0)."""
    if n <= 0:
        return 0.0
    p = k / n
    denom = 1 + z * z / n
    centre = p + z * z / (2 * n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return float(max(0.0, (centre - half) / denom))


def _mean(region: FloatArray, rows: IntArray) -> float:
    return float(region[rows].mean()) if len(rows) else 0.0


def coverage(search: ComposeSearch, description: Conjunction, group: ArrayLike) -> float:
    """The mean P(``description``) over ``group``: the share of its images the description holds for."""
    return _mean(search.region(description.literals), np.asarray(group, dtype=np.int64))


def one_hypothesis_per_failure(
    search: ComposeSearch, groups: Sequence[ArrayLike], hard_mask: BoolArray, *, k: int = 3
) -> tuple[list[Hypothesis], list[list[Conjunction]]]:
    """Merge the pieces of each failure and rank the hypotheses by error concentration.

    Parameters
    ----------
    search : ComposeSearch
        Over the n images, its hard and easy sets the split.
    groups : list of ndarray of int
        The slicer's hard groups.
    hard_mask : ndarray of bool, shape (n,)
    k : int, default=3
        Descriptions kept per hypothesis.

    Returns
    -------
    hypotheses : list of Hypothesis
        Most concentrated first.
    descriptions : list of list of Conjunction
        The ``k`` descriptions of each hypothesis (`ComposeSearch.search`), in the same order.
    """
    items: dict[int, tuple[IntArray, list[Conjunction], int]] = {}  # id -> (indices, descriptions, pieces)
    regions: dict[int, FloatArray] = {}  # id -> P(its best description) per image, computed once per item
    # Candidate pairs in a heap keyed by (-mutual coverage, i, j): the same pair, in the same order (ties to the
    # oldest ids), as scanning every pair at each step, but each pair's coverage is computed once; quadratic in
    # the groups instead of cubic (575 one-image groups took minutes).
    heap: list[tuple[float, int, int]] = []

    def add(t: int, g: IntArray, found: list[Conjunction], pieces: int) -> None:
        regions[t] = search.region(found[0].literals)
        reach_t = search.reachable(found[0].literals)  # coverage as a share of what the description can reach
        for u, (gu, fu, _) in items.items():
            mutual = min(_mean(regions[u], g) / search.reachable(fu[0].literals), _mean(regions[t], gu) / reach_t)
            if mutual >= search.min_support or _same(found[0], fu[0]):
                heapq.heappush(heap, (-mutual, u, t))
        items[t] = (g, found, pieces)

    for t, g in enumerate(groups):
        g = np.asarray(g, dtype=np.int64)
        add(t, g, search.search(g, k=k), 1)
    next_id = len(items)
    while len(items) > 1 and heap:
        _, i, j = heapq.heappop(heap)
        if i not in items or j not in items:
            continue  # merged into another already
        union = np.union1d(items[i][0], items[j][0])
        found = search.search(union, k=k)
        same = _same(items[i][1][0], items[j][1][0])
        if not same and coverage(search, found[0], union) < search.min_support * search.reachable(found[0].literals):
            continue  # the union has no description of its own: two failures (the pair is not tried again)
        pieces = items.pop(i)[2] + items.pop(j)[2]
        del regions[i], regions[j]
        add(next_id, union, found, pieces)
        next_id += 1
    items = _refined(search, items, k, discover_failures(search))
    base = float(np.mean(hard_mask[np.concatenate([search.hard, search.easy])])) if len(search.hard) else 0.0
    hyps: list[Hypothesis] = []
    descs: list[list[Conjunction]] = []
    for g, found, pieces in items.values():
        h, e = found[0].region_counts
        n = h + e
        p_value = at_least(int(round(h)), max(int(round(n)), 1), base) if n > 0 else 1.0
        hyps.append(Hypothesis(g, found[0], found[0].concentration, wilson_lower(h, n), p_value, pieces, found))
        descs.append(found)
    order = sorted(range(len(hyps)), key=lambda t: (-hyps[t].lower_bound, -len(hyps[t].indices)))
    return [hyps[t] for t in order], [descs[t] for t in order]


def _same(a: Conjunction, b: Conjunction) -> bool:
    """Whether two groups' best descriptions are one statement: then they are one hypothesis.

    The search returns its best conjunction even where it holds for less than ``min_support`` of a small group
    (a fallback); two groups said in the same words were left apart by the coverage rule, and a reader saw one
    statement twice (trial 26: "at night under infrared light" for groups of 37 and 13 images).
    """
    return bool(a.literals) and set(a.literals) == set(b.literals)


#: Rounds of `refine` at most (it stops earlier when the description no longer changes).
REFINE_ROUNDS = 4
#: A refined group must keep this share of the group it came from (else the group stays as it was).
KEEP_OWN = 0.3
#: Two hypotheses whose images overlap by this share of the smaller one are one failure (merging by images).
SAME_IMAGES = 0.5
#: A group whose other images all lie in other hypotheses is dropped when fewer than this many remain.
MIN_REST = 3


def refine(search: ComposeSearch, description: Conjunction, k: int = 3) -> tuple[IntArray, list[Conjunction]]:
    """The hard images a description holds for, described again, until the description is stable.

    A slicer's group mixes a failure's images with others when the embedding's main directions are not the
    failure's attributes, and its description then misses a condition or states one of the mixture. The hard
    images the description holds for are the failure's, mostly: their expected number is the soft count
    h = Σ P(description) over the hard split, and the h hard images of highest P are taken as the group and
    described again. A condition every one of them shares enters, a confounder that the easy images of the
    same region share too does not.

    Returns
    -------
    indices : ndarray of int
        The final group (indices into n).
    descriptions : list of Conjunction
        Its descriptions (`ComposeSearch.search`).
    """
    found = [description]
    group = np.zeros(0, dtype=np.int64)
    for _ in range(REFINE_ROUNDS):
        p = search.region(found[0].literals)[search.hard]
        m = int(round(float(p.sum())))
        if m < 3:
            break
        group = np.sort(search.hard[np.argsort(-p, kind="stable")[:m]])
        again = search.search(group, k=k)
        same = search.grammar.canonical(again[0].conditions) == search.grammar.canonical(found[0].conditions)
        found = again
        if same:
            break
    return group, found


def _refined(
    search: ComposeSearch,
    items: dict[int, tuple[IntArray, list[Conjunction], int]],
    k: int,
    discovered: Sequence[Discovered] = (),
) -> dict[int, tuple[IntArray, list[Conjunction], int]]:
    """Each hypothesis refined where that says more (`refine`), then those holding the same images merged.

    The failures found by their descriptions (`lbee.core.discovery.discover_failures`) come first: where one
    holds the same images as a slicer's group, it stands, since its images were collected by what it says.
    """
    first: list[tuple[IntArray, list[Conjunction], int]] = []
    for d in discovered:
        alternatives = [
            c
            for c in search.search(d.indices, k=k)
            if search.grammar.canonical(c.conditions) != search.grammar.canonical(d.description.conditions)
        ]
        first.append((d.indices, [d.description, *alternatives][:k], 0))
    out: list[tuple[IntArray, list[Conjunction], int]] = []
    for g, found, pieces in items.values():
        group, again = refine(search, found[0], k)
        # adopted when it says more (a higher lift) and still describes these images (stray errors keep theirs)
        ok = (
            again[0].lift > found[0].lift
            and search.grammar.canonical(again[0].conditions) != search.grammar.canonical(found[0].conditions)
            and len(np.intersect1d(group, g)) >= KEEP_OWN * len(g)
        )
        out.append((group, again, pieces) if ok else (g, found, pieces))
    out.sort(key=lambda t: -t[1][0].lift)
    kept = first  # failures found apart are apart: only the slicer's groups merge into them
    for g, found, pieces in out:
        for t, (kg, kf, kp) in enumerate(kept):
            shared = len(np.intersect1d(g, kg, assume_unique=True))
            if shared >= SAME_IMAGES * min(len(g), len(kg)):
                kept[t] = (kg, kf, kp + pieces)  # the same failure: the better-lifted description stands
                break
        else:
            # an image is in one hypothesis at most: what another already holds is left out, the rest described anew
            rest = np.setdiff1d(g, np.concatenate([kg for kg, _, _ in kept]), assume_unique=True) if kept else g
            if len(rest) == len(g):
                kept.append((g, found, pieces))
            elif len(rest) >= MIN_REST:
                kept.append((rest, search.search(rest, k=k), pieces))
    return dict(enumerate(kept))


def with_twin(search: ComposeSearch, descriptions: Sequence[Conjunction], twin: ArrayLike) -> list[Conjunction]:
    """``descriptions`` with their share of the matched easy cluster ``twin`` (indices into n) filled in."""
    rows = np.asarray(twin, dtype=np.int64)
    if not len(rows):
        return list(descriptions)
    return [replace(c, twin_share=float(search.region(c.literals)[rows].mean())) for c in descriptions]
