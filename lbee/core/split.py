"""Step 1 of LBEE: split images into easy / hard / neutral by model confidence."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import as_bool_vector, as_float_vector, check_real
from ..typing import ArrayLike, BoolArray, FloatArray


def split_by_confidence(confidence: ArrayLike, *, a: float = 0.2) -> tuple[BoolArray, BoolArray]:
    """Split images by confidence with a margin of ``a`` standard deviations.

    With μ = mean(φ) and σ = std(φ) (population, ddof=0): hard = φ < μ − aσ,
    easy = φ > μ + aσ; the rest is neutral and unused (the LBEE paper's default margin a = 0.2).

    Parameters
    ----------
    confidence : array-like of shape (n_images,)
        φ, higher = easier. For unsupervised splitting pass −entropy.
    a : float, default=0.2
        Margin in standard deviations.

    Returns
    -------
    hard, easy : ndarray of bool, shape (n_images,)
    """
    phi = _power_of_two_scaled(as_float_vector(confidence, "confidence"))
    a = check_real(a, "a", minimum=0.0)
    mu, sigma = phi.mean(), phi.std()
    return phi < mu - a * sigma, phi > mu + a * sigma


def _power_of_two_scaled(phi: FloatArray) -> FloatArray:
    """φ divided by the power of two nearest its largest magnitude.

    The split is scale-free, and this keeps σ from underflowing to 0 (φ × 1e-300) or overflowing to inf
    (φ × 1e300). A power of two scales exactly, so for ordinary φ the masks are bit for bit those of the
    unscaled formula.
    """
    top = float(np.max(np.abs(phi))) if phi.size else 0.0
    if top == 0.0 or not np.isfinite(top):
        return phi
    return np.ldexp(phi, -int(np.frexp(top)[1]))


def _threshold(phi: FloatArray, a: float) -> str:
    """The split's two thresholds and φ's range, in words (trial 40 asked where the threshold lay)."""
    with np.errstate(over="ignore", invalid="ignore"):  # ±1e308 overflows here: then no thresholds are said
        mu, sigma = float(np.mean(phi)), float(np.std(phi))
    if not (np.isfinite(mu) and np.isfinite(sigma)):
        return ""
    return (
        f": hard is φ < μ − aσ = {mu - a * sigma:.4g}, easy φ > μ + aσ = {mu + a * sigma:.4g}, and φ runs from "
        f"{float(np.min(phi)):.4g} to {float(np.max(phi)):.4g}"
    )


def _outliers(phi: FloatArray) -> str:
    """A hint naming a few confidences far from the rest (1e308 among values in [0, 1] stretches σ), or ''."""
    med = float(np.median(phi))
    low, high = np.quantile(phi, [0.01, 0.99])
    spread = max(abs(med), float(high - low))  # skewed probabilities (median 0.999) keep their real tail
    with np.errstate(over="ignore", invalid="ignore"):  # 1e308 − (−1e308) is inf: still far
        far = np.flatnonzero(np.abs(phi - med) > 1000 * spread) if spread > 0 else np.zeros(0, np.int64)
    if not 0 < far.size <= 10:
        return ""
    return (
        f", or check the confidences: {far.size} {'lies' if far.size == 1 else 'lie'} far from the rest "
        f"(e.g. {phi[far[0]]:.4g} at position {int(far[0])}, counted from 0, against a median of {med:.4g}) "
        "and stretch σ"
    )


def resolve_split(
    n: int, *, confidence: ArrayLike | None = None, hard: Any = None, easy: Any = None, a: float = 0.2
) -> tuple[BoolArray, BoolArray]:
    """Return validated (hard, easy) masks from either confidence or explicit masks."""
    if confidence is not None and (hard is not None or easy is not None):
        raise ValueError("Pass either `confidence` or the `hard`/`easy` masks, not both.")
    if confidence is not None:
        phi = as_float_vector(confidence, "confidence", n)
        hard_mask, easy_mask = split_by_confidence(phi, a=a)
        hint = f" (a={a}{_threshold(phi, a)}); try a smaller `a`"
        if phi.max() == phi.min():
            hint = "; all confidences are equal, so no image is harder than another"
        elif not (hard_mask.any() and easy_mask.any()):
            hint += _outliers(phi)
    elif hard is not None and easy is not None:
        hard_mask = as_bool_vector(hard, "hard", n)
        easy_mask = as_bool_vector(easy, "easy", n)
        overlap = int(np.sum(hard_mask & easy_mask))
        if overlap:
            raise ValueError(f"`hard` and `easy` overlap on {overlap} image(s); an image is either hard or easy.")
        hint = ""
    else:
        raise ValueError(
            "No split given: pass `confidence` (shape (n,), higher = easier) or both `hard` and `easy` masks."
        )
    if not hard_mask.any():
        raise ValueError(f"The hard split is empty: no image is below the confidence threshold{hint}.")
    if not easy_mask.any():
        raise ValueError(f"The easy split is empty: no image is above the confidence threshold{hint}.")
    return hard_mask, easy_mask
