"""The ``lbee`` command line: one module per command group.

Commands parse options and call library functions. Heavy imports (torch,
faiss, open_clip, transformers) happen inside command bodies so that
``lbee --help`` stays fast.
"""

try:
    from . import (  # noqa: F401,E402
        bench,
        demo,
        describe,
        embed,
        evaluate,
        export,
        report,
        rival10,
        sensitivity,
        sentences,
        serve,
        spotcheck,  # each module registers its commands
        submit,
        sweep,
        vqa,
    )
    from ._base import LbeeError, add_global_options, cli
except ModuleNotFoundError as _exc:  # a core dependency missing (click, numpy, ...): one line (lbee._dependencies)
    from .._dependencies import raise_missing

    raise_missing(_exc)

add_global_options(cli)  # after every module registered its commands

__all__ = ["cli", "LbeeError"]


def main():  # pragma: no cover
    cli(obj={})
