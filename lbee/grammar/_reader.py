"""The one validating reader of grammar files (YAML; schema: ``lbee/grammar/grammar.schema.json``).

Every scalar is read as a string (YAML's ``no`` / ``on`` / ``1`` stay the
words they are), every key is checked against the schema's list, a key
written twice is refused, and every error names the file and the line.
"""

from __future__ import annotations

import hashlib
import re
from importlib import resources
from pathlib import Path

from .._validation import INVISIBLE, line_break_in  # noqa: F401  (the one rule, named here too)
from ._grammar import ATTRIBUTE_KINDS, FALSE, PRESENCE, TRUE, Attribute, Grammar, Subject
from ._words import said_alike  # noqa: F401  (named from here too)

TOP_KEYS = ("name", "description", "lead", "bare", "max_conditions", "subjects", "settings")
SUBJECT_KEYS = ("id", "noun", "plural", "article", "bare", "deniable", "attributes")
SETTING_KEYS = ("id", "noun", "article", "preposition", "attributes")
ATTRIBUTE_KEYS = ("id", "kind", "values", "plural", "requires")
_ID = re.compile(r"[a-z][a-z0-9_]*")
#: A value's name: it is written in a `.conditions.tsv` cell ('subject.attribute=value; ...'), so none of the
#: cell's separators (';', '=', '.', a tab, spaces) may be part of it.
VALUE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]*")
_REQUIRES = re.compile(rf"([a-z][a-z0-9_]*)\.([a-z][a-z0-9_]*)=({VALUE_NAME.pattern})")
#: At most this many characters in one piece of a grammar's words (a value's words, a noun, the lead, ...): a
#: sentence joins several of them, and a grammar of long words (an aliased 100,000-character string, say) would
#: render gigabytes of sentence text. The longest built-in piece is a few dozen characters.
MAX_WORDS_CHARS = 200
#: Where the built-in grammars live (beside the built-in sentence sets).
SUFFIX = ".grammar.yaml"


class _Node:
    """A YAML node's value with its line (1-based)."""

    __slots__ = ("value", "line", "key_lines")

    def __init__(self, value, line, key_lines=None):
        self.value, self.line, self.key_lines = value, line, key_lines or {}


def _build(node, path):
    import yaml

    line = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        out, lines = {}, {}
        for k, v in node.value:
            if not isinstance(k, yaml.ScalarNode):
                raise ValueError(f"{path}, line {k.start_mark.line + 1}: a key must be a plain word.")
            key = k.value
            if key in out:
                raise ValueError(
                    f"{path}, line {k.start_mark.line + 1}: key {key!r} is written twice (first on "
                    f"line {lines[key]}); keep one."
                )
            out[key], lines[key] = _build(v, path), k.start_mark.line + 1
        return _Node(out, line, lines)
    if isinstance(node, yaml.SequenceNode):
        return _Node([_build(v, path) for v in node.value], line)
    return _Node(node.value, line)


def _parse_yaml(text, path):
    import yaml

    from .._yaml import compose_yaml

    try:
        # every scalar a string (no YAML 1.1 yes/no/on/off booleans, no octal surprises); nesting and alias
        # expansion bounded before anything is built (lbee._yaml)
        root = compose_yaml(text, source=path)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f", line {mark.line + 1}" if mark is not None else ""
        raise ValueError(f"{path}{where}: not valid YAML ({getattr(exc, 'problem', exc)}).") from None
    if root is None:
        raise ValueError(f"{path}: the file is empty; expected a grammar (keys {', '.join(TOP_KEYS)}).")
    return _build(root, path)


