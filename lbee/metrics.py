"""Alias of :mod:`lbee.core.metrics` (SPEC §2: ``from lbee.metrics import ...``)."""

from .core.metrics import *  # noqa: F401,F403
from .core.metrics import __all__  # noqa: F401
