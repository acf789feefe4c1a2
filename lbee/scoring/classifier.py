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

from .torch_files import check_stored_zip, check_torchscript_zip, load_error_line, torchscript_entries


def _read_state_dict(weights):
    """The state dict of a ``weights`` file: (name -> tensor), checked before anything is built from it."""
    import torch

    from .._files import pinned

    path = Path(weights)
    with pinned(path, "`weights` file") as src:  # a FIFO, a device, a link out of a job's data root
        if not path.is_file():
            raise FileNotFoundError(f"`weights` file {str(path)!r} does not exist.")
        if torchscript_entries(src):  # said as what it is, not as an archive with compressed entries
            raise ValueError(
                f"`weights` {str(path)!r} is a TorchScript file, which carries its own weights; expected a state "
                "dict saved with torch.save(model.state_dict(), path) (on the command line a TorchScript file is "
                "given as the model itself: --model FILE)."
            )
        check_stored_zip(src, name=path)
        try:
            state = torch.load(src, map_location="cpu", weights_only=True)
        except Exception as exc:  # not a torch file, or a pickled object beyond plain tensors
            raise ValueError(
                f"`weights` {str(path)!r} is not a loadable state dict ({type(exc).__name__}: "
                f"{load_error_line(exc)}); expected a file saved with "
                "torch.save(model.state_dict(), path). A whole pickled model is not accepted as weights: save "
                "its state dict."
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
    return state


def _check_fit(module, state, weights):
    """Refuse a state dict that lacks an entry of ``module`` or holds one of another shape.

    ``module`` may be on the meta device: nothing is allocated.
    """
    expected = module.state_dict()
    missing = [k for k in expected if k not in state]
    if missing:
        raise ValueError(
            f"`weights` {str(weights)!r} lacks {len(missing)} parameter(s) of the model, "
            f"first: {missing[:3]}; is it the right architecture?"
        )
    for k, v in expected.items():
        if tuple(state[k].shape) != tuple(v.shape):
            raise ValueError(
                f"`weights` {str(weights)!r} does not fit the model: {k!r} has shape {tuple(state[k].shape)} in "
                f"the file and {tuple(v.shape)} in the model; is it the right architecture?"
            )


def _load_state_dict(module, weights, state=None):
    """``module`` with the ``weights`` file's state dict loaded (``state``: that dict, already read)."""
    if weights is None:
        return module
    state = _read_state_dict(weights) if state is None else state
    _check_fit(module, state, weights)
    try:
        module.load_state_dict(state, strict=False)
    except RuntimeError as exc:  # pragma: no cover - _check_fit compared every shape
        first = str(exc).strip().splitlines()
        raise ValueError(
            f"`weights` {str(weights)!r} does not fit the model: "
            f"{' '.join(line.strip() for line in first[:3])}; is it the right architecture?"
        ) from None
    return module


#: The most parameters an architecture built without ``weights`` may have (random weights, to try lbee out;
#: ViT-L/14 has 0.3 B). With weights, the model must fit them: its size is the weights file's. A job of a few bytes
#: naming ``timm:vit_giant_patch14_clip_224`` took 4.9 GB before its weights were found not to fit (sweep 22).
MAX_UNWEIGHTED_PARAMETERS = 400_000_000


#: A model may hold at most this many times the bytes its weights file stores, and 16 MiB more: tied weights share
#: storage (a state dict of views of one small tensor, or of zero-stride ones, built a 2 GB model from 36 KB: sweep 23).
MAX_WEIGHTS_SHARING = 2


def _stored_bytes(state, weights):
    """The bytes a state dict stores, each storage once; refused when a tensor holds more than its storage."""
    seen, total = set(), 0
    for name, t in state.items():
        storage = t.untyped_storage()
        if t.numel() and storage.nbytes() < t.numel() * t.element_size():  # a view repeating fewer bytes
            raise ValueError(
                f"`weights` {str(weights)!r}: {name!r} holds {t.numel():,} values stored in {storage.nbytes():,} "
                "bytes (a view repeating them); expected a state dict saved with torch.save(model.state_dict())."
            )
        if storage.data_ptr() not in seen:
            seen.add(storage.data_ptr())
            total += storage.nbytes()
    return total


def _check_size(n_params, n_bytes, state, weights, spec):
    """Refuse a model of ``n_params`` parameters (``n_bytes`` with its buffers) that its weights cannot justify."""
    if state is None:
        if n_params > MAX_UNWEIGHTED_PARAMETERS:
            raise ValueError(
                f"Model spec {spec!r} has {n_params:,} parameters; without `weights` at most "
                f"{MAX_UNWEIGHTED_PARAMETERS:,} are built (random weights are for trying lbee out): pass the "
                "model's weights."
            )
        return
    stored = _stored_bytes(state, weights)
    if n_bytes > MAX_WEIGHTS_SHARING * stored + (16 << 20):
        raise ValueError(
            f"`weights` {str(weights)!r} stores {stored:,} bytes, but the model {spec!r} needs {n_bytes:,}: it "
            "cannot be its state dict; is it the right architecture?"
        )


def _built(build, weights, spec, n_params=None):
    """The registry model ``build()`` makes, with ``weights`` loaded: checked on the meta device first.

    Built there, the architecture costs no memory; its size (without weights, at most `MAX_UNWEIGHTED_PARAMETERS`;
    with, at most `MAX_WEIGHTS_SHARING` times what the file stores) and its fit to the state dict are checked
    before it is built for real. An architecture that cannot be built on the meta device (torchvision's RegNets
    compute their widths from tensors) is sized by ``n_params`` (torchvision's own metadata), and refused when
    that is unknown.
    """
    import torch

    state = None if weights is None else _read_state_dict(weights)
    try:
        with torch.device("meta"):
            shell = build()
    except (NotImplementedError, RuntimeError):
        if n_params is None:
            raise ValueError(
                f"Model spec {spec!r} cannot be sized before it is built (its constructor reads tensor values); "
                "pass it as a TorchScript file or a module:factory on the command line."
            ) from None
        _check_size(int(n_params), 4 * int(n_params), state, weights, spec)
        return _load_state_dict(build(), weights, state)
    n_bytes = sum(t.numel() * t.element_size() for t in shell.state_dict().values())
    _check_size(sum(p.numel() for p in shell.parameters()), n_bytes, state, weights, spec)
    if state is not None:
        _check_fit(shell, state, weights)
    del shell
    return _load_state_dict(build(), weights, state)


def _not_a_spec(spec):
    return ValueError(
        f"Model spec {spec!r} is neither a file, 'torchvision:<arch>', 'timm:<arch>' nor 'package.module:factory'."
    )


#: The widest classification head a torchvision architecture sized by its metadata may have (features per class):
#: RegNet's widest is 7,392. The metadata counts 1,000 classes; another number of classes changes the head.
MAX_HEAD_WIDTH = 8192


def _torchvision_size(arch, num_classes=None):
    """At most the parameters of a torchvision architecture, by its own metadata (None when it has none).

    The metadata is for 1,000 classes: more classes add at most `MAX_HEAD_WIDTH` + 1 parameters each (a RegNet at
    100,000 classes had 3.5 times its metadata's parameters: sweep 24).
    """
    from ..extras import import_torchvision

    torchvision = import_torchvision(needed_for=f"torchvision:{arch}")
    try:
        n = int(torchvision.models.get_model_weights(arch).DEFAULT.meta["num_params"])
    except (ValueError, KeyError, AttributeError, TypeError):
        return None
    return n + max(0, int(num_classes or 1000) - 1000) * (MAX_HEAD_WIDTH + 1)


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
        if not all(c.isascii() and (c.isalnum() or c in "_.-") for c in arch):
            # timm reads 'local-dir:PATH' and 'hf-hub:REPO' as sources: a file anywhere, or the network (sweep 22)
            raise ValueError(
                f"Model spec {spec!r}: an architecture is a name of letters, digits, '_', '.' and '-' from "
                f"{prefix.rstrip(':')}'s list, such as '{prefix}:resnet50'; received {arch!r}."
            )
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
        from ..extras import import_torchvision

        torchvision = import_torchvision(needed_for=f"--model {spec}")
        arch = spec.split(":", 1)[1]
        if arch not in torchvision.models.list_models():
            raise ValueError(f"Unknown torchvision architecture {arch!r}; see torchvision.models.list_models().")
        kwargs = {"num_classes": num_classes} if num_classes else {}
        size = _torchvision_size(arch, num_classes)
        module = _built(lambda: torchvision.models.get_model(arch, weights=None, **kwargs), weights, spec, size)
    elif spec.startswith("timm:"):
        try:
            import timm  # installed with open_clip_torch, a core dependency
        except ImportError:
            raise ImportError("timm models need timm: pip install timm") from None
        arch = spec.split(":", 1)[1]
        if arch not in timm.list_models():  # never a source such as 'local-dir:' or 'hf-hub:' (sweep 22 S1)
            raise ValueError(f"Unknown timm architecture {arch!r}; see timm.list_models().")
        kwargs = {"num_classes": num_classes} if num_classes else {}
        module = _built(lambda: timm.create_model(arch, pretrained=False, **kwargs), weights, spec)
    elif Path(spec).is_file():
        if weights is not None:
            raise ValueError(
                f"`weights` {str(weights)!r} cannot be applied to the TorchScript model {spec!r}, "
                "which carries its own weights; drop `weights`."
            )
        from .._files import pinned

        with pinned(Path(spec), "TorchScript model") as src:  # checked, then loaded, as one file
            check_torchscript_zip(src, name=spec)
            try:
                module = torch.jit.load(src, map_location="cpu")
            except Exception as exc:  # its pickles are TorchScript's restricted ones: nothing else is run
                raise ValueError(
                    f"Cannot load {spec!r} as a TorchScript model ({type(exc).__name__}: {load_error_line(exc)})."
                ) from None
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
    from ..extras import import_torchvision

    transforms = import_torchvision(needed_for="a model's preprocessing").transforms

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
