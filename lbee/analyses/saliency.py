"""Saliency alignment with the object mask (RIVAL10 §5.4, app. E).

GradCAM (Selvaraju et al.) with torch hooks: for the target class c and a
convolutional layer with activations A (K, h, w), the weights are the
spatially averaged gradients α_k = mean_{ij} ∂y_c / ∂A_kij and the map is
ReLU(Σ_k α_k A_k), upsampled (bilinear) to the input size and divided by its
maximum, so it lies in [0, 1]. The target is the image's **true** class.

Alignment of a map s with the object mask m:

- ``iou``: |m ∩ s_τ| / |m ∪ s_τ| with s_τ = [s ≥ τ], τ = 0.5 of the max
  (RIVAL10 §5.4). This is the standard IoU; the formula printed in app. E has
  |m| + |s_τ| in the denominator, which is a Dice-like score, not an IoU.
- ``fg_density`` / ``bg_density``: mean saliency on object / background pixels,
  and ``delta_density`` = their difference, which RIVAL10 found best for
  surfacing spurious background features (§5.4).
"""

from __future__ import annotations

import numpy as np


def find_last_conv(model):
    """Name of the last ``torch.nn.Conv2d`` in ``model.named_modules()`` order.

    Raises ``ValueError`` when the model has none (or is TorchScript, whose
    modules cannot take hooks).
    """
    import torch

    if isinstance(model, torch.jit.ScriptModule):
        raise ValueError(
            "GradCAM needs an eager torch module; a TorchScript model cannot take hooks. Load the "
            "model as 'torchvision:<arch>' or 'package.module:factory' with --weights instead."
        )
    names = [n for n, mod in model.named_modules() if isinstance(mod, torch.nn.Conv2d)]
    if not names:
        raise ValueError(f"{type(model).__name__} has no Conv2d layer; pass the GradCAM layer name explicitly.")
    return names[-1]


def gradcam(model, x, targets, layer=None):
    """GradCAM maps for a batch.

    Parameters
    ----------
    model : torch.nn.Module
    x : torch.Tensor of shape (B, 3, H, W)
        Normalised model input.
    targets : array-like of int, shape (B,)
        Class whose logit is explained.
    layer : str, optional
        Module name (``dict(model.named_modules())``); default `find_last_conv`.

    Returns
    -------
    ndarray of float32, shape (B, H, W)
        Each map divided by its max (all zeros when the map is zero everywhere).
    """
    import torch

    if layer is None:
        layer = find_last_conv(model)
    modules = dict(model.named_modules())
    if layer not in modules:
        conv = [n for n, m in modules.items() if isinstance(m, torch.nn.Conv2d)][-3:]
        raise ValueError(f"`layer` {layer!r} is not a module of the model; e.g. {conv}.")
    store = {}

    def hook(_module, _inputs, output):
        store["act"] = output
        output.register_hook(lambda g: store.__setitem__("grad", g))

    handle = modules[layer].register_forward_hook(hook)
    try:
        with torch.enable_grad():
            x = x.detach().clone().requires_grad_(True)  # makes the hooked activation part of the graph
            logits = model(x)
            if isinstance(logits, (tuple, list)):
                logits = logits[0]
            t = torch.as_tensor(np.asarray(targets), dtype=torch.long, device=logits.device)
            model.zero_grad(set_to_none=True)
            logits.gather(1, t[:, None]).sum().backward()
    finally:
        handle.remove()
    act, grad = store["act"].detach(), store["grad"].detach()
    cam = torch.relu((grad.mean(dim=(2, 3), keepdim=True) * act).sum(1, keepdim=True))
    cam = torch.nn.functional.interpolate(cam, size=x.shape[-2:], mode="bilinear", align_corners=False)[:, 0]
    peak = cam.flatten(1).amax(1).clamp_min(1e-12)[:, None, None]
    return (cam / peak).cpu().numpy().astype(np.float32)


