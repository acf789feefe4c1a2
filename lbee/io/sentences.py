"""Sentence sets: plain-text files, one sentence per line, ``#`` comments.

Built-in sets live in ``sentence_sets/`` (shipped in the wheel as
``lbee.sentence_sets``); a user's own file works the same way.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from .._files import text_lines
from .._validation import caller_stacklevel
from ..grammar import INVISIBLE, line_break_in


@dataclass(frozen=True)
class SentenceSet:
    """A named list of sentences.

    Attributes
    ----------
    name : str
    sentences : tuple of str
    header : str
        The leading comment block (what the set is for and how it was built).
    path : str
    """

    name: str
    sentences: tuple
    header: str
    path: str
    #: a grammar's set: each sentence's conjunction {(subject, attribute): value}, and the grammar
    conditions: tuple | None = None
    grammar: object = None

    def __len__(self):
        return len(self.sentences)


#: The sentences a SpotCheck world is described with unless another set is named (the demo, reports, the bench):
#: its grammar's, up to the grammar's default number of conditions ('compose' searches longer conjunctions).
WORLD_SENTENCE_SET = "spotcheck.grammar"

#: The sidecar table beside a generated sentence file: ``<file stem>.conditions.tsv``.
CONDITIONS_SUFFIX = ".conditions.tsv"


def conditions_path(sentence_file):
    """Where the conditions table of a sentence file lives (whether or not it exists)."""
    p = Path(sentence_file)
    return p.with_name(p.stem + CONDITIONS_SUFFIX)


def grammar_copy_path(sentence_file):
    """Where the grammar copy of a set generated with ``--classes`` lives: ``<file stem>.grammar.yaml``."""
    p = Path(sentence_file)
    return p.with_name(p.stem + ".grammar.yaml")


def grammar_set_paths(sentence_file, *, grammar_copy=False):
    """The files a generated set is made of: the sentence file, its conditions table, and its grammar copy if any."""
    p = Path(sentence_file)
    return [p, conditions_path(p)] + ([grammar_copy_path(p)] if grammar_copy else [])


def _read_conditions(table, sentences):
    """The validated conditions table of a generated set: (conditions per sentence, grammar)."""
    from ..grammar import list_grammars, load_grammar, parse_conditions
    from .confinement import read_text_file, resolve_named_path

    src = str(table)
    try:
        lines = text_lines(read_text_file(table, "conditions table"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"Cannot read conditions table {src!r}: {exc}.") from None
    meta, body, lineno = {}, [], 0
    for lineno, line in enumerate(lines, start=1):
        if line.startswith("#"):
            key, _, value = line[1:].partition(":")
            if key.strip() in ("grammar", "grammar_digest") and key.strip() in meta:  # which one holds?
                raise ValueError(
                    f"{src}, line {lineno}: a second '# {key.strip()}:' line; expected one (the grammar the "
                    "sentences were generated from)."
                )
            meta[key.strip()] = value.strip()
        elif line.strip():
            body.append((lineno, line))
    if "grammar" not in meta:
        raise ValueError(f"{src}: no '# grammar: NAME' line; regenerate it with lbee sentences generate.")
    ref = meta["grammar"]
    if ref in list_grammars() and not (table.parent / ref).is_file():  # a folder of that name is no grammar
        grammar = load_grammar(ref)
    else:  # a path named by the file: confined to the data root when one is active (lbee serve)
        fix = (  # a twelfth user copied a set and its grammar into the root: the line still named the old place
            ": put the grammar in the root and run `lbee sentences generate` on it there (the line then names it "
            "beside the set)"
        )
        local = resolve_named_path(ref, table.parent, key="its '# grammar:' line", source=src, fix=fix)
        if not local.is_file():
            raise ValueError(
                f"{src}: its '# grammar:' line names {ref!r}, which is neither a file beside it nor a built-in "
                f"grammar ({', '.join(list_grammars())}); copy the grammar beside the set (a set moves with its "
                "grammar), or regenerate the set with lbee sentences generate."
            )
        try:
            grammar = load_grammar(local)
        except ValueError:  # its reason may quote the file: a line from someone else must not print one of yours
            raise ValueError(
                f"{src}: its '# grammar:' line names {ref!r}, which is not a grammar lbee can read; run "
                "`lbee sentences generate` on that file to see why, or regenerate the set from its grammar."
            ) from None
    if not meta.get("grammar_digest"):  # without it, an edited grammar and the sentences could disagree unseen
        raise ValueError(
            f"{src}: no '# grammar_digest: sha256:...' line; expected the digest of the grammar the sentences "
            "were generated from. Regenerate them with lbee sentences generate."
        )
    if meta["grammar_digest"] != grammar.digest:
        raise ValueError(
            f"{src}: grammar {ref!r} has changed since these sentences were generated "
            f"({meta['grammar_digest']} vs {grammar.digest}); regenerate them with lbee sentences generate."
        )
    if not body or body[0][1].split("\t") != ["sentence", "conditions"]:
        raise ValueError(
            f"{src}, line {body[0][0] if body else lineno}: expected the header 'sentence<TAB>conditions'."
        )
    rows = body[1:]
    if len(rows) != len(sentences):
        raise ValueError(
            f"{src}: {len(rows)} rows but the sentence file has {len(sentences)} sentences; "
            "regenerate both with lbee sentences generate."
        )
    out = []
    for (ln, line), sent in zip(rows, sentences):
        text, _, cell = line.partition("\t")
        if text != sent:
            raise ValueError(f"{src}, line {ln}: sentence {text!r} differs from the sentence file's {sent!r}.")
        if not cell.strip():  # parse_conditions reads it as the empty conjunction, which no sentence says
            raise ValueError(
                f"{src}, line {ln}: the conditions cell of {text!r} is empty; expected "
                "'subject.attribute=value; ...'. Regenerate the set with lbee sentences generate."
            )
        cond = parse_conditions(cell, source=src, line=ln)
        why = grammar.contradiction(grammar.implied(cond))
        if why is not None:
            raise ValueError(f"{src}, line {ln}: conditions {cell!r} do not fit grammar {grammar.name!r}: {why}.")
        said = grammar.render(cond)
        if said != text:  # the row is evidence: its sentence must be what the grammar says for its conditions
            raise ValueError(
                f"{src}, line {ln}: sentence {text!r} is not what grammar {grammar.name!r} says for its "
                f"conditions {cell!r} (expected {said!r}); regenerate the set with lbee sentences generate."
            )
        out.append(cond)
    return tuple(out), grammar


def builtin_dir():
    """The folder of the built-in sentence sets (and their ``.questions.tsv`` overrides)."""
    return _builtin_dir()


def _builtin_dir():
    try:
        return Path(str(resources.files("lbee.sentence_sets")))
    except ModuleNotFoundError:  # running from a source tree that was not installed
        return Path(__file__).resolve().parents[2] / "sentence_sets"


def is_builtin_set_name(value):
    """Whether ``value`` names a built-in sentence set (``spotcheck``) or a built-in grammar's (``spotcheck.grammar``).

    Such a name always means the built-in set, never a file of that name (`load_sentence_set`).
    """
    from ..grammar import list_grammars

    value = str(value)
    return value in list_sentence_sets() or (
        value.endswith(".grammar") and value[: -len(".grammar")] in list_grammars()
    )


def list_sentence_sets():
    """Names of the built-in sentence sets, sorted."""
    return sorted(p.stem for p in _builtin_dir().glob("*.txt"))


def sentence_key(text):
    """The form in which two sentences are compared: NFKC-normalised, spaces collapsed, case-folded.

    "café" written with a combining accent and precomposed, or with two spaces instead of one, look the same
    and embed alike: a set holding both would have two rows no explanation can tell apart.
    """
    import unicodedata

    return " ".join(unicodedata.normalize("NFKC", text).split()).casefold()


def parse_sentences(text, source="<text>"):
    """Parse sentence-file text.

    Blank lines are separators; lines starting with ``#`` are comments (the
    first comment block is the header). A leading byte order mark is dropped. A duplicated sentence (case-insensitive)
    or a file with no sentence raises ``ValueError`` naming the line.

    Returns
    -------
    sentences : list of str
    header : str
    """
    if text.startswith("\ufeff"):  # a UTF-8 byte order mark must not become part of the first sentence
        text = text[1:]
    sentences, header, seen = [], [], {}
    in_header = True
    for lineno, raw in enumerate(text_lines(text), start=1):
        line = raw.strip()
        if line.startswith("#"):
            if in_header:
                header.append(line.lstrip("#").strip())
            continue
        if not line:
            continue
        in_header = False
        if len(line) > MAX_SENTENCE_CHARS:
            raise ValueError(f"{source}: line {lineno} {too_long(line)}")
        bad = line_break_in(line)
        if bad is not None:  # an escape sequence would reach the terminal and the report, a zero-width space hide
            raise ValueError(
                f"{source}: line {lineno} holds the character U+{ord(bad):04X} ({INVISIBLE}); expected one "
                "sentence of visible text per line."
            )
        key = sentence_key(line)
        if key in seen:
            raise ValueError(f"{source}: line {lineno} repeats the sentence of line {seen[key]}: {line!r}.")
        seen[key] = lineno
        sentences.append(line)
    if not sentences:
        raise ValueError(f"{source}: no sentence found; expected one sentence per line ('#' starts a comment).")
    return sentences, "\n".join(header).strip()


class UnknownSentenceSet(ValueError):
    """A sentence set named that is neither a file nor a built-in set (the command line's exit 2, as a bad path)."""


#: The longest sentence lbee reads, in characters. A CLIP text encoder reads its first 77 tokens (about 300
#: characters); 18 MB of long lines cost seconds and a 37 MB output folder, and one character can expand 18-fold
#: when normalised (`sentence_key`).
MAX_SENTENCE_CHARS = 1000


def too_long(sentence):
    """The words of a refusal of ``sentence`` as too long (after the place that names it)."""
    return (
        f"holds a sentence of {len(sentence):,} characters; expected at most {MAX_SENTENCE_CHARS:,} (an encoder "
        "reads about the first 300)."
    )


def load_sentence_set(name_or_path):
    """Load a built-in set by name, or a sentence file by path.

    Parameters
    ----------
    name_or_path : str or path-like
        A name from `list_sentence_sets` or a path to a text file.

    Returns
    -------
    SentenceSet
    """
    if not isinstance(name_or_path, (str, Path)):
        raise TypeError(f"`name_or_path` must be a set name or a path; received {type(name_or_path).__name__}.")
    ref = str(name_or_path)
    if is_builtin_set_name(ref) and os.path.lexists(ref):
        # the name means the built-in set everywhere (a file of that name in the working folder, the server's
        # too, never replaces it in silence); ./NAME reads the file
        warnings.warn(
            f"--sentences {ref!r} is the built-in set; the file {ref!r} in the current folder is not read "
            f"(write ./{ref} to read it).",
            UserWarning,
            stacklevel=caller_stacklevel(),
        )
    grammar_set = _grammar_set(name_or_path)
    if grammar_set is not None:
        return grammar_set
    path = Path(name_or_path)
    if ref in list_sentence_sets() or not path.is_file():
        # only a bare name is a built-in set: './spotcheck' naming no file read the built-in one (sweep 32ax B2)
        builtin = _builtin_dir() / f"{ref}.txt" if ref in list_sentence_sets() else None
        if builtin is None or not builtin.is_file():
            import difflib

            from ..grammar import list_grammars

            names = list_sentence_sets() + [f"{g}.grammar" for g in list_grammars()]
            near = difflib.get_close_matches(ref, names, n=1)
            if not near:  # a file name misspelled: a file beside it
                from .._files import near_file

                near = [n for n in [near_file(path)] if n is not None and n != ref]  # never itself (a race)
            builtins = f"Built-in sets: {', '.join(names)} (`lbee sentences list` describes them)."
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            if path.is_dir():
                raise UnknownSentenceSet(f"Sentence file {ref!r} is a folder; expected a text file. {builtins}")
            if path.exists():  # /dev/stdin, a FIFO: it exists, but is no file to read (sweep 32ay N4)
                raise UnknownSentenceSet(f"Sentence file {ref!r} is not a regular file; expected a text file.")
            if "/" in ref or os.sep in ref or path.suffix:  # meant as a file: say so first (trial 38)
                raise UnknownSentenceSet(f"Sentence file {ref!r} does not exist{hint}. {builtins}")
            raise UnknownSentenceSet(
                f"Unknown sentence set {ref!r}: not a file and not a built-in set{hint}. {builtins}"
            )
        path = builtin
    from .confinement import read_text_file

    try:
        text = read_text_file(path, "sentence file")  # a FIFO, a device or a sparse gigabyte is never read
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"Cannot read sentence file {str(path)!r}: {exc}.") from None
    sentences, header = parse_sentences(text, source=str(path))
    from .confinement import sidecar

    table = sidecar(conditions_path(path), of=f"sentence file {str(path)!r}", what="conditions table", beside=path)
    if table is not None:
        conditions, grammar = _read_conditions(table, sentences)
        return SentenceSet(path.stem, tuple(sentences), header, str(path), conditions, grammar)
    if "Each sentence's conditions are in" in header:  # generated, but read without them: said, not silent
        warnings.warn(
            f"sentence file {str(path)!r} was generated from a grammar, but its conditions file "
            f"{conditions_path(path).name!r} is not beside it: the sentences are read as a plain set, without "
            "compose or the merging into one hypothesis per failure. Keep the two files together.",
            UserWarning,
            stacklevel=caller_stacklevel(),
        )
    return SentenceSet(path.stem, tuple(sentences), header, str(path))


def _grammar_set(name_or_path):
    """A grammar named as a sentence set ('spotcheck.grammar' or a '.grammar.yaml' file), generated at its default."""
    from ..grammar import generate, list_grammars, load_grammar

    ref = str(name_or_path)
    if ref.endswith(".grammar") and ref[: -len(".grammar")] in list_grammars():
        grammar = load_grammar(ref[: -len(".grammar")])
    elif ref.endswith(".grammar.yaml"):
        grammar = load_grammar(ref)
    else:
        return None
    sentences, conditions, _ = generate(grammar)
    return SentenceSet(
        f"{grammar.name}.grammar",
        tuple(sentences),
        f"grammar {grammar.name!r} ({grammar.digest}), up to {grammar.max_conditions} conditions",
        grammar.source,
        tuple(conditions),
        grammar,
    )
