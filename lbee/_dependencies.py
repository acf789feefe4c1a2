"""A core dependency missing from the Python lbee runs in: one clear line, not a traceback.

A wheel installed with ``--no-deps``, or an environment half upgraded, lacks numpy or pandas; importing lbee then
failed deep inside with ``ModuleNotFoundError`` (an eighteenth user's ``lbee --version``). This module imports
nothing beyond the standard library, so it can say so before anything else is imported.
"""

from __future__ import annotations

import os
import sys

#: The import names of the dependencies every lbee command needs (pyproject.toml's ``dependencies``).
CORE_MODULES = (
    "numpy",
    "scipy",
    "sklearn",
    "pandas",
    "pyarrow",
    "click",
    "tqdm",
    "PIL",
    "joblib",
    "yaml",
    "threadpoolctl",
    "faiss",
    "fastcluster",
    "torch",
    "torchvision",
    "open_clip",
    "huggingface_hub",
)


def core_message(exc: ImportError) -> str | None:
    """What to say of ``exc`` when it names a core dependency that is missing (None when it does not)."""
    name = (getattr(exc, "name", None) or "").split(".")[0]
    if not isinstance(exc, ModuleNotFoundError) or name not in CORE_MODULES:
        return None
    return (
        f"lbee needs {name!r}, which this Python ({sys.executable}) does not have: lbee was installed without its "
        "dependencies (pip install --no-deps?). Install it again with them: pip install lbee-<version>.whl, or "
        "pip install -e . in a clone."
    )


def raise_missing(exc: ModuleNotFoundError) -> None:
    """Raise what an import that failed with ``exc`` should: ``exc`` itself unless it names a core dependency.

    A core dependency: run as the ``lbee`` command, one line and exit status 1; imported, an ImportError saying
    what to do.
    """
    message = core_message(exc)
    if message is None:
        raise exc
    if os.path.basename(sys.argv[0] or "") in ("lbee", "lbee.exe"):  # the command: one line, no traceback
        sys.stderr.write(f"Error: {message}\n")
        raise SystemExit(1)
    raise ImportError(message) from None
