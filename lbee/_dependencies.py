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
)


def missing_core(exc: ModuleNotFoundError) -> ImportError | None:
    """The error to raise for ``exc`` when it names a core dependency (None when it does not).

    Run as the ``lbee`` command, the message is printed as one line and the process exits with status 1.
    """
    name = (exc.name or "").split(".")[0]
    if name not in CORE_MODULES:
        return None
    message = (
        f"lbee needs {name!r}, which this Python ({sys.executable}) does not have: lbee was installed without its "
        "dependencies (pip install --no-deps?). Install it again with them: pip install lbee-<version>.whl, or "
        "pip install -e . in a clone."
    )
    if os.path.basename(sys.argv[0] or "") in ("lbee", "lbee.exe"):  # the command: one line, no traceback
        sys.stderr.write(f"Error: {message}\n")
        raise SystemExit(1)
    return ImportError(message)
