"""Slicers: scikit-learn-style estimators that partition data and expose underperforming groups.

Each fitted slicer has ``slices_`` (index arrays, most important first), used
as hypothesised blindspots by the DR / FDR / precision@k evaluators and as hard
groups by ``lbee.explain(..., slicer=obj)``.
"""

from ._base import BaseSlicer
from ._domino import DominoSlicer
from ._planespot import PlaneSpotSlicer
from ._scvis import ScVis

#: Registered slicers, by name (``slicer="ward"`` in ``explain`` is LBEE's own split-and-cluster).
SLICERS = {"domino": DominoSlicer, "planespot": PlaneSpotSlicer}


def list_slicers():
    return sorted(SLICERS)


def create_slicer(name, **params):
    """Build a registered slicer by name; an unknown name lists the valid ones."""
    if name not in SLICERS:
        raise ValueError(f"Unknown slicer {name!r}; valid slicers: {', '.join(sorted(SLICERS))} (and 'ward' in "
                         "lbee.explain).")
    return SLICERS[name](**params)


__all__ = ["BaseSlicer", "DominoSlicer", "PlaneSpotSlicer", "ScVis", "SLICERS", "create_slicer", "list_slicers"]
