"""The square classifier of a SpotCheck world: trained, loaded, run, and checked to have its blindspots.

Also Domino's synthetic model (A.3.4): predictions drawn without images.
"""

from __future__ import annotations

import numpy as np


def train_classifier(
    images, labels, *, epochs=12, batch_size=128, lr=5e-3, random_state=0, arch="cnn", on_epoch=None, device="cpu"
):
    """Train the square classifier ("cnn": small CNN; "resnet18": torchvision ResNet-18).

    ``on_epoch(epoch, n_epochs, train_accuracy)`` is called after each epoch
    (progress display). ``device`` is where the training steps run (a CUDA
    device makes the paper's 400 images per combination cheap; its kernels are
    not bitwise deterministic); the returned model is always on the CPU.
    """
    import torch

    from ._network import SquareClassifier, to_tensor

    device = torch.device(device)
    torch.manual_seed(random_state)
    if arch == "cnn":
        model = SquareClassifier()
    elif arch == "resnet18":
        from ..extras import import_torchvision

        torchvision = import_torchvision(needed_for="the resnet18 classifier")
        model = torchvision.models.resnet18(num_classes=2)
    else:
        raise ValueError(f"`arch` must be 'cnn' or 'resnet18'; received {arch!r}.")
    model.to(device)
    # uint8 on the device (a quarter of float32), converted per batch
    x, y = torch.as_tensor(images).to(device), torch.as_tensor(labels).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-4)
    steps = epochs * ((len(x) + batch_size - 1) // batch_size)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps, pct_start=0.15)
    gen = torch.Generator().manual_seed(random_state)
    for epoch in range(epochs):
        model.train()
        correct = torch.zeros((), dtype=torch.int64, device=device)
        for idx in torch.randperm(len(x), generator=gen).split(batch_size):
            idx = idx.to(device)
            out = model(to_tensor(x[idx]))
            loss = torch.nn.functional.cross_entropy(out, y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            correct += (out.argmax(1) == y[idx]).sum()  # summed on the device: no sync per step
        if on_epoch is not None:
            on_epoch(epoch + 1, epochs, int(correct) / len(x))
    return model.cpu().eval()


def predict(model, images, batch_size=512):
    """Class probabilities (n, 2) and penultimate features (n, h) of the square classifier."""
    import torch

    from ._network import to_tensor

    probs, feats = [], []
    with torch.inference_mode():
        for i in range(0, len(images), batch_size):
            x = to_tensor(images[i : i + batch_size])
            if hasattr(model, "features"):
                f = model.features(x)
                logits = model.fc(f)
            else:
                logits, f = model(x), None
            probs.append(torch.softmax(logits, 1).numpy())
            if f is not None:
                feats.append(f.numpy())
    return np.concatenate(probs), (np.concatenate(feats) if feats else None)


def blindspot_neighbours(ec, split="val"):
    """Each blindspot's one-condition neighbours: where all of its conditions but one hold.

    A neighbour of blindspot ``j`` is the set of images outside every blindspot
    that meet each of ``j``'s conditions but one, and hold the other value of
    that one ("square below the centre" → "square above the centre"). A model
    that fails there too has learned a broader blindspot than the one planted.

    Returns
    -------
    list of (int, tuple, ndarray of bool, shape (n,))
        ``(j, flipped, mask)``: the blindspot, its condition with the other
        value (a (layer, attribute, value) triplet), and the images in ``split``
        that form the neighbour (possibly none).
    """
    from ._world import ATTRIBUTES, META, META_VALUES

    attrs = ec.attributes[split]
    outside = ~ec.membership(split).any(axis=1)
    result = []
    for j, blindspot in enumerate(ec.blindspots):
        for t, (layer, attr, value) in enumerate(blindspot.triplets):
            values = META_VALUES if (layer, attr) == META else ATTRIBUTES[(layer, attr)]
            flipped = (layer, attr, values[1] if value == values[0] else values[0])
            rest = [c for i, c in enumerate(blindspot.triplets) if i != t] + [flipped]
            mask = np.array([all(a.get((ly, at)) == v for ly, at, v in rest) for a in attrs], dtype=bool)
            result.append((j, flipped, mask & outside))
    return result


#: The blindspot gate of lbee's world (``make_ec``'s defaults; the paper's world asks 0.99 / 0.05, ``PAPER_WORLD``).
DEFAULT_GATE = {"min_outside": 0.9, "max_inside": 0.2, "min_neighbour": 0.5}


def verify_blindspots(
    ec,
    split="val",
    *,
    min_outside=DEFAULT_GATE["min_outside"],
    max_inside=DEFAULT_GATE["max_inside"],
    min_neighbour=DEFAULT_GATE["min_neighbour"],
    alpha=0.05,
):
    """The paper's check that the model has exactly its planted blindspots (SpotCheck §3).

    High accuracy outside every blindspot (``min_outside``), near-zero inside each
    (``max_inside``), and no broader failure: on no one-condition neighbour of a
    blindspot (`blindspot_neighbours`) is the accuracy significantly below
    ``min_neighbour`` (one-sided binomial test at level ``alpha``, so a
    neighbour of a handful of images cannot fail the check by chance). A model
    wrong on most of a neighbour fails a region nobody planted (e.g. the union
    of two blindspots that differ in one object), and the true blindspots would
    no longer be the model's. Accuracies are w.r.t. true labels.

    Returns
    -------
    dict
        ``accuracy_outside``, ``accuracy_inside`` (per blindspot), ``n_inside``,
        ``neighbours`` (one dict per neighbour with images: blindspot, flipped
        condition, n, accuracy, p-value), ``worst_neighbour`` (the one with the
        smallest p-value, or None) and ``passed``.
    """
    from scipy.stats import binomtest

    from ._world import Blindspot

    probs, _ = predict(ec.model, ec.images[split])
    correct = probs.argmax(1) == ec.true_labels(split)
    memb = ec.membership(split)
    outside = ~memb.any(axis=1)
    acc_out = float(correct[outside].mean()) if outside.any() else float("nan")
    acc_in = [float(correct[memb[:, j]].mean()) if memb[:, j].any() else float("nan") for j in range(memb.shape[1])]
    neighbours = [
        {
            "blindspot": j,
            "flipped": Blindspot([flipped]).describe(),
            "n": int(mask.sum()),
            "accuracy": float(correct[mask].mean()),
            "p_value": float(binomtest(int(correct[mask].sum()), int(mask.sum()), min_neighbour, "less").pvalue),
        }
        for j, flipped, mask in blindspot_neighbours(ec, split)
        if mask.any()
    ]
    worst = min(neighbours, key=lambda nb: (nb["p_value"], nb["accuracy"])) if neighbours else None
    ok = bool(
        acc_out >= min_outside
        and all(np.isfinite(a) and a <= max_inside for a in acc_in)
        and (worst is None or worst["p_value"] >= alpha)
    )
    return {
        "split": split,
        "accuracy_outside": acc_out,
        "accuracy_inside": acc_in,
        "neighbours": neighbours,
        "worst_neighbour": worst,
        "min_neighbour": min_neighbour,
        "alpha": alpha,
        "passed": ok,
        "n_inside": [int(memb[:, j].sum()) for j in range(memb.shape[1])],
    }


def verification_failure(verification):
    """Why a `verify_blindspots` result failed, in one line (for logs and the rejected attempts)."""
    v = verification
    text = f"accuracy outside {v['accuracy_outside']:.3f}, inside {[round(x, 3) for x in v['accuracy_inside']]}"
    worst = v.get("worst_neighbour")
    if worst is not None and worst["p_value"] < v.get("alpha", 0.0):
        text += (
            f"; where blindspot {worst['blindspot']} holds but for {worst['flipped']}: "
            f"{worst['accuracy']:.3f} on {worst['n']} images (p = {worst['p_value']:.2g} that it is "
            f"{v['min_neighbour']:g} or more)"
        )
    return text


def verification_story(verification, min_outside, max_inside):
    """Why a classifier failed `verify_blindspots`, in words for the demo's reader (not a log line).

    ``'it also fails where blindspot 1 holds but for rectangle absent (right on 0 of 10 images)'``,
    ``'it is right on only 94% of the images outside its blindspots'`` or
    ``'it is right on 40% of blindspot 2's images'``.
    """
    v = verification
    worst = v.get("worst_neighbour")
    if worst is not None and worst["p_value"] < v.get("alpha", 0.0):
        right = int(round(worst["accuracy"] * worst["n"]))
        return (
            f"it also fails where blindspot {worst['blindspot']} holds but for {worst['flipped']} "
            f"(right on {right} of {worst['n']} images), a region nobody planted"
        )
    if not v["accuracy_outside"] >= min_outside:
        return f"it is right on only {v['accuracy_outside']:.0%} of the images outside its blindspots"
    for j, acc in enumerate(v["accuracy_inside"]):
        if not (np.isfinite(acc) and acc <= max_inside):
            return f"it is right on {acc:.0%} of blindspot {j}'s images, where it should fail"
    return "it does not fail exactly inside its blindspots"


def domino_synthetic_predictions(
    targets,
    slices,
    *,
    in_sensitivity=0.4,
    in_specificity=0.4,
    out_sensitivity=0.9,
    out_specificity=0.9,
    random_state=None,
):
    """Domino's synthetic model (A.3.4): P(ŷ=1) drawn from beta distributions.

    For an example with target 1 the predicted probability comes from a beta
    whose mean is the sensitivity (in-slice or out-of-slice value); with target 0
    from one whose mean is 1 − specificity.

    Parameters
    ----------
    targets : array-like of {0, 1}, shape (n,)
    slices : array-like of bool, shape (n,) or (n, m)
        Examples inside any slice use the in-slice rates.

    Returns
    -------
    ndarray of shape (n,)
        Predicted probability of class 1.
    """
    rng = np.random.default_rng(random_state)
    y = np.asarray(targets).astype(int)
    s = np.asarray(slices, dtype=bool)
    inside = s.any(axis=1) if s.ndim == 2 else s
    for name, v in (
        ("in_sensitivity", in_sensitivity),
        ("in_specificity", in_specificity),
        ("out_sensitivity", out_sensitivity),
        ("out_specificity", out_specificity),
    ):
        if not 0 < v < 1:
            raise ValueError(f"`{name}` must be in (0, 1); received {v}.")
    mean = np.where(
        y == 1, np.where(inside, in_sensitivity, out_sensitivity), 1 - np.where(inside, in_specificity, out_specificity)
    )
    concentration = 8.0
    return rng.beta(mean * concentration, (1 - mean) * concentration)
