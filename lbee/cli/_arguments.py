"""The command line's arguments, checked before click parses them.

Numbers are ASCII decimal, and a one-value option given twice is said.
"""

from __future__ import annotations

import os

import click


def check_number_options(command, args, ctx=None):
    """Refuse a numeric option's value that is not ASCII decimal, before click converts it.

    click converts with Python's ``int()`` / ``float()``, which take ``1_0`` (10), full-width ``０.５`` and other
    scripts' digits (``٣``): lbee's tables and YAML refuse those, and so does its command line
    (`lbee._validation.NUMBER_PATTERN`), whether the value follows the option (``--clusters 1_0``,
    ``--clusters=1_0``, ``-k1_0``, ``-qk1_0``) or comes from its environment variable (``LBEE_DESCRIBE_CLUSTERS``).
    """
    from .._validation import parse_number

    numeric, flags = {}, set()
    for p in command.params:
        if not isinstance(p, click.Option):
            continue
        if p.is_flag:
            flags.update(o for o in p.opts + p.secondary_opts if not o.startswith("--"))
        elif isinstance(p.type, click.types._NumberParamTypeBase):
            kind = int if isinstance(p.type, click.types.IntParamType) else float
            for opt in p.opts:
                numeric[opt] = (kind, opt, p)

    def check(value, kind, opt):
        try:
            parse_number(value, kind)
        except ValueError:
            what = "an integer" if kind is int else "a number"
            raise click.BadParameter(
                f"{value!r} is not {what} in ASCII digits (no '_', no other scripts' digits).", param_hint=f"'{opt}'"
            ) from None

    given = set()
    i = 0
    while i < len(args):
        token = args[i]
        if token == "--":
            break
        name, eq, rest = token.partition("=")
        if name.startswith("--") and name in numeric:
            value = rest if eq else (args[i + 1] if i + 1 < len(args) else None)
            i += 0 if eq else 1
            if value is not None:
                check(value, numeric[name][0], numeric[name][1])
            given.add(numeric[name][2].name)
        elif token.startswith("-") and not token.startswith("--") and len(token) > 1:
            for j in range(1, len(token)):  # short options, possibly joined: -qk1_0 is -q -k 1_0
                opt = "-" + token[j]
                if opt in numeric:
                    value = token[j + 1 :] or (args[i + 1] if i + 1 < len(args) else None)
                    i += 0 if token[j + 1 :] else 1
                    if value is not None:
                        check(value, numeric[opt][0], numeric[opt][1])
                    given.add(numeric[opt][2].name)
                    break
                if opt not in flags:
                    break
        i += 1
    prefix = getattr(ctx, "auto_envvar_prefix", None)
    for kind, opt, p in {id(v[2]): v for v in numeric.values()}.values():
        if p.name in given:
            continue
        names = [p.envvar] if isinstance(p.envvar, str) else list(p.envvar or [])
        if prefix and p.allow_from_autoenv:
            names.append(f"{prefix}_{p.name.upper()}")
        for env in names:
            if os.environ.get(env):
                check(os.environ[env], kind, f"{opt} (from ${env})")


def check_single_options(command, args):
    """Say which value is used when an option that takes one value is given twice: the last, as click takes it.

    click kept the last unsaid: an eleventh user's second ``--predictions`` replaced the first.
    """
    takes = {}
    for p in command.params:
        if isinstance(p, click.Option) and not (p.multiple or p.count or p.is_flag or p.nargs != 1):
            for opt in p.opts:
                takes[opt] = p
    seen = {}
    i = 0
    while i < len(args):
        token = args[i]
        if token == "--":
            break
        name, eq, value = token.partition("=") if token.startswith("--") else (token[:2], "", token[2:])
        p = takes.get(name) if token.startswith("-") else None
        if p is not None:
            if not (eq or value):
                value = args[i + 1] if i + 1 < len(args) else ""
                i += 1
            if p.name in seen:
                first, said = seen[p.name]
                click.echo(f"Warning: {said} is given twice ({first!r}, then {value!r}): the last is used.", err=True)
            seen[p.name] = (value, name)
        i += 1


