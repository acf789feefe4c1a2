"""The YAML reader of report configs and service job entries: safe, lines kept, a key written twice refused."""

from __future__ import annotations


class LineMapping(dict):
    """A YAML mapping that remembers its line and its keys' lines."""

    line = 0
    key_lines: dict


def _loader():
    import yaml

    class Loader(yaml.SafeLoader):
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

    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)
    return Loader


def yaml_loader():
    """The YAML loader of report configs (safe, lines kept, a key written twice refused).

    ``lbee serve`` reads job entries with it.
    """
    return _loader()


def key_line(mapping, key=None):
    """The line of ``key`` in a mapping read by :func:`yaml_loader`.

    Without ``key``, the line of the mapping itself; 0 when unknown.
    """
    if isinstance(mapping, LineMapping):
        return mapping.key_lines.get(key, mapping.line) if key is not None else mapping.line
    return 0
