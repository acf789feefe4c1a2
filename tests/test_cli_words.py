"""`--help` says things in words: a symbol or a paper's section may follow the words, never replace them."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from lbee.cli import cli

#: Notation that means nothing to a reader without the papers open.
JARGON = ("C^h", "C^e", "aσ", "β =", "§", "Fig.", "LBEE app", "Table 1", "P@K", "φ for", "Γ:", "ω:")


def _commands(group, path=()):
    for name, command in group.commands.items():
        if command.hidden:
            continue
        yield (*path, name)
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name))


@pytest.mark.parametrize("path", [(), *_commands(cli)], ids=lambda p: " ".join(p) or "lbee")
def test_help_is_in_words(path):
    result = CliRunner().invoke(cli, [*path, "--help"], obj={}, terminal_width=200)
    assert result.exit_code == 0, result.output
    found = [word for word in JARGON if word in result.output]
    assert not found, f"lbee {' '.join(path)} --help says {found}"


@pytest.mark.parametrize("path", [(), *_commands(cli)], ids=lambda p: " ".join(p) or "lbee")
def test_every_option_says_what_it_does(path):
    """A new user found --batch-size, serve --port and --log-level with no help at all."""
    command = cli
    for name in path:
        command = command.commands[name]
    bare = [p.opts[0] for p in command.params if isinstance(p, click.Option) and not p.hidden and not p.help]
    assert not [o for o in bare if o not in ("-h", "--help")], f"lbee {' '.join(path)}: {bare} have no help"


def _raising(exc):
    """A command of lbee's group that raises ``exc``, run: click's Result."""
    from lbee.cli._base import LbeeGroup

    @click.group(cls=LbeeGroup)
    def group():
        pass

    @group.command()
    def fails():
        raise exc

    return CliRunner().invoke(group, ["fails"], obj={})


def test_a_bare_key_error_reads_as_lbee_s_own_slip_not_as_a_word():
    """A fifth user's `describe --per-class --html` ended with "Error: classes_shown": a bare key from a bug."""
    r = _raising(KeyError("classes_shown"))
    assert r.exit_code == 1 and "internal error in lbee (KeyError 'classes_shown'); please report it" in r.output
    r = _raising(KeyError("column 'label' is missing from preds.csv"))
    assert r.exit_code == 1 and "Error: column 'label' is missing from preds.csv" in r.output, r.output


def test_help_lists_each_command_s_first_sentence_in_full():
    """A fifth user read every summary of `lbee --help` cut off with '...'."""
    for group in (cli, cli.commands["serve"], cli.commands["spotcheck"]):
        out = CliRunner().invoke(group, ["--help"], obj={}).output
        commands = out.split("Commands:")[1]
        assert "..." not in commands, commands
    assert "(the SpotCheck paper bench is `lbee spotcheck bench`)" in " ".join(
        CliRunner().invoke(cli, ["--help"], obj={}).output.split()
    )


def test_a_user_s_mistake_is_not_sent_to_the_debugger():
    """Tenth sweep, lower 13: `lbee serve token revoke nobody` and the like ended with '(run with --debug for the
    traceback)', as if lbee had failed."""
    r = _raising(ValueError("no token named 'nobody'; `lbee serve token list` shows them"))
    assert r.exit_code == 1 and r.output == "Error: no token named 'nobody'; `lbee serve token list` shows them\n"
