"""Relevance that composes: each atom's similarity calibrated to a probability, conjunctions as products.

An encoder trained on captions scores "an image with a blue square" well and
"an image with no circle" badly (captions rarely state an absence), and a
sentence of six conditions is far from every caption it saw. Here only the
*atoms* — the grammar's single-condition sentences that state a presence or a
value — are embedded. For atom a and image i:

1. **Presence** ("an image with a circle") and one-valued attributes:
   the n similarities s_ia are fitted by a two-component 1-D Gaussian
   mixture; when the components are two populations (each holding ≥ 1 % and
   ≥ 3 of the images, Ashman's D ≥ 0.5 however much they overlap) on either
   side of τ, the encoder's relevance threshold, p_ia is the posterior of the
   higher one, made non-decreasing in s_ia (a noisy atom keeps its ranking). (A
   similarity can be bimodal because of *other* attributes — in a world
   without rectangles, "an image with a rectangle" scores two squares a
   little higher than one — so the mixture says who is in which population,
   and τ which population holds the atom.)
   Otherwise the atom holds for all images or for none, and
   p_ia = σ((s_ia − τ) / T): τ the encoder's threshold, T the median width of
   the separated atoms. Such a presence that holds for most images (median
   p ≥ 0.5: the object of "a photo of an object") is a given (step 2), and so
   is the presence of a subject the grammar never denies.
2. **A value of an attribute** ("a *striped* circle") is calibrated against
   its sibling values, given its subject: the margin m = s(value) − max
   s(other values) is fitted the same way over the images the subject is
   likely in (P(present) ≥ 0.5), its two components on either side of 0 (some
   images prefer the value, some another). A one-population margin gives each
   image σ(m / T): the encoder's preference, image by image, never one constant
   for all (which threw a noisy atom's information away). Without the
   contrast, "an orange square" scores like "a square" in a world of blue
   squares. P(blue square) = P(square) · P(blue | square); a value that
   presupposes another literal (a clause about the square) is likewise
   conditioned on it (not on a presence that is a given). A value whose split
   is another subject's value seen through the encoder's loose binding ("small
   circle" firing beside small text) is taken as constant too (`unbound_values`).
3. **Negation**: "no X" is 1 − P(X present).
4. **Conjunction**: the product over its literals and what they presuppose,
   each counted once (the product t-norm).

These probabilities serve the 'compose' describer
(`lbee.core.compose`) and, thresholded at 0.5, as pseudo ground truth
Γ (`composed_relevance`), labelled as such, like VQA's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .._blas import one_blas_thread
from ..typing import AnyArray, ArrayLike, BoolArray, FloatArray, IntArray
from .binding import unbound_values
from .mixture import _mixture
from .rows import UnitRows

if TYPE_CHECKING:
    from ..grammar import Grammar

#: A grammar's condition: ``(subject, attribute)``.
Key = tuple[str, str]
#: A literal: ``((subject, attribute), value)``.
LiteralKey = tuple[Key, str]


@dataclass
class Literals:
    """The literals the describer may use and their per-image probabilities.

    Attributes
    ----------
    keys : list of ((str, str), str)
        ``((subject, attribute), value)`` of each literal.
    cond : ndarray of shape (n, L)
        P(literal | what it presupposes) per image (the marginal for presences and settings).
    parent : ndarray of int, shape (L,)
        The literal each one presupposes (its subject's presence), or -1.
    calibration : list of str
        Per literal: 'mixture', 'threshold', 'contrast-mixture', 'contrast-sign', 'contrast-unbound' (another
        subject's value leaking through the encoder's binding, `unbound_values`) or 'negation'.
    """

    keys: list[LiteralKey]
    cond: AnyArray
    parent: IntArray
    calibration: list[str]

    @property
    def probs(self) -> AnyArray:
        """P(literal) per image, shape (n, L): the conditional times what it presupposes."""
        out: AnyArray = self.cond.copy()
        has = self.parent >= 0
        out[:, has] *= self.cond[:, self.parent[has]]
        return out

    def index(self) -> dict[LiteralKey, int]:
        """Literal key -> column."""
        return {k: i for i, k in enumerate(self.keys)}

    def closure(self, literals: Iterable[int]) -> set[int]:
        """The literal indices plus those they presuppose."""
        out = set(int(j) for j in literals)
        for j in list(out):
            if self.parent[j] >= 0:
                out.add(int(self.parent[j]))
        return out

    @classmethod
    def from_probabilities(
        cls, keys: Sequence[LiteralKey], probs: ArrayLike, calibration: list[str] | None = None
    ) -> Literals:
        """Literals whose probabilities are given directly (no literal presupposes another)."""
        probs = np.asarray(probs, dtype=np.float64)
        return cls(list(keys), probs, np.full(probs.shape[1], -1), calibration or ["given"] * probs.shape[1])


def atom_sentences(conditions: Sequence[Mapping[Key, str]]) -> tuple[list[int], list[LiteralKey]]:
    """Indices of the sentences that are one positive literal (the atoms), and their literal keys.

    Parameters
    ----------
    conditions : list of dict
        Each sentence's conjunction ``{(subject, attribute): value}``.

    Returns
    -------
    rows : list of int
    keys : list of ((str, str), str)
    """
    rows: list[int] = []
    keys: list[LiteralKey] = []
    for j, c in enumerate(conditions):
        if len(c) == 1:
            ((key, value),) = c.items()
            if not (key[1] == "presence" and value == "false"):
                rows.append(j)
                keys.append((key, value))
    return rows, keys


def calibrate(similarities: ArrayLike, tau: float) -> tuple[FloatArray, BoolArray]:
    """Per-atom probabilities from similarities (step 1 of the module docstring).

    Parameters
    ----------
    similarities : ndarray of shape (n, A)
    tau : float
        The encoder's threshold, for atoms whose similarities are one population.

    Returns
    -------
    probs : ndarray of shape (n, A)
    separated : ndarray of bool, shape (A,)
        Whether the mixture calibrated the atom.
    """
    s = np.asarray(similarities, dtype=np.float64)
    n, a = s.shape
    if n == 0 or a == 0:
        return np.zeros((n, a)), np.zeros(a, bool)
    post, separated, width, spread, _, two = _mixture(s, boundary=float(tau))
    temp = float(np.median(width[separated])) if separated.any() else float(np.median(spread))
    for j in np.flatnonzero(~two):  # one population: a logistic around τ, column by column (no (n, A) temporaries)
        post[:, j] = 1.0 / (1.0 + np.exp(-(s[:, j] - float(tau)) / max(temp, 1e-6)))
    return post, separated


def _similarities(images: ArrayLike | UnitRows, atoms: AnyArray) -> FloatArray:
    """Float32 similarities of the images (n, d) to the atoms (A, d), as float64 (n, A); UnitRows in blocks."""
    if not isinstance(images, UnitRows):
        x = np.asarray(images, dtype=np.float32)
        with one_blas_thread() if x.shape[0] <= 4096 else nullcontext():
            sims: FloatArray = (x @ atoms.T).astype(np.float64)
            return sims
    out = np.empty((images.shape[0], atoms.shape[0]))
    with one_blas_thread() if images.shape[0] <= 4096 else nullcontext():
        for i0, b in images.blocks():
            out[i0 : i0 + len(b)] = b.astype(np.float32) @ atoms.T
    return out


def literal_probabilities(
    image_embeddings: ArrayLike,
    sentence_embeddings: ArrayLike,
    conditions: Sequence[Mapping[Key, str]],
    tau: float,
    grammar: Grammar | None = None,
) -> Literals:
    """The describer's literals and their probabilities for the n images (the module docstring's steps 1–3).

    Parameters
    ----------
    image_embeddings : ndarray or lbee.core.rows.UnitRows of shape (n, d)
        A UnitRows is read in row blocks.
    sentence_embeddings : ndarray of shape (N, d)
    conditions : list of dict of length N
    tau : float
    grammar : Grammar, optional
        Says which presences may be denied and what each value presupposes; without it every presence may be
        denied and every literal is calibrated on its own (step 1).

    Returns
    -------
    Literals
    """
    rows, keys = atom_sentences(conditions)
    if not rows:
        raise ValueError(
            "The sentence set has no single-condition sentence (no atom): the 'compose' describer and "
            "composed relevance need a grammar's sentence set (lbee sentences generate)."
        )
    sims = _similarities(image_embeddings, np.asarray(sentence_embeddings, dtype=np.float32)[rows])
    n = sims.shape[0]
    cond, sep = calibrate(sims, tau)
    cal = ["mixture" if t else "threshold" for t in sep]
    # a subject in every image is a given: its P around τ (0.03-0.88 for a trial's fruit) cut a failure by a third
    one = [j for j, (key, _value) in enumerate(keys) if key[1] == "presence" and not sep[j]]
    everywhere = {j for j in one if float(np.median(cond[:, j])) >= 0.5}
    parent = np.full(len(keys), -1)
    where = {k: i for i, k in enumerate(keys)}
    if grammar is not None:
        # so is one the grammar never denies (a trial's "land" at 0.45 on cloudy tiles cut 29 of a failure's 49)
        deniable = {key[0]: getattr(grammar.subject(key[0]), "deniable", True) for key, _v in keys}
        everywhere |= {j for j, (key, _v) in enumerate(keys) if key[1] == "presence" and not deniable[key[0]]}
        by_key: dict[Key, list[int]] = {}
        for j, (key, _value) in enumerate(keys):
            by_key.setdefault(key, []).append(j)
        margins, cols, weights = [], [], []
        for key, js in by_key.items():
            if key[1] == "presence":
                continue
            pres = grammar.implied({key: keys[js[0]][1]})
            pre = [where[(k, v)] for k, v in pres.items() if k != key and (k, v) in where]
            weighed = [c for c in pre if c not in everywhere]
            w = np.ones(n) if not weighed else np.prod(cond[:, weighed], axis=1)
            for j in js:
                if pre and pre[0] not in everywhere:
                    parent[j] = pre[0]
                if len(js) > 1:
                    others = [o for o in js if o != j]
                    margins.append(sims[:, j] - sims[:, others].max(axis=1))
                    cols.append(j)
                    weights.append((w >= 0.5).astype(float) if (w >= 0.5).sum() >= 3 else np.ones(n))
        if cols:
            m = np.stack(margins, axis=1)
            wts = np.stack(weights, axis=1)
            post, msep, width, spread, dist, mtwo = _mixture(m, wts, split_at=0.0)
            temp = float(np.median(width[msep])) if msep.any() else float(np.median(spread))
            unbound = unbound_values([keys[j][0] for j in cols], post, msep, dist, wts)
            for t, j in enumerate(cols):
                if unbound[t]:  # another subject's value seen through loose binding: one value for all
                    med = float(np.median(m[wts[:, t] > 0, t])) if (wts[:, t] > 0).any() else 0.0
                    cond[:, j] = 1.0 / (1.0 + np.exp(-med / max(temp, 1e-6)))
                elif mtwo[t]:  # two populations of margins, however much they overlap: the posterior
                    cond[:, j] = post[:, t]
                else:  # one population: the margin's sign, image by image (never one value for all)
                    cond[:, j] = 1.0 / (1.0 + np.exp(-m[:, t] / max(temp, 1e-6)))
                kind = "unbound" if unbound[t] else "mixture" if msep[t] else "overlap" if mtwo[t] else "sign"
                cal[j] = f"contrast-{kind}"
    out_keys, out_cond, out_parent = list(keys), [cond], list(parent)
    for j, (key, value) in enumerate(keys):
        if key[1] == "presence" and value == "true":
            subj = grammar.subject(key[0]) if grammar is not None else None
            if grammar is None or (subj is not None and subj.deniable):
                out_keys.append((key, "false"))
                out_cond.append(1.0 - cond[:, j : j + 1])
                out_parent.append(-1)
                cal.append("negation")
    return Literals(out_keys, np.ascontiguousarray(np.concatenate(out_cond, axis=1)), np.asarray(out_parent), cal)


def conjunction_probability(
    literals: Literals, conditions: Mapping[Key, str], grammar: Grammar | None = None
) -> FloatArray:
    """P(conjunction) per image: the product over its literals and what they presuppose, each once.

    Parameters
    ----------
    literals : Literals
    conditions : dict
        ``{(subject, attribute): value}``.
    grammar : Grammar, optional

    Returns
    -------
    ndarray of shape (n,)

    Raises
    ------
    KeyError
        A condition that is no literal of ``literals``.
    """
    idx = literals.index()
    c = grammar.canonical(conditions) if grammar is not None else conditions
    js = []
    for key, value in c.items():
        if (key, value) not in idx:
            raise KeyError(f"condition {key[0]}.{key[1]}={value} has no atom sentence in the sentence set")
        js.append(idx[(key, value)])
    p = np.ones(literals.cond.shape[0])
    for j in literals.closure(js):
        p *= literals.cond[:, j]
    return p


def composed_relevance(
    literals: Literals,
    conditions: Sequence[Mapping[Key, str]],
    grammar: Grammar | None = None,
    *,
    threshold: float = 0.5,
) -> tuple[FloatArray, BoolArray]:
    """Pseudo ground truth Γ from composed probabilities (label it so: it is the encoder's, not the truth).

    Parameters
    ----------
    literals : Literals
    conditions : list of dict of length N
    grammar : Grammar, optional
    threshold : float, default=0.5

    Returns
    -------
    probabilities : ndarray of shape (n, N)
    relevance : ndarray of bool, shape (n, N)
        ``probabilities >= threshold``.
    """
    probs = (
        np.stack([conjunction_probability(literals, c, grammar) for c in conditions], axis=1)
        if conditions
        else np.zeros((literals.cond.shape[0], 0))
    )
    return probs, probs >= threshold
