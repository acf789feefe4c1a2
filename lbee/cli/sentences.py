"""``lbee sentences``: the built-in sentence sets."""

from __future__ import annotations


import click

from ._base import _fail, cli


@cli.group()
def sentences():
    """Built-in sentence sets."""


@sentences.command("list")
def sentences_list():
    """List the built-in sentence sets."""
    from ..io.sentences import list_sentence_sets, load_sentence_set

    for name in list_sentence_sets():
        s = load_sentence_set(name)
        first = s.header.splitlines()[0] if s.header else ""
        click.echo(f"{name:<14} {len(s):>5}  {first}")


@sentences.command("show")
@click.argument("name")
def sentences_show(name):
    """Print the sentences of a set (a built-in name or a file)."""
    from ..io.sentences import load_sentence_set

    try:
        s = load_sentence_set(name)
    except ValueError as exc:
        _fail(exc)
    for line in s.header.splitlines():
        click.echo(f"# {line}")
    for sent in s.sentences:
        click.echo(sent)
