"""Encoder registry and spec parsing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_REGISTRY: dict[str, Callable[..., Any]] = {}


#: What a run on random weights says, in every place (terminal, HTML page, service pages, ``lbee embed``,
#: ``lbee submit``): one text.
RANDOM_WEIGHTS_BANNER = (
    "Random weights: the encoder {encoder} was never trained, so its embeddings and any sentences chosen with them "
    "are meaningless. This run only shows that the pipeline works; describe with pretrained weights (drop '@random') "
    "for a real audit."
)
#: The same, for a list of runs some of which used random weights (the service's run list).
RANDOM_WEIGHTS_BANNER_RUNS = (
    "Random weights: the encoders of the runs marked below were never trained, so their sentences are meaningless. "
    "Those runs only show that the pipeline works; describe with pretrained weights (drop '@random') for a real audit."
)


def register_encoder(name):
    """Decorator registering a constructor ``f(model=None, pretrained=None, **kwargs) -> Encoder``."""

    def wrap(factory):
        _REGISTRY[name] = factory
        return factory

    return wrap


def _ensure_builtins():
    from . import (
        _open_clip,  # noqa: F401  (registers "open_clip")
        _spotcheck,  # noqa: F401  (registers "spotcheck")
    )


def list_encoders():
    """Registered encoder names, sorted."""
    _ensure_builtins()
    return sorted(_REGISTRY)


def parse_encoder_spec(spec):
    """Split an encoder spec into (backend, model, pretrained).

    Accepted forms: ``"open_clip"``, ``"open_clip:ViT-B-32"``,
    ``"open_clip:ViT-B-32@laion2b_s34b_b79k"``, ``"open_clip:ViT-B-32@/path/to/ckpt.pt"``,
    ``"open_clip:hf-hub:org/repo"``, ``"open_clip:ViT-B-32@random"`` or ``@random:SEED``
    (seeded random weights, seed 0 by default: to try the pipeline without weights; the
    same seed gives the same weights, so the embedding cache hits on rerun).
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"`encoder` must be a non-empty spec such as 'open_clip:ViT-B-32'; received {spec!r}.")
    backend, _, rest = spec.strip().partition(":")
    model, pretrained = rest or None, None
    if model and not model.startswith("hf-hub:") and "@" in model:
        model, pretrained = model.split("@", 1)
    return backend, model or None, pretrained or None


def is_random_tag(tag):
    """Whether the ``@TAG`` of a spec asks for seeded random weights (``@random``, ``@random:SEED``, ``@none``)."""
    return isinstance(tag, str) and (tag.lower() in ("none", "random") or tag.lower().startswith("random:"))


def create_encoder(spec="open_clip", *, pretrained=None, **kwargs):
    """Build an encoder from a spec string (see [`parse_encoder_spec`][lbee.encoders.parse_encoder_spec]).

    Parameters
    ----------
    spec : str, default='open_clip'
    pretrained : str, optional
        Overrides the tag or checkpoint given in ``spec``.
    **kwargs
        Passed to the backend (``device``, ``precision``, ...).
    """
    _ensure_builtins()
    backend, model, tag = parse_encoder_spec(spec)
    if backend not in _REGISTRY:
        raise ValueError(f"Unknown encoder {backend!r}; valid encoders: {', '.join(sorted(_REGISTRY))}.")
    return _REGISTRY[backend](model=model, pretrained=pretrained or tag, **kwargs)


