"""``lbee sentences``: the built-in sentence sets."""

from __future__ import annotations

import click

from ..run.limits import MAX_SENTENCE_LIMIT
from ._base import LbeeError, cli, fail


@cli.group()
def sentences():
    """Built-in sentence sets."""


@sentences.command("list")
def sentences_list():
    """List the built-in sentence sets and grammars (a grammar is named NAME.grammar as a set)."""
    import re

    from ..grammar import list_grammars, load_grammar
    from ..io.sentences import list_sentence_sets, load_sentence_set

    rows = []
    for name in list_sentence_sets():
        s = load_sentence_set(name)
        text = " ".join(s.header.split()).removeprefix(f"{name}: ")
        # the header's first sentence, without the paper sections it cites (users read the words)
        text = re.sub(r"\s*\([^()]*(?:app\.|§)[^()]*\)", "", text)
        first = re.split(r"\.\s", text, maxsplit=1)[0]
        rows.append((name, str(len(s)), first.rstrip(".")))
    for name in list_grammars():
        rows.append((f"{name}.grammar", "", "grammar: " + " ".join(load_grammar(name).description.split()).rstrip(".")))
    width = max(len(r[0]) for r in rows)
    for name, size, text in rows:
        click.echo(f"{name:<{width}} {size:>5}  {text}")


@sentences.command("show")
@click.argument("name")
def sentences_show(name):
    """Print the sentences of a set (a built-in name or a file)."""
    from ..io.sentences import load_sentence_set

    try:
        s = load_sentence_set(name)
    except ValueError as exc:
        fail(exc)
    for line in s.header.splitlines():
        click.echo(f"# {line}")
    for sent in s.sentences:
        click.echo(sent)


@sentences.command("generate")
@click.argument("grammar")
@click.option(
    "--max-conditions",
    type=int,
    default=None,
    help="Conditions per sentence, at most [default: the grammar's max_conditions].",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    required=True,
    help="The sentence file; its conditions go beside it in <stem>.conditions.tsv "
    "(an existing file is refused unless --overwrite).",
)
@click.option(
    "--classes",
    type=click.Path(dir_okay=False, exists=True),
    default=None,
    help="A file of class names, one a line: the values of the grammar's 'noun' attribute "
    "(object_photos: 'A photo of a {class}'). Blank lines and comments ('#' alone, or '# ' and text) are "
    "skipped; any other line starting with '#' is refused, as a class name cannot start with '#'.",
)
@click.option(
    "--limit",
    type=click.IntRange(1, MAX_SENTENCE_LIMIT),
    default=200_000,
    show_default=True,
    help="Refuse a grammar and --max-conditions that allow more conjunctions than this.",
)
@click.option(
    "--overwrite",
    is_flag=True,
    help="Replace an existing sentence file, its conditions table and grammar copy (never the input grammar "
    "or class list).",
)
def sentences_generate(grammar, max_conditions, out, classes, limit, overwrite):
    """Write the sentences of an attribute GRAMMAR (a built-in name or a .grammar.yaml file).

    Every sentence is one non-contradictory conjunction of the grammar's atoms,
    said once (no two sentences with the same conditions); each sentence's
    conditions go in a table beside the file, which `describe --method compose`
    and the composed relevance read. The files are written as one unit: an
    interrupted run leaves the old ones whole.
    """
    import os
    from pathlib import Path

    from ..grammar import generate, grammar_yaml, load_grammar
    from ..io.grammar_sets import check_grammar_set_out, write_grammar_set
    from ..io.sentences import conditions_path
    from ._base import check_writable_folder

    try:
        g = load_grammar(grammar)
        inputs = [p for p in (g.source, classes) if p and Path(p).is_file()]  # never replaced
        if classes is not None:
            g = _with_classes(g, classes)
        # realpath, not resolve(): a loop of links is then refused by the check, in words (resolve() raised)
        check_writable_folder(os.path.dirname(os.path.realpath(out)), "--out")
        from ..io.output_lock import pin_output

        pin_output(Path(out).parent, command=True)  # as the write names it: there or nowhere (sweep 32p)
        copy = classes is not None
        check_grammar_set_out(out, grammar_copy=copy, overwrite=overwrite, inputs=inputs)  # before the work
        sents, conds, stats = generate(g, max_conditions, limit=limit)
        k = g.max_conditions if max_conditions is None else max_conditions
        ref = g.name if Path(grammar).name == grammar and not Path(grammar).is_file() else _grammar_ref(grammar, out)
        write_grammar_set(  # with --classes the table names the copy with these classes, a file that exists
            out,
            g,
            sents,
            conds,
            max_conditions=k,
            source_ref=None if copy else ref,
            grammar_text=grammar_yaml(g) if copy else None,
            overwrite=overwrite,
            inputs=inputs,
        )
    except ValueError as exc:
        fail(exc)
    except OSError as exc:
        raise LbeeError(f"Cannot write the sentence set {out!r}: {exc.strerror or exc}.") from None
    click.echo(
        f"grammar {g.name!r}: {stats['considered']:,} conjunctions of 1-{k} conditions, "
        f"{stats['contradictory']:,} contradictory, {stats['duplicates']:,} saying what another says; "
        f"wrote {stats['kept']:,} sentences to {out} and their conditions to {conditions_path(out)}"
    )


