"""The 'compose' describer: a beam search over conjunctions of a grammar's atoms.

For one hard group G, with the easy set E as the contrast (the matched easy
twin T is reported as a second view), every conjunction c has a *share* in
each: the mean over the group's images of P(c) (:mod:`lbee.core.atoms`).
A conjunction is scored by its smoothed log-ratio of shares,

    lift(c) = log((n_G·share_G + ½) / (n_G + ½)) − log((n_E·share_E + ½) / (n_E + ½)),

the log of how much more often c holds in the group than in the easy set.
The search starts from the empty conjunction and adds one literal a step,
keeping the ``beam`` best states. A literal is added only when

* the conjunction still holds for at least ``min_support`` of the group,
* the lift improves by more than ``z`` standard errors of a log count
  (√(1 / (n_E·share_E + ½))): beyond noise, and
* it contradicts nothing already said (another value of the same attribute,
  an attribute of an object said absent, a clause whose subject is absent).

When the easy set can no longer tell (no easy image is left), the best
conjunction is *completed* with the literals that still hold for the group
and are characteristic on their own (lift of the literal alone ≥ log 1.25),
so a blindspot's conditions are named in full. The K best states that do not
contradict one another are returned with their shares. Nothing is
enumerated: each step is two matrix products, (beam × n_G)·(n_G × L) and
(beam × n_E)·(n_E × L), so a 50-atom grammar with 6 conditions costs
max_conditions × beam × n × L multiply-adds per group.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._blas import one_blas_thread

DEFAULT_BEAM = 8
DEFAULT_MAX_CONDITIONS = 6
#: The share of the group a returned conjunction must hold for (soft; the description score asks 0.8 exactly).
DEFAULT_MIN_SUPPORT = 0.75
DEFAULT_Z = 1.0
SMOOTH = 0.5
CHARACTERISTIC = float(np.log(1.25))


@dataclass
class Conjunction:
    """One description of a group: its conditions and the shares of images it holds for.

    Attributes
    ----------
    conditions : dict
        ``{(subject, attribute): value}``, canonical.
    hard_share, easy_share : float
        Mean P(conjunction) over the group and over the easy set.
    twin_share : float or None
        Over the matched easy cluster.
    lift : float
        The search's score (module docstring).
    """

    conditions: dict
    hard_share: float
    easy_share: float
    twin_share: float | None = None
    lift: float = 0.0
    literals: tuple = field(default=(), repr=False)


def _lift(h, e, n_g, n_e):
    return np.log((h + SMOOTH) / (n_g + SMOOTH)) - np.log((e + SMOOTH) / (n_e + SMOOTH))


class ComposeSearch:
    """Beam search of conjunctions for hard groups against one easy set.

    Parameters
    ----------
    literals : lbee.core.atoms.Literals
        Per-image literal probabilities over the n images.
    grammar : lbee.grammar.Grammar
        Contradictions, canonical forms and the sentences.
    easy : ndarray of int
        The easy images (indices into n).
    beam : int, default=8
    max_conditions : int, default=6
    min_support : float, default=0.75
    z : float, default=1.0
    """

    def __init__(self, literals, grammar, easy, *, beam=DEFAULT_BEAM, max_conditions=DEFAULT_MAX_CONDITIONS,
                 min_support=DEFAULT_MIN_SUPPORT, z=DEFAULT_Z):
        self.literals, self.grammar = literals, grammar
        self.beam, self.max_conditions, self.min_support, self.z = int(beam), int(max_conditions), \
            float(min_support), float(z)
        self.easy = np.asarray(easy, dtype=np.int64)
        self._q = np.asarray(literals.probs, dtype=np.float32)
        self._qe = np.ascontiguousarray(self._q[self.easy])
        self._n_e = max(len(self.easy), 1)
        self._keys = list(literals.keys)
        self._easy_alone = self._qe.sum(0, dtype=np.float64)

    def _ok(self, conds, j):
        key, value = self._keys[j]
        if key in conds:
            return None
        implied = self.grammar.implied(conds)
        if implied.get(key) == value:
            return None  # already said
        new = dict(conds)
        new[key] = value
        if self.grammar.contradiction(self.grammar.implied(new)) is not None:
            return None
        return new

    def search(self, group, *, twin=None, k=3):
        """The ``k`` best non-contradictory conjunctions for ``group`` (indices into n), best first.

        Returns
        -------
        list of Conjunction
        """
        group = np.asarray(group, dtype=np.int64)
        qg = np.ascontiguousarray(self._q[group])
        n_g, n_e = max(len(group), 1), self._n_e
        frontier = [({}, (), np.ones(len(group), np.float32), np.ones(len(self.easy), np.float32), 0.0)]
        pool, seen = [], set()
        with one_blas_thread():
            for _ in range(self.max_conditions):
                vg = np.stack([f[2] for f in frontier])
                ve = np.stack([f[3] for f in frontier])
                h = (vg @ qg).astype(np.float64)
                e = (ve @ self._qe).astype(np.float64)
                lift = _lift(h, e, n_g, n_e)
                gate = self.z * np.sqrt(1.0 / (e + SMOOTH))
                cands = []
                for b, (conds, lits, _, _, base) in enumerate(frontier):
                    ok = (h[b] / n_g >= self.min_support) & (lift[b] - base > gate[b])
                    for j in np.flatnonzero(ok):
                        new = self._ok(conds, j)
                        if new is None:
                            continue
                        sig = frozenset(self.grammar.canonical(new).items())
                        if sig in seen:
                            continue
                        seen.add(sig)
                        cands.append((float(lift[b, j]), b, int(j), new))
                if not cands:
                    break
                cands.sort(key=lambda t: (-t[0], len(t[3])))
                nxt = []
                for score, b, j, new in cands[:self.beam]:
                    conds, lits, g_vec, e_vec, _ = frontier[b]
                    state = (new, (*lits, j), g_vec * qg[:, j], e_vec * self._qe[:, j], score)
                    nxt.append(state)
                pool.extend(nxt)
                frontier = nxt
        if not pool:
            return self._fallback(group, qg, twin, k)
        pool.sort(key=lambda s: (-s[4], -len(s[0])))
        best = self._complete(pool[0], qg)
        chosen = [best]
        for state in pool:
            if len(chosen) >= k:
                break
            if any(self.grammar.canonical(state[0]) == self.grammar.canonical(c[0]) for c in chosen):
                continue
            union = dict(best[0])
            for c in chosen:
                union.update(c[0])
            merged = {**union}
            clash = any(key in merged and merged[key] != v for key, v in state[0].items())
            merged.update(state[0])
            if clash or self.grammar.contradiction(self.grammar.implied(merged)) is not None:
                continue
            chosen.append(state)
        return [self._describe(s, qg, group, twin) for s in chosen]

    def _complete(self, state, qg):
        """Add the literals that still hold for the group and are characteristic alone (see the module docstring)."""
        conds, lits, g_vec, e_vec, score = state
        n_g = max(qg.shape[0], 1)
        alone = _lift(qg.sum(0, dtype=np.float64), self._easy_alone, n_g, self._n_e)
        order = np.argsort(-(g_vec @ qg), kind="stable")
        for j in order:
            if alone[j] < CHARACTERISTIC:
                continue
            new = self._ok(conds, j)
            if new is None:
                continue
            g_new = g_vec * qg[:, j]
            if g_new.sum() / n_g < self.min_support:
                continue
            conds, lits, g_vec, e_vec = new, (*lits, int(j)), g_new, e_vec * self._qe[:, j]
        e_sum = float(e_vec.sum())
        return conds, lits, g_vec, e_vec, float(_lift(float(g_vec.sum()), e_sum, n_g, self._n_e))

    def _describe(self, state, qg, group, twin):
        conds, lits, g_vec, e_vec, score = state
        n_g = max(len(group), 1)
        twin_share = None
        if twin is not None and len(twin):
            t = np.ones(len(twin))
            for j in lits:
                t = t * self._q[np.asarray(twin), j]
            twin_share = float(t.mean())
        return Conjunction(self.grammar.canonical(conds), float(g_vec.sum() / n_g), float(e_vec.sum() / self._n_e),
                           twin_share, float(score), tuple(lits))

    def _fallback(self, group, qg, twin, k):
        """No literal holds for ``min_support`` of the group: its single literals with the best share difference."""
        diff = qg.mean(0) - self._qe.mean(0)
        out = []
        for j in np.argsort(-diff, kind="stable")[:k]:
            key, value = self._keys[j]
            state = ({key: value}, (int(j),), qg[:, j].copy(), self._qe[:, j].copy(),
                     float(_lift(float(qg[:, j].sum()), float(self._qe[:, j].sum()), max(len(group), 1),
                                 self._n_e)))
            out.append(self._describe(state, qg, group, twin))
        return out
