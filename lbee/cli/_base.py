"""The ``lbee`` root group and what every command shares.

Heavy imports (torch, faiss, open_clip) happen inside command bodies so that
``lbee --help`` stays fast.
"""

from __future__ import annotations

from pathlib import Path

import click

from .._validation import MAX_SEED
from .._version import __version__


class LbeeError(click.ClickException):
    """A user-facing error: message, exit code 1, no traceback."""


#: Errors that bad input raises in the library (they name the argument or file): shown as a message, exit 1.
USER_ERRORS = (ValueError, TypeError, KeyError, OSError, RuntimeError, ImportError)


#: The type of every seed option: numpy's generator range, as lbee._validation.check_seed (config, service).
SEED = click.IntRange(0, MAX_SEED)


class FloatRange(click.FloatRange):
    """click's FloatRange that also refuses NaN ('nan' passes every comparison, so every bound)."""

    def convert(self, value, param, ctx):
        import math

        number = super().convert(value, param, ctx)
        if math.isnan(number):
            self.fail(f"{value!r} is not a number.", param, ctx)
        return number


class LbeeGroup(click.Group):
    """The root group: a library error under any command ends in its message, not a traceback.

    ``--debug`` (or ``LBEE_DEBUG=1``) lets the traceback through.
    """

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except USER_ERRORS as exc:
            if (ctx.obj or {}).get("debug"):
                raise
            if isinstance(exc, OSError) and exc.filename:
                msg = f"{exc.strerror or exc}: {exc.filename}"
            elif isinstance(exc, (ValueError, KeyError)):
                msg = str(exc).strip("'\"")
            else:
                msg = f"{type(exc).__name__}: {exc}"
            raise LbeeError(msg + " (run with --debug for the traceback)") from None


def fail(exc):
    """Turn a library error into a one-line message (exit 1); ``--debug`` re-raises it with its traceback."""
    ctx = click.get_current_context(silent=True)
    if ctx is not None and (ctx.find_root().obj or {}).get("debug"):
        raise exc
    raise LbeeError(str(exc)) from exc


@click.group(cls=LbeeGroup, context_settings={"auto_envvar_prefix": "LBEE", "help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="lbee")
@click.option(
    "--cache-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Embedding cache folder [env LBEE_CACHE_DIR; default ~/.cache/lbee].",
)
@click.option("--device", default=None, help="torch device, e.g. cpu or cuda:0 [default: cuda if available].")
@click.option("-q", "--quiet", is_flag=True, help="No progress bars.")
@click.option("-v", "--verbose", is_flag=True, help="More detail, including other libraries' log lines.")
@click.option("--debug", is_flag=True, help="Show Python tracebacks of errors [env LBEE_DEBUG].")
@click.pass_context
def cli(ctx, cache_dir, device, quiet, verbose, debug):
    """lbee: find, and describe in plain language, where a vision model fails."""
    ctx.ensure_object(dict)
    ctx.obj.update(cache_dir=cache_dir, device=device, progress=not quiet, debug=debug, verbose=verbose)
    setup_logging(verbose)


def log(msg):
    """One line on stderr (notes and warnings of a command; stdout keeps its results)."""
    click.echo(msg, err=True)


def setup_logging(verbose=False):
    """One voice on stderr: the ``lbee`` logger's lines, and Python warnings as one plain line each.

    Other libraries' root-logger lines (open_clip's "No pretrained weights loaded", ...) and
    warnings' source lines show only with ``-v``.
    """
    import logging
    import warnings

    class EchoHandler(logging.Handler):
        """Writes to the current stderr at each record (click's test runner swaps it)."""

        def emit(self, record):
            click.echo(self.format(record), err=True)

    logger = logging.getLogger("lbee")
    for h in [h for h in logger.handlers if type(h).__name__ == "EchoHandler"]:
        logger.removeHandler(h)
    handler = EchoHandler()
    handler.setFormatter(logging.Formatter("%(levelname)s: %(message)s" if verbose else "%(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG if verbose else logging.INFO)
    logging.getLogger().setLevel(logging.INFO if verbose else logging.ERROR)
    if not verbose:

        def show(message, category, filename, lineno, file=None, line=None):
            if issubclass(category, (DeprecationWarning, FutureWarning)):
                return  # library internals, not the user's input
            import shutil
            import textwrap

            width = max(40, shutil.get_terminal_size((100, 24)).columns)  # $COLUMNS, else the terminal
            click.echo(
                textwrap.fill(
                    f"Warning: {message}",
                    width=width,
                    subsequent_indent="  ",
                    break_long_words=False,
                    break_on_hyphens=False,
                ),
                err=True,
            )

        warnings.showwarning = show


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


def check_encoder_spec(spec, option="--encoder"):
    """`lbee.run.models.check_encoder_spec` as a usage error, before any heavy import."""
    from ..extras import MissingExtraError
    from ..run.models import check_encoder_spec as check

    try:
        return check(spec)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint=option) from None
    except MissingExtraError as exc:
        raise LbeeError(str(exc)) from None


def require_extra(*extras, needed_for):
    """`lbee.extras.require_extra` as a one-line CLI error (exit 1), before any heavy import."""
    from ..extras import MissingExtraError
    from ..extras import require_extra as require

    try:
        require(*extras, needed_for=needed_for)
    except MissingExtraError as exc:
        raise LbeeError(str(exc)) from None


def _check_engine(ctx, param, value):
    if value == "ray":
        require_extra("ray", needed_for="--engine ray")
    return value


def ray_options(what):
    """The options every command with a Ray engine shares (``lbee embed``, ``lbee vqa``)."""

    def decorate(fn):
        for opt in reversed(
            [
                click.option(
                    "--engine",
                    type=click.Choice(["local", "ray"]),
                    default="local",
                    show_default=True,
                    callback=_check_engine,
                    help=f"local: this process; ray: an actor pool of {what} (one GPU each when present).",
                ),
                click.option(
                    "--ray-address",
                    default=None,
                    help="Ray cluster address; 'auto' joins the cluster of 'ray start --head' [default: a local Ray].",
                ),
                click.option(
                    "--num-actors",
                    type=click.IntRange(min=1),
                    default=None,
                    help="Ray actors [default: one per GPU, else one per CPU].",
                ),
            ]
        ):
            fn = opt(fn)
        return fn

    return decorate
