"""Foreground / background region sensitivity (RIVAL10 §5.1–5.3).

For an image x in [0, 1] with binary object mask m and a noise tensor
n ~ N(0, σ²) i.i.d. per pixel and channel (RIVAL10 §5.1)::

    x_fg = clip(x + n ⊙ m, 0, 1)          noisy foreground
    x_bg = clip(x + n ⊙ (1 − m), 0, 1)    noisy background   (the same n for both)
    x_gray = x ⊙ m + 0.5 ⊙ (1 − m)        background grayed out (§5.3)

σ is given on the 0–255 pixel scale, as in the paper (30/255 … 210/255): the
noise added to the [0, 1] tensor has standard deviation σ / 255. Noise is added
after the geometric preprocessing (resize, centre crop) and before the
normalisation, i.e. at the resolution the model sees.

With a_fg, a_bg the accuracies under foreground / background noise and
ā = (a_fg + a_bg) / 2 the general noise robustness,

    RFS = (a_bg − a_fg) / (2 min(ā, 1 − ā))    ∈ [−1, 1]

(high = the model is hurt more by corrupting the object than the background,
i.e. it relies on the object). iRFS is the same with the true-class
probabilities p_fg, p_bg of one image (averaged over trials) instead of
accuracies. When ā ∈ {0, 1} (or p̄) the gap a_bg − a_fg is necessarily 0 and
so is the largest possible gap: RFS is 0 / 0 and reported as NaN (with the
reason in ``summary.json``), never as 0 or ±1.
"""

from __future__ import annotations

import hashlib
import io
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from .perturbation import (
    IMAGENET_MEAN,
    IMAGENET_STD,
    Preprocess,
    gray_background,
    irfs,
    region_noise,
    relative_foreground_sensitivity,
    rfs,
)
from .sensitivity_inputs import (
    content_hash,
    find_masks,
    model_fingerprint,
    open_image_and_mask,
    spotcheck_masks_from_pixels,
)
from .sensitivity_outputs import (
    confidence_from_sensitivity,
    figure_bytes,
    plot_irfs,
    plot_rfs,
    read_sensitivity_table,
    write_outputs,
)

DEFAULT_SIGMAS = (30, 60, 90, 120, 150, 180, 210)
CACHE_VERSION = 1
UNDEFINED_REASON = (
    "undefined: general noise robustness ā is 0 or 1, so a_bg − a_fg and its largest possible "
    "value 2·min(ā, 1 − ā) are both 0"
)


# --------------------------------------------------------------------------- the analysis
@dataclass
class SensitivityResult:
    """Result of [`region_sensitivity`][lbee.analyses.sensitivity.region_sensitivity].

    Attributes
    ----------
    table : pandas.DataFrame
        One row per (image, σ): ``image, label, class, sigma, p_fg, p_bg, acc_fg, acc_bg, irfs, p_clean,
        correct_clean, p_gray, correct_gray, fg_fraction``; p_* are true-class probabilities averaged over
        trials, acc_* the fraction of trials classified correctly.
    summary : dict
        JSON-serialisable: settings, per-σ ``a_fg, a_bg, abar, rfs`` (and ``rfs_reason`` when NaN),
        ``rfs_mean``, the same per class, clean and gray-background accuracy (§5.3), mean iRFS.
    n_computed : int
        Images actually run through the model (0 on a fully cached rerun).
    """

    table: object
    summary: dict
    n_computed: int = 0
    per_image: dict = field(default_factory=dict, repr=False)


#: Noise levels one sensitivity run takes at most (RIVAL10's figures use 7).
MAX_SIGMAS = 32


def check_sigmas(sigmas):
    """The noise levels σ as floats: 1 to `MAX_SIGMAS` distinct numbers in [0, 255] (the pixel scale)."""
    try:
        values = [float(s) for s in sigmas]
    except (TypeError, ValueError):
        raise ValueError(f"`sigmas` must be numbers on the 0-255 scale; received {sigmas!r}.") from None
    if not values or len(values) > MAX_SIGMAS or any(not 0 <= s <= 255 for s in values):  # NaN fails 0 <= s
        raise ValueError(
            f"`sigmas` must be 1 to {MAX_SIGMAS} numbers in [0, 255] (the pixel scale); received "
            f"{len(values)} value(s){': ' + ', '.join(f'{s:g}' for s in values[:8]) if values else ''}."
        )
    repeated = sorted({s for s in values if values.count(s) > 1})
    if repeated:
        raise ValueError(f"`sigmas` lists {', '.join(f'{s:g}' for s in repeated)} more than once; expected each once.")
    return values


