"""Refuse to re-point a virtual environment whose lbee is installed from another checkout.

``make demo`` / ``make test`` install lbee into ``.venv`` in editable mode. When ``.venv`` is shared with another
clone (a link to it, or a worktree), that install would silently make the other clone's ``import lbee`` load this
one (a twenty-ninth user's trial). Exit 1 with what to do when the venv's lbee comes from elsewhere; 0 otherwise.

Usage: .venv/bin/python scripts/check_venv_home.py  (run from the checkout; LBEE_REPOINT_VENV=1 allows it)
"""

import json
import os
import sys
from importlib.metadata import distributions
from pathlib import Path
from urllib.parse import unquote, urlparse


def installed_from():
    """The folder the venv's lbee was installed from in editable mode, or None (not installed, or from a wheel)."""
    texts = [d.read_text("direct_url.json") for d in distributions(name="lbee")]  # an egg-info beside has none
    text = next((t for t in texts if t), None)
    if not text:
        return None
    try:
        record = json.loads(text)
    except ValueError:  # a damaged record: nothing to tell from it, as for an install without one
        return None
    if not isinstance(record, dict) or not isinstance(record.get("dir_info"), dict):
        return None
    if not record["dir_info"].get("editable") or not isinstance(record.get("url"), str):
        return None
    return Path(unquote(urlparse(record["url"]).path)).resolve()


def main():
    here, there = Path.cwd().resolve(), installed_from()
    if there is None or there == here or os.environ.get("LBEE_REPOINT_VENV") == "1":
        return 0
    if not (there / "pyproject.toml").is_file():  # that checkout was moved or removed: nothing to take from it
        return 0
    sys.stderr.write(
        f"make: .venv's lbee is installed from {there}, not from this folder ({here}): installing here would make "
        f"every `import lbee` of that environment load this folder instead. Give this clone a .venv of its own "
        f"(remove the link or folder '.venv' and run make again), or set LBEE_REPOINT_VENV=1 to re-point it.\n"
    )
    return 1


if __name__ == "__main__":
    sys.exit(main())
