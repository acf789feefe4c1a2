"""Failures found by their descriptions: the hard split covered by conjunctions, one failure at a time.

A slicer groups images that look alike. Where the embedding's main directions are not the failure's attributes
(the weather, the road, the time of day of a dash camera), its pieces mix failures, and each piece's description
states what the piece shares: often a confounder. `discover_failures` does not start from pieces. It
searches conjunctions over the whole hard split (subgroup discovery), scored by Klösgen's quality

    q(c) = √(h + e) · (h / (h + e) − b),

where h and e are the soft counts of the hard images not yet covered and of the easy images that c holds for
(`lbee.core.compose.ComposeSearch`'s literal probabilities), each divided by what c can reach (a noisy atom's P
stays below 1 where it holds, so soft counts shrank a weak condition's region and it was never taken in: the
counts estimate the images c holds for), and b the hard share of all images. The quality
trades the region's error concentration against its size: a confounder holds for many images but barely more
often where the model fails, a failure's own conditions for fewer images, nearly all hard. The best conjunction's
hard images are collected, discounted by P(conjunction), and the search runs again, while the region's
concentration is significant (one-sided binomial test against b, Bonferroni over the literals and rounds, on the
counts divided by what c can reach, as the quality's).

A beam of states grows one literal a step, with the search's own gate: a literal is added only when the lift rises
by more than z σ (`lbee.core.compose`; σ from the same reach-divided counts). The best state's confounders are
explained away, and the conditions it left out that the failure needs are explained in
(`lbee.core.explaining_away`). The hypotheses it returns join the slicer's merged groups in
`lbee.core.hypotheses.one_hypothesis_per_failure`; where both hold the same images, the discovered one stands.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._blas import one_blas_thread
from ..typing import IntArray
from .binomial import at_least
from .compose import SMOOTH, ComposeSearch, Conjunction, Vector, _lift, _State
from .explaining_away import explained_away, explained_in

#: Failures collected at most (each round covers one).
MAX_ROUNDS = 8
#: The family-wise rate of collecting a region whose errors are not concentrated (Bonferroni over literals × rounds).
DISCOVERY_ALPHA = 0.05
#: A discovered group smaller than this is noise, not a failure.
MIN_GROUP = 5


@dataclass
class Discovered:
    """One failure found by its description.

    Attributes
    ----------
    indices : ndarray of int
        Its hard images (indices into n): the ``round(h / reach)`` uncovered hard images of highest P(description),
        none below half of ``reach`` (`ComposeSearch.reachable`).
    description : Conjunction
        Shares and lift against the whole hard and easy splits, as `ComposeSearch.search` reports them.
    """

    indices: IntArray
    description: Conjunction


def discover_failures(search: ComposeSearch, *, max_rounds: int = MAX_ROUNDS) -> list[Discovered]:
    """Cover the hard split with conjunctions, one failure a round (module docstring).

    Parameters
    ----------
    search : ComposeSearch
        Its literal probabilities over the n images and its hard and easy splits.
    max_rounds : int, default=8

    Returns
    -------
    list of Discovered
        In the order found (the most significant first).
    """
    hard, easy = search.hard, search.easy
    n_h, n_e = len(hard), len(easy)
    if n_h == 0 or n_e == 0:
        return []
    base = n_h / (n_h + n_e)
    sets = {name: search._sets[name] for name in ("hard", "easy")}  # (marginal, conditional) P, rows of the split
    threshold = DISCOVERY_ALPHA / (max(len(search.keys), 1) * max_rounds)
    weight = np.ones(n_h, np.float32)  # 1 - P(covered) per hard image
    free = np.ones(n_h, bool)  # not collected yet
    found: list[Discovered] = []
    with one_blas_thread():
        for _ in range(max_rounds):
            best = _best_conjunction(search, weight, sets, base)
            if best is None:
                break
            away = explained_away(search, best[0].lits, weight)  # a confounder the search added goes
            more = explained_in(search, away, weight)  # and the conditions it left out come in, unless the smaller
            for lits in (more, away) if len(more) > len(away) else (away,):  # region fails the test the failure passed
                state, h = _restated(search, best, lits, weight)
                e = float(state.e.sum())
                # on the images it holds for, as the quality counts them: soft counts shrank a noisy region below
                # the test (trial 25: "a thrips, under strong glare", 24 images of 320, was found and then refused)
                was = search.reachable(state.lits)
                significant = at_least(int(round(h / was)), max(int(round((h + e) / was)), 1), base) <= threshold
                if significant:
                    break
            if not significant:
                break
            score = np.where(free, state.h * weight, -1.0)  # each image in one failure at most
            # A calibrated P stays below 1 where a noisy atom holds: h / reach is about how many hard images the
            # conjunction holds for. That estimate compounds each literal's error, so no image below half of what
            # the conjunction reaches is taken (a near-perfect encoder: exactly the images it holds for).
            reach = search.reachable(state.lits)
            m = min(int(round(h / reach)), int((score >= 0.5 * reach).sum()))
            if m < MIN_GROUP:
                break
            taken = np.argsort(-score, kind="stable")[:m]
            free[taken] = False
            rows = np.sort(hard[taken])
            h_all = float(state.h.sum())
            full = _State(
                state.conds,
                state.lits,
                search.region(state.lits)[rows],
                state.h,
                state.e,
                float(_lift(h_all, e, search.n_hard, search.n_easy)),
            )
            found.append(Discovered(rows, search._describe(full, len(rows), None)))
            weight = (weight * (1.0 - state.h)).astype(np.float32)
    return found


def _restated(
    search: ComposeSearch, best: tuple[_State, float], lits: list[int], weight: Vector
) -> tuple[_State, float]:
    """The search's best state and its uncovered soft count h, with its literals now ``lits``."""
    state, h = best
    if sorted(lits) == sorted(state.lits):
        return state, h
    p = search.region(lits)
    conds = {search.keys[j][0]: search.keys[j][1] for j in lits}
    state = _State(conds, tuple(lits), state.g, p[search.hard], p[search.easy], state.lift)
    return state, float(state.h @ weight)