def _one_image(model, x, m, label, sigmas, trials, seed_key, preprocess, batch_size, device):
    import torch

    order = [("clean", 0, 0), ("gray", 0, 0)]
    order += [(kind, si, t) for si in range(len(sigmas)) for t in range(trials) for kind in ("fg", "bg")]

    def copies():  # made as they are scored: one batch in memory, not 2 x σ x trials copies of the image
        yield x
        yield gray_background(x, m)
        for si, t in ((si, t) for si in range(len(sigmas)) for t in range(trials)):
            seed = int.from_bytes(hashlib.sha256(f"{seed_key}|{sigmas[si]}|{t}".encode()).digest()[:8], "little")
            yield from region_noise(x, m, sigmas[si], torch.Generator().manual_seed(seed & 0x7FFF_FFFF_FFFF_FFFF))

    probs, preds, batch = [], [], []

    def score(batch):
        logits = model(preprocess.normalize(torch.stack(batch)).to(device))
        if isinstance(logits, (tuple, list)):
            logits = logits[0]
        p = torch.softmax(logits.float(), dim=1).cpu().numpy()
        if not 0 <= label < p.shape[1]:
            raise ValueError(f"label {label} is outside the model's {p.shape[1]} classes.")
        probs.append(p[:, label])
        preds.append(p.argmax(1))

    with torch.inference_mode():
        for tensor in copies():
            batch.append(tensor)
            if len(batch) == batch_size:
                score(batch)
                batch = []
        if batch:
            score(batch)
    probs, preds = np.concatenate(probs), np.concatenate(preds)
    S = len(sigmas)
    out = {
        "p_clean": probs[0],
        "pred_clean": preds[0],
        "p_gray": probs[1],
        "pred_gray": preds[1],
        "p_fg": np.zeros((S, trials)),
        "p_bg": np.zeros((S, trials)),
        "pred_fg": np.zeros((S, trials), np.int64),
        "pred_bg": np.zeros((S, trials), np.int64),
        "fg_fraction": float(m.mean()),
    }
    for j, (kind, si, t) in enumerate(order[2:], start=2):
        out[f"p_{kind}"][si, t] = probs[j]
        out[f"pred_{kind}"][si, t] = preds[j]
    return out


def _cache_path(cache_dir, key):
    return Path(cache_dir) / "sensitivity" / key[:2] / f"{key}.npz"


def _load_cached(path):
    from ..io.cache import plain_npz
    from ..io.own_store import foreign_inside, own_file

    if foreign_inside(path.parent.parent.parent, path.parent.parent.name, path.parent.name) or not own_file(path):
        return None  # another user's, or one they can write (sweep 32ak B1): recomputed
    if not plain_npz(path):
        return None
    try:
        with np.load(path) as data:
            return {k: (data[k] if data[k].ndim else data[k][()]) for k in data.files}
    except (OSError, ValueError, KeyError):
        return None  # damaged entry: recomputed


