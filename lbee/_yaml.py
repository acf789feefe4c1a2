"""The one bounded YAML reader, shared by grammar files, ``lbee report`` configs and YAML job bodies.

A few bytes of YAML can stand for a huge document: an anchor used ten times
inside an anchor used ten times (nine levels) is 10⁹ values, and a recursive
alias is an infinite one. PyYAML's composer builds the *node graph* without
expanding aliases (an alias is the anchored node itself), so the graph is as
small as the text. This reader checks that graph before anything walks or
builds it: how many nodes, and how many characters of text, the aliases add
when expanded (counted on the graph, each node once, without expanding), whether an alias sits inside its own
anchor, and how deep mappings and lists nest (checked while composing, so a
document 3,000 levels deep is refused before Python's recursion limit).

Two readers:

- `compose_yaml`: the checked node graph, every scalar a string
  (``BaseLoader``: no YAML 1.1 ``yes`` / ``no`` / octal surprises); grammars.
- `load_yaml`: Python objects from a safe loader whose mappings keep
  their lines (`LineMapping`) and refuse a key written twice and a
  merge key (``<<``), whose numbers are ASCII decimal only
  (`INT_PATTERN`, `FLOAT_PATTERN`); report configs and service
  job bodies.
"""

from __future__ import annotations

import re

#: Mappings and lists nested deeper than this are refused (a grammar needs 6 levels, a report config 5).
MAX_YAML_DEPTH = 64
#: At most this many nodes (mappings, lists, values) added by expanding aliases, beyond what the text writes:
#: ordinary anchors (a shared default block) stay far below it; an alias bomb is refused before it is expanded.
MAX_YAML_ALIAS_NODES = 100_000
#: At most this many characters of text (scalars: values and keys) added by expanding aliases, beyond what the
#: text writes: a long string aliased thousands of times is a few bytes of YAML but gigabytes once expanded
#: (in a message, a rendered sentence, a stored job), though it adds few nodes.
MAX_YAML_ALIAS_CHARS = 10_000_000
#: The numbers a report config or job body may write (YAML 1.2's core schema, ASCII decimal only): an integer
#: without leading zeros, a float with a point or an exponent. YAML 1.1 would also read ``010`` as 8 (octal),
#: ``1:0`` as 60 (base 60), ``0x10`` as 16 and ``1_000`` as 1000; those stay text, which the key's check refuses.
INT_PATTERN = r"[-+]?(?:0|[1-9][0-9]{0,99})"  # at most 100 digits: longer stays text, which the key's check names
FLOAT_PATTERN = r"[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+(?=[eE]))(?:[eE][-+]?[0-9]+)?"


_INT_TAG = "tag:yaml.org,2002:int"
_FLOAT_TAG = "tag:yaml.org,2002:float"
_MERGE_TAG = "tag:yaml.org,2002:merge"


class YAMLLimitError(ValueError):
    """YAML past the reader's bounds (deep nesting, a recursive alias, aliases expanding too far), or a merge key."""


#: What a mapping key that is not a plain name is, in YAML's words (not a Python class's: sweep 32bb N6).
_KEY_KINDS = {"LineMapping": "mapping", "list": "list", "bytes": "binary value", "date": "date", "datetime": "date"}


class LineMapping(dict):
    """A YAML mapping that remembers its line and its keys' lines."""

    line = 0
    key_lines: dict


def _bounded(base, max_depth):
    """``base`` (a PyYAML loader class) whose composer refuses mappings and lists nested deeper than ``max_depth``."""
    import yaml

    class Bounded(base):
        _depth = 0

        def compose_node(self, parent, index):
            nested = self.check_event(yaml.MappingStartEvent, yaml.SequenceStartEvent)
            if nested:
                self._depth += 1
                if self._depth > max_depth:
                    line = self.peek_event().start_mark.line + 1
                    raise YAMLLimitError(
                        f"line {line}: mappings and lists are nested more than {max_depth} levels deep; "
                        f"expected at most {max_depth} levels."
                    )
            try:
                return super().compose_node(parent, index)
            finally:
                if nested:
                    self._depth -= 1

    return Bounded


