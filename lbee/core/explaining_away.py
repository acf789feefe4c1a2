"""Conditions a failure does not need, explained away by the others.

A confounder goes with a failure (it holds for 90 % of the failure's images and for half of the others) without
causing it. Added to the failure's own conditions it still raises the region's error concentration a little:
where the encoder is unsure of the true conditions, it halves the images they are wrongly said to hold for. The
search's gates, which ask whether a literal raises the lift, keep it.

The question asked here is the one the condition ablation asks on held-out images (`lbee.core.confirmation`): do
the images a literal keeps out of the conjunction (those the other literals hold for and it does not, each by
P ≥ ½) fail like the conjunction's images or like the rest? Their hard share, as a fraction of the way from the
rest's hard share to the conjunction's,

    r = (hard share kept out − hard share outside) / (hard share inside − hard share outside),

is compared with what it would be either way. If the failure needs the literal, an image kept out fails like the
failure's when both the others and the literal hold for it; if it does not, when the others hold. r is expected
near the mean probability of the one or of the other over the images kept out.

Those probabilities are not the images' P(others) and P(literal) as they stand. Each is calibrated over every
image, and the images kept out are chosen: the literal is unlikely there, and a confounder goes with the others
(90 % of the failure's images hold it), so the others hold for fewer of the images without it than their P says.
Over the 131 night frames kept out of "on a dry road, in daylight, in fog, with strong sun glare", the others'
mean P was 0.77: were daylight free, r would be near 0.77; it was 0.41, and daylight, a confounder, stayed. So
each image's P(others) and P(literal) are read as evidence (their odds over their base rate's odds, the encoder's
likelihood ratio) and combined with the joint base rate of the two, from the soft counts over every image
(P(others ∧ literal) as the mean of P(others) · P(literal)). The image's posterior of the four cells (both, the
others alone, the literal alone, neither) gives P(both) and P(others) = P(both) + P(the others alone). Soft
counts blur the joint towards independence, so the correction is partial, and none where the literal and the
others are independent. Fitting the joint by EM instead sharpened it, and at median atom AUC 0.88 it put no
mass on "the others without the literal": both expectations met, nothing could be told apart, and confounders
stayed (exact first sentences on the development worlds 12 → 9 of 36, against 12 → 12 with soft counts).

The literal goes when r lies above the midpoint of the two expectations (the ablation's midpoint, for noisy
relevance) and the images kept out are harder than a needed literal leaves them beyond chance (one-sided binomial
test at `ALPHA`: 14 images kept out of "a gear with glare, under dark lighting" dropped the gear); the most
explained one goes first, and the others are asked again. With a near-perfect encoder the midpoint is ½: a literal
goes when the images it keeps out fail more often than halfway between the rest and the failure.

Measured with `lbee bench worlds` (docs/worlds.md). The rule has no threshold of its own.

The same question asked the other way (`explained_in`) adds a literal the failure needs that the search left out:
where the images ``lits`` hold for without it fail like the rest, not like the failure's. A discovered failure
(`lbee.core.discovery`) is asked both ways.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from .._blas import one_blas_thread
from .binomial import at_least, at_most

if TYPE_CHECKING:
    from .compose import ComposeSearch, Vector

#: Images a literal must keep out for their hard share to be read (fewer: the search's backward elimination
#: decides, by the lift).
MIN_EXCLUDED = 10
#: The level of the one-sided binomial test that the images kept out are harder than a needed literal leaves them.
ALPHA = 0.05
#: Probabilities are clipped this far from 0 and 1 before their odds are taken.
_EPS = 1e-6


def _odds_ratio(p: Vector, base: float | Vector) -> Vector:
    """An image's evidence for a literal: the odds of its P over the odds of the base rate P was calibrated to."""
    p = np.clip(np.asarray(p, np.float64), _EPS, 1 - _EPS)
    ratio: Vector = p / (1 - p) * ((1 - base) / base)
    return ratio