def region_sensitivity(
    model,
    images,
    masks,
    labels,
    *,
    sigmas=DEFAULT_SIGMAS,
    trials=10,
    seed=0,
    preprocess=None,
    ids=None,
    class_names=None,
    batch_size=64,
    device=None,
    cache_dir=None,
    progress=False,
):
    """Accuracy and true-class probability under foreground vs background noise (RIVAL10 §5.1, §5.3).

    Parameters
    ----------
    model : torch.nn.Module
        Classifier returning logits of shape (B, n_classes) for normalised inputs.
    images : list of (path-like or ndarray of uint8, shape (H, W, 3)), length n
    masks : list of (path-like or ndarray of bool / uint8, shape (H, W)), length n
        Object masks, same size as their image; a pixel ≥ 128 (or True) is object.
    labels : array-like of int, shape (n,)
    sigmas : sequence of float, default=(30, 60, 90, 120, 150, 180, 210)
        Noise levels on the 0–255 scale (RIVAL10 §5.1's seven levels).
    trials : int, default=10
        Noise draws per image and σ; each draw is used for both regions.
    seed : int, default=0
        Noise draw (σ, t) of an image is seeded from (seed, the image's content
        hash, σ, t): results do not depend on order, batching or caching.
    preprocess : Preprocess, optional
        Default `Preprocess.preset` ``('imagenet')``.
    ids : list of str, optional
        Image names in the table (default: the paths, or ``'0'``, ``'1'``, … for arrays).
    class_names : list of str, optional
        Names of the label indices, for the per-class summary.
    batch_size : int, default=64
    device : str, optional
    cache_dir : path-like, optional
        When given, each image's raw results are stored under
        ``cache_dir/sensitivity/`` keyed by the content hashes of model, image,
        mask and settings, so an interrupted run resumes and a rerun computes nothing.
    progress : bool, default=False

    Returns
    -------
    SensitivityResult
    """
    from tqdm.auto import tqdm

    from ..io.cache import atomic_write_bytes, cache_folder, identity_key
    from ..io.own_store import foreign_inside, make_own
    from ..scoring.device import resolve_device

    n = len(images)
    labels = np.asarray(labels)
    if n == 0:
        raise ValueError("`images` is empty; expected at least one image.")
    if len(masks) != n or labels.shape != (n,):
        raise ValueError(
            f"`images`, `masks` and `labels` must have the same length; received {n}, {len(masks)} "
            f"and labels of shape {labels.shape}."
        )
    if labels.dtype.kind not in "iu":
        if labels.dtype.kind == "f" and np.all(np.isfinite(labels)) and np.all(labels == np.round(labels)):
            labels = labels.astype(np.int64)
        else:
            raise ValueError(f"`labels` must be integer class indices; received dtype {labels.dtype}.")
    sigmas = check_sigmas(sigmas)
    if int(trials) < 1:
        raise ValueError(f"`trials` must be >= 1; received {trials}.")
    trials = int(trials)
    preprocess = preprocess or Preprocess.preset("imagenet")
    if ids is None:
        ids = [str(p) if not isinstance(p, np.ndarray) else str(i) for i, p in enumerate(images)]
    device = resolve_device(device)
    model = model.to(device).eval()
    settings = {
        "version": CACHE_VERSION,
        "sigmas": sigmas,
        "trials": trials,
        "seed": int(seed),
        "preprocess": {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(preprocess).items()},
    }
    cache_dir = None if cache_dir is None else cache_folder(cache_dir)  # another user's folder: refused
    fingerprint = model_fingerprint(model) if cache_dir is not None else None
    results, n_computed = [], 0
    for i in tqdm(range(n), desc="region noise", disable=not progress):
        img_hash, mask_hash = content_hash(images[i]), content_hash(masks[i])
        key = identity_key({"model": fingerprint, "image": img_hash, "mask": mask_hash, "settings": settings})
        label = int(labels[i])
        cached = _load_cached(_cache_path(cache_dir, key)) if cache_dir is not None else None
        if cached is None:
            image, mask = open_image_and_mask(images[i], masks[i])
            x, m = preprocess.prepare(image, mask)
            try:
                cached = _one_image(
                    model, x, m, label, sigmas, trials, f"{seed}|{img_hash}", preprocess, batch_size, device
                )
            except ValueError as exc:
                raise ValueError(f"Image {ids[i]!r}: {exc}") from None
            n_computed += 1
            if cache_dir is not None and not foreign_inside(cache_dir, "sensitivity", key[:2]):  # (sweep 32u B4)
                buf = io.BytesIO()
                np.savez(buf, **{k: np.asarray(v) for k, v in cached.items()})
                make_own(cache_dir, "sensitivity", key[:2])
                atomic_write_bytes(_cache_path(cache_dir, key), buf.getvalue(), private=True)
        results.append(cached)
    table = _table(results, ids, labels, sigmas, class_names)
    summary = summarize(table, class_names=class_names)
    summary["settings"] = {**settings, "n_images": n}
    return SensitivityResult(table, summary, n_computed, {"results": results})


def _table(results, ids, labels, sigmas, class_names):
    import pandas as pd

    rows = []
    for r, iid, y in zip(results, ids, labels):
        for si, s in enumerate(sigmas):
            p_fg, p_bg = float(np.mean(r["p_fg"][si])), float(np.mean(r["p_bg"][si]))
            rows.append(
                {
                    "image": iid,
                    "label": int(y),
                    "class": class_names[int(y)]
                    if class_names is not None and 0 <= y < len(class_names)
                    else str(int(y)),
                    "sigma": s,
                    "p_fg": p_fg,
                    "p_bg": p_bg,
                    "acc_fg": float(np.mean(r["pred_fg"][si] == y)),
                    "acc_bg": float(np.mean(r["pred_bg"][si] == y)),
                    "irfs": relative_foreground_sensitivity(min(max(p_fg, 0.0), 1.0), min(max(p_bg, 0.0), 1.0)),
                    "p_clean": float(r["p_clean"]),
                    "correct_clean": bool(int(r["pred_clean"]) == y),
                    "p_gray": float(r["p_gray"]),
                    "correct_gray": bool(int(r["pred_gray"]) == y),
                    "fg_fraction": float(r["fg_fraction"]),
                }
            )
    return pd.DataFrame(rows)


