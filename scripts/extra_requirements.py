"""Print the requirements of one of pyproject.toml's extras, one per line, for ``pip install``.

``make docs`` installs the ``docs`` extra's tools alone (the site is built from the source; lbee and torch are
not needed), and pyproject.toml stays the one place that lists them.

Usage: python scripts/extra_requirements.py EXTRA  (run from the checkout)
"""

import sys
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python 3.10: the TOML reader pip itself carries
    from pip._vendor import tomli as tomllib


def main(argv):
    if len(argv) != 1:
        sys.exit("usage: python scripts/extra_requirements.py EXTRA")
    extras = tomllib.loads(Path("pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    if argv[0] not in extras:
        sys.exit(f"pyproject.toml has no extra {argv[0]!r}; it has {', '.join(sorted(extras))}.")
    print("\n".join(extras[argv[0]]))


if __name__ == "__main__":
    main(sys.argv[1:])