def _expected(p_rest: Vector, p_j: Vector, kept_out: np.ndarray, pool: np.ndarray) -> tuple[float, float]:
    """The r expected over the images kept out if the failure needs literal j, and if not (module docstring).

    Parameters
    ----------
    p_rest, p_j : ndarray of shape (n,)
        P(the other literals) and P(literal j) of every image.
    kept_out, pool : ndarray of bool, shape (n,)
        The images kept out, and the images the base rates are counted over.

    Returns
    -------
    (float, float)
        The mean posterior P(others ∧ literal) and P(others) over the images kept out.
    """
    r, q = p_rest[pool].astype(np.float64), p_j[pool].astype(np.float64)
    base_r, base_j = (float(np.clip(x.mean(), _EPS, 1 - _EPS)) for x in (r, q))
    both = float(np.dot(r, q)) / max(len(r), 1)  # soft counts: the joint blurred towards independence
    prior = np.clip([both, base_r - both, base_j - both, 1.0 - base_r - base_j + both], _EPS, None)
    lr_rest, lr_j = _odds_ratio(p_rest[kept_out], base_r), _odds_ratio(p_j[kept_out], base_j)
    w_both, w_rest, w_j = prior[0] * lr_rest * lr_j, prior[1] * lr_rest, prior[2] * lr_j
    total = w_both + w_rest + w_j + prior[3]
    return float((w_both / total).mean()), float(((w_both + w_rest) / total).mean())


def _masses(search: ComposeSearch, weight: Vector | None) -> tuple[Vector, Vector]:
    """How much each image counts in the shares, and how much of it as a hard image, shape (n,) each.

    The hard images by their ``weight`` (1 without one), the easy ones 1, the others 0.
    """
    mass = np.zeros(search.probs.shape[0], np.float64)
    mass[search.hard] = 1.0 if weight is None else np.asarray(weight, np.float64)
    hard_mass = mass.copy()
    mass[search.easy] = 1.0
    return mass, hard_mass


@one_blas_thread()  # its products are vectors: two busy BLAS threads took 5 ms where one takes 0.04 (200,000 rows)
def explained_away(search: ComposeSearch, lits: Sequence[int], weight: Vector | None = None) -> list[int]:
    """``lits`` without the literals the others explain away (module docstring).

    Parameters
    ----------
    search : lbee.core.compose.ComposeSearch
        The literal probabilities and the hard and easy splits.
    lits : sequence of int
        The conjunction's literals (columns of ``search.keys``).
    weight : ndarray of shape (n_hard,), optional
        How much each hard image counts (`lbee.core.discovery`: 1 − P(an earlier failure covers it)); default 1.

    Returns
    -------
    list of int
        The literals kept. A removed literal's presupposition stays when no kept literal implies it ("a distant
        truck" → "a truck").
    """
    mass, hard_mass = _masses(search, weight)
    masses = np.stack([mass, hard_mass])

    def share(mask: np.ndarray) -> tuple[float, float]:
        # one product, no copy of the masked images (a reduction `where=` a mask of mixed bits took 10 ms at 1M)
        m, h = masses @ mask.astype(np.float64)
        return float(h) / max(float(m), 1e-9), float(m)

    pool = mass > 0
    lits = list(lits)
    while len(lits) > 1:
        region = search.region(lits) >= 0.5
        inside, _ = share(region)
        outside, _ = share(~region)
        if inside <= outside:
            break
        best: tuple[float, int] | None = None
        for j in lits:
            rest = search.without(lits, j)
            if rest is None:
                continue  # presupposed by a literal that stays
            p_rest = search.region(rest)
            kept_out = (p_rest >= 0.5) & ~region & pool
            hard_share, size = share(kept_out)
            if size < MIN_EXCLUDED:
                continue
            needed, free = _expected(p_rest, search._cond_t[j], kept_out, pool)  # r expected either way
            explained = (hard_share - outside) / (inside - outside) - 0.5 * (needed + free)
            # and more hard images than a needed literal leaves out, beyond chance (14 images kept out of "a gear
            # with glare, under dark lighting" dropped the gear)
            expected = outside + (inside - outside) * needed
            k, m = int(round(hard_share * size)), int(round(size))
            if explained <= 0 or at_least(k, m, min(max(expected, 0.0), 1.0)) > ALPHA:
                continue
            if best is None or explained > best[0]:
                best = (explained, j)
        if best is None:
            break
        lits = search.without(lits, best[1]) or lits
    return lits


#: Rows of a conjunction's region read at once by `explained_in` (its working set: this many rows × literals).
IN_BLOCK = 16_384


