"""The ``lbee`` root group and what every command shares.

Heavy imports (torch, faiss, open_clip) happen inside command bodies so that
``lbee --help`` stays fast.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from .._validation import MAX_SEED, shown
from .._version import __version__
from ._arguments import check_number_options, check_single_options, cut_quoted, misplaced_option, usage_error
from ._logging import setup_logging


class NotUsageError(click.ClickException):
    """A refusal of what the command would do (an output folder in use, a config's problems).

    Exit 2, as click's usage errors, but without click's usage header: the command line itself was right.
    """

    exit_code = 2


class LbeeError(click.ClickException):
    """A user-facing error: message, exit code 1, no traceback."""


#: Errors that bad input raises in the library (they name the argument or file): shown as a message, exit 1.
USER_ERRORS = (ValueError, TypeError, KeyError, OSError, RuntimeError, ImportError)

#: The type of every seed option: numpy's generator range, as lbee._validation.check_seed (config, service).
SEED = click.IntRange(0, MAX_SEED)


class ExistingPath(click.Path):
    """``click.Path(exists=True)`` whose "does not exist" suggests a file beside it of a near name."""

    def __init__(self, **kwargs):
        super().__init__(exists=True, **kwargs)

    def convert(self, value, param, ctx):
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter as exc:
            from .._files import near_file

            near = None if os.path.lexists(value) else near_file(value)
            if near is None:
                raise
            self.fail(f"{exc.message.rstrip('.')} (did you mean {near!r}?).", param, ctx)


class FloatRange(click.FloatRange):
    """click's FloatRange that also refuses NaN ('nan' passes every comparison, so every bound)."""

    def convert(self, value, param, ctx):
        import math

        number = super().convert(value, param, ctx)
        if math.isnan(number):
            self.fail(f"{value!r} is not a number.", param, ctx)
        return number


def batch_size_option(default, what):
    """``--batch-size``: ``what`` per batch, in [1, MAX_BATCH_SIZE]; one definition for every command."""
    from ..run.limits import MAX_BATCH_SIZE

    return click.option(
        "--batch-size",
        type=click.IntRange(1, MAX_BATCH_SIZE),
        default=default,
        show_default=True,
        help=f"{what} per batch; lower it when memory runs short.",
    )


class LbeeCommand(click.Command):
    """A command whose numeric options are ASCII decimal, and that says a one-value option given twice.

    (`check_number_options`, `check_single_options`.)
    """

    def parse_args(self, ctx, args):
        given = list(args)  # click's parser consumes ``args``
        try:
            check_number_options(self, args, ctx)
            check_single_options(self, args)
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            raise usage_error(self, ctx, given, exc) from None


_COMMAND_WORDS = "lbee.command_words"


class LbeeGroup(click.Group):
    """The root group: a library error under any command ends in its message, not a traceback.

    ``--debug`` (or ``LBEE_DEBUG=1``) lets the traceback through. Its commands are of `LbeeCommand` and its
    groups are of its own class, so every numeric option is ASCII decimal.
    """

    command_class = LbeeCommand
    group_class = type  # subgroups are LbeeGroups (click: ``type`` means the parent's class)

    def parse_args(self, ctx, args):
        own_end = self._own_args_end(ctx, args)
        check_number_options(self, args[:own_end], ctx)
        ctx.meta[_COMMAND_WORDS] = list(args[own_end:])  # the subcommand and its words (click 8.2 hides them)
        given = list(args)  # click's parser consumes ``args``
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as exc:
            raise misplaced_option(self, ctx, given, own_end, exc) or exc from None

    def format_commands(self, ctx, formatter):
        """Each command's first sentence in full, wrapped (click cuts it at the column's width with '...')."""
        rows = []
        for name in self.list_commands(ctx):
            cmd = self.get_command(ctx, name)
            if cmd is not None and not cmd.hidden:
                rows.append((name, cmd.get_short_help_str(limit=300)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def _own_args_end(self, ctx, args):
        """Where the subcommand's name starts in ``args`` (its own options come before it)."""
        for i, token in enumerate(args):
            if not token.startswith("-") and token in self.commands:
                return i
        return len(args)

    def invoke(self, ctx):
        words = ctx.meta.get(_COMMAND_WORDS, [])
        if words and not {"--help", "-h"} & set(words):  # a command, not a help page: every core dependency first
            from .._dependencies import missing_core, missing_message

            missing = missing_core()
            if missing:  # a twenty-first user's wheel: threadpoolctl, then scipy mid-run, then pyarrow at the end
                raise LbeeError(missing_message(missing))
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort) as exc:
            raise cut_quoted(exc) from None  # "No such command" quotes the word given
        except MemoryError:
            if (ctx.obj or {}).get("debug"):
                raise
            raise LbeeError(
                "lbee ran out of memory (run with --debug for the traceback); an input may be far larger than it "
                "looks (a sparse file), or the run needs a smaller --batch-size or --image-size."
            ) from None
        except BrokenPipeError:  # `lbee sentences list | head`: the reader left; end quietly, as `yes | head` does
            import os
            import sys

            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # Python's own flush at exit would fail
            raise click.exceptions.Exit(141) from None
        except USER_ERRORS as exc:
            from ..extras import MissingExtraError

            if (ctx.obj or {}).get("debug"):
                raise
            from ..io.sentences import UnknownSentenceSet
            from ..io.staging import OutputExistsError

            if isinstance(exc, (OutputExistsError, UnknownSentenceSet)):  # exit 2: the command line, not a file
                raise NotUsageError(str(exc)) from None
            if isinstance(exc, MissingExtraError):  # the message says what to do: no debugging
                raise LbeeError(str(exc)) from None
            if isinstance(exc, OSError) and exc.filename:
                name = str(exc.filename)  # cut: a 5,000-character name (sweep 32ay N3)
                msg = f"{exc.strerror or exc}: {name if len(name) <= 200 else shown(name, 200)}"
            elif isinstance(exc, OSError) and exc.errno is None:  # lbee's own (a busy output): says what to do
                raise LbeeError(str(exc)) from None
            elif isinstance(exc, KeyError) and " " not in str(exc).strip("'\""):  # a bare key: lbee's own slip
                raise LbeeError(
                    f"internal error in lbee (KeyError {exc}); please report it with the output of the same "
                    "command run with --debug"
                ) from None
            elif isinstance(exc, KeyError):  # str() of a KeyError is the key's repr: its quotes go
                msg = str(exc).strip("'\"")
            elif isinstance(exc, ValueError):  # written for the user (a message may start with a quoted path)
                raise LbeeError(str(exc)) from None  # what to change is in it: no traceback to ask for
            elif isinstance(exc, ImportError):
                from .._dependencies import core_message

                said = core_message(exc)  # a core dependency missing, found in a command (a wheel with --no-deps)
                if said is not None:
                    raise LbeeError(said) from None
                msg = f"a package lbee needs could not be imported: {exc}"
            else:
                msg = f"{type(exc).__name__}: {exc}"
            raise LbeeError(msg + " (run with --debug for the traceback)") from None


def fail(exc):
    """Turn a library error into a one-line message; ``--debug`` re-raises it with its traceback.

    Exit 1; 2 for an output in the way or a sentence set that names nothing (the command line, not a file).
    """
    ctx = click.get_current_context(silent=True)
    if ctx is not None and (ctx.find_root().obj or {}).get("debug"):
        raise exc
    from ..io.sentences import UnknownSentenceSet
    from ..io.staging import OutputExistsError

    if isinstance(exc, (OutputExistsError, UnknownSentenceSet)):
        raise NotUsageError(str(exc)) from exc
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
    """lbee: find, and describe in plain language, where a vision model fails.

    The options below go before or after the command: lbee -q describe ... is lbee describe ... -q.
    """
    from ..io.output_lock import clear_pins

    ctx.ensure_object(dict)
    ctx.obj.update(cache_dir=cache_dir, device=device, progress=not quiet, debug=debug, verbose=verbose)
    clear_pins()  # the outputs this command checks are pinned for it alone (lbee.io.output_lock.pin_output)
    ctx.call_on_close(clear_pins)
    setup_logging(verbose)
    bars_fit_the_terminal()


def bars_fit_the_terminal():
    """Progress bars on a terminal that reports no size, and in a file.

    tqdm hides a bar whose line is past the terminal's height, and a terminal nobody sized (a pty, as ``script``
    and some runners make) has 0 lines, so no bar was drawn at all and a minute of embedding looked hung. It gets
    100 x 24 instead. Into a file, a bar is redrawn every 10 s rather than ten times a second.
    """
    import os
    import sys

    try:
        size = os.get_terminal_size(sys.stderr.fileno()) if sys.stderr.isatty() else None
    except (OSError, ValueError, AttributeError):  # no real stderr (click's test runner)
        return
    if size is None:  # stderr into a file: a bar's line every 10 s, not ten a second (trial 21's log of '\r's)
        os.environ.setdefault("TQDM_MININTERVAL", "10")
    if size is not None and (size.columns == 0 or size.lines == 0):
        os.environ.setdefault("TQDM_NCOLS", "100")  # read by every tqdm bar (tqdm >= 4.66)
        os.environ.setdefault("TQDM_NROWS", "24")


#: The root group's options that every command also takes after its name (``lbee describe ... -q``).
GLOBAL_OPTIONS = ("cache_dir", "device", "quiet", "verbose", "debug")


def _set_global(ctx, param, value):
    """A global option given after the command: it overrides what the root group set (the root ran first)."""
    if value is None or value is False:
        return
    obj = ctx.find_root().obj
    if param.name == "quiet":
        obj["progress"] = False
    elif param.name == "verbose":
        obj["verbose"] = True
        setup_logging(True)
    else:
        obj[param.name] = value


def add_global_options(group):
    """Give every command under ``group`` the root's `GLOBAL_OPTIONS` (hidden in its --help).

    ``lbee -q describe ...`` and ``lbee describe ... -q`` are the same command. A command that has an option of
    the same name keeps its own.
    """
    shared = [p for p in group.params if p.name in GLOBAL_OPTIONS]

    def visit(cmd):
        taken = {o for p in cmd.params for o in [*getattr(p, "opts", ()), *getattr(p, "secondary_opts", ())]}
        for p in shared:
            if any(o in taken for o in p.opts) or any(getattr(q, "name", None) == p.name for q in cmd.params):
                continue
            kind = {"is_flag": True} if p.is_flag else {"type": p.type}
            cmd.params.append(
                click.Option(
                    p.opts,
                    **kind,
                    help=p.help,
                    hidden=True,
                    expose_value=False,
                    callback=_set_global,
                    allow_from_autoenv=False,
                )
            )
        for sub in getattr(cmd, "commands", {}).values():
            visit(sub)

    for sub in group.commands.values():
        visit(sub)


def log(msg):
    """One line on stderr (notes and warnings of a command; stdout keeps its results)."""
    click.echo(msg, err=True)


def check_writable_folder(path, option):
    """Create ``path`` (and its parents) and check a file can be written there, before long work starts.

    The folders created here are removed again when the command ends with them still empty (a run that failed
    leaves no empty ``--out`` behind).
    """
    import tempfile

    from ..io.folder_trust import SharedFolderError, check_trusted_folder, trusted_real_folder

    target = Path(path)
    check_trusted_folder(target)  # before any folder is made there
    created = [p for p in (target, *target.parents) if not p.exists()][::-1]  # the outermost first
    try:
        real, _ = trusted_real_folder(target, make=True)  # through descriptors, each folder checked (32y, 32z)
        with tempfile.NamedTemporaryFile(dir=real, prefix=".lbee-write-check-"):  # where the kernel made it
            pass
    except OSError as exc:
        _remove_if_empty(created)
        if isinstance(exc, SharedFolderError):  # said as it is: another user's move, not an unwritable folder
            raise
        raise LbeeError(
            f"{option} {shown(str(path))} is not a writable folder: {_what_is_there(target, exc)}."
        ) from None
    ctx = click.get_current_context(silent=True)
    from ..io.output_lock import folder_identity, pin_output

    made = {p: folder_identity(p) for p in created}  # removed only while still these folders (sweep 32p)
    if created and ctx is not None:
        ctx.call_on_close(lambda: _remove_if_empty([p for p in created if folder_identity(p) == made[p]]))

    pin_output(target, command=True)  # written at the end into this folder, or nowhere (sweep 32o)
    return target


def _what_is_there(path, exc):
    """Why ``path`` is no writable folder, in words: what is there ("File exists" said nothing, sweep 32m)."""
    import os
    import stat

    from .._files import file_kind

    for p in (path, *path.parents):
        try:
            mode = os.lstat(p).st_mode
        except OSError:
            continue
        if stat.S_ISLNK(mode) and not p.exists():
            return f"{shown(str(p))} is a symbolic link to nothing (or a loop of links)"
        if not stat.S_ISLNK(mode) and not stat.S_ISDIR(mode):
            kind = "a file" if stat.S_ISREG(mode) else file_kind(mode)
            return f"{shown(str(p))} is {kind}" if p != path else f"it is {kind}"
        break
    return exc.strerror or str(exc)


def _remove_if_empty(folders):
    for folder in reversed(folders):  # the innermost first; a folder with anything in it stays
        try:
            folder.rmdir()
        except OSError:
            return


def check_encoder_spec(spec, option="--encoder", *, weights=False):
    """`lbee.run.models.check_encoder_spec` as a usage error, before any heavy import.

    ``weights=True`` also checks that the default open_clip weights can be had (a one-line error otherwise).
    """
    from ..extras import MissingExtraError
    from ..run.models import check_encoder_spec as check

    try:
        return check(spec, weights=weights)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint=option) from None
    except (MissingExtraError, RuntimeError) as exc:  # RuntimeError: lbee.encoders.EncoderLoadError
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
