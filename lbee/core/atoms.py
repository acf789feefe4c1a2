"""Relevance that composes: each atom's similarity calibrated to a probability, conjunctions as products.

An encoder trained on captions scores "an image with a blue square" well and
"an image with no circle" badly (captions rarely state an absence), and a
sentence of six conditions is far from every caption it saw. Here only the
*atoms* — the grammar's single-condition sentences that state a presence or a
value — are embedded. For atom a and image i:

1. **Calibration** (per atom, against the image population): the n
   similarities s_ia are fitted by a two-component 1-D Gaussian mixture; when
   the two components are separated (Ashman's D ≥ 2, each holding ≥ 1 % of the
   images) p_ia is the posterior of the higher one. Otherwise the atom holds
   for all images or for none, and p_ia = σ((s_ia − τ) / T): τ the encoder's
   threshold, T the median width of the separated atoms.
2. **Negation**: "no X" is 1 − p(X present).
3. **Conjunction**: the product of its literals' probabilities (the product
   t-norm). A literal that an attribute presupposes ("square present" under
   "a blue square") is not multiplied twice.

These probabilities serve the 'compose' describer
(:mod:`lbee.core.compose`) and, thresholded at 0.5, as pseudo ground truth
Γ (:func:`composed_relevance`), labelled as such, like VQA's.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass

import numpy as np

from .._blas import one_blas_thread

#: Ashman's D at or above which an atom's similarities are two populations.
SEPARATION = 2.0
MIN_WEIGHT = 0.01


@dataclass
class Literals:
    """The literals the describer may use and their per-image probabilities.

    Attributes
    ----------
    keys : list of ((str, str), str)
        ``((subject, attribute), value)`` of each literal.
    probs : ndarray of shape (n, L)
        P(literal holds) per image.
    calibration : list of str
        Per literal: 'mixture', 'threshold' or 'negation'.
    """

    keys: list
    probs: np.ndarray
    calibration: list

    def index(self):
        return {k: i for i, k in enumerate(self.keys)}


def atom_sentences(conditions):
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
    rows, keys = [], []
    for j, c in enumerate(conditions):
        if len(c) == 1:
            (key, value), = c.items()
            if not (key[1] == "presence" and value == "false"):
                rows.append(j)
                keys.append((key, value))
    return rows, keys


def calibrate(similarities, tau):
    """Per-atom probabilities from similarities (see the module docstring).

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
    lo, hi = np.percentile(s, 25, axis=0), np.percentile(s, 75, axis=0)
    mu = np.stack([lo, hi])  # (2, A)
    spread = s.std(axis=0) + 1e-6
    var = np.stack([spread, spread]) ** 2 / 4
    w = np.full((2, a), 0.5)
    for _ in range(60):
        logp = (-0.5 * (s[None] - mu[:, None]) ** 2 / var[:, None] - 0.5 * np.log(2 * np.pi * var[:, None])
                + np.log(w[:, None]))  # (2, n, A)
        m = logp.max(0)
        r = np.exp(logp - m)
        r /= r.sum(0)
        nk = r.sum(1) + 1e-9  # (2, A)
        w = nk / n
        mu = (r * s[None]).sum(1) / nk
        var = np.maximum((r * (s[None] - mu[:, None]) ** 2).sum(1) / nk, (spread * 1e-2) ** 2)
    high = np.argmax(mu, axis=0)
    d = np.sqrt(2) * np.abs(mu[0] - mu[1]) / np.sqrt(var[0] + var[1])
    separated = (d >= SEPARATION) & (w.min(0) >= MIN_WEIGHT) & (w.min(0) * n >= 3)
    post = r[high, :, np.arange(a)].T  # (n, A): posterior of the higher component
    width = np.sqrt((var[0] + var[1]) / 2)
    temp = float(np.median(width[separated])) if separated.any() else float(np.median(spread))
    fallback = 1.0 / (1.0 + np.exp(-(s - float(tau)) / max(temp, 1e-6)))
    probs = np.where(separated[None, :], post, fallback)
    return probs, separated


def literal_probabilities(image_embeddings, sentence_embeddings, conditions, tau, grammar=None):
    """The describer's literals and their probabilities for the n images.

    The positive literals are the atom sentences (:func:`atom_sentences`); each
    deniable presence gets its negation, 1 − p.

    Parameters
    ----------
    image_embeddings : ndarray of shape (n, d)
    sentence_embeddings : ndarray of shape (N, d)
    conditions : list of dict of length N
    tau : float
    grammar : Grammar, optional
        Says which presences may be denied; without it every presence may.

    Returns
    -------
    Literals
    """
    rows, keys = atom_sentences(conditions)
    if not rows:
        raise ValueError("The sentence set has no single-condition sentence (no atom): the 'compose' describer and "
                         "composed relevance need a grammar's sentence set (lbee sentences generate).")
    x = np.asarray(image_embeddings, dtype=np.float32)
    with (one_blas_thread() if x.shape[0] <= 4096 else nullcontext()):
        sims = x @ np.asarray(sentence_embeddings, dtype=np.float32)[rows].T
    probs, separated = calibrate(sims, tau)
    cal = ["mixture" if s else "threshold" for s in separated]
    out_keys, cols = list(keys), [probs]
    for j, (key, value) in enumerate(keys):
        if key[1] == "presence" and value == "true":
            subj = grammar.subject(key[0]) if grammar is not None else None
            if grammar is None or (subj is not None and subj.deniable):
                out_keys.append((key, "false"))
                cols.append(1.0 - probs[:, j:j + 1])
                cal.append("negation")
    return Literals(out_keys, np.ascontiguousarray(np.concatenate(cols, axis=1)), cal)


def conjunction_probability(literals, conditions, grammar=None):
    """P(conjunction) per image: the product of its literals (presences an attribute implies counted once).

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
    p = np.ones(literals.probs.shape[0])
    for key, value in c.items():
        if (key, value) not in idx:
            raise KeyError(f"condition {key[0]}.{key[1]}={value} has no atom sentence in the sentence set")
        p *= literals.probs[:, idx[(key, value)]]
    return p


def composed_relevance(literals, conditions, grammar=None, *, threshold=0.5):
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
    probs = np.stack([conjunction_probability(literals, c, grammar) for c in conditions], axis=1) \
        if conditions else np.zeros((literals.probs.shape[0], 0))
    return probs, probs >= threshold
