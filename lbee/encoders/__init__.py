"""Image–text encoders: a registry of constructors, queried by name.

>>> from lbee.encoders import create_encoder, list_encoders
>>> enc = create_encoder("open_clip:ViT-B-32@laion2b_s34b_b79k")  # doctest: +SKIP

Specs are parsed in one place, [`parse_encoder_spec`][lbee.encoders.parse_encoder_spec].
"""

from ._base import Encoder, EncoderLoadError
from ._registry import (
    RANDOM_WEIGHTS_BANNER,
    RANDOM_WEIGHTS_BANNER_RUNS,
    check_encoder_spec,
    create_encoder,
    encoder_caveat,
    is_random_tag,
    list_encoders,
    parse_encoder_spec,
    register_encoder,
)

__all__ = [
    "RANDOM_WEIGHTS_BANNER",
    "RANDOM_WEIGHTS_BANNER_RUNS",
    "Encoder",
    "EncoderLoadError",
    "check_encoder_spec",
    "create_encoder",
    "encoder_caveat",
    "is_random_tag",
    "list_encoders",
    "parse_encoder_spec",
    "register_encoder",
]