def _strict(base):
    """``base`` whose mappings are `LineMapping` and refuse a key written twice."""
    import yaml

    class Strict(base):
        # the resolvers less YAML 1.1's int and float, plus the strict ones (INT_PATTERN, FLOAT_PATTERN)
        yaml_implicit_resolvers = {
            first: [(tag, rx) for tag, rx in resolvers if tag not in (_INT_TAG, _FLOAT_TAG)]
            for first, resolvers in base.yaml_implicit_resolvers.items()
        }

    Strict.add_implicit_resolver(_INT_TAG, re.compile(rf"^{INT_PATTERN}$", re.ASCII), list("-+0123456789"))
    Strict.add_implicit_resolver(_FLOAT_TAG, re.compile(rf"^{FLOAT_PATTERN}$", re.ASCII), list("-+.0123456789"))

    def construct_mapping(loader, node):
        out = LineMapping()
        out.line = node.start_mark.line + 1
        out.key_lines = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:  # SafeLoader's merge would hide where each key came from
                raise YAMLLimitError(
                    f"line {key_node.start_mark.line + 1}: merge keys (<<) are not supported; write the keys out."
                )
            key = loader.construct_object(key_node, deep=True)
            if not isinstance(key, (str, int, float, bool)) and key is not None:
                kind = _KEY_KINDS.get(type(key).__name__, "value of another kind")
                raise yaml.constructor.ConstructorError(
                    None, None, f"a mapping key must be a plain name, found a {kind}", key_node.start_mark
                )
            if key in out:  # YAML would keep the last value in silence; a key written twice is a mistake
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"the key {key!r} is written twice (lines {out.key_lines[key]} and "
                    f"{key_node.start_mark.line + 1}); expected each key once",
                    key_node.start_mark,
                )
            out[key] = loader.construct_object(value_node, deep=True)
            out.key_lines[key] = key_node.start_mark.line + 1
        return out

    Strict.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)

    def strict_number(tag, pattern, kind):
        # an explicit tag (`!!int 0x10`, `!!int 1:0`, `!!float '0.5'`) would take YAML 1.1's loose forms back
        def construct(loader, node):
            text = loader.construct_scalar(node)
            if node.style or not re.fullmatch(pattern, str(text), re.ASCII):
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"{tag.rsplit(':', 1)[-1]} {text!r} is not a number in ASCII decimal (no 0x, 1:0, 1_000, "
                    "quotes); write it plainly",
                    node.start_mark,
                )
            return kind(text)

        Strict.add_constructor(tag, construct)

    strict_number(_INT_TAG, INT_PATTERN, int)
    strict_number(_FLOAT_TAG, FLOAT_PATTERN, float)
    return Strict


def strict_loader():
    """The safe loader of `load_yaml` (lines kept, a key written twice refused), without the bounds."""
    import yaml

    return _strict(yaml.SafeLoader)


def _children(node):
    import yaml

    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return node.value
    return ()


def _said(count):
    return f"{count:,}" if count < 10**15 else "more than 10^15"


