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


def missing_core() -> list[str]:
    """The core dependencies this Python cannot import, found without importing them (`importlib.util.find_spec`)."""
    from importlib.util import find_spec

    missing = []
    for name in CORE_MODULES:
        try:
            if find_spec(name) is None:
                missing.append(name)
        except (ImportError, ValueError):  # a blocked or broken package counts as missing
            missing.append(name)
    return missing


def _reinstall() -> str:
    """How to install lbee again with its dependencies: the wheel it came from when pip recorded it."""
    import json
    from importlib import metadata
    from urllib.parse import unquote, urlparse

    try:
        url = json.loads(metadata.distribution("lbee").read_text("direct_url.json") or "{}").get("url", "")
    except (metadata.PackageNotFoundError, ValueError, OSError, AttributeError):
        url = ""
    where = urlparse(url)
    if where.scheme == "file" and where.path.endswith(".whl"):  # a twentieth user's wheel, named as pip saw it
        return f'pip install "{unquote(where.path)}"'
    return "pip install lbee-<version>.whl, or pip install -e . in a clone"


#: The distributions pip installs for the import names that differ (a twenty-second user read 'sklearn', 'PIL').
PIP_NAMES = {
    "sklearn": "scikit-learn",
    "PIL": "pillow",
    "yaml": "pyyaml",
    "faiss": "faiss-cpu",
    "open_clip": "open_clip_torch",
    "huggingface_hub": "huggingface-hub",
}


def missing_message(names: list[str]) -> str:
    """One line for the core dependencies ``names`` that are missing, and how to install them."""
    said = ", ".join(repr(n) if n not in PIP_NAMES else f"{n!r} (pip: {PIP_NAMES[n]})" for n in names)
    return (
        f"lbee needs {said}, which this Python ({sys.executable}) does not have: lbee was installed without its "
        f"dependencies (pip install --no-deps?). Install it again with them: {_reinstall()}."
    )


def core_message(exc: ImportError) -> str | None:
    """What to say of ``exc`` when it names a core dependency that is missing (None when it does not)."""
    name = (getattr(exc, "name", None) or "").split(".")[0]
    if not isinstance(exc, ModuleNotFoundError) or name not in CORE_MODULES:
        return None
    others = [m for m in missing_core() if m != name]  # every one at once, not one per attempt (trial 21)
    return missing_message([name, *others])


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
