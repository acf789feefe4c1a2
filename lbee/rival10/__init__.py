"""RIVAL10 (Moayeri et al., CVPR 2022): real images with exact attribute ground truth and object masks.

>>> from lbee.rival10 import load_rival10
>>> data = load_rival10("/data/RIVAL10", "test")     # doctest: +SKIP
>>> data.relevance.shape                              # doctest: +SKIP
(5286, 28)
"""

from ._dataset import (
    ATTRIBUTE_SENTENCES,
    ATTRIBUTES,
    CLASS_SENTENCES,
    CLASSES,
    EXPORT_ENTRIES,
    WNID_TO_CLASS,
    Rival10Split,
    decode_mask,
    export_rival10,
    load_rival10,
    object_mask,
    read_class_map,
    rival10_sentences,
)
from ._pickle import UnsafePickleError, load_attr_dict

__all__ = [
    "ATTRIBUTES",
    "ATTRIBUTE_SENTENCES",
    "CLASSES",
    "CLASS_SENTENCES",
    "EXPORT_ENTRIES",
    "WNID_TO_CLASS",
    "Rival10Split",
    "UnsafePickleError",
    "decode_mask",
    "export_rival10",
    "load_attr_dict",
    "load_rival10",
    "object_mask",
    "read_class_map",
    "rival10_sentences",
]
