"""What a command says on stderr besides its results: lbee's log lines and Python warnings, each once."""

from __future__ import annotations

import click


def setup_logging(verbose=False):
    """One voice on stderr: the ``lbee`` logger's lines, and Python warnings as one plain line each.

    Other libraries' root-logger lines (open_clip's "No pretrained weights loaded", ...) and
    warnings' source lines show only with ``-v``.
    """
    import logging
    import warnings

    def wrapped(text):
        import shutil
        import textwrap

        width = max(40, shutil.get_terminal_size((100, 24)).columns)  # $COLUMNS, else the terminal
        lines = text.split("\n")  # a message laid out in lines (a list of commands) keeps them
        first = textwrap.fill(
            lines[0], width=width, subsequent_indent="  ", break_long_words=False, break_on_hyphens=False
        )
        return "\n".join([first, *lines[1:]])

    said = set()  # every warning once per command: a table read by the preflight and again by the run warned twice

    def once(text):
        if text in said:
            return False
        said.add(text)
        return True

    class EchoHandler(logging.Handler):
        """Writes to the current stderr at each record (click's test runner swaps it); a warning as Python's are."""

        def emit(self, record):
            text = self.format(record)
            if record.levelno >= logging.WARNING and not verbose:
                text = wrapped(f"Warning: {text}")
            if record.levelno < logging.WARNING or once(text):
                click.echo(text, err=True)

    class OthersHandler(EchoHandler):
        """The root logger's handler: other libraries' records (lbee's are written by the ``lbee`` logger's).

        Its presence also keeps ``logging.basicConfig`` from adding a second root handler when a library logs
        through the root logger (open_clip's ``logging.info``): that handler printed every lbee warning a second
        time, as ``WARNING:lbee:...``.
        """

        def emit(self, record):
            if record.name != "lbee" and not record.name.startswith("lbee."):
                super().emit(record)

    logger = logging.getLogger("lbee")
    root = logging.getLogger()
    for owner in (logger, root):
        for h in [h for h in owner.handlers if type(h).__name__ in ("EchoHandler", "OthersHandler")]:
            owner.removeHandler(h)
    handler = EchoHandler()
    handler.setFormatter(logging.Formatter("%(levelname)s: %(message)s" if verbose else "%(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG if verbose else logging.INFO)
    others = OthersHandler()
    others.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root.addHandler(others)
    root.setLevel(logging.INFO if verbose else logging.ERROR)
    if not verbose:

        def show(message, category, filename, lineno, file=None, line=None):
            if issubclass(category, (DeprecationWarning, FutureWarning)):
                return  # library internals, not the user's input
            text = wrapped(f"Warning: {message}")
            if once(text):
                click.echo(text, err=True)

        warnings.showwarning = show
