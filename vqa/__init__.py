"""VQA pseudo ground truth for image–sentence relevance (LBEE app. C.2–C.3).

>>> from vqa import questions_for, create_backend, compute_relevance   # doctest: +SKIP
>>> result = compute_relevance(paths, sentences, {"llava": create_backend("llava"),
...                                               "blip": create_backend("blip")}, combine="and")
"""

# `vqa` is a top-level name other distributions may also use: lbee checks this marker before trusting it
# (lbee.cli.vqa.lbee_vqa).
__lbee__ = True

from .backends import (
    Backend,
    BlipBackend,
    CallableBackend,
    LlavaBackend,
    MetadataBackend,
    OFABackend,
    VQAError,
    create_backend,
    list_backends,
    register_backend,
)
from .combine import COMBINATIONS, agreement, agreement_table, combine
from .parsing import parse_answer
from .questions import questions_for, sentence_to_question
from .runner import VQAResult, compute_relevance, parse_backend_spec, write_relevance

__all__ = [
    "Backend",
    "BlipBackend",
    "CallableBackend",
    "COMBINATIONS",
    "LlavaBackend",
    "MetadataBackend",
    "OFABackend",
    "VQAError",
    "VQAResult",
    "agreement",
    "agreement_table",
    "combine",
    "compute_relevance",
    "create_backend",
    "list_backends",
    "parse_answer",
    "parse_backend_spec",
    "questions_for",
    "register_backend",
    "sentence_to_question",
    "write_relevance",
]
