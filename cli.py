"""Shim: ``python cli.py ...`` is ``lbee ...``."""

from lbee.cli import cli

if __name__ == "__main__":
    cli(obj={})
