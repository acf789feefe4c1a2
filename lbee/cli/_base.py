"""The ``lbee`` root group and what every command shares.

Heavy imports (torch, faiss, open_clip) happen inside command bodies so that
``lbee --help`` stays fast.
"""

from __future__ import annotations


import click

from .._version import __version__

METHOD_CHOICES = ["tops", "setdiff", "pdiff", "fpdiff", "domino", "all"]


class LbeeError(click.ClickException):
    """A user-facing error: message, exit code 1, no traceback."""


def _fail(exc):
    raise LbeeError(str(exc)) from exc


@click.group(context_settings={"auto_envvar_prefix": "LBEE", "help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="lbee")
@click.option("--cache-dir", type=click.Path(file_okay=False), default=None,
              help="Embedding cache folder [env LBEE_CACHE_DIR; default ~/.cache/lbee].")
@click.option("--device", default=None, help="torch device, e.g. cpu or cuda:0 [default: cuda if available].")
@click.option("-q", "--quiet", is_flag=True, help="No progress bars.")
@click.pass_context
def cli(ctx, cache_dir, device, quiet):
    """lbee: find, and describe in plain language, where a vision model fails."""
    ctx.ensure_object(dict)
    ctx.obj.update(cache_dir=cache_dir, device=device, progress=not quiet)




def _log(msg):
    click.echo(msg, err=True)


def _methods(method):
    from ..core.selection import METHODS

    if "all" in method or not method:
        return list(METHODS)
    return list(dict.fromkeys(method))


def _load_npy(path, name):
    import numpy as np

    try:
        return np.load(path)
    except (OSError, ValueError) as exc:
        raise LbeeError(f"Cannot read {name} {path!r}: {exc}") from None
