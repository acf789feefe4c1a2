"""The 'compose' describer: a beam search over conjunctions of a grammar's atoms.

For one hard group G, with the easy set E as the contrast (the matched easy
twin T is reported as a second view), every conjunction c has a *share* in
each: the mean over the group's images of P(c) (:mod:`lbee.core.atoms`).
A conjunction is scored by its smoothed log-ratio of shares,

    lift(c) = log((n_G·share_G + ½) / (n_G + ½)) − log((n_E·share_E + ½) / (n_E + ½)),

the log of how much more often c holds in the group than in the easy set.
The search starts from the empty conjunction and adds one literal a step,
keeping the ``beam`` best states. A literal is added only when

* the conjunction still holds for at least ``min_support`` of the group, and
  the literal for at least ``min_conditional`` of the group's images the
  conjunction held for (a condition of a failure holds across it; one that
  holds for part of it describes a piece),
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
#: The share of the conjunction's group images a literal must hold for to be added.
DEFAULT_MIN_CONDITIONAL = 0.85
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
    min_conditional : float, default=0.85
    z : float, default=1.0
    """

    def __init__(self, literals, grammar, easy, *, beam=DEFAULT_BEAM, max_conditions=DEFAULT_MAX_CONDITIONS,
                 min_support=DEFAULT_MIN_SUPPORT, min_conditional=DEFAULT_MIN_CONDITIONAL, z=DEFAULT_Z):
        self.literals, self.grammar = literals, grammar
        self.beam, self.max_conditions, self.min_support, self.z = int(beam), int(max_conditions), \
            float(min_support), float(z)
        self.min_conditional = float(min_conditional)
        self.easy = np.asarray(easy, dtype=np.int64)
        # marginal P(literal) and P(literal | what it presupposes): a state multiplies the second once its
        # presupposition is in it, the first before
        self._q = np.asarray(literals.probs, dtype=np.float32)
        self._qc = np.asarray(literals.cond, dtype=np.float32)
        self._parent = np.asarray(literals.parent)
        self._qe = np.ascontiguousarray(self._q[self.easy])
        self._qe_c = np.ascontiguousarray(self._qc[self.easy])
        self._n_e = max(len(self.easy), 1)
        self._keys = list(literals.keys)
        self._easy_sums = self._qe.sum(0, dtype=np.float64)

    def characteristic(self, rows):
        """(L,) bool: literals more frequent (≥ 25 %) among ``rows`` than in the easy set, given what they presuppose.

        "A blue square" in a world of blue squares is as frequent as "a square"
        wherever there is a square: its own frequency says nothing, so a value
        is compared among the images of its subject.
        """
        rows = np.asarray(rows, dtype=np.int64)
        own_r, own_e = self._q[rows].sum(0, dtype=np.float64), self._easy_sums
        has = self._parent >= 0
        base_r, base_e = np.full(own_r.shape, float(max(len(rows), 1))), np.full(own_e.shape, float(self._n_e))
        base_r[has], base_e[has] = own_r[self._parent[has]], own_e[self._parent[has]]  # the subject's presence
        return _lift(own_r, own_e, base_r, base_e) >= CHARACTERISTIC

    def _given(self, lits):
        """(L,) bool: literals whose presupposition is already among ``lits`` (or have none)."""
        have = self.literals.closure(lits)
        return np.array([p < 0 or int(p) in have for p in self._parent])

    def factor(self, lits, j, rows=None):
        """What adding literal ``j`` to the state of ``lits`` multiplies its per-image vector by."""
        q = self._qc if (self._parent[j] < 0 or int(self._parent[j]) in self.literals.closure(lits)) else self._q
        return q[:, j] if rows is None else q[rows, j]

    def region(self, lits):
        """P(conjunction of ``lits``) for every image, shape (n,)."""
        p = np.ones(self._q.shape[0], np.float32)
        for j in self.literals.closure(lits):
            p = p * self._qc[:, j]
        return p

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
        qg_c = np.ascontiguousarray(self._qc[group])
        n_g, n_e = max(len(group), 1), self._n_e
        frontier = [({}, (), np.ones(len(group), np.float32), np.ones(len(self.easy), np.float32), 0.0)]
        pool, seen = [], set()
        with one_blas_thread():
            for _ in range(self.max_conditions):
                vg = np.stack([f[2] for f in frontier])
                ve = np.stack([f[3] for f in frontier])
                given = np.stack([self._given(f[1]) for f in frontier])
                h = np.where(given, vg @ qg_c, vg @ qg).astype(np.float64)
                e = np.where(given, ve @ self._qe_c, ve @ self._qe).astype(np.float64)
                lift = _lift(h, e, n_g, n_e)
                gate = self.z * np.sqrt(1.0 / (e + SMOOTH))
                cands = []
                for b, (conds, lits, g_vec, _, base) in enumerate(frontier):
                    held = max(float(g_vec.sum()), 1e-9)
                    ok = (h[b] / n_g >= self.min_support) & (h[b] / held >= self.min_conditional) \
                        & (lift[b] - base > gate[b])
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
                    state = (new, (*lits, j), g_vec * self.factor(lits, j, group),
                             e_vec * self.factor(lits, j, self.easy), score)
                    nxt.append(state)
                pool.extend(nxt)
                frontier = nxt
        if not pool:
            return self._fallback(group, qg, twin, k)
        pool.sort(key=lambda s: (-s[4], -len(s[0])))
        self._group = group
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
        characteristic = self.characteristic(self._group)
        order = np.argsort(-(g_vec @ qg), kind="stable")
        for j in order:
            if not characteristic[j]:
                continue
            new = self._ok(conds, j)
            if new is None:
                continue
            g_new = g_vec * self.factor(lits, j, self._group)
            if g_new.sum() / n_g < self.min_support or g_new.sum() < self.min_conditional * g_vec.sum():
                continue
            conds, lits, g_vec, e_vec = new, (*lits, int(j)), g_new, e_vec * self.factor(lits, j, self.easy)
        e_sum = float(e_vec.sum())
        return conds, lits, g_vec, e_vec, float(_lift(float(g_vec.sum()), e_sum, n_g, self._n_e))

    def _describe(self, state, qg, group, twin):
        conds, lits, g_vec, e_vec, score = state
        n_g = max(len(group), 1)
        twin_share = None
        if twin is not None and len(twin):
            twin_share = float(self.region(lits)[np.asarray(twin)].mean())
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
