"""The 'compose' describer: a beam search over conjunctions of a grammar's atoms.

A hard group G is a piece of the hard split H that the slicer cut out; the
easy split E is the contrast (the matched easy twin T is reported as a second
view). Every conjunction c has a soft count in each set, the sum over its
images of P(c) (`lbee.core.atoms`), and a *region*: the images it holds
for. A conjunction is scored by the smoothed log-ratio of its shares of the
hard and the easy split,

    lift(c) = log((h(c) + ½) / (n_H + ½)) − log((e(c) + ½) / (n_E + ½)),

the log of how much more often c holds where the model fails than where it
does not: the error concentration of its region. G anchors the search — c
must hold for ``min_support`` of G — but the contrast is the whole split, not
G. A slicer groups images that *look* alike, so a piece of a failure is
homogeneous in attributes the failure does not depend on (the rectangle, the
size of the square); against the easy set, G's own shares would make those
attributes look like conditions of the failure. Over the hard split they hold
as often as over the easy one, and add nothing.

The search starts from the empty conjunction and adds one literal a step,
keeping the ``beam`` best states. A literal is added only when

* the conjunction still holds for ``min_support`` of G, and the literal for
  ``min_conditional`` of G's images the conjunction held for (a condition of
  a failure holds across it), both as shares of what the literals can reach:
  a literal's E[P | holds] = E[P²] / E[P] (1 for a near-perfect encoder; a
  noisy atom's P stays below 1 where it holds, and a product of three of them
  far below an absolute 0.75);
* the lift improves beyond noise: by more than z σ, where σ² = (1 − p)
  (1/(h + ½) + 1/(e + ½)) is the variance of the change of a log-ratio when a
  literal that keeps a share p of the region is independent of the failure,
  and z the one-sided normal quantile at ``alpha`` / L (Bonferroni over the L
  literals tried);
* it contradicts nothing already said (another value of the same attribute,
  an attribute of an object said absent, a clause whose subject is absent).

The best states are pruned (backward elimination with the same gate: a
literal goes when dropping it costs no more than z σ of lift), and up to K
are returned with their shares of G, of the easy set and of the twin: the
best, then alternatives that contradict none above them and cover more of
the hard split than each of them by more than z √h (a lower lift is worth
reading only if it buys coverage). Nothing is enumerated: each
step is three matrix products, (beam × n)·(n × L) over G, H and E, so a
50-atom grammar searched to 6 conditions costs max_conditions × beam × n × L
multiply-adds per group.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from .._blas import one_blas_thread
from ..typing import ArrayLike, FloatArray, IntArray
from .atoms import Key, Literals

if TYPE_CHECKING:
    from ..grammar import Grammar

#: Per-image probabilities of a state's conjunction (float32: the search's products run in single precision).
Vector = npt.NDArray[Any]

DEFAULT_BEAM = 8
DEFAULT_MAX_CONDITIONS = 6
#: The share of the group a returned conjunction must hold for (soft; the description score asks 0.8 exactly).
DEFAULT_MIN_SUPPORT = 0.75
#: The share of the conjunction's group images a literal must hold for to be added.
DEFAULT_MIN_CONDITIONAL = 0.85
#: The family-wise false-addition rate of one step (Bonferroni over the literals).
DEFAULT_ALPHA = 0.05
SMOOTH = 0.5
#: The best states per returned description that are pruned (`lbee.core.pruning.pruned`) before choosing.
PRUNED_PER_K = 4


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
    concentration : float
        h / (h + e) of its region: the share of errors among the hard and easy images it holds for.
    region_counts : (float, float)
        (h, e): soft counts of hard and easy images it holds for.
    """

    conditions: dict[Key, str]
    hard_share: float
    easy_share: float
    twin_share: float | None = None
    lift: float = 0.0
    concentration: float = 0.0
    region_counts: tuple[float, float] = (0.0, 0.0)
    literals: tuple[int, ...] = field(default=(), repr=False)


def _lift(h: Any, e: Any, n_h: float, n_e: float) -> Any:
    """The smoothed log-ratio of the hard and easy shares (floats or arrays alike)."""
    return np.log((h + SMOOTH) / (n_h + SMOOTH)) - np.log((e + SMOOTH) / (n_e + SMOOTH))