def name_option(value, option):
    """A name option (``--name``) checked by the one rule for dataset names (`lbee._validation.check_name_text`)."""
    if value is None:
        return None
    from .._validation import check_name_text

    try:
        return check_name_text(value, option)
    except ValueError as exc:
        raise click.BadParameter(str(exc).replace(f"`{option}` ", "", 1), param_hint=option) from None


def name_options(command):
    """``--name`` (the dataset's) and ``--model-name`` (the model's), as a run's report and files name them.

    The model was named after the predictions file alone ("sticky-traps · preds", trial 25).
    """
    command = click.option(
        "--model-name",
        default=None,
        callback=lambda ctx, param, value: name_option(value, "--model-name"),
        help="The model's name in the report and the run's files (default: the predictions file's name, or --model).",
    )(command)
    return click.option(
        "--name",
        "dataset_name",
        default=None,
        callback=lambda ctx, param, value: name_option(value, "--name"),
        help="The dataset's name in the report and the run's files (default: the images folder's name).",
    )(command)


def misplaced_option(group, ctx, args, own_end, exc):
    """A usage error for a command's option written before the command (``lbee --html describe``), or None.

    ``args`` are the group's words, its command's name at ``own_end``; ``exc`` is click's ``NoSuchOption``, whose
    own message said "Did you mean '--help'?" (trial 32).
    """
    cmd = group.get_command(ctx, args[own_end]) if own_end < len(args) else None
    name = exc.option_name.split("=", 1)[0]
    if cmd is None or not any(name in p.opts + p.secondary_opts for p in cmd.params):
        return None
    path = f"{ctx.command_path} {args[own_end]}"
    return click.UsageError(f"{name} is an option of '{path}': put it after the command ({path} ... {name}).", ctx)


def usage_error(command, ctx, args, exc):
    """What to say of click's usage error ``exc`` for the words ``args``: `flag_given_a_value`'s error, or ``exc``.

    A value of more than 200 characters that ``exc`` quotes is cut (a 5,000-character path was echoed whole).
    """
    return flag_given_a_value(command, ctx, args, cut_quoted(exc)) or exc


def cut_quoted(exc):
    """``exc`` (a click exception) with each value over 200 characters its message quotes cut; returned."""
    import re

    from .._validation import shown

    if isinstance(exc, click.UsageError):  # "No such command 'xxx…'", "'xxx…' is not a valid integer" (32bd N3)
        exc.message = re.sub(r"'([^']{201,})'", lambda m: shown(m.group(1), 200), str(exc.message))
    return exc


def flag_given_a_value(command, ctx, args, exc):
    """A usage error for a word left over after a flag, as if it were the flag's value (``--per-class errors``).

    click said "Got unexpected extra argument (errors)" (trial 41). None when no flag comes just before one of the
    words left over (``exc``: click's ``UsageError``).
    """
    if not exc.message.startswith("Got unexpected extra argument"):
        return None
    options = [p for p in command.params if isinstance(p, click.Option)]
    flags = {o for p in options if p.is_flag or p.count for o in p.opts + p.secondary_opts}
    values = {o: p.nargs for p in options if not (p.is_flag or p.count) for o in p.opts + p.secondary_opts}
    left = exc.message.partition("(")[2].removesuffix(")")  # click's words left over, space-joined
    # the words left over are the last of the command's plain words (not an option, nor an option's value): the one
    # after a flag may be an argument the same word repeats later (sweep 32bb N7: `--overwrite X --relevance G X`)
    plain, i = [], 0
    while i < len(args):
        if args[i] == "--":
            plain += range(i + 1, len(args))
            break
        if args[i].startswith("-") and args[i] != "-":
            i += 1 + values.get(args[i], 0)  # '--opt=value' and a flag: 1
            continue
        plain.append(i)
        i += 1
    n = len(left.split(" ")) if left else 0
    if not n or n > len(plain) or " ".join(args[j] for j in plain[-n:]) != left:
        return None
    first = plain[-n]  # ('a' of 'ab' is not the word left over: sweep 32az N1)
    if first and args[first - 1] in flags:
        return click.UsageError(
            f"{args[first - 1]} is a flag and takes no value: {args[first]!r} is left over (drop it, or give it to "
            "the option it belongs to).",
            ctx,
        )
    return None
