"""The ``lbee`` root group and what every command shares.

Heavy imports (torch, faiss, open_clip) happen inside command bodies so that
``lbee --help`` stays fast.
"""

from __future__ import annotations

from pathlib import Path

import click

from .._version import __version__

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


def check_writable_folder(path, option):
    """Create ``path`` (and its parents) and check a file can be written there, before long work starts."""
    import tempfile

    target = Path(path)
    try:
        target.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=target, prefix=".lbee-write-check-"):
            pass
    except OSError as exc:
        raise LbeeError(f"{option} {str(path)!r} is not a writable folder: {exc.strerror or exc}.") from None
    return target