def explained_in(search: ComposeSearch, lits: Sequence[int], weight: Vector | None = None) -> list[int]:
    """``lits`` with the literals the failure needs that they leave out: `explained_away` asked the other way.

    The search's gates ask a literal to raise the lift over the group the slicer made, and a group that mixes
    failures, or a noisy atom, keeps a needed literal out ("on a dry road, at night, on a bridge" without "a red
    traffic light"). Here each literal ``j`` the conjunction can take is asked what `explained_away` asks of
    ``lits + [j]``: the images it would keep out (the others hold for them, ``j`` does not) fail less often than
    halfway between the rest and its region (the midpoint of r expected if the failure needs ``j`` and if not),
    and fewer of them are hard than an unneeded ``j`` leaves beyond chance (one-sided binomial test at `ALPHA`).
    The most needed one is added, and the others are asked again. No threshold of its own; measured with
    `lbee bench worlds` (docs/worlds.md).

    Parameters
    ----------
    search : lbee.core.compose.ComposeSearch
    lits : sequence of int
        The conjunction's literals (columns of ``search.keys``).
    weight : ndarray of shape (n_hard,), optional
        How much each hard image counts, as for `explained_away`; default 1.

    Returns
    -------
    list of int
        ``lits`` and the literals added, in the order added.
    """
    mass, hard_mass = _masses(search, weight)
    pool = mass > 0
    n_pool = max(int(pool.sum()), 1)
    total, total_hard = float(mass.sum()), float(hard_mass.sum())
    lits = list(lits)
    conds = {search.keys[j][0]: search.keys[j][1] for j in lits}
    while len(lits) < search.max_conditions:
        cands = np.array([j for j in range(len(search.keys)) if j not in lits and search.extend(conds, j) is not None])
        if not len(cands):
            break
        given = search._given(lits)[cands]
        p_rest = search.region(lits)
        # base rates over the pool, and the soft joint with the others: one pass over the literals' columns
        v = np.stack([pool, pool * p_rest]).astype(np.float32)
        sums = (v @ search.cond)[:, cands]  # (a product over every column: a gather of them would copy n × L)
        marginal = ~given
        if marginal.any():
            sums[:, marginal] = (v @ search._probs_t.T)[:, [search._marginal_row[int(j)] for j in cands[marginal]]]
        base_j = np.clip(sums[0] / n_pool, _EPS, 1 - _EPS)
        both = sums[1] / n_pool
        base_r = float(np.clip(p_rest[pool].mean() if pool.any() else 0.5, _EPS, 1 - _EPS))
        prior = np.clip(np.stack([both, base_r - both, base_j - both, 1.0 - base_r - base_j + both]), _EPS, None)
        acc = np.zeros((7, len(cands)))  # mass in, hard in, mass kept out, hard kept out, count, Σ P(both), Σ P(others)
        rows = np.flatnonzero(p_rest >= 0.5)
        for start in range(0, len(rows), IN_BLOCK):
            r = rows[start : start + IN_BLOCK]
            f = np.where(given, search.cond[np.ix_(r, cands)], 0.0)
            if marginal.any():
                f[:, marginal] = search.probs[np.ix_(r, cands[marginal])]
            inside = p_rest[r, None] * f >= 0.5
            out = ~inside & pool[r, None]
            lr_rest = _odds_ratio(p_rest[r], base_r)[:, None]
            lr_j = _odds_ratio(f, base_j)  # (each column against its own base rate)
            w_both, w_rest = prior[0] * lr_rest * lr_j, prior[1] * lr_rest
            w_total = w_both + w_rest + prior[2] * lr_j + prior[3]
            acc += np.stack(
                [
                    mass[r] @ inside,
                    hard_mass[r] @ inside,
                    mass[r] @ out,
                    hard_mass[r] @ out,
                    out.sum(0),
                    ((w_both / w_total) * out).sum(0),
                    (((w_both + w_rest) / w_total) * out).sum(0),
                ]
            )
        m_in, h_in, m_out, h_out, count, s_both, s_rest = acc
        best: tuple[float, int] | None = None
        for c in np.flatnonzero((m_out >= MIN_EXCLUDED) & (m_in >= MIN_EXCLUDED)):
            inside, outside = h_in[c] / m_in[c], (total_hard - h_in[c]) / max(total - m_in[c], 1e-9)
            if inside <= outside:
                continue
            needed, free = s_both[c] / max(count[c], 1.0), s_rest[c] / max(count[c], 1.0)
            hard_share = h_out[c] / m_out[c]
            below = 0.5 * (needed + free) - (hard_share - outside) / (inside - outside)
            expected = outside + (inside - outside) * free  # the hard share an unneeded literal leaves them
            k, m = int(round(hard_share * m_out[c])), int(round(m_out[c]))
            if below <= 0 or at_most(k, m, min(max(expected, 0.0), 1.0)) > ALPHA:
                continue
            if best is None or below > best[0]:
                best = (below, int(cands[c]))
        if best is None:
            break
        lits.append(best[1])
        conds = search.extend(conds, best[1]) or conds
    return lits
