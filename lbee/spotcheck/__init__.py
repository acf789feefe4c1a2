"""The SpotCheck synthetic world (SpotCheck, Plumb et al.): known attributes, known blindspots.

>>> from lbee.spotcheck import make_ec
>>> ec = make_ec(random_state=0)            # doctest: +SKIP
>>> ec.describe_blindspots()                # doctest: +SKIP
"""

from ._ec import (CorruptECError, ExperimentalConfiguration, domino_synthetic_predictions, make_ec, predict,
                  train_classifier, verify_blindspots)
from ._render import render
from ._captions import sample_caption
from ._sentences import relevance_matrix, spotcheck_sentences
from ._world import (ATTRIBUTES, Blindspot, DatasetDefinition, UnsatisfiableError, sample_blindspots,
                     sample_dataset)

__all__ = ["ATTRIBUTES", "Blindspot", "CorruptECError", "DatasetDefinition", "ExperimentalConfiguration",
           "UnsatisfiableError", "domino_synthetic_predictions", "make_ec", "predict", "relevance_matrix",
           "render", "sample_blindspots", "sample_caption", "sample_dataset", "spotcheck_sentences",
           "train_classifier", "verify_blindspots"]
