"""Loading a user's classifier and running it over images to get class probabilities.

Model specs:

- a TorchScript file (``model.pt``),
- ``torchvision:<arch>`` or ``timm:<arch>`` with a state-dict ``weights`` file
  (loaded with ``weights_only=True``),
- ``package.module:factory`` (a callable returning an ``nn.Module``), with optional ``weights``.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np


def check_stored_zip(path, what="`weights`", name=None):
    """Refuse a torch zip archive with compressed entries, or a sparse file: either is gigabytes when loaded.

    ``torch.save`` writes its entries stored (uncompressed), so a state dict a model was saved as passes; the
    legacy (non-zip) format is read as it is. ``name``: how the message names the file (``path`` may be a pinned
    descriptor's).
    """
    import zipfile

    from .._files import refuse_sparse

    refuse_sparse(path, what, name)  # a state dict of holes: 364 KB on disk made torch.load read 3 GB
    if not zipfile.is_zipfile(path):
        return
    import os

    with zipfile.ZipFile(path) as archive:
        infos = archive.infolist()
        packed = [i.filename for i in infos if i.compress_type != zipfile.ZIP_STORED]
    held = sum(i.file_size for i in infos)
    if not packed and held > os.path.getsize(path):  # entries stored over one another: each is loaded apart
        raise ValueError(
            f"{what} {str(name or path)!r} lists {held:,} bytes of stored entries in a file of "
            f"{os.path.getsize(path):,}: its entries overlap, and loading it would take far more than its size; "
            "save the state dict with torch.save."
        )
    if packed:
        raise ValueError(
            f"{what} {str(name or path)!r} has compressed entries ({packed[0]!r}, ...): a compressed archive can "
            "inflate far beyond its size when loaded; save the state dict with torch.save, which stores them."
        )


def load_error_line(exc):
    """What a failed ``torch.load`` says, in one line.

    torch's advice to load unsafely (``weights_only=False``) is never passed on to a user.
    """
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    first = lines[0] if lines else type(exc).__name__
    if "weights_only" in first or "Weights only" in first:
        return "not a plain state dict of tensors"
    if first.endswith(":") and len(lines) > 1:  # "Error(s) in loading state_dict for X:" says its errors next
        first = f"{first} {lines[1]}"[:500]
    return "".join(c for c in first if c.isprintable())  # torch's own terminal escapes (bold) never reach a user


def _load_state_dict(module, weights):
    import torch

    if weights is None:
        return module
    from .._files import pinned

    path = Path(weights)
    with pinned(path, "`weights` file") as src:  # a FIFO, a device, a link out of a job's data root
        if not path.is_file():
            raise FileNotFoundError(f"`weights` file {str(path)!r} does not exist.")
        check_stored_zip(src, name=path)
        try:
            state = torch.load(src, map_location="cpu", weights_only=True)
        except Exception as exc:  # not a torch file, or a pickled object beyond plain tensors
            raise ValueError(
                f"`weights` {str(path)!r} is not a loadable state dict ({type(exc).__name__}: "
                f"{load_error_line(exc)}); expected a file saved with "
                "torch.save(model.state_dict(), path). A whole pickled model or a TorchScript file "
                "is not accepted as --weights (pass a TorchScript file as the model itself)."
            ) from None
    if isinstance(state, dict) and "state_dict" in state and isinstance(state["state_dict"], dict):
        state = state["state_dict"]
    if (
        not isinstance(state, dict)
        or not state
        or not all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in state.items())
    ):
        kind = (
            type(state).__name__
            if not isinstance(state, dict)
            else ("an empty dict" if not state else "a dict whose values are not all tensors")
        )
        raise ValueError(
            f"`weights` {str(path)!r} holds {kind}; expected a state dict (parameter name -> "
            "tensor), as saved by torch.save(model.state_dict(), path)."
        )
    try:
        missing, unexpected = module.load_state_dict(state, strict=False)
    except RuntimeError as exc:  # shape mismatches
        first = str(exc).strip().splitlines()
        raise ValueError(
            f"`weights` {str(path)!r} does not fit the model: "
            f"{' '.join(line.strip() for line in first[:3])}; is it the right architecture?"
        ) from None
    if missing:
        raise ValueError(
            f"`weights` {str(path)!r} lacks {len(missing)} parameter(s) of the model, "
            f"first: {missing[:3]}; is it the right architecture?"
        )
    return module


def _not_a_spec(spec):
    return ValueError(
        f"Model spec {spec!r} is neither a file, 'torchvision:<arch>', 'timm:<arch>' nor 'package.module:factory'."
    )


def check_model_spec(spec):
    """Check the form of a model spec in a fraction of a second, before torch is imported.

    What can be told without loading anything: a string; an existing file, or
    ``torchvision:`` / ``timm:`` with an architecture name, or
    ``package.module:factory`` with identifiers on both sides whose top-level
    package can be found. `load_classifier` checks the rest (the
    architecture exists, the weights fit).

    Raises
    ------
    ValueError
        Naming the spec, what was received and the accepted forms.
    """
    import importlib.util

    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"`model` must be a spec string such as 'torchvision:resnet50'; received {spec!r}.")
    if spec.startswith(("torchvision:", "timm:")):
        prefix, arch = spec.split(":", 1)
        if not arch.strip():
            raise ValueError(f"Model spec {spec!r} names no architecture; expected e.g. '{prefix}:resnet50'.")
        return
    if Path(spec).is_file():
        return
    mod_name, colon, attr = spec.partition(":")
    if not colon or not attr.isidentifier() or not all(p.isidentifier() for p in mod_name.split(".")):
        raise _not_a_spec(spec)
    if importlib.util.find_spec(mod_name.split(".")[0]) is None:
        raise ValueError(
            f"Model spec {spec!r}: no module {mod_name.split('.')[0]!r} can be imported (is it installed, "
            "or on PYTHONPATH?); expected 'package.module:factory'."
        )


def load_classifier(spec, weights=None, *, num_classes=None):
    """Build a classifier ``nn.Module`` in eval mode from a spec (see module docstring).

    Raises
    ------
    ValueError
        An unknown spec, a factory that cannot be imported, or a ``weights``
        file that is not a state dict fitting the model (the message names it).
    TypeError
        A ``module:factory`` that is not callable or does not return an
        ``nn.Module``.
    """
    check_model_spec(spec)
    import torch

    if spec.startswith("torchvision:"):
        import torchvision

        arch = spec.split(":", 1)[1]
        if arch not in torchvision.models.list_models():
            raise ValueError(f"Unknown torchvision architecture {arch!r}; see torchvision.models.list_models().")
        kwargs = {"num_classes": num_classes} if num_classes else {}
        module = _load_state_dict(torchvision.models.get_model(arch, weights=None, **kwargs), weights)
    elif spec.startswith("timm:"):
        try:
            import timm  # installed with open_clip_torch, a core dependency
        except ImportError:
            raise ImportError("timm models need timm: pip install timm") from None
        arch = spec.split(":", 1)[1]
        kwargs = {"num_classes": num_classes} if num_classes else {}
        module = _load_state_dict(timm.create_model(arch, pretrained=False, **kwargs), weights)
    elif Path(spec).is_file():
        if weights is not None:
            raise ValueError(
                f"`weights` {str(weights)!r} cannot be applied to the TorchScript model {spec!r}, "
                "which carries its own weights; drop `weights`."
            )
        try:
            module = torch.jit.load(spec, map_location="cpu")
        except Exception as exc:
            raise ValueError(f"Cannot load {spec!r} as a TorchScript model: {exc}") from None
    elif ":" in spec:
        mod_name, _, attr = spec.partition(":")
        try:
            factory = getattr(importlib.import_module(mod_name), attr)
        except (ImportError, AttributeError) as exc:
            raise ValueError(f"Cannot import model factory {spec!r}: {exc}") from None
        if not callable(factory):
            raise TypeError(
                f"Model factory {spec!r} is a {type(factory).__name__}, not a callable; expected a "
                "function (or class) that returns a torch.nn.Module."
            )
        built = factory()
        if not isinstance(built, torch.nn.Module):
            raise TypeError(
                f"Model factory {spec!r} returned a {type(built).__name__}; expected a torch.nn.Module "
                "(call it with no argument and return the model)."
            )
        module = _load_state_dict(built, weights)
    else:  # pragma: no cover - check_model_spec refused it
        raise _not_a_spec(spec)
    return module.eval()


def default_transform(image_size=224):
    """ImageNet-style evaluation preprocessing."""
    from torchvision import transforms

    return transforms.Compose(
        [
            transforms.Resize(int(image_size * 256 / 224)),
            transforms.CenterCrop(image_size),
            transforms.ToTensor(),
            transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
        ]
    )


def predict_probabilities(model, paths, *, transform=None, batch_size=64, num_workers=0, device=None, progress=False):
    """Softmax class probabilities of ``model`` over image files.

    Returns
    -------
    probs : ndarray of shape (n_ok, n_classes)
    ok : ndarray of bool, shape (n_paths,)
        Images that could be read.
    """
    import torch
    from torch.utils.data import DataLoader
    from tqdm.auto import tqdm

    from .batches import ImageDataset, collate_images
    from .confidence import softmax
    from .device import resolve_device

    device = resolve_device(device)
    model = model.to(device)
    loader = DataLoader(
        ImageDataset(list(paths), transform or default_transform()),
        batch_size=batch_size,
        num_workers=num_workers,
        collate_fn=collate_images,
    )
    rows, ok = {}, np.zeros(len(paths), dtype=bool)
    with torch.inference_mode():
        for ids, batch, _ in tqdm(loader, desc="running model", disable=not progress):
            if batch is None:
                continue
            logits = model(batch.to(device))
            if isinstance(logits, (tuple, list)):
                logits = logits[0]
            for j, row in zip(ids, softmax(logits.float().cpu().numpy())):  # ids index into `paths`
                rows[j] = row
                ok[j] = True
    probs = np.stack([rows[i] for i in sorted(rows)]) if rows else np.zeros((0, 0))
    return probs, ok