def alignment(saliency, mask, threshold=0.5):
    """IoU and densities of one max-normalised saliency map against a binary mask.

    Parameters
    ----------
    saliency : ndarray of shape (H, W), in [0, 1]
    mask : ndarray of bool, shape (H, W)
    threshold : float, default=0.5

    Returns
    -------
    dict
        ``iou`` (NaN when mask and binarised map are both empty), ``fg_density``,
        ``bg_density`` (NaN for an empty region), ``delta_density``.
    """
    s = np.asarray(saliency, dtype=float)
    m = np.asarray(mask, dtype=bool)
    if s.shape != m.shape:
        raise ValueError(f"`saliency` has shape {s.shape} and `mask` {m.shape}; expected the same.")
    st = s >= threshold
    union = np.logical_or(st, m).sum()
    iou = float(np.logical_and(st, m).sum() / union) if union else float("nan")
    fg = float(s[m].mean()) if m.any() else float("nan")
    bg = float(s[~m].mean()) if (~m).any() else float("nan")
    return {"iou": iou, "fg_density": fg, "bg_density": bg, "delta_density": fg - bg}


def saliency_alignment(
    model,
    images,
    masks,
    labels,
    *,
    layer=None,
    preprocess=None,
    ids=None,
    class_names=None,
    threshold=0.5,
    batch_size=32,
    device=None,
    progress=False,
):
    """GradCAM / object-mask alignment per image (RIVAL10 §5.4).

    Parameters
    ----------
    model : torch.nn.Module
    images, masks, labels, preprocess, ids, class_names, batch_size, device, progress
        As in [`lbee.analyses.sensitivity.region_sensitivity`][lbee.analyses.sensitivity.region_sensitivity].
    layer : str, optional
        GradCAM layer; default the last Conv2d.
    threshold : float, default=0.5
        Binarisation of the max-normalised map.

    Returns
    -------
    pandas.DataFrame
        One row per image, sorted by ``iou`` ascending (least aligned first; NaN last):
        ``image, label, class, iou, fg_density, bg_density, delta_density, layer``.
    """
    import pandas as pd
    import torch
    from tqdm.auto import tqdm

    from ..scoring.device import resolve_device
    from .sensitivity import Preprocess, open_image_and_mask

    n = len(images)
    labels = np.asarray(labels).astype(np.int64)
    if len(masks) != n or labels.shape != (n,):
        raise ValueError(
            f"`images`, `masks` and `labels` must have the same length; received {n}, {len(masks)} "
            f"and labels of shape {labels.shape}."
        )
    preprocess = preprocess or Preprocess.preset("imagenet")
    layer = layer or find_last_conv(model)
    ids = ids or [str(p) if not isinstance(p, np.ndarray) else str(i) for i, p in enumerate(images)]
    device = resolve_device(device)
    model = model.to(device).eval()
    rows = []
    for start in tqdm(range(0, n, batch_size), desc="GradCAM", disable=not progress):
        xs, ms = [], []
        for i in range(start, min(n, start + batch_size)):
            image, mask = open_image_and_mask(images[i], masks[i])
            x, m = preprocess.prepare(image, mask)
            xs.append(x)
            ms.append(m[0].numpy() > 0.5)
        batch = preprocess.normalize(torch.stack(xs)).to(device)
        cams = gradcam(model, batch, labels[start : start + len(xs)], layer)
        for j, (cam, m) in enumerate(zip(cams, ms)):
            i = start + j
            y = int(labels[i])
            rows.append(
                {
                    "image": ids[i],
                    "label": y,
                    "class": class_names[y] if class_names is not None and 0 <= y < len(class_names) else str(y),
                    **alignment(cam, m, threshold),
                    "layer": layer,
                }
            )
    table = pd.DataFrame(rows)
    return table.sort_values("iou", kind="stable", na_position="last").reset_index(drop=True)
