"""Encoder registry and spec parsing."""

from __future__ import annotations

_REGISTRY = {}


def register_encoder(name):
    """Decorator registering a constructor ``f(model=None, pretrained=None, **kwargs) -> Encoder``."""

    def wrap(factory):
        _REGISTRY[name] = factory
        return factory

    return wrap


def _ensure_builtins():
    from . import _open_clip  # noqa: F401  (registers "open_clip")
    from . import _spotcheck  # noqa: F401  (registers "spotcheck")


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


def create_encoder(spec="open_clip", *, pretrained=None, **kwargs):
    """Build an encoder from a spec string (see :func:`parse_encoder_spec`).

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
