"""Per-image confidence φ and performance ω for semantic segmentation (LBEE §5, Fig. 4).

Unsupervised: φ = −(mean over pixels of the per-pixel softmax entropy).
With ground-truth masks: ω = per-image mIoU or pixel accuracy, ignoring the
pixels labelled ``ignore_index``. The paper's Fig. 4 compares splitting by
entropy, pixel accuracy and mIoU:
[`SegmentationScores.confidence`][lbee.scoring.segmentation.SegmentationScores.confidence] takes
that choice as one argument (``split_by``), and so does ``lbee describe``.

Predictions are consumed one image at a time, so nothing of size n × K × H × W
is ever held in memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._validation import check_choice
from ..io.arrays import load_npy
from ..io.images import open_image

SPLIT_BY = ("entropy", "pixel_accuracy", "miou")
MASK_SUFFIXES = (".png", ".npy", ".bmp", ".tif", ".tiff")


def pixel_probabilities(prediction):
    """Per-pixel class probabilities from (K, H, W) logits or probabilities.

    A map whose values lie in [0, 1] and sum to 1 over classes is taken as
    probabilities; anything else as logits (softmax over axis 0).
    """
    p = np.asarray(prediction, dtype=np.float64)
    if p.min() >= 0 and p.max() <= 1 and np.allclose(p.sum(axis=0), 1.0, atol=1e-3):
        return p
    z = p - p.max(axis=0, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=0, keepdims=True)


def mean_pixel_entropy(probs):
    """Mean over pixels of −Σ_k p log p for one (K, H, W) probability map."""
    p = np.clip(probs, 1e-12, 1.0)
    return float(-(p * np.log(p)).sum(axis=0).mean())


def image_performance(pred_labels, mask, num_classes, ignore_index=255):
    """Pixel accuracy and mIoU of one image.

    Parameters
    ----------
    pred_labels, mask : array-like of int, shape (H, W)
    num_classes : int
        K; a mask value outside [0, K) other than ``ignore_index`` is an error.
    ignore_index : int or None, default=255

    Returns
    -------
    pixel_accuracy, miou : float
        mIoU averages the IoU over the classes present in the mask or the
        prediction (on non-ignored pixels). Both are NaN when every pixel is ignored.
    """
    pred = np.asarray(pred_labels, dtype=np.int64)
    gt = np.asarray(mask, dtype=np.int64)
    if pred.shape != gt.shape:
        raise ValueError(f"mask has shape {gt.shape} but the prediction has shape {pred.shape}; they must match.")
    valid = np.ones(gt.shape, bool) if ignore_index is None else gt != ignore_index
    bad = gt[valid]
    bad = bad[(bad < 0) | (bad >= num_classes)]
    if bad.size:
        raise ValueError(
            f"mask contains class {int(bad[0])}, absent from the prediction's {num_classes} classes "
            f"(values must be in [0, {num_classes}) or the ignore index {ignore_index})."
        )
    if not valid.any():
        return float("nan"), float("nan")
    p, g = pred[valid], gt[valid]
    accuracy = float((p == g).mean())
    # Confusion counts in one bincount: row = truth, column = prediction.
    conf = np.bincount(g * num_classes + p, minlength=num_classes * num_classes).reshape(num_classes, num_classes)
    inter = np.diag(conf)
    union = conf.sum(0) + conf.sum(1) - inter
    present = union > 0
    return accuracy, float((inter[present] / union[present]).mean())


@dataclass
class SegmentationScores:
    """Per-image scores of a segmentation model.

    Attributes
    ----------
    neg_entropy : ndarray of shape (n,)
        −mean pixel entropy (NaN where only hard labels were given).
    pixel_accuracy, miou : ndarray of shape (n,) or None
        None without masks.
    """

    neg_entropy: np.ndarray
    pixel_accuracy: np.ndarray | None = None
    miou: np.ndarray | None = None

    def confidence(self, split_by="entropy"):
        """φ for the easy / hard split: one of ``SPLIT_BY`` (the paper's Fig. 4 choice)."""
        check_choice(split_by, "split_by", set(SPLIT_BY))
        values = {"entropy": self.neg_entropy, "pixel_accuracy": self.pixel_accuracy, "miou": self.miou}[split_by]
        if values is None:
            raise ValueError(f"`split_by={split_by!r}` needs ground-truth masks; none were given.")
        return self._finite(values, split_by)

    def performance(self, kind="miou"):
        """ω for the evaluators: mIoU (the paper's) or pixel accuracy with masks, else −entropy."""
        check_choice(kind, "performance", {"miou", "pixel_accuracy", "entropy"})
        if kind == "entropy" or self.miou is None:
            return self._finite(self.neg_entropy, "entropy")
        return self._finite(self.miou if kind == "miou" else self.pixel_accuracy, kind)

    @staticmethod
    def _finite(values, name):
        bad = ~np.isfinite(values)
        if bad.any():
            raise ValueError(
                f"{int(bad.sum())} image(s) have no {name} value (only hard labels, or every pixel "
                f"ignored), first at row {int(np.flatnonzero(bad)[0])}."
            )
        return values


def segmentation_scores(predictions, masks=None, *, num_classes=None, ignore_index=255, names=None):
    """Score per-image segmentation outputs.

    Parameters
    ----------
    predictions : iterable of array-like
        Per image, either (K, H, W) logits / probabilities or an (H, W) map of
        predicted class indices (then no entropy is available).
    masks : iterable of array-like of shape (H, W), optional
        Ground-truth class indices, aligned with ``predictions``.
    num_classes : int, optional
        K; inferred from (K, H, W) predictions, required with label maps and masks.
    ignore_index : int or None, default=255
    names : list of str, optional
        Image names used in error messages.

    Returns
    -------
    SegmentationScores
    """
    ent, acc, miou = [], [], []
    mask_iter = iter(masks) if masks is not None else None
    for i, pred in enumerate(predictions):
        name = names[i] if names is not None else f"image {i}"
        pred = np.asarray(pred)
        if pred.ndim == 3:
            probs = pixel_probabilities(pred)
            ent.append(-mean_pixel_entropy(probs))
            labels = probs.argmax(axis=0)
            k = pred.shape[0]
            if num_classes is not None and k != num_classes:
                raise ValueError(f"{name}: prediction has {k} classes, expected {num_classes}.")
        elif pred.ndim == 2:
            ent.append(np.nan)
            labels, k = pred, num_classes
        else:
            raise ValueError(f"{name}: prediction has shape {pred.shape}; expected (K, H, W) scores or (H, W) labels.")
        if mask_iter is None:
            continue
        try:
            mask = next(mask_iter)
        except StopIteration:
            raise ValueError(f"`masks` has fewer entries than `predictions` (none for {name}).") from None
        if k is None:
            raise ValueError("`num_classes` is needed to score label-map predictions against masks.")
        try:
            a, m = image_performance(labels, mask, k, ignore_index)
        except ValueError as exc:
            raise ValueError(f"{name}: {exc}") from None
        acc.append(a)
        miou.append(m)
    if not ent:
        raise ValueError("`predictions` is empty; expected one prediction per image.")
    as_array = (lambda v: np.asarray(v, dtype=np.float64)) if mask_iter is not None else (lambda v: None)
    return SegmentationScores(np.asarray(ent, dtype=np.float64), as_array(acc), as_array(miou))


def read_label_map(path):
    """(H, W) int64 class indices from a PNG (palette or grey) or an .npy file."""
    path = Path(path)
    if path.suffix.lower() == ".npy":
        arr = load_npy(path, "label map")  # its own one-line errors: empty, .npz, truncated, pickled
    else:
        try:
            with open_image(path) as img:
                arr = np.asarray(img)
        except Exception as exc:
            raise ValueError(f"Cannot read label map {str(path)!r}: {exc}") from None
    if arr.ndim != 2:
        raise ValueError(f"Label map {str(path)!r} has shape {arr.shape}; expected (H, W) class indices.")
    return arr.astype(np.int64)


def match_files(folder, image_ids, suffixes, what):
    """Per image id, the file in ``folder`` with the same stem (relative sub-folders kept)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{what} folder {str(folder)!r} does not exist.")
    out, missing = [], []
    for iid in image_ids:
        stem = Path(iid).with_suffix("")
        hit = next((folder / f"{stem}{s}" for s in suffixes if (folder / f"{stem}{s}").is_file()), None)
        if hit is None:
            hit = next((folder / f"{stem.name}{s}" for s in suffixes if (folder / f"{stem.name}{s}").is_file()), None)
        if hit is None:
            missing.append(iid)
        out.append(hit)
    if missing:
        raise ValueError(
            f"{len(missing)} image(s) have no {what} file in {str(folder)!r} (same name, suffix one of "
            f"{list(suffixes)}), first: {missing[:3]}."
        )
    return out


def scores_from_folders(image_ids, predictions_dir, masks_dir=None, *, num_classes=None, ignore_index=255):
    """`SegmentationScores` from per-image ``.npy`` predictions and optional mask files.

    Parameters
    ----------
    image_ids : list of str
        Image names; prediction ``<stem>.npy`` and mask ``<stem>.png|.npy`` files are matched by stem.
    predictions_dir : path-like
        (K, H, W) logits / probabilities or (H, W) label maps, as ``.npy`` (label maps may be PNG).
    masks_dir : path-like, optional
    """
    pred_files = match_files(predictions_dir, image_ids, (".npy", ".png"), "prediction")
    preds = (load_npy(p, "prediction") if p.suffix == ".npy" else read_label_map(p) for p in pred_files)
    masks = None
    if masks_dir is not None:
        masks = (read_label_map(p) for p in match_files(masks_dir, image_ids, MASK_SUFFIXES, "mask"))
    return segmentation_scores(preds, masks, num_classes=num_classes, ignore_index=ignore_index, names=list(image_ids))


def predict_segmentation(model, paths, *, masks=None, transform=None, device=None, ignore_index=255, progress=False):
    """Run a segmentation model image by image and score it.

    The model maps a (1, 3, h, w) tensor to (1, K, h', w') logits (or a dict
    with ``'out'``, as torchvision's segmentation models return); logits are
    resized bilinearly to the original image size before scoring, so masks are
    compared at full resolution.

    Parameters
    ----------
    model : torch.nn.Module
    paths : list of str
    masks : list of path-like, optional
        One mask file per path.
    transform : callable, optional
        PIL image -> (3, h, w) tensor; default: to tensor + ImageNet normalisation.

    Returns
    -------
    SegmentationScores
    """
    import torch
    from tqdm.auto import tqdm

    from ..extras import import_torchvision

    transforms = import_torchvision(needed_for="a segmentation model's preprocessing").transforms

    from ..io.images import to_rgb
    from .device import resolve_device

    device = resolve_device(device)
    model = model.to(device)
    transform = transform or transforms.Compose(
        [transforms.ToTensor(), transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])]
    )

    def predict_one(path):
        try:
            with open_image(path) as img:
                img = to_rgb(img)
        except Exception as exc:
            raise ValueError(f"Cannot read image {path!r}: {exc}") from None
        with torch.inference_mode():
            out = model(transform(img).unsqueeze(0).to(device))
            if isinstance(out, dict):
                out = out["out"]
            if out.ndim != 4:
                raise ValueError(
                    f"The segmentation model returned shape {tuple(out.shape)}; expected (1, K, H, W) logits."
                )
            out = torch.nn.functional.interpolate(
                out.float(), size=(img.height, img.width), mode="bilinear", align_corners=False
            )
            return torch.softmax(out[0], dim=0).cpu().numpy()

    # A lazy map, so one image's map is in memory at a time. Inference mode is entered per image: a
    # generator suspended inside `torch.inference_mode()` would leave it switched on for the caller.
    outputs = (predict_one(p) for p in tqdm(paths, desc="running segmentation model", disable=not progress))
    mask_arrays = (read_label_map(m) for m in masks) if masks is not None else None
    return segmentation_scores(outputs, mask_arrays, ignore_index=ignore_index, names=list(paths))