def _read_classes(path):
    """The class names of a --classes file and their lines: one a line; blank lines and '# ' comments skipped."""
    from .._files import text_lines
    from ..grammar import INVISIBLE, MAX_WORDS_CHARS, line_break_in, said_alike
    from ..io.confinement import read_text_file  # bounded, a regular file: /dev/zero took 3.4 GB (sweep 23)

    try:
        text = read_text_file(path, "--classes file")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"Cannot read --classes file {path!r}: {exc}.") from None
    names, lines, seen = [], [], {}
    for lineno, raw in enumerate(text_lines(text), start=1):
        name = raw.strip()
        if not name or name == "#" or name.startswith("# "):
            continue
        where = f"--classes {path}, line {lineno}"
        if name.startswith("#"):  # '#1 hit': a class or a comment? neither is guessed
            raise ValueError(
                f"{where}: {name[:80]!r} starts with '#' but is not a comment ('# ' and text); "
                "a class name cannot start with '#' (write a comment as '# text')."
            )
        if len(name) > MAX_WORDS_CHARS:
            raise ValueError(
                f"{where}: the class name is {len(name):,} characters long; expected at most {MAX_WORDS_CHARS}."
            )
        bad = line_break_in(name)
        if bad is not None:
            raise ValueError(
                f"{where}: {name!r} holds the character U+{ord(bad):04X} ({INVISIBLE}); "
                "expected a class name on one line."
            )
        if said_alike(name) in seen:  # 'café' twice, once with a combining accent, is one class
            raise ValueError(f"{where} repeats the class of line {seen[said_alike(name)]}.")
        seen[said_alike(name)] = lineno
        names.append(name)
        lines.append(lineno)
    if not names:
        raise ValueError(f"--classes {path}: no class name found; expected one class name per line.")
    return names, lines


def _with_classes(grammar, path):
    """The grammar with its 'noun' attribute's values replaced by the class names of ``path``."""
    import dataclasses
    import re

    names, lines = _read_classes(path)
    subjects, done = [], False
    for s in grammar.subjects:
        attrs = []
        for a in s.attributes:
            if a.kind == "noun" and not done:
                values, first = {}, {}
                for i, (n, line) in enumerate(zip(names, lines)):
                    vid = re.sub(r"[^a-z0-9_]+", "_", n.lower()).strip("_") or f"class_{i}"
                    if vid in values:
                        raise ValueError(
                            f"--classes {path}, lines {first[vid]} and {line}: {values[vid]!r} and {n!r} both map "
                            f"to the value id {vid!r}; rename one."
                        )
                    values[vid], first[vid] = n, line
                a, done = dataclasses.replace(a, values=values), True
            attrs.append(a)
        subjects.append(dataclasses.replace(s, attributes=tuple(attrs)))
    if not done:
        raise ValueError(f"--classes: grammar {grammar.name!r} has no attribute of kind 'noun' to take class names.")
    return dataclasses.replace(grammar, subjects=tuple(subjects), _index={})


def _grammar_ref(grammar, out):
    """How a set's ``# grammar:`` line names its grammar file.

    Relative to the set's folder when it lies there or below (the two move together, into a service's root too),
    else by its absolute path.
    """
    from pathlib import Path

    src, home = Path(grammar).resolve(), Path(out).resolve().parent
    return src.relative_to(home).as_posix() if src.is_relative_to(home) else str(src)
