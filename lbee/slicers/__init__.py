"""Slicers: scikit-learn-style estimators that partition data and expose underperforming groups.

Every slicer shares one fit signature, ``fit_split(embeddings, *,
confidence=None, hard=None)`` (LBEE's split as the error signal); each also
keeps its paper's own ``fit``. Each fitted slicer has ``slices_`` (index arrays, most important first), used
as hypothesised blindspots by the DR / FDR / precision@k evaluators and as hard
groups by ``lbee.explain(..., slicer=obj)``.

The classes (and scikit-learn under them) are imported on first use: the CLI
reads `SLICER_NAMES` for its ``--slicers`` choices, and ``lbee describe
--help`` must not wait seconds for scikit-learn.
"""

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # for static tools (type checkers, the API reference); at run time they load on first use
    from ._base import BaseSlicer
    from ._domino import DominoSlicer
    from ._planespot import PlaneSpotSlicer
    from ._ward import WardSlicer

#: Registered slicers: name -> (module, class). ``ward`` is LBEE's own split-and-cluster (the default everywhere).
_REGISTRY = {
    "ward": ("._ward", "WardSlicer"),
    "domino": ("._domino", "DominoSlicer"),
    "planespot": ("._planespot", "PlaneSpotSlicer"),
}
#: The registered slicer names, known without importing any slicer.
SLICER_NAMES = tuple(_REGISTRY)
_LAZY = {"BaseSlicer": "._base", **{cls: mod for mod, cls in _REGISTRY.values()}}


def __getattr__(name):
    """``SLICERS`` (name -> class) and the slicer classes, imported on first access (PEP 562)."""
    if name == "SLICERS":
        value = {n: getattr(import_module(mod, __name__), cls) for n, (mod, cls) in _REGISTRY.items()}
    elif name in _LAZY:
        value = getattr(import_module(_LAZY[name], __name__), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__():
    return sorted(__all__)


def list_slicers():
    return sorted(SLICER_NAMES)


def create_slicer(name, **params):
    """Build a registered slicer by name; an unknown name lists the valid ones."""
    if name not in _REGISTRY:
        raise ValueError(f"Unknown slicer {name!r}; valid slicers: {', '.join(sorted(SLICER_NAMES))}.")
    mod, cls = _REGISTRY[name]
    return getattr(import_module(mod, __name__), cls)(**params)


__all__ = [
    "BaseSlicer",
    "WardSlicer",
    "DominoSlicer",
    "PlaneSpotSlicer",
    "SLICERS",
    "SLICER_NAMES",
    "create_slicer",
    "list_slicers",
]