class _Ctx:
    def __init__(self, path):
        self.path = path

    def fail(self, line, msg):
        raise ValueError(f"{self.path}, line {line}: {msg}")

    def mapping(self, node, where, allowed=None, required=()):
        """``node``'s mapping; ``allowed`` (a tuple of schema keys) or None for any key (a values mapping)."""
        if not isinstance(node.value, dict):
            self.fail(node.line, f"{where} must be a mapping; received {_kind(node)}.")
        for key in node.value if allowed is not None else ():
            if key not in allowed:
                self.fail(node.key_lines[key], f"unknown key {key!r} in {where}; expected one of {', '.join(allowed)}.")
        for key in required:
            if key not in node.value:
                self.fail(node.line, f"{where} needs the key {key!r}.")
        return node.value

    def text(self, node, where, *, allow_empty=False, one_line=True):
        if not isinstance(node.value, str):
            self.fail(node.line, f"{where} must be text; received {_kind(node)}.")
        value = node.value.strip()
        if not value and not allow_empty:
            self.fail(node.line, f"{where} is empty; expected some words.")
        if one_line and len(value) > MAX_WORDS_CHARS:
            self.fail(
                node.line,
                f"{where} is {len(value):,} characters long (it starts {value[:40]!r}); expected at most "
                f"{MAX_WORDS_CHARS}.",
            )
        bad = line_break_in(value) if one_line else None
        if bad is not None:  # a sentence is one line of the sentence file and one cell of the conditions table
            self.fail(
                node.line,
                f"{where} {shown(value)} holds the character U+{ord(bad):04X} ({INVISIBLE}); "
                "expected words on one line.",
            )
        return value

    def ident(self, node, where):
        value = self.text(node, where)
        if not _ID.fullmatch(value):
            self.fail(node.line, f"{where} {value!r} must be a lower-case identifier (letters, digits, '_').")
        return value

    def boolean(self, node, where):
        value = self.text(node, where).lower()
        if value not in ("true", "false"):
            self.fail(node.line, f"{where} is {node.value!r}; expected true or false.")
        return value == "true"

    def sequence(self, node, where):
        if not isinstance(node.value, list):
            self.fail(node.line, f"{where} must be a list; received {_kind(node)}.")
        return node.value


def shown(value):
    """``value``'s repr cut short (`lbee._validation.shown`, imported late: it brings numpy)."""
    from .._validation import shown as cut

    return cut(value)


def _kind(node):
    v = node.value
    return "a mapping" if isinstance(v, dict) else "a list" if isinstance(v, list) else shown(v)


def _attribute(ctx, node, where, subject_ids):
    m = ctx.mapping(node, where, ATTRIBUTE_KEYS, ("id", "values"))
    aid = ctx.ident(m["id"], f"{where} id")
    if aid == PRESENCE:
        ctx.fail(m["id"].line, f"{where}: 'presence' is not an attribute; say `deniable: true` on the subject.")
    where = f"{where} ({aid})"
    kind = ctx.text(m["kind"], f"{where} kind") if "kind" in m else "adjective"
    if kind not in ATTRIBUTE_KINDS:
        ctx.fail(m["kind"].line, f"{where} kind is {kind!r}; expected one of {', '.join(ATTRIBUTE_KINDS)}.")
    vals = ctx.mapping(m["values"], f"{where} values")  # any value names (checked below), in linear time
    if not vals:
        ctx.fail(m["values"].line, f"{where} values is empty; expected at least one value: words.")
    values = {}
    for value, words in vals.items():
        if not VALUE_NAME.fullmatch(value):
            ctx.fail(
                m["values"].key_lines[value],
                f"{where}: value name {value!r} must be letters, digits, '_' or '-' (it is written in the "
                "conditions table, whose cells use ';', '=' and '.').",
            )
        values[value] = ctx.text(words, f"{where} value {value!r}")
    seen = {}
    for value, words in values.items():
        alike = said_alike(words)
        if alike in seen:
            ctx.fail(
                m["values"].line,
                f"{where}: values {seen[alike]!r} and {value!r} are both said "
                f"{words!r}; every value needs its own words.",
            )
        seen[alike] = value
    plural = (
        tuple(ctx.text(p, f"{where} plural") for p in ctx.sequence(m["plural"], f"{where} plural"))
        if "plural" in m
        else ()
    )
    for p in plural:
        if p not in values:
            ctx.fail(
                m["plural"].line, f"{where} plural names {p!r}, which is not one of its values ({', '.join(values)})."
            )
    requires = []
    for r in ctx.sequence(m["requires"], f"{where} requires") if "requires" in m else []:
        cell = ctx.text(r, f"{where} requires")
        mt = _REQUIRES.fullmatch(cell)
        if not mt:
            ctx.fail(
                r.line, f"{where} requires {cell!r}; expected 'subject.attribute=value' (e.g. square.presence=true)."
            )
        requires.append((mt.group(1), mt.group(2), mt.group(3)))
    return Attribute(aid, values, kind, plural, tuple(requires), m["id"].line)