@dataclass
class _State:
    conds: dict[Key, str]
    lits: tuple[int, ...]
    g: Vector  # P(conjunction) over the group, the hard split and the easy split
    h: Vector
    e: Vector
    lift: float


class ComposeSearch:
    """Beam search of conjunctions for hard groups against the hard and easy splits.

    Parameters
    ----------
    literals : lbee.core.atoms.Literals
        Per-image literal probabilities over the n images.
    grammar : lbee.grammar.Grammar
        Contradictions, canonical forms and the sentences.
    easy : array-like of int
        The easy images (indices into n).
    hard : array-like of int, optional
        The hard images; default every image that is not easy.
    beam : int, default=8
    max_conditions : int, default=6
    min_support : float, default=0.75
    min_conditional : float, default=0.85
    alpha : float, default=0.05
        Family-wise rate of adding a literal the failure does not depend on, per step.
    """

    def __init__(
        self,
        literals: Literals,
        grammar: Grammar,
        easy: ArrayLike,
        hard: ArrayLike | None = None,
        *,
        beam: int = DEFAULT_BEAM,
        max_conditions: int = DEFAULT_MAX_CONDITIONS,
        min_support: float = DEFAULT_MIN_SUPPORT,
        min_conditional: float = DEFAULT_MIN_CONDITIONAL,
        alpha: float = DEFAULT_ALPHA,
    ) -> None:
        from statistics import NormalDist  # the quantile without importing scipy.stats (half a second)

        self.literals, self.grammar = literals, grammar
        self.beam, self.max_conditions = int(beam), int(max_conditions)
        self.min_support, self.min_conditional = float(min_support), float(min_conditional)
        self.easy = np.asarray(easy, dtype=np.int64)
        n = literals.cond.shape[0]
        if hard is None:
            mask = np.ones(n, bool)
            mask[self.easy] = False
            hard = np.flatnonzero(mask)
        self.hard = np.asarray(hard, dtype=np.int64)
        #: literal keys ``((subject, attribute), value)``, in column order
        self.keys = list(literals.keys)
        # marginal P(literal) and P(literal | what it presupposes): a state multiplies the second once its
        # presupposition is in it, the first before
        self.probs = np.asarray(literals.probs, dtype=np.float32)
        self.cond = np.asarray(literals.cond, dtype=np.float32)
        self._cond_t = np.ascontiguousarray(self.cond.T)  # (L, n): a literal's column read contiguously
        self._parent = np.asarray(literals.parent)
        #: the literals that presuppose another: only their marginal P differs from the conditional one
        self._presupposing = np.flatnonzero(self._parent >= 0)
        self._probs_t = np.ascontiguousarray(self.probs[:, self._presupposing].T)  # (P, n), as ``_cond_t``
        self._marginal_row = {int(j): k for k, j in enumerate(self._presupposing)}
        self._easy_mean: Vector | None = None  # the easy images' mean marginal P (L,), for `_fallback`
        self._sets = {name: self._rows(idx) for name, idx in (("hard", self.hard), ("easy", self.easy))}
        self.n_hard, self.n_easy = max(len(self.hard), 1), max(len(self.easy), 1)
        self.z = -NormalDist().inv_cdf(float(alpha) / max(len(self.keys), 1))
        # What each literal can reach: the mean P over the images it holds for, E[p | holds] = E[p²] / E[p] for
        # calibrated p. A noisy atom's P stays below 1 where it holds, so the support gates ask a share of what
        # the literals can reach, not of 1 (a near-perfect encoder reaches 1, where nothing changes).
        c64 = self.cond.astype(np.float64)
        self.reach = np.clip((c64**2).sum(0) / np.maximum(c64.sum(0), 1e-9), 1e-3, 1.0)

    def _rows(self, idx: IntArray) -> tuple[Vector, Vector]:
        """The matrices `totals` multiplies on rows ``idx``, a pair.

        P(literal | presupposition) (m, L), and the marginal P of the presupposing literals only (m, P).
        """
        return np.ascontiguousarray(self.cond[idx]), np.ascontiguousarray(self.probs[np.ix_(idx, self._presupposing)])

    def totals(self, v: Vector, rows: tuple[Vector, Vector], given: npt.NDArray[np.bool_]) -> FloatArray:
        """Soft counts of each state with each literal added, shape (B, L), float64.

        ``v`` (B, m) holds each state's per-image P on the rows of ``rows`` (`_rows`), ``given`` (B, L) which
        literals' presupposition a state already holds (`_given`): those multiply by their conditional P,
        the others by their marginal one. One pass over each matrix for all B states (the products are
        memory-bound: a million images' hard split is read once a step, not once a state).
        """
        cond, marg = rows
        out = v @ cond
        if marg.shape[1]:
            pres = self._presupposing
            out[:, pres] = np.where(given[:, pres], out[:, pres], v @ marg)
        return out.astype(np.float64)

    # ---- conjunctions --------------------------------------------------------------------------------------
    def _given(self, lits: Sequence[int]) -> npt.NDArray[np.bool_]:
        """(L,) bool: literals whose presupposition is already among ``lits`` (or have none)."""
        have = self.literals.closure(lits)
        return np.array([p < 0 or int(p) in have for p in self._parent])

    def factor(self, lits: Sequence[int], j: int, rows: IntArray | None = None) -> Vector:
        """What adding literal ``j`` to the conjunction of ``lits`` multiplies its per-image vector by."""
        given = self._parent[j] < 0 or int(self._parent[j]) in self.literals.closure(lits)
        column: Vector = self._cond_t[j] if given else self._probs_t[self._marginal_row[j]]  # contiguous: gathered fast
        return column if rows is None else column[rows]

    def region(self, lits: Sequence[int]) -> Vector:
        """P(conjunction of ``lits``) for every image, shape (n,)."""
        p = np.ones(self.probs.shape[0], np.float32)
        for j in self.literals.closure(lits):
            p *= self._cond_t[j]
        return p

    def reachable(self, lits: Sequence[int]) -> float:
        """The support a conjunction of ``lits`` reaches where it holds: the product of its literals' reach."""
        return float(np.prod([self.reach[j] for j in self.literals.closure(lits)])) if len(lits) else 1.0

    def counts(self, p: Vector) -> tuple[float, float]:
        """(h, e): soft counts of the hard and the easy images of a region ``p`` (n,)."""
        return float(p[self.hard].sum()), float(p[self.easy].sum())

    def without(self, lits: Sequence[int], j: int) -> list[int] | None:
        """``lits`` without literal ``j``, its presupposition kept ("a small rectangle" → "a rectangle").

        None when a literal that stays presupposes ``j``.
        """
        rest = [x for x in lits if x != j]
        if j in self.literals.closure(rest):
            return None
        parent = int(self._parent[j])
        if parent >= 0 and parent not in self.literals.closure(rest):
            rest.append(parent)
        return rest

    def extend(self, conds: dict[Key, str], j: int) -> dict[Key, str] | None:
        """``conds`` with literal ``j`` added, or None when it is already said or contradicts them."""
        key, value = self.keys[j]
        if key in conds:
            return None
        if key[1] == "presence" and value == "true" and not getattr(self.grammar.subject(key[0]), "deniable", True):
            return None  # a subject the grammar never denies is in every image: it says nothing of a failure (trial 31)
        if self.grammar.implied(conds).get(key) == value:
            return None  # already said
        new = dict(conds)
        new[key] = value
        if self.grammar.contradiction(self.grammar.implied(new)) is not None:
            return None
        return new

    # ---- the search ----------------------------------------------------------------------------------------
    def search(self, group: ArrayLike, *, twin: ArrayLike | None = None, k: int = 3) -> list[Conjunction]:
        """Up to ``k`` non-contradictory conjunctions for ``group`` (indices into n), best first.

        Returns
        -------
        list of Conjunction
        """
        group = np.asarray(group, dtype=np.int64)
        sets = {"group": self._rows(group), **self._sets}
        n_g = max(len(group), 1)
        start = _State(
            {},
            (),
            np.ones(len(group), np.float32),
            np.ones(len(self.hard), np.float32),
            np.ones(len(self.easy), np.float32),
            0.0,
        )
        frontier, pool, seen = [start], [], set()
        with one_blas_thread():
            for _ in range(self.max_conditions):
                given = np.stack([self._given(s.lits) for s in frontier])
                tot = {}
                for name, attr in (("group", "g"), ("hard", "h"), ("easy", "e")):
                    tot[name] = self.totals(np.stack([getattr(s, attr) for s in frontier]), sets[name], given)
                g, h, e = tot["group"], tot["hard"], tot["easy"]
                lift = _lift(h, e, self.n_hard, self.n_easy)
                cands = []
                for b, s in enumerate(frontier):
                    held_g, held_h, held_e = (max(float(v.sum()), 1e-9) for v in (s.g, s.h, s.e))
                    keep = np.clip((h[b] + e[b]) / (held_h + held_e), 0.0, 1.0)
                    gate = self.z * np.sqrt((1.0 - keep) * (1.0 / (h[b] + SMOOTH) + 1.0 / (e[b] + SMOOTH)))
                    reach = self.reachable(s.lits) * self.reach  # what the conjunction with each literal can reach
                    ok = (
                        (g[b] / n_g >= self.min_support * reach)
                        & (g[b] / held_g >= self.min_conditional * self.reach)
                        & (lift[b] - s.lift > gate)
                    )
                    for j in map(int, np.flatnonzero(ok)):
                        new = self.extend(s.conds, j)
                        if new is None:
                            continue
                        sig = frozenset(self.grammar.canonical(new).items())
                        if sig in seen:
                            continue
                        seen.add(sig)
                        cands.append((float(lift[b, j]), b, j, new))
                if not cands:
                    break
                cands.sort(key=lambda t: (-t[0], len(t[3])))
                nxt = []
                for score, b, j, new in cands[: self.beam]:
                    s = frontier[b]
                    nxt.append(
                        _State(
                            new,
                            (*s.lits, j),
                            s.g * self.factor(s.lits, j, group),
                            s.h * self.factor(s.lits, j, self.hard),
                            s.e * self.factor(s.lits, j, self.easy),
                            score,
                        )
                    )
                pool.extend(nxt)
                frontier = nxt
        if not pool:
            return self._fallback(group, self.probs[group], twin, k)
        pool.sort(key=lambda s: (-s.lift, -len(s.conds)))
        head = PRUNED_PER_K * k
        from .pruning import pruned  # it reads the search's shares: imported here, not in a cycle

        pool = sorted(pruned(self, pool[:head], group) + pool[head:], key=lambda s: (-s.lift, -len(s.conds)))
        chosen = [pool[0]]
        covered = float(pool[0].h.sum())
        for s in pool[1:]:
            if len(chosen) >= k:
                break
            if any(self.grammar.canonical(s.conds) == self.grammar.canonical(c.conds) for c in chosen):
                continue
            held = float(s.h.sum())
            if held <= covered + self.z * np.sqrt(covered + SMOOTH):
                continue  # dominated: a lower lift without covering more of the hard split beyond noise
            merged = {}
            for c in chosen:
                merged.update(c.conds)
            clash = any(key in merged and merged[key] != v for key, v in s.conds.items())
            merged.update(s.conds)
            if clash or self.grammar.contradiction(self.grammar.implied(merged)) is not None:
                continue
            chosen.append(s)
            covered = held
        return [self._describe(s, n_g, twin) for s in chosen]

    def _describe(self, s: _State, n_g: int, twin: ArrayLike | None) -> Conjunction:
        twin_share = None
        twin_rows = None if twin is None else np.asarray(twin, dtype=np.int64)
        if twin_rows is not None and len(twin_rows):
            twin_share = float(self.region(s.lits)[twin_rows].mean())
        h, e = float(s.h.sum()), float(s.e.sum())
        return Conjunction(
            self.grammar.canonical(s.conds),
            float(s.g.sum() / n_g),
            e / self.n_easy,
            twin_share,
            float(s.lift),
            h / (h + e) if h + e > 0 else 0.0,
            (h, e),
            tuple(s.lits),
        )

    def _fallback(self, group: IntArray, qg: Vector, twin: ArrayLike | None, k: int) -> list[Conjunction]:
        """No literal holds for ``min_support`` of the group: its single literals with the best share difference."""
        if self._easy_mean is None:  # once per search object: a fallback is met group after group
            self._easy_mean = self.probs[self.easy].mean(0)
        diff = qg.mean(0) - self._easy_mean
        out = []
        for j in np.argsort(-diff, kind="stable")[:k]:
            key, value = self.keys[j]
            lits = (int(j),)
            h, e = self.counts(self.probs[:, j])
            state = _State(
                {key: value},
                lits,
                qg[:, j].copy(),
                self.probs[self.hard, j],
                self.probs[self.easy, j],
                float(_lift(h, e, self.n_hard, self.n_easy)),
            )
            out.append(self._describe(state, max(len(group), 1), twin))
        return out
