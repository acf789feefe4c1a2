"""A griffe extension for the API pages: a parameter's default shown as its value, not the constant's name.

lbee keeps each default in one named constant (``DEFAULT_A``, ``DEFAULT_K``, ...); the rendered signature showed
those names, which a reader cannot look up. Here a default that is a name (or a dotted name) of the function's
module is imported and replaced by the value's ``repr`` when it is a plain literal (number, string, bool, None,
or a tuple of them).
"""

from __future__ import annotations

import importlib
import re

import griffe

_LITERALS = (int, float, str, bool, type(None))
#: What a default written as a constant looks like: ``NAME``, ``module.NAME``, ``NAME["key"]``.
_NAME = re.compile(r"[A-Za-z_][\w.]*(\[[\"']\w+[\"']\])?")


def _plain(value):
    return isinstance(value, _LITERALS) or (isinstance(value, tuple) and all(isinstance(v, _LITERALS) for v in value))


class RealDefaults(griffe.Extension):
    """Replace constant names in signature defaults by their values (`_plain` ones only)."""

    def on_function_instance(self, *, func, **kwargs):
        for param in func.parameters:
            text = None if param.default is None else str(param.default)
            if not text or not _NAME.fullmatch(text):
                continue
            try:  # a name, a dotted name or one key of a mapping (DEFAULT_GATE["min_outside"]) of lbee's own module
                value = eval(text, {"__builtins__": {}}, vars(importlib.import_module(func.module.path)))  # noqa: S307
            except Exception:  # not importable here, or not a module attribute: leave the name
                continue
            if _plain(value):
                param.default = repr(value)
