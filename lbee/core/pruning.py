"""Backward elimination of the literals a failure does not need: the last step of 'compose''s search.

The beam adds the literal of best lift a step, and an early literal that a later one makes redundant stays ("a
*small* square", when the square's size only correlates with the failure's other conditions). Each state of the
beam is pruned with the search's own gate, then its literals whose excluded images fail like its own are explained
away (`lbee.core.explaining_away`).
"""

from __future__ import annotations

import numpy as np

from ..typing import IntArray
from .atoms import Key
from .compose import SMOOTH, ComposeSearch, _lift, _State
from .explaining_away import explained_away


def pruned(search: ComposeSearch, states: list[_State], group: IntArray) -> list[_State]:
    """``states`` with each literal the failure does not need removed, deduplicated, best lift first.

    The beam adds the literal of best lift a step, and an early literal
    that a later one makes redundant stays ("a *small* square", when the
    square's size only correlates with the failure's other conditions).
    Backward elimination with the search's own gate: while some literal's
    removal lowers the lift by no more than z σ (σ as for adding it back),
    the one whose removal costs least goes.
    """
    out: dict[frozenset[tuple[Key, str]], _State] = {}
    memo: dict[frozenset[int], tuple[float, float]] = {}

    def counts(lits: list[int]) -> tuple[float, float]:
        key = frozenset(search.literals.closure(lits))
        if key not in memo:
            memo[key] = search.counts(search.region(lits))
        return memo[key]

    for s in states:
        lits = list(s.lits)
        while len(lits) > 1:
            h, e = counts(lits)
            lift = float(_lift(h, e, search.n_hard, search.n_easy))
            best: tuple[float, int] | None = None
            for j in lits:
                rest = search.without(lits, j)
                if rest is None:
                    continue  # presupposed by a literal that stays
                h2, e2 = counts(rest)
                keep = min(max((h + e) / max(h2 + e2, 1e-9), 0.0), 1.0)
                gate = search.z * np.sqrt((1.0 - keep) * (1.0 / (h + SMOOTH) + 1.0 / (e + SMOOTH)))
                margin = lift - float(_lift(h2, e2, search.n_hard, search.n_easy)) - gate
                if margin <= 0 and (best is None or margin < best[0]):
                    best = (margin, j)
            if best is None:
                break
            lits = search.without(lits, best[1]) or lits
        lits = explained_away(search, lits)  # then the literals whose excluded images fail like its own
        if sorted(lits) == sorted(s.lits):
            state = s
        else:
            p = search.region(lits)
            h, e = search.counts(p)
            conds = {search.keys[j][0]: search.keys[j][1] for j in lits}
            state = _State(
                conds,
                tuple(lits),
                p[group],
                p[search.hard],
                p[search.easy],
                float(_lift(h, e, search.n_hard, search.n_easy)),
            )
        sig = frozenset(search.grammar.canonical(state.conds).items())
        if sig not in out or out[sig].lift < state.lift:
            out[sig] = state
    return sorted(out.values(), key=lambda s: (-s.lift, -len(s.conds)))
