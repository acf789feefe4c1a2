"""Slicers: scikit-learn-style estimators that partition data and expose underperforming groups.

Every slicer shares one fit signature, ``fit_split(embeddings, *,
confidence=None, hard=None)`` (LBEE's split as the error signal); each also
keeps its paper's own ``fit``. Each fitted slicer has ``slices_`` (index arrays, most important first), used
as hypothesised blindspots by the DR / FDR / precision@k evaluators and as hard
groups by ``lbee.explain(..., slicer=obj)``.
"""

from ._base import BaseSlicer
from ._domino import DominoSlicer
from ._planespot import PlaneSpotSlicer
from ._ward import WardSlicer

#: Registered slicers, by name. ``ward`` is LBEE's own split-and-cluster (the default everywhere).
SLICERS = {"ward": WardSlicer, "domino": DominoSlicer, "planespot": PlaneSpotSlicer}


def list_slicers():
    return sorted(SLICERS)


def create_slicer(name, **params):
    """Build a registered slicer by name; an unknown name lists the valid ones."""
    if name not in SLICERS:
        raise ValueError(f"Unknown slicer {name!r}; valid slicers: {', '.join(sorted(SLICERS))}.")
    return SLICERS[name](**params)


__all__ = ["BaseSlicer", "WardSlicer", "DominoSlicer", "PlaneSpotSlicer", "SLICERS", "create_slicer",
           "list_slicers"]