def _rfs_block(part):
    a_fg, a_bg = float(part["acc_fg"].mean()), float(part["acc_bg"].mean())
    value = relative_foreground_sensitivity(a_fg, a_bg)
    block = {"a_fg": a_fg, "a_bg": a_bg, "abar": (a_fg + a_bg) / 2, "rfs": None if np.isnan(value) else value}
    if np.isnan(value):
        block["rfs_reason"] = UNDEFINED_REASON
    return block


def _mean_rfs(blocks):
    vals = [b["rfs"] for b in blocks if b["rfs"] is not None]
    return float(np.mean(vals)) if vals else None


def summarize(table, *, class_names=None):
    """Aggregate a per-(image, σ) table into RIVAL10 §5 numbers.

    Accuracies are means over images and trials (each image weighs the same);
    RFS per σ comes from those accuracies, ``rfs_mean`` is the mean over σ of
    the defined values. A NaN RFS is written as ``null`` with ``rfs_reason``.

    Parameters
    ----------
    table : pandas.DataFrame
        As in [`SensitivityResult`][lbee.analyses.sensitivity.SensitivityResult] (or read from ``sensitivity.csv``).

    Returns
    -------
    dict
    """
    need = {"image", "class", "sigma", "acc_fg", "acc_bg", "irfs", "correct_clean", "correct_gray"}
    if not need <= set(table.columns):
        raise ValueError(f"Sensitivity table lacks columns {sorted(need - set(table.columns))}.")
    sig = sorted(table["sigma"].unique())
    per_sigma = [{"sigma": float(s), **_rfs_block(table[table["sigma"] == s])} for s in sig]
    first = table[table["sigma"] == sig[0]]
    classes = {}
    for c in sorted(
        table["class"].astype(str).unique(),
        key=lambda c: (class_names.index(c) if class_names and c in class_names else 1e9, c),
    ):
        part = table[table["class"].astype(str) == c]
        blocks = [{"sigma": float(s), **_rfs_block(part[part["sigma"] == s])} for s in sig]
        pf = part[part["sigma"] == sig[0]]
        classes[c] = {
            "n_images": int(len(pf)),
            "per_sigma": blocks,
            "rfs_mean": _mean_rfs(blocks),
            "accuracy_clean": float(pf["correct_clean"].mean()),
            "accuracy_gray_background": float(pf["correct_gray"].mean()),
            "irfs_mean": _nanmean(part["irfs"]),
        }
    return {
        "n_images": int(len(first)),
        "sigmas": [float(s) for s in sig],
        "per_sigma": per_sigma,
        "rfs_mean": _mean_rfs(per_sigma),
        "general_robustness_mean": float(np.mean([b["abar"] for b in per_sigma])),
        "accuracy_clean": float(first["correct_clean"].mean()),
        "accuracy_gray_background": float(first["correct_gray"].mean()),
        "irfs_mean": _nanmean(table["irfs"]),
        "irfs_undefined_fraction": float(np.mean(~np.isfinite(table["irfs"].to_numpy(dtype=float)))),
        "per_class": classes,
    }


def _nanmean(values):
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    return float(v.mean()) if len(v) else None


# The trial and its metric live in lbee.analyses.perturbation, the inputs in lbee.analyses.sensitivity_inputs, the
# run's files in lbee.analyses.sensitivity_outputs; their names stay importable from here, the analysis' entry point.
__all__ = [
    "CACHE_VERSION",
    "DEFAULT_SIGMAS",
    "IMAGENET_MEAN",
    "IMAGENET_STD",
    "UNDEFINED_REASON",
    "Preprocess",
    "SensitivityResult",
    "confidence_from_sensitivity",
    "content_hash",
    "figure_bytes",
    "find_masks",
    "gray_background",
    "irfs",
    "model_fingerprint",
    "open_image_and_mask",
    "plot_irfs",
    "plot_rfs",
    "read_sensitivity_table",
    "region_noise",
    "region_sensitivity",
    "relative_foreground_sensitivity",
    "rfs",
    "spotcheck_masks_from_pixels",
    "summarize",
    "write_outputs",
]
