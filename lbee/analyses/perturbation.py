"""What one trial of the region-sensitivity analysis does (RIVAL10 §5.1, §5.3), and its metric.

An image and its object mask reach the model through [`Preprocess`][lbee.analyses.perturbation.Preprocess]
(geometry on both, normalisation after the noise); [`region_noise`][lbee.analyses.perturbation.region_noise] adds
one noise draw to the foreground or to the background, [`gray_background`][lbee.analyses.perturbation.gray_background]
replaces the background by gray;
[`relative_foreground_sensitivity`][lbee.analyses.perturbation.relative_foreground_sensitivity] turns
the accuracies (or true-class probabilities) under both kinds of noise into
RFS (or iRFS). See [`lbee.analyses.sensitivity`][lbee.analyses.sensitivity] for the formulas.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


# --------------------------------------------------------------------------- metrics
def relative_foreground_sensitivity(a_fg, a_bg):
    """RFS (RIVAL10 §5.1) or, with true-class probabilities, iRFS.

    Parameters
    ----------
    a_fg, a_bg : float or array-like of shape (k,)
        Accuracy (or probability) under foreground / background noise, in [0, 1].

    Returns
    -------
    float or ndarray of shape (k,)
        (a_bg − a_fg) / (2 min(ā, 1 − ā)) with ā = (a_fg + a_bg) / 2; NaN where
        ā ∈ {0, 1} (0 / 0, see the module docstring).
    """
    fg = np.asarray(a_fg, dtype=float)
    bg = np.asarray(a_bg, dtype=float)
    if fg.shape != bg.shape:
        raise ValueError(f"`a_fg` and `a_bg` must have the same shape; received {fg.shape} and {bg.shape}.")
    if not (np.all(np.isfinite(fg)) and np.all(np.isfinite(bg))):
        raise ValueError("`a_fg` and `a_bg` must be finite.")
    if np.any((fg < 0) | (fg > 1) | (bg < 0) | (bg > 1)):
        raise ValueError("`a_fg` and `a_bg` must lie in [0, 1] (accuracies or probabilities).")
    abar = (fg + bg) / 2
    denom = 2 * np.minimum(abar, 1 - abar)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(denom > 1e-12, (bg - fg) / np.where(denom > 1e-12, denom, 1.0), np.nan)
    return float(out) if out.ndim == 0 else out


rfs = relative_foreground_sensitivity
irfs = relative_foreground_sensitivity


# --------------------------------------------------------------------------- preprocessing
@dataclass(frozen=True)
class Preprocess:
    """How images and masks reach the model: geometry on both, then normalisation of the (noisy) image.

    Parameters
    ----------
    image_size : int, default=224
        Side of the square input.
    resize : int or None, default=256
        Shorter side resized to this (bilinear; masks nearest), then centre crop
        to ``image_size`` — `lbee.scoring.classifier.default_transform`'s
        convention. None: resize straight to ``image_size`` × ``image_size`` when
        the image has another size.
    mean : tuple of 3 floats, default=(0.485, 0.456, 0.406)
        Normalisation applied after the noise: ``(x − mean) / std``.
    std : tuple of 3 floats, default=(0.229, 0.224, 0.225)
        As ``mean``.
    """

    image_size: int = 224
    resize: int | None = 256
    mean: tuple = IMAGENET_MEAN
    std: tuple = IMAGENET_STD

    @classmethod
    def preset(cls, name, image_size=None):
        """``'imagenet'`` (224, resize 256, ImageNet stats) or ``'spotcheck'`` (64, no resize, x / 127.5 − 1)."""
        if name == "imagenet":
            size = image_size or 224
            return cls(size, int(round(size * 256 / 224)), IMAGENET_MEAN, IMAGENET_STD)
        if name == "spotcheck":
            return cls(image_size or 64, None, (0.5, 0.5, 0.5), (0.5, 0.5, 0.5))
        raise ValueError(f"Unknown preprocessing {name!r}; expected 'imagenet' or 'spotcheck'.")

    def prepare(self, image, mask):
        """Apply the geometry to an RGB PIL image and its 'L' mask.

        Returns
        -------
        x : torch.Tensor of shape (3, S, S), float32 in [0, 1]
        m : torch.Tensor of shape (1, S, S), float32 in {0, 1}
        """
        import torch
        from PIL import Image

        from ..extras import import_torchvision

        import_torchvision(needed_for="a perturbation")  # a mismatched build said in words, not as an operator
        from torchvision.transforms import InterpolationMode
        from torchvision.transforms import functional as TF

        s = self.image_size
        if self.resize:
            image = TF.resize(image, self.resize, interpolation=InterpolationMode.BILINEAR, antialias=True)
            mask = TF.resize(mask, self.resize, interpolation=InterpolationMode.NEAREST)
            image, mask = TF.center_crop(image, s), TF.center_crop(mask, s)
        elif image.size != (s, s):
            image, mask = image.resize((s, s), Image.BILINEAR), mask.resize((s, s), Image.NEAREST)
        x = TF.to_tensor(image)
        m = torch.from_numpy((np.asarray(mask) >= 128).astype(np.float32))[None]
        return x, m

    def normalize(self, x):
        import torch

        mean = torch.tensor(self.mean, dtype=x.dtype, device=x.device).view(1, 3, 1, 1)
        std = torch.tensor(self.std, dtype=x.dtype, device=x.device).view(1, 3, 1, 1)
        return (x - mean) / std


def region_noise(x, m, sigma, generator):
    """Noisy-foreground and noisy-background versions of one image, with one shared noise draw.

    Parameters
    ----------
    x : torch.Tensor of shape (3, H, W), in [0, 1]
    m : torch.Tensor of shape (1, H, W), in {0, 1}
    sigma : float
        Noise standard deviation on the 0–255 scale (the [0, 1] noise has std σ / 255).
    generator : torch.Generator

    Returns
    -------
    x_fg, x_bg : torch.Tensor of shape (3, H, W), clipped to [0, 1]
    """
    import torch

    n = torch.randn(x.shape, generator=generator) * (float(sigma) / 255.0)
    return (x + n * m).clamp_(0, 1), (x + n * (1 - m)).clamp_(0, 1)


def gray_background(x, m):
    """RIVAL10 §5.3: keep the object, set every background pixel to 0.5. Shapes as `region_noise`."""
    return x * m + 0.5 * (1 - m)