def _open_clip_model_names():
    """open_clip's model names from its shipped configs, without importing it (torch takes seconds)."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("open_clip")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "model_configs"
    names = {p.stem for p in folder.glob("*.json")}
    return names or None


def check_encoder_spec(spec, *, weights=False):
    """Check an encoder spec in a fraction of a second, before any model is loaded.

    The backend must be registered; an open_clip model name must be one of
    open_clip's configs (read from its files, no import); a checkpoint path
    must exist. The encoder's own constructor checks the rest (weights that
    can be reached). Raises ``ValueError`` naming the spec, what was received
    and what is expected (with the nearest valid name), or
    `lbee.extras.MissingExtraError` when the encoder needs an extra that
    is not installed. With ``weights=True``, the default open_clip weights must
    also be in the hub cache or downloadable, else `EncoderLoadError`
    (still without importing torch: ``lbee describe`` says so in a second, not
    after half a minute of imports).

    Returns
    -------
    (str, str or None, str or None)
        As [`parse_encoder_spec`][lbee.encoders.parse_encoder_spec].
    """
    import difflib
    import os
    from pathlib import Path

    backend, model, tag = parse_encoder_spec(spec)
    names = list_encoders()
    if backend not in names:
        near = difflib.get_close_matches(backend, names, n=1)
        raise ValueError(
            f"encoder {spec!r}: unknown encoder {backend!r}"
            f"{f' (did you mean {near[0]!r}?)' if near else ''}; expected one of {', '.join(names)}."
        )
    if backend == "open_clip" and model and not model.startswith("hf-hub:"):
        known = _open_clip_model_names()
        if known is not None and model not in known:
            near = difflib.get_close_matches(model, sorted(known), n=1)
            raise ValueError(
                f"encoder {spec!r}: unknown open_clip model {model!r}"
                f"{f' (did you mean {near[0]!r}?)' if near else ''}; see open_clip.list_models(), "
                "e.g. 'ViT-B-32', or use 'hf-hub:ORG/REPO'."
            )
    if backend == "spotcheck":  # its text tower is an extra: say so now, not after the images are embedded
        if model:  # one architecture: a model part was ignored, and the shipped weights ran (sweep 32ao N2)
            raise ValueError(
                f"encoder {spec!r}: the SpotCheck encoder has one model; expected 'spotcheck', or "
                f"'spotcheck:@WEIGHTS' for weights of your own (received the model part {model!r})."
            )
        from ..extras import require_extra

        require_extra("spotcheck", needed_for=f"encoder {spec!r}")
    if (
        tag
        and (os.sep in tag or tag.endswith((".pt", ".pth", ".bin", ".safetensors", ".ckpt")))
        and not Path(tag).is_file()
    ):
        raise ValueError(f"encoder {spec!r}: the checkpoint file {tag!r} does not exist.")
    if weights and backend == "open_clip" and not is_random_tag(tag) and not (model or "").startswith("hf-hub:"):
        from ._open_clip import check_weights_before_loading

        check_weights_before_loading(model, tag)
    return backend, model, tag


def _in_saved_world(images):
    """Whether every image of ``images`` (a folder or manifest) lies in a saved SpotCheck world's ``images`` folder.

    ``images`` must be a saved world of this user's or root's, or lie in its ``images`` folder. Any ``ec.json``
    above the images lifted the caveat, and an empty one another user left in /tmp took it from every run under
    /tmp (sweep 32av B3): the world must be whole (`lbee.spotcheck.EC_ENTRIES`), its ``ec.json`` a definition, and
    neither it nor its folder changeable by another user. And the images themselves, not the manifest that lists
    them, must lie in its ``images`` folder: a manifest kept there listing photos elsewhere lifted it (sweep 32aw B1).
    """
    import os
    from pathlib import Path

    world = _saved_world(Path(images).resolve())
    if world is None:
        return False
    from ..io.images import discover_images

    try:
        paths = discover_images(images).paths
    except (OSError, ValueError):
        return False
    try:
        st = os.lstat(world / "images")
    except OSError:
        return False
    if st.st_mode & 0o022 and hasattr(os, "geteuid"):  # another user could plant images (or links) there
        return False
    inside = str((world / "images").resolve()) + os.sep
    # each file resolved: a link in the images folder to a photo elsewhere is that photo (review of sweep 32aw B1)
    return all(os.path.realpath(p).startswith(inside) for p in paths)


def _saved_world(here):
    """The saved SpotCheck world of this user's or root's that ``here`` is, or lies in the ``images`` folder of."""
    import json
    import os
    import stat

    from ..spotcheck import EC_ENTRIES, MAX_EC_JSON_BYTES

    me = os.geteuid() if hasattr(os, "geteuid") else None
    for world in (here, *here.parents):
        if here not in (world, world / "images") and world / "images" not in here.parents:
            continue
        try:
            checked = [os.lstat(world), os.lstat(world / "ec.json")]
            whole = all(os.path.lexists(world / name) for name in EC_ENTRIES)
            ours = me is None or all(st.st_uid in (me, 0) and not st.st_mode & 0o022 for st in checked)
            if not (whole and ours and stat.S_ISREG(checked[1].st_mode) and checked[1].st_size <= MAX_EC_JSON_BYTES):
                continue
            definition = json.loads((world / "ec.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(definition, dict) and isinstance(definition.get("dataset"), dict):
            return world
    return None


def encoder_caveat(spec, images=None):
    """A plain warning when an encoder cannot describe ordinary images, else None.

    ``spotcheck`` is trained on SpotCheck renders only (on photos every image
    comes out alike, "a red square"), so it is warned about unless ``images``
    (a folder or manifest) lies in a saved SpotCheck world (`_in_saved_world`);
    ``@random`` weights embed noise. Either runs the pipeline, but the
    sentences chosen mean nothing.
    """
    backend, model, tag = parse_encoder_spec(spec)
    if backend == "spotcheck" and images is not None and _in_saved_world(images):
        return None
    if backend == "spotcheck":
        return (
            f"encoder {spec!r} was trained on SpotCheck renders only, and these images lie in no saved SpotCheck "
            "world of yours (no ec.json of a whole world above them): unless they are SpotCheck renders, its "
            "embeddings do not follow the image content and the sentences chosen will be meaningless. Use open_clip "
            "for real images."
        )
    if is_random_tag(tag):
        return RANDOM_WEIGHTS_BANNER.format(encoder=spec.rsplit("@", 1)[0])
    return None
