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

from ._grammar import ATTRIBUTE_KINDS, FALSE, PRESENCE, TRUE, Attribute, Grammar, Subject

TOP_KEYS = ("name", "description", "lead", "bare", "max_conditions", "subjects", "settings")
SUBJECT_KEYS = ("id", "noun", "plural", "article", "bare", "deniable", "attributes")
SETTING_KEYS = ("id", "noun", "article", "preposition", "attributes")
ATTRIBUTE_KEYS = ("id", "kind", "values", "plural", "requires")
_ID = re.compile(r"^[a-z][a-z0-9_]*$")
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

    try:
        # BaseLoader: every scalar is a string; no YAML 1.1 yes/no/on/off booleans, no octal surprises.
        root = yaml.compose(text, Loader=yaml.BaseLoader)
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

    def mapping(self, node, where, allowed, required=()):
        if not isinstance(node.value, dict):
            self.fail(node.line, f"{where} must be a mapping; received {_kind(node)}.")
        for key in node.value:
            if key not in allowed:
                self.fail(node.key_lines[key], f"unknown key {key!r} in {where}; expected one of {', '.join(allowed)}.")
        for key in required:
            if key not in node.value:
                self.fail(node.line, f"{where} needs the key {key!r}.")
        return node.value

    def text(self, node, where, *, allow_empty=False):
        if not isinstance(node.value, str):
            self.fail(node.line, f"{where} must be text; received {_kind(node)}.")
        value = node.value.strip()
        if not value and not allow_empty:
            self.fail(node.line, f"{where} is empty; expected some words.")
        return value

    def ident(self, node, where):
        value = self.text(node, where)
        if not _ID.match(value):
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


def _kind(node):
    v = node.value
    return "a mapping" if isinstance(v, dict) else "a list" if isinstance(v, list) else f"{v!r}"


def _attribute(ctx, node, where, subject_ids):
    m = ctx.mapping(node, where, ATTRIBUTE_KEYS, ("id", "values"))
    aid = ctx.ident(m["id"], f"{where} id")
    if aid == PRESENCE:
        ctx.fail(m["id"].line, f"{where}: 'presence' is not an attribute; say `deniable: true` on the subject.")
    where = f"{where} ({aid})"
    kind = ctx.text(m["kind"], f"{where} kind") if "kind" in m else "adjective"
    if kind not in ATTRIBUTE_KINDS:
        ctx.fail(m["kind"].line, f"{where} kind is {kind!r}; expected one of {', '.join(ATTRIBUTE_KINDS)}.")
    vals = ctx.mapping(
        m["values"], f"{where} values", allowed=tuple(m["values"].value) if isinstance(m["values"].value, dict) else ()
    )
    if not vals:
        ctx.fail(m["values"].line, f"{where} values is empty; expected at least one value: words.")
    values = {}
    for value, words in vals.items():
        if not value.strip():
            ctx.fail(m["values"].key_lines[value], f"{where}: a value name is empty.")
        values[value.strip()] = ctx.text(words, f"{where} value {value!r}")
    seen = {}
    for value, words in values.items():
        if words.casefold() in seen:
            ctx.fail(
                m["values"].line,
                f"{where}: values {seen[words.casefold()]!r} and {value!r} are both said "
                f"{words!r}; every value needs its own words.",
            )
        seen[words.casefold()] = value
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
        mt = re.match(r"^([a-z][a-z0-9_]*)\.([a-z][a-z0-9_]*)=(\S+)$", cell)
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
    if sum(a.kind == "determiner" for a in attrs) > 1 or sum(a.kind == "noun" for a in attrs) > 1:
        ctx.fail(m["id"].line, f"{where}: at most one 'determiner' and one 'noun' attribute.")

    def get(key, default=""):
        return ctx.text(m[key], f"{where} {key}", allow_empty=True) if key in m else default

    if setting and not attrs:
        ctx.fail(m["id"].line, f"{where}: a setting without attributes says nothing; give it attributes.")
    return Subject(
        id=sid,
        noun=ctx.text(m["noun"], f"{where} noun"),
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
        vocabularies, two values said with the same words, a ``requires`` or
        ``plural`` that names nothing, a subject declared twice.
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
    k = 2
    if "max_conditions" in top:
        raw = ctx.text(top["max_conditions"], "max_conditions")
        if not raw.isdigit() or int(raw) < 1:
            ctx.fail(top["max_conditions"].line, f"max_conditions is {raw!r}; expected a positive integer.")
        k = int(raw)
    digest = "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
    g = Grammar(
        name=ctx.text(top["name"], "name"),
        lead=ctx.text(top["lead"], "lead"),
        bare=ctx.text(top["bare"], "bare") if "bare" in top else "An image",
        subjects=tuple(subjects),
        max_conditions=k,
        description=ctx.text(top["description"], "description", allow_empty=True) if "description" in top else "",
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
    """A built-in grammar by name (:func:`list_grammars`) or a grammar file by path.

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
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"Cannot read grammar file {str(path)!r}: {exc}.") from None
    return parse_grammar(text, source=str(path))