def _subject(ctx, node, where, setting):
    m = ctx.mapping(node, where, SETTING_KEYS if setting else SUBJECT_KEYS, ("id", "noun"))
    sid = ctx.ident(m["id"], f"{where} id")
    where = f"{where} ({sid})"
    attrs, seen = [], {}
    for i, a in enumerate(ctx.sequence(m["attributes"], f"{where} attributes") if "attributes" in m else []):
        attr = _attribute(ctx, a, f"{where} attribute {i + 1}", None)
        if attr.id in seen:
            ctx.fail(attr.line, f"{where}: attribute {attr.id!r} is declared twice (first on line {seen[attr.id]}).")
        seen[attr.id] = attr.line
        attrs.append(attr)
    said = {}
    for a in attrs:  # two attributes of one kind said with the same words: two conjunctions, one sentence
        for value, words in a.values.items():
            other = said.setdefault((a.kind, said_alike(words)), (a, value))
            if other[0] is not a:
                ctx.fail(
                    a.line,
                    f"{where}: {a.id}={value} and {other[0].id}={other[1]} (line {other[0].line}) are both said "
                    f"{words!r}; every value of a subject needs its own words.",
                )
    if sum(a.kind == "determiner" for a in attrs) > 1 or sum(a.kind == "noun" for a in attrs) > 1:
        ctx.fail(m["id"].line, f"{where}: at most one 'determiner' and one 'noun' attribute.")

    def get(key, default=""):
        return ctx.text(m[key], f"{where} {key}", allow_empty=True) if key in m else default

    if setting and not attrs:
        ctx.fail(m["id"].line, f"{where}: a setting without attributes says nothing; give it attributes.")
    if setting and "preposition" not in m and any(a.kind != "clause" for a in attrs):
        # said after the subjects with its noun: without one, "A photo a red feeder" (a sixteenth user)
        ctx.fail(
            m["id"].line,
            f'{where}: a setting is said after the subjects with its noun and a preposition ("on a noisy '
            'background"); give it `preposition:` (on, in, at, against, ...).',
        )
    noun = ctx.text(m["noun"], f"{where} noun")
    if not re.search(r"\w", noun):  # a clause names a subject by its noun's words (`lbee.grammar._words`)
        ctx.fail(m["noun"].line, f"{where} noun {noun!r} has no letter or digit; expected a word that names it.")
    return Subject(
        id=sid,
        noun=noun,
        article=get("article", "a"),
        plural_noun=get("plural"),
        bare=get("bare"),
        preposition=get("preposition"),
        deniable=ctx.boolean(m["deniable"], f"{where} deniable") if "deniable" in m else False,
        setting=setting,
        attributes=tuple(attrs),
        line=m["id"].line,
    )