def _best_conjunction(
    search: ComposeSearch, weight: Vector, sets: dict[str, tuple[Vector, Vector]], base: float
) -> tuple[_State, float] | None:
    """The state of best quality over the uncovered hard images, and its uncovered soft count h; or None."""
    n_h = float(weight.sum())
    empty = np.zeros(0, np.float32)  # the group's vector: no group anchors this search
    start = _State({}, (), empty, np.ones(len(search.hard), np.float32), np.ones(len(search.easy), np.float32), 0.0)
    frontier, best, seen = [(start, 0.0)], None, set()
    for _ in range(search.max_conditions):
        cands = []
        given = np.stack([search._given(s.lits) for s, _ in frontier])
        weighed = np.stack([s.h * weight for s, _ in frontier])
        hard = search.totals(weighed, sets["hard"], given)
        easy = search.totals(np.stack([s.e for s, _ in frontier]), sets["easy"], given)
        for (s, quality), wh, h, e in zip(frontier, weighed, hard, easy):
            lift = _lift(h, e, n_h, search.n_easy)
            # counts as images the conjunction holds for: a noisy atom's P stays below 1 where it holds, so soft
            # counts shrank a weak condition's region (two trials' glare and dark plate were never taken in)
            was = search.reachable(s.lits)
            reach = was * search.reach
            hr, er = h / reach, e / reach
            q = np.sqrt(hr + er) * (h / np.maximum(h + e, 1e-9) - base)
            keep = np.clip((hr + er) / max((float(wh.sum()) + float(s.e.sum())) / was, 1e-9), 0.0, 1.0)
            gate = search.z * np.sqrt((1.0 - keep) * (1.0 / (hr + SMOOTH) + 1.0 / (er + SMOOTH)))
            for j in map(int, np.flatnonzero((lift - s.lift > gate) & (q > quality))):
                new = search.extend(s.conds, j)
                if new is None:
                    continue
                sig = frozenset(search.grammar.canonical(new).items())
                if sig in seen:
                    continue
                seen.add(sig)
                cands.append((float(q[j]), float(lift[j]), float(h[j]), s, j, new))
        if not cands:
            break
        cands.sort(key=lambda t: -t[0])
        frontier = []
        for quality, lift_j, h_j, s, j, new in cands[: search.beam]:
            nxt = _State(
                new,
                (*s.lits, j),
                empty,
                s.h * search.factor(s.lits, j, search.hard),
                s.e * search.factor(s.lits, j, search.easy),
                lift_j,
            )
            frontier.append((nxt, quality))
            if best is None or quality > best[0]:
                best = (quality, nxt, h_j)
    return None if best is None else (best[1], best[2])
