"""The one bounded YAML reader, shared by grammar files, ``lbee report`` configs and YAML job bodies.

A few bytes of YAML can stand for a huge document: an anchor used ten times
inside an anchor used ten times (nine levels) is 10⁹ values, and a recursive
alias is an infinite one. PyYAML's composer builds the *node graph* without
expanding aliases (an alias is the anchored node itself), so the graph is as
small as the text. This reader checks that graph before anything walks or
builds it: how many nodes the aliases add when expanded (counted on the graph,
each node once, without expanding), whether an alias sits inside its own
anchor, and how deep mappings and lists nest (checked while composing, so a
document 3,000 levels deep is refused before Python's recursion limit).

Two readers:

- :func:`compose_yaml`: the checked node graph, every scalar a string
  (``BaseLoader``: no YAML 1.1 ``yes`` / ``no`` / octal surprises); grammars.
- :func:`load_yaml`: Python objects from a safe loader whose mappings keep
  their lines (:class:`LineMapping`) and refuse a key written twice; report
  configs and service job bodies.
"""

from __future__ import annotations

#: Mappings and lists nested deeper than this are refused (a grammar needs 6 levels, a report config 5).
MAX_YAML_DEPTH = 64
#: At most this many nodes (mappings, lists, values) added by expanding aliases, beyond what the text writes:
#: ordinary anchors (a shared default block) stay far below it; an alias bomb is refused before it is expanded.
MAX_YAML_ALIAS_NODES = 100_000


class YAMLLimitError(ValueError):
    """A YAML text past the reader's bounds: nested too deeply, a recursive alias, or aliases that expand too far."""


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
    """``base`` whose mappings are :class:`LineMapping` and refuse a key written twice."""
    import yaml

    class Strict(base):
        pass

    def construct_mapping(loader, node):
        out = LineMapping()
        out.line = node.start_mark.line + 1
        out.key_lines = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            if not isinstance(key, (str, int, float, bool)) and key is not None:
                raise yaml.constructor.ConstructorError(
                    None, None, f"a mapping key must be a plain name, found a {type(key).__name__}", key_node.start_mark
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
    return Strict


def strict_loader():
    """The safe loader of :func:`load_yaml` (lines kept, a key written twice refused), without the bounds."""
    import yaml

    return _strict(yaml.SafeLoader)


def _children(node):
    import yaml

    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return node.value
    return ()


def _check_graph(root, max_alias_nodes):
    """Refuse a recursive alias, or aliases that expand to more than ``max_alias_nodes`` extra nodes.

    One depth-first pass over the node graph, each node once: a node's expanded size is 1 plus its
    children's (memoised), so a bomb of 10⁹ expanded nodes costs as much as its few hundred written ones.
    """
    size = {}  # id(node) -> the node's size with every alias expanded
    open_ = set()  # nodes whose children are being visited: the current path
    stack = [(root, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        if finished:
            open_.discard(key)
            size[key] = 1 + sum(size[id(c)] for c in _children(node))
        elif key in open_:
            raise YAMLLimitError(
                f"line {node.start_mark.line + 1}: an alias refers to the mapping or list that contains it "
                "(a recursive alias); expected a tree."
            )
        elif key not in size:
            open_.add(key)
            stack.append((node, True))
            stack.extend((c, False) for c in _children(node))
    extra = size[id(root)] - len(size)
    if extra > max_alias_nodes:
        said = f"{extra:,}" if extra < 10**15 else "more than 10^15"
        raise YAMLLimitError(
            f"its aliases expand to {said} nodes beyond the {len(size):,} the text writes; "
            f"at most {max_alias_nodes:,} are accepted."
        )


def _compose(loader, max_alias_nodes):
    try:
        root = loader.get_single_node()
    except RecursionError:  # only past a limit raised beyond what the depth check allows
        raise YAMLLimitError("nested too deeply to read.") from None
    if root is not None:
        _check_graph(root, max_alias_nodes)
    return root


def _sourced(exc, source):
    """``exc`` (a YAMLLimitError) with ``source`` in front of its message."""
    return YAMLLimitError(f"{source}, {exc}" if str(exc).startswith("line ") else f"{source}: {exc}")


def compose_yaml(text, *, source, max_depth=MAX_YAML_DEPTH, max_alias_nodes=MAX_YAML_ALIAS_NODES):
    """The checked node graph of ``text`` (every scalar a string), or None for an empty document.

    Raises
    ------
    YAMLLimitError
        Naming ``source`` (and the line): nested more than ``max_depth`` levels, a recursive alias, or
        aliases expanding to more than ``max_alias_nodes`` nodes beyond the written ones.
    yaml.YAMLError
        When ``text`` is not YAML.
    """
    import yaml

    loader = _bounded(yaml.BaseLoader, max_depth)(text)
    try:
        return _compose(loader, max_alias_nodes)
    except YAMLLimitError as exc:
        raise _sourced(exc, source) from None
    finally:
        loader.dispose()


def load_yaml(text, *, source, max_depth=MAX_YAML_DEPTH, max_alias_nodes=MAX_YAML_ALIAS_NODES):
    """Python objects from ``text`` (safe tags only; mappings are :class:`LineMapping`), checked first.

    Raises
    ------
    YAMLLimitError
        As :func:`compose_yaml`.
    yaml.YAMLError
        When ``text`` is not YAML, or a mapping writes a key twice.
    """
    import yaml

    loader = _bounded(_strict(yaml.SafeLoader), max_depth)(text)
    try:
        root = _compose(loader, max_alias_nodes)
        try:
            return None if root is None else loader.construct_document(root)
        except RecursionError:
            raise YAMLLimitError("nested too deeply to read.") from None
    except YAMLLimitError as exc:
        raise _sourced(exc, source) from None
    finally:
        loader.dispose()


def key_line(mapping, key=None):
    """The line of ``key`` in a mapping read by :func:`load_yaml`.

    Without ``key``, the line of the mapping itself; 0 when unknown.
    """
    if isinstance(mapping, LineMapping):
        return mapping.key_lines.get(key, mapping.line) if key is not None else mapping.line
    return 0
