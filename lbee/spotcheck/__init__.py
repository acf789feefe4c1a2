"""The SpotCheck synthetic world (SpotCheck, Plumb et al.): known attributes, known blindspots.

>>> from lbee.spotcheck import make_ec
>>> ec = make_ec(random_state=0)            # doctest: +SKIP
>>> ec.describe_blindspots()                # doctest: +SKIP
"""

from importlib import import_module
from typing import TYPE_CHECKING

from ._captions import sample_caption
from ._classifier import (
    DEFAULT_GATE,
    domino_synthetic_predictions,
    predict,
    train_classifier,
    verification_failure,
    verify_blindspots,
)
from ._configuration import EC_ENTRIES, EC_VERSION, MAX_EC_JSON_BYTES, CorruptECError, ExperimentalConfiguration
from ._counterfactual import (
    N_COUNTERFACTUAL,
    NEEDED_ACCURACY,
    CounterfactualCheck,
    RenderedCheck,
    counterfactual_check,
    one_condition_variants,
)
from ._ec import PAPER_WORLD, make_ec
from ._render import COLORS, render
from ._sentences import relevance_matrix, spotcheck_sentences
from ._world import ATTRIBUTES, Blindspot, DatasetDefinition, UnsatisfiableError, sample_blindspots, sample_dataset

if TYPE_CHECKING:  # for static tools; at run time the networks (and torch under them) load on first use
    from ._network import ImageTower, SquareClassifier, TextHead, to_tensor

#: The world's networks (torch modules), imported on first access: ``import lbee.spotcheck`` does not import torch.
_LAZY = {"ImageTower": "._network", "SquareClassifier": "._network", "TextHead": "._network", "to_tensor": "._network"}


def __getattr__(name):
    """The networks of `_LAZY`, imported on first access (PEP 562)."""
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(_LAZY[name], __name__), name)
    globals()[name] = value  # later look-ups skip this function
    return value


__all__ = [
    "ATTRIBUTES",
    "COLORS",
    "DEFAULT_GATE",
    "EC_ENTRIES",
    "MAX_EC_JSON_BYTES",
    "EC_VERSION",
    "N_COUNTERFACTUAL",
    "NEEDED_ACCURACY",
    "PAPER_WORLD",
    "Blindspot",
    "CorruptECError",
    "CounterfactualCheck",
    "DatasetDefinition",
    "ExperimentalConfiguration",
    "ImageTower",
    "RenderedCheck",
    "SquareClassifier",
    "TextHead",
    "UnsatisfiableError",
    "counterfactual_check",
    "domino_synthetic_predictions",
    "make_ec",
    "one_condition_variants",
    "predict",
    "relevance_matrix",
    "render",
    "sample_blindspots",
    "sample_caption",
    "sample_dataset",
    "spotcheck_sentences",
    "to_tensor",
    "train_classifier",
    "verification_failure",
    "verify_blindspots",
]
