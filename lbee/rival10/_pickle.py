"""A restricted unpickler for RIVAL10's ``<stem>_attr_dict.pkl`` files.

RIVAL10 ships, per image, a pickled ``dict`` from attribute name (or
``entire-object``) to a base64-encoded JPEG mask (RIVAL10 §3.1, app. A). A
pickle can run arbitrary code when loaded (its ``REDUCE`` / ``GLOBAL``
opcodes import and call any callable), so these files are read with an
unpickler that resolves **no** global at all: dicts, strings and bytes are
built by opcodes that need no import, and anything that needs one (a class, a
function such as ``os.system``) is refused before it can be called. The loaded
value is then checked to be a ``dict`` from ``str`` to ``str`` / ``bytes``.

Pickles written with protocol 0–2 encode ``bytes`` through the global
``_codecs.encode``; such files are refused too (RIVAL10's files use protocol 3
or later, or base64 strings).
"""

from __future__ import annotations

import io
import pickle
from pathlib import Path


class UnsafePickleError(ValueError):
    """A pickle asked for something other than dicts, strings and bytes."""


class _DictStrBytesUnpickler(pickle.Unpickler):
    def __init__(self, file, source):
        super().__init__(file)
        self._source = source

    def find_class(self, module, name):  # every GLOBAL / STACK_GLOBAL / INST / OBJ ends here
        raise UnsafePickleError(
            f"Refused to load {self._source!r}: the pickle asks for {module}.{name}, but RIVAL10 attribute "
            "files may only hold a dict of strings and bytes; nothing in it was run."
        )

    def persistent_load(self, pid):
        raise UnsafePickleError(
            f"Refused to load {self._source!r}: it uses persistent ids; "
            "RIVAL10 attribute files may only hold a dict of strings and bytes."
        )


def load_attr_dict(path):
    """Read a RIVAL10 ``*_attr_dict.pkl`` safely.

    Parameters
    ----------
    path : path-like

    Returns
    -------
    dict of str to (str or bytes)
        Attribute name (or ``'entire-object'``) to its base64-encoded JPEG mask.

    Raises
    ------
    UnsafePickleError
        The pickle needs a global (a class or function): it is not loaded and
        nothing it carries runs. Also raised when the result is not a dict of
        strings to strings / bytes.
    ValueError
        The file cannot be read or is not a pickle.
    """
    path = Path(path)
    try:
        from ..io.confinement import read_bytes_file

        data = read_bytes_file(path, "attribute file")
    except OSError as exc:
        raise ValueError(f"Cannot read attribute file {str(path)!r}: {exc}") from None
    try:
        obj = _DictStrBytesUnpickler(io.BytesIO(data), str(path)).load()
    except UnsafePickleError:
        raise
    except Exception as exc:  # truncated or not a pickle at all
        raise ValueError(
            f"Attribute file {str(path)!r} is not a readable pickle: {type(exc).__name__}: {exc}"
        ) from None
    if not isinstance(obj, dict):
        raise UnsafePickleError(
            f"Attribute file {str(path)!r} holds a {type(obj).__name__}; expected a dict "
            "from attribute name to base64 mask."
        )
    for key, value in obj.items():
        if not isinstance(key, str) or not isinstance(value, (str, bytes)):
            raise UnsafePickleError(
                f"Attribute file {str(path)!r} maps {key!r} ({type(key).__name__}) to a {type(value).__name__}; "
                "expected str keys and str / bytes values (base64 JPEG masks)."
            )
    return obj
