"""Confirmation on held-out images: is a failure statement true of images it was not found on.

A run's statements are chosen by a search over the very images whose errors they are scored on, so the error
concentration of a statement's region on those images is biased upward. The run holds a share of the images
out (`held_out`, stratified by hard / easy / neutral and seeded), slices and describes the rest (the
*discovery* part), and tests every returned statement on the held-out (*confirmation*) part:

* the statement's **region** is the set of confirmation images it holds for (composed relevance ≥ ½ of its
  conditions, or the sentence's similarity above τ; the run layer decides, `lbee.run.confirm`);
* the model's **error rate** inside the region against outside, their ratio (the lift), the 95 % Wilson
  interval of the rate inside, and the one-sided Fisher exact p-value that the rate inside exceeds the rate
  outside (a hypergeometric tail: the errors among the region's images when errors fall at random);
* the p-values of all statements of a run are corrected together (Benjamini–Hochberg, `bh_qvalues`);
  a statement is **confirmed** at q ≤ `CONFIRM_Q` when its region also fails at least `MIN_EFFECT` times as
  often as the rest, by the one-sided 95 % lower bound of `effect_lower_bound` (`is_confirmed`): a significant
  lift of 1.4 is real, but not a failure to act on.

**Which conditions are needed** (`ablation`): for a statement of several conditions, dropping one
condition widens the region by the images that satisfy every other condition but not this one (the *excluded*
images). With noisy relevance they are a mixture: the failure's images that lack the condition, and images the
other conditions' noise lets in. A confounder (held by 90 % of the failure, 50 % elsewhere) still sharpens the
encoder's region a little, since it filters half of the noise, so "does the error rate drop at all" would call it
needed; the question is whether the excluded images fail *like the failure* or *like the rest*. They are
compared with the midpoint m = (r_in + r_out) / 2 of the statement's error rate inside and outside its region
(the boundary between the two explanations of an excluded image, with equal priors), by one-sided binomial tests
at `ABLATION_ALPHA`: significantly below m, the condition is **needed**; significantly above m, it **goes
with the failure, not needed for it**; neither (or fewer than `ABLATION_MIN_IMAGES` excluded images), the
images cannot tell. ``retained`` reports (r_excluded − r_out) / (r_in − r_out): the share of the failure's excess
error rate the excluded images keep (0: needed, 1: not needed).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..typing import ArrayLike, BoolArray, FloatArray, IntArray
from .binomial import at_least, at_most

#: The share of the images held out for confirmation (0 turns confirmation off).
DEFAULT_CONFIRM_FRACTION = 0.3
#: The largest share that can be held out: discovery needs most of the images.
MAX_CONFIRM_FRACTION = 0.8
#: Fewer images than this in the run: confirmation is skipped (too few for a useful split).
MIN_CONFIRM_IMAGES = 500
#: Fewer failures than this among the held-out images: confirmation is skipped (no statement could confirm).
MIN_CONFIRM_FAILURES = 10
#: The seed of the held-out split (recorded with the run).
CONFIRM_SEED = 0
#: A statement is confirmed when its Benjamini–Hochberg q-value is at most this ...
CONFIRM_Q = 0.05
#: ... and its region surely fails at least this many times as often as the rest (`effect_lower_bound`): a
#: region that fails 1.4 times as often is real on 3,000 held-out images, but it is not a failure a user acts on.
#: On worlds of other grammars (atoms of AUC 0.88, development seeds 0-5), 28 of 132 groups that match no planted
#: failure had q <= 0.05, with lifts of 1.3-3.9 (median 2.0); the failures' own, 1.97-9.5 (median 5.7).
MIN_EFFECT = 2.0
#: The one-sided level of the ablation's two tests (module docstring).
ABLATION_ALPHA = 0.05
#: Fewer excluded images than this: the ablation of that condition cannot tell.
ABLATION_MIN_IMAGES = 10
#: The labels of a condition after `ablation`.
NEEDED, NOT_NEEDED, UNDECIDED = "needed", "goes with the failure, not needed for it", "too few images to tell"
#: Enough images kept out, failing neither like the failure's nor like the rest: a condition the encoder sees weakly
#: (a twenty-first user's 38 images at 0.55, between 0.93 and 0.03, were said to be too few).
UNCLEAR = "not clear: they fail between the failure's rate and the rest's (a condition the encoder sees weakly?)"


def split_strata(hard: ArrayLike, easy: ArrayLike) -> IntArray:
    """The strata `held_out` draws from, as a run codes them: 1 hard, 2 easy, 0 neither.

    ``held_out(split_strata(hard, easy), fraction)`` holds out the images ``lbee describe --confirm fraction``
    holds out, for the same split.
    """
    h = np.asarray(hard, dtype=bool).ravel()
    e = np.asarray(easy, dtype=bool).ravel()
    if h.shape != e.shape:
        raise ValueError(f"`hard` has {h.size} entries and `easy` {e.size}; expected one of each per image.")
    if (h & e).any():
        raise ValueError(f"`hard` and `easy` overlap on {int((h & e).sum())} image(s); an image is one or the other.")
    return h.astype(np.int64) + 2 * e.astype(np.int64)


def held_out(strata: ArrayLike, fraction: float, seed: int = CONFIRM_SEED) -> BoolArray:
    """A seeded confirmation mask that holds out ``fraction`` of every stratum.

    Parameters
    ----------
    strata : array-like of int, shape (n,)
        A stratum per image (hard / easy / neutral).
    fraction : float
        In [0, 1); each stratum of m images gives round(fraction · m) of them.
    seed : int, default=0

    Returns
    -------
    ndarray of bool, shape (n,)
        True for the held-out (confirmation) images.
    """
    s = np.asarray(strata)
    if s.ndim != 1:
        raise ValueError(f"`strata` has shape {s.shape}; expected one stratum per image, shape (n,).")
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float, np.floating)) or not 0 <= fraction < 1:
        raise ValueError(f"`fraction` is {fraction!r}; expected a share of the images in [0, 1).")
    rng = np.random.default_rng(seed)
    mask = np.zeros(s.shape[0], dtype=bool)
    for value in np.unique(s):
        rows = np.flatnonzero(s == value)
        mask[rng.permutation(rows)[: int(round(fraction * len(rows)))]] = True
    return mask


def wilson_interval(k: float, n: float, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of k successes in n ((0, 1) when n is 0)."""
    if n <= 0:
        return 0.0, 1.0
    p = k / n
    denom = 1 + z * z / n
    centre = p + z * z / (2 * n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return float(max(0.0, (centre - half) / denom)), float(min(1.0, (centre + half) / denom))


def fisher_greater(k_in: int, n_in: int, k_out: int, n_out: int) -> float:
    """One-sided Fisher exact p-value that the rate k_in / n_in exceeds k_out / n_out (1 when either is empty)."""
    from scipy.stats import hypergeom

    if n_in <= 0 or n_out <= 0:
        return 1.0
    total, errors = n_in + n_out, k_in + k_out
    return float(min(1.0, hypergeom.sf(k_in - 1, total, errors, n_in)))


def effect_lower_bound(k_in: int, n_in: int, k_out: int, n_out: int, z: float = 1.645) -> float:
    """How many times as often a region fails as the rest, at least: a one-sided lower bound (z = 1.645: 95 %).

    The larger of two ratios' bounds: the error rate inside over outside (the lift), and the success rate outside
    over inside (where most images outside fail, no region can fail twice as often, but one can succeed half as
    often). Each is Katz's log interval of a ratio of two proportions, with ½ added to every count (finite when a
    count is 0). 0 when either side is empty.
    """
    if n_in <= 0 or n_out <= 0:
        return 0.0

    def ratio_low(a: float, n: float, b: float, m: float) -> float:
        a, n, b, m = a + 0.5, n + 0.5, b + 0.5, m + 0.5
        se = np.sqrt(max(1 / a - 1 / n + 1 / b - 1 / m, 0.0))
        return float(np.exp(np.log((a / n) / (b / m)) - z * se))

    return max(ratio_low(k_in, n_in, k_out, n_out), ratio_low(n_out - k_out, n_out, n_in - k_in, n_in))


def is_confirmed(q_value: float, effect_low: float) -> bool:
    """The confirmation rule: significant at `CONFIRM_Q`, and a failure at least `MIN_EFFECT` times as common."""
    return bool(q_value <= CONFIRM_Q and effect_low >= MIN_EFFECT)


def bh_qvalues(p_values: ArrayLike) -> FloatArray:
    """Benjamini–Hochberg q-values of ``p_values`` (m,), in the same order."""
    p: FloatArray = np.asarray(p_values, dtype=np.float64)
    m = p.size
    out: FloatArray = np.empty(m)
    if m == 0:
        return out
    order = np.argsort(p, kind="stable")
    ranked = p[order] * m / np.arange(1, m + 1)
    q = np.minimum.accumulate(ranked[::-1])[::-1]
    out[order] = np.minimum(q, 1.0)
    return out


@dataclass
class RegionTest:
    """A statement's region on the confirmation images against the rest of them.

    Attributes
    ----------
    n_in, errors_in, n_out, errors_out : int
        Images and failures inside and outside the region.
    error_rate_in, error_rate_out : float
    lift : float or None
        error_rate_in / error_rate_out (None when nothing fails outside).
    ci : (float, float)
        95 % Wilson interval of ``error_rate_in``.
    p_value : float
        One-sided Fisher exact test of inside > outside.
    effect_low : float
        `effect_lower_bound` of the region against the rest.
    """

    n_in: int
    errors_in: int
    error_rate_in: float
    n_out: int
    errors_out: int
    error_rate_out: float
    lift: float | None
    ci: tuple[float, float]
    p_value: float
    effect_low: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["ci"] = [round(v, 4) for v in self.ci]
        for key in ("error_rate_in", "error_rate_out"):
            d[key] = round(d[key], 4)
        d["lift"] = None if self.lift is None else round(self.lift, 3)
        d["p_value"] = float(f"{self.p_value:.3g}")
        d["effect_low"] = round(self.effect_low, 3)
        return d


def _on_rows(region: ArrayLike, failed: ArrayLike, rows: ArrayLike) -> tuple[BoolArray, BoolArray]:
    """``region`` and ``failed`` on ``rows``, checked: booleans, one per image, and indices of images."""
    region_a, failed_a, at = np.asarray(region), np.asarray(failed), np.asarray(rows)
    for name, a in (("region", region_a), ("failed", failed_a)):
        if a.ndim != 1 or not (a.dtype == bool or np.isin(a, (0, 1)).all()):
            raise ValueError(f"`{name}` must be booleans, one per image, shape (n,); received shape {a.shape}.")
    if region_a.shape != failed_a.shape:
        raise ValueError(f"`region` has {region_a.size} entries and `failed` {failed_a.size}; expected one per image.")
    if at.size and (at.dtype.kind not in "iu" or at.min() < 0 or at.max() >= region_a.size):
        raise ValueError(f"`rows` must be indices in [0, {region_a.size}) of the images counted.")
    at = at.astype(np.int64)
    return region_a.astype(bool)[at], failed_a.astype(bool)[at]


def region_test(region: ArrayLike, failed: ArrayLike, rows: ArrayLike) -> RegionTest:
    """Test a region on ``rows``: its error rate against the rest of ``rows``.

    Parameters
    ----------
    region, failed : array-like of bool, shape (n,)
        Images the statement holds for; images the model fails on.
    rows : array-like of int
        The confirmation images counted (indices into n).

    Returns
    -------
    RegionTest
    """
    inside, f = _on_rows(region, failed, rows)
    n_in, k_in = int(inside.sum()), int(f[inside].sum())
    n_out, k_out = int((~inside).sum()), int(f[~inside].sum())
    r_in = k_in / n_in if n_in else 0.0
    r_out = k_out / n_out if n_out else 0.0
    return RegionTest(
        n_in,
        k_in,
        r_in,
        n_out,
        k_out,
        r_out,
        r_in / r_out if r_out > 0 else None,
        wilson_interval(k_in, n_in),
        fisher_greater(k_in, n_in, k_out, n_out),
        effect_lower_bound(k_in, n_in, k_out, n_out),
    )


def ablation(region: ArrayLike, wider: Sequence[ArrayLike], failed: ArrayLike, rows: ArrayLike) -> list[dict[str, Any]]:
    """Drop one condition at a time: the error rate of each larger region and whether the condition is needed.

    Parameters
    ----------
    region : array-like of bool, shape (n,)
        The statement's region.
    wider : list of array-like of bool, shape (n,)
        Per condition, the region of the statement without it.
    failed : array-like of bool, shape (n,)
    rows : array-like of int
        The confirmation images.

    Returns
    -------
    list of dict
        Per condition: ``n`` and ``error_rate`` of the larger region, ``n_excluded`` and ``error_rate_excluded``
        (the images only the condition kept out), ``retained``, ``p_value`` (the smaller of the two one-sided
        tests, module docstring) and ``verdict`` (`NEEDED`, `NOT_NEEDED`, `UNDECIDED` below
        `ABLATION_MIN_IMAGES` kept out, else `UNCLEAR`); for `UNDECIDED` with some kept out, ``images_to_tell``:
        about how many images in all would hold `ABLATION_MIN_IMAGES` of them, at the same share.
    """
    n_all = len(np.asarray(region))
    inside, f = _on_rows(region, failed, rows)
    r_in = float(f[inside].mean()) if inside.any() else 0.0
    r_out = float(f[~inside].mean()) if (~inside).any() else 0.0
    mid = (r_in + r_out) / 2
    out = []
    for w in wider:
        big = np.asarray(w, dtype=bool)[np.asarray(rows, dtype=np.int64)] | inside
        extra = big & ~inside
        n_x, k_x = int(extra.sum()), int(f[extra].sum())
        below = at_most(k_x, n_x, mid) if n_x else 1.0  # fails less than halfway: needed
        above = at_least(k_x, n_x, mid) if n_x else 1.0  # fails more than halfway: not needed
        verdict = UNDECIDED if n_x < ABLATION_MIN_IMAGES else UNCLEAR
        if n_x >= ABLATION_MIN_IMAGES and below <= ABLATION_ALPHA:
            verdict = NEEDED
        elif n_x >= ABLATION_MIN_IMAGES and above <= ABLATION_ALPHA:
            verdict = NOT_NEEDED
        n_big = int(big.sum())
        rate_x = k_x / n_x if n_x else None
        out.append(
            {
                "n": n_big,
                "error_rate": round(float(f[big].mean()) if n_big else 0.0, 4),
                "n_excluded": n_x,
                "error_rate_excluded": None if rate_x is None else round(rate_x, 4),
                "retained": None if rate_x is None or r_in <= r_out else round((rate_x - r_out) / (r_in - r_out), 3),
                "p_value": float(f"{min(below, above):.3g}"),
                "verdict": verdict,
            }
        )
        if verdict == UNDECIDED and n_x:  # "too few" says how many would do (trial 37 asked at 700 images)
            out[-1]["images_to_tell"] = int(np.ceil(n_all * ABLATION_MIN_IMAGES / n_x))
    return out


def narrowing(
    region: ArrayLike, narrower: Sequence[ArrayLike], failed: ArrayLike, rows: ArrayLike
) -> dict[str, Any] | None:
    """The one added condition a statement most surely lacks: the images it would leave out fail like the rest.

    The ablation's question the other way round (module docstring): a statement can hold more widely than its
    failure ("a walnut plank, with wet patches", where only the planks on the roller conveyor fail). Adding a
    condition narrows the region; the images it leaves out (the statement holds for them, the condition does not)
    are tested against the midpoint of the statement's error rate inside and outside its region, one-sided at
    `ABLATION_ALPHA`, as a needed condition's excluded images are, and must not fail significantly more often than
    the rest (a confounder's keep some of the failure: 0.15 against 0.05 outside, where a needed condition's fail
    like the rest).

    Parameters
    ----------
    region : array-like of bool, shape (n,)
        The statement's region.
    narrower : list of array-like of bool, shape (n,)
        Per candidate condition, the region of the statement with it.
    failed : array-like of bool, shape (n,)
    rows : array-like of int
        The confirmation images.

    Returns
    -------
    dict or None
        ``index`` (of the candidate), ``n`` and ``error_rate`` of its region, ``n_left_out`` and
        ``error_rate_left_out`` (the images only it leaves out) and ``p_value``, for the candidate whose left-out
        images fail least (then of smallest p-value) among those that pass both tests with at least
        `ABLATION_MIN_IMAGES` left out; None when none.
    """
    inside, f = _on_rows(region, failed, rows)
    if not inside.any() or inside.all():
        return None
    r_in, r_out = float(f[inside].mean()), float(f[~inside].mean())
    if r_in <= r_out:
        return None
    best: dict[str, Any] | None = None
    key: tuple[float, float] | None = None
    for j, w in enumerate(narrower):
        small = np.asarray(w, dtype=bool)[np.asarray(rows, dtype=np.int64)] & inside
        left = inside & ~small
        n_x, k_x, n_s = int(left.sum()), int(f[left].sum()), int(small.sum())
        if n_x < ABLATION_MIN_IMAGES or not n_s:
            continue
        p = at_most(k_x, n_x, (r_in + r_out) / 2)
        like_the_rest = at_least(k_x, n_x, r_out) > ABLATION_ALPHA
        if p <= ABLATION_ALPHA and like_the_rest and (key is None or (k_x / n_x, p) < key):
            key, best = (
                (k_x / n_x, p),
                {
                    "index": j,
                    "n": n_s,
                    "error_rate": round(float(f[small].mean()), 4),
                    "n_left_out": n_x,
                    "error_rate_left_out": round(k_x / n_x, 4),
                    "p_value": float(f"{p:.3g}"),
                },
            )
    return best


def failure_outcome(performance: ArrayLike, hard: BoolArray, easy: BoolArray) -> tuple[BoolArray, BoolArray, str]:
    """What 'the model fails' means on held-out images, and which images count.

    With a 0/1 correctness ω, an image fails when ω = 0, and every image counts (the error rate). Otherwise
    (an IoU, a pixel accuracy) an image fails when it is in the hard split, and the hard and easy images count
    (the share of hard images among them: the error concentration the run reports).

    Returns
    -------
    failed, counted : ndarray of bool, shape (n,)
    name : str
        What the rate is, for the outputs.
    """
    omega = np.asarray(performance, dtype=np.float64)
    if omega.size and np.isin(omega, (0.0, 1.0)).all():
        return omega == 0.0, np.ones(omega.shape[0], dtype=bool), "error rate"
    return np.asarray(hard, dtype=bool), np.asarray(hard, dtype=bool) | np.asarray(easy, dtype=bool), "hard share"


def rank_key(test: dict[str, Any] | None, flag: str = "confirmed") -> tuple[int, float]:
    """Sort key of a hypothesis by its leading statement's test: confirmed first, then the higher lower bound.

    ``flag``: the test's field that says confirmed (``significant``: by q alone).
    """
    if test is None:
        return (2, 0.0)
    return (0 if test[flag] else 1, -float(test["ci"][0]))


def as_rows(mask: BoolArray) -> IntArray:
    """The indices of a boolean mask, as int64."""
    return np.flatnonzero(np.asarray(mask, dtype=bool)).astype(np.int64)
