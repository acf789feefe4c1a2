"""The blindspot metrics of `lbee.core.metrics`, under their public name: ``from lbee.metrics import ...``."""

from .core.metrics import *  # noqa: F401,F403
from .core.metrics import __all__  # noqa: F401