def _check_graph(root, max_alias_nodes, max_alias_chars):
    """Refuse a recursive alias, or aliases that expand past ``max_alias_nodes`` / ``max_alias_chars``.

    The bounds are on what expanding adds to the written text: extra nodes, and extra characters of scalars.

    One depth-first pass over the node graph, each node once: a node's expanded size (nodes, and characters
    of its scalars) is its own plus its children's (memoised), so a bomb of 10⁹ expanded nodes costs as much
    as its few hundred written ones.
    """
    size = {}  # id(node) -> (nodes, characters) of the node with every alias expanded
    open_ = set()  # nodes whose children are being visited: the current path
    stack = [(root, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        if finished:
            open_.discard(key)
            children = [size[id(c)] for c in _children(node)]
            own = len(node.value) if isinstance(node.value, str) else 0  # a scalar's text
            size[key] = (1 + sum(n for n, _ in children), own + sum(c for _, c in children))
        elif key in open_:
            raise YAMLLimitError(
                f"line {node.start_mark.line + 1}: an alias refers to the mapping or list that contains it "
                "(a recursive alias); expected a tree."
            )
        elif key not in size:
            open_.add(key)
            stack.append((node, True))
            stack.extend((c, False) for c in _children(node))
    nodes, chars = size[id(root)]
    extra = nodes - len(size)
    if extra > max_alias_nodes:
        raise YAMLLimitError(
            f"its aliases expand to {_said(extra)} nodes beyond the {len(size):,} the text writes; "
            f"at most {max_alias_nodes:,} are accepted."
        )
    written = sum(c for n, c in size.values() if n == 1)  # each scalar once (an empty mapping or list adds 0)
    extra = chars - written
    if extra > max_alias_chars:
        raise YAMLLimitError(
            f"its aliases expand to {_said(extra)} characters of text beyond the {written:,} the text writes; "
            f"at most {max_alias_chars:,} are accepted."
        )


def _compose(loader, max_alias_nodes, max_alias_chars):
    try:
        root = loader.get_single_node()
    except RecursionError:  # only past a limit raised beyond what the depth check allows
        raise YAMLLimitError("nested too deeply to read.") from None
    if root is not None:
        _check_graph(root, max_alias_nodes, max_alias_chars)
    return root


def _sourced(exc, source):
    """``exc`` (a YAMLLimitError) with ``source`` in front of its message."""
    return YAMLLimitError(f"{source}, {exc}" if str(exc).startswith("line ") else f"{source}: {exc}")


def compose_yaml(
    text,
    *,
    source,
    max_depth=MAX_YAML_DEPTH,
    max_alias_nodes=MAX_YAML_ALIAS_NODES,
    max_alias_chars=MAX_YAML_ALIAS_CHARS,
):
    """The checked node graph of ``text`` (every scalar a string), or None for an empty document.

    Raises
    ------
    YAMLLimitError
        Naming ``source`` (and the line): nested more than ``max_depth`` levels, a recursive alias, or
        aliases expanding to more than ``max_alias_nodes`` nodes or ``max_alias_chars`` characters of text
        beyond the written ones.
    yaml.YAMLError
        When ``text`` is not YAML.
    """
    import yaml

    loader = _bounded(yaml.BaseLoader, max_depth)(text)
    try:
        return _compose(loader, max_alias_nodes, max_alias_chars)
    except YAMLLimitError as exc:
        raise _sourced(exc, source) from None
    finally:
        loader.dispose()


def load_yaml(
    text,
    *,
    source,
    max_depth=MAX_YAML_DEPTH,
    max_alias_nodes=MAX_YAML_ALIAS_NODES,
    max_alias_chars=MAX_YAML_ALIAS_CHARS,
):
    """Python objects from ``text`` (safe tags only; mappings are `LineMapping`), checked first.

    Raises
    ------
    YAMLLimitError
        As `compose_yaml`.
    yaml.YAMLError
        When ``text`` is not YAML, or a mapping writes a key twice.
    """
    import yaml

    loader = _bounded(_strict(yaml.SafeLoader), max_depth)(text)
    try:
        root = _compose(loader, max_alias_nodes, max_alias_chars)
        try:
            return None if root is None else loader.construct_document(root)
        except RecursionError:
            raise YAMLLimitError("nested too deeply to read.") from None
    except YAMLLimitError as exc:
        raise _sourced(exc, source) from None
    finally:
        loader.dispose()


def key_line(mapping, key=None):
    """The line of ``key`` in a mapping read by `load_yaml`.

    Without ``key``, the line of the mapping itself; 0 when unknown.
    """
    if isinstance(mapping, LineMapping):
        return mapping.key_lines.get(key, mapping.line) if key is not None else mapping.line
    return 0
