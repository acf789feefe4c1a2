"""``python -m lbee.cli ...`` is ``lbee ...``."""

from . import cli

cli(obj={}, prog_name="lbee")
