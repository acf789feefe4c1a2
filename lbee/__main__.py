"""``python -m lbee ...`` is ``lbee ...`` (trial 39 tried it first)."""

from lbee.cli import cli

if __name__ == "__main__":
    cli(obj={}, prog_name="lbee")