def parse_grammar(text, *, source="<grammar>"):
    """Parse and validate grammar YAML text.

    Returns
    -------
    Grammar

    Raises
    ------
    ValueError
        Naming ``source`` and the line: unknown or repeated keys, empty
        vocabularies, two values of a subject said with the same words, a
        ``requires`` or ``plural`` that names nothing, a subject declared
        twice, words with a line break, tab, control or format character
        (`line_break_in`) or longer than `MAX_WORDS_CHARS`, a value name outside `VALUE_NAME`, YAML
        nested or aliased past ``lbee._yaml``'s bounds.
    """
    ctx = _Ctx(source)
    root = _parse_yaml(text, source)
    top = ctx.mapping(root, "the grammar", TOP_KEYS, ("name", "lead", "subjects"))
    subjects, where_ = [], {}
    for key, setting in (("subjects", False), ("settings", True)):
        for i, node in enumerate(ctx.sequence(top[key], key) if key in top else []):
            s = _subject(ctx, node, f"{key} entry {i + 1}", setting)
            if s.id in where_:
                ctx.fail(s.line, f"{key} entry {i + 1}: id {s.id!r} is declared twice (first on line {where_[s.id]}).")
            where_[s.id] = s.line
            subjects.append(s)
    if not any(not s.setting for s in subjects):
        ctx.fail(top["subjects"].line, "'subjects' is empty; a grammar needs at least one subject.")
    ids = {s.id: s for s in subjects}
    for s in subjects:
        for a in s.attributes:
            for rs, ra, rv in a.requires:
                target = ids.get(rs)
                ok = target is not None and (
                    (ra == PRESENCE and (rv in ((TRUE, FALSE) if target.deniable else (TRUE,))) and not target.setting)
                    or (target.attribute(ra) is not None and rv in target.attribute(ra).values)
                )
                if not ok:
                    ctx.fail(a.line, f"{s.id}.{a.id} requires {rs}.{ra}={rv}, which the grammar does not declare.")
                others = [v for v in a.values if v != rv]
                if (rs, ra) == (s.id, a.id) and others:  # one value of an attribute at a time: the others never hold
                    ctx.fail(
                        a.line,
                        f"{s.id}.{a.id} requires {rs}.{ra}={rv}, a value of the same attribute: its other values "
                        f"({', '.join(others[:5])}{', ...' if len(others) > 5 else ''}) can never hold; "
                        "drop the requirement or move those values to another attribute.",
                    )
    k = 2
    if "max_conditions" in top:
        raw = ctx.text(top["max_conditions"], "max_conditions")
        # str.isdigit alone accepts '²'; nine digits keep int() clear of its 4,300-digit limit
        if not (raw.isascii() and raw.isdigit()) or len(raw) > 9 or int(raw) < 1:
            ctx.fail(
                top["max_conditions"].line,
                f"max_conditions is {raw!r}; expected a positive integer (at most the number of attributes).",
            )
        k = int(raw)
    digest = "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
    lead = ctx.text(top["lead"], "lead")
    bare = ctx.text(top["bare"], "bare") if "bare" in top else "An image"
    for key, opening in (("lead", lead), ("bare", bare)):
        if opening.startswith("#"):  # every sentence opens with one of them; the sentence file reads '#' as a comment
            ctx.fail(top[key].line, f"{key} {opening!r} starts with '#', which starts a comment in a sentence file.")
    g = Grammar(
        name=ctx.text(top["name"], "name"),
        lead=lead,
        bare=bare,
        subjects=tuple(subjects),
        max_conditions=k,
        description=(
            ctx.text(top["description"], "description", allow_empty=True, one_line=False)
            if "description" in top
            else ""
        ),
        source=str(source),
        digest=digest,
    )
    n_keys = len(g.keys())
    if k > n_keys:
        ctx.fail(
            top["max_conditions"].line,
            f"max_conditions is {k} but the grammar has only {n_keys} attributes "
            "(presence included); a conjunction gives each at most one value.",
        )
    return g


def builtin_grammar_dir():
    """The folder of the built-in grammars (shipped with the built-in sentence sets)."""
    try:
        return Path(str(resources.files("lbee.sentence_sets")))
    except ModuleNotFoundError:  # a source tree that was not installed
        return Path(__file__).resolve().parents[2] / "sentence_sets"


def list_grammars():
    """Names of the built-in grammars, sorted."""
    return sorted(p.name[: -len(SUFFIX)] for p in builtin_grammar_dir().glob(f"*{SUFFIX}"))


def load_grammar(name_or_path: Grammar | str | Path) -> Grammar:
    """A built-in grammar by name ([`list_grammars`][lbee.grammar.list_grammars]) or a grammar file by path.

    Returns
    -------
    Grammar
    """
    if isinstance(name_or_path, Grammar):
        return name_or_path
    if not isinstance(name_or_path, (str, Path)):
        raise TypeError(f"`grammar` must be a built-in name or a path; received {type(name_or_path).__name__}.")
    path = Path(name_or_path)
    if not path.is_file():
        builtin = builtin_grammar_dir() / f"{name_or_path}{SUFFIX}"
        if not builtin.is_file():
            raise ValueError(
                f"Unknown grammar {str(name_or_path)!r}: not a file and not a built-in grammar. "
                f"Built-in grammars: {', '.join(list_grammars())}."
            )
        path = builtin
    from .._files import MAX_CONFIG_BYTES, read_text_file

    try:
        text = read_text_file(path, "grammar file", limit=MAX_CONFIG_BYTES)
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"Cannot read grammar file {str(path)!r}: {exc}.") from None
    return parse_grammar(text, source=str(path))
