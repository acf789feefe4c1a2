"""The YAML reader of report configs and service job entries: `lbee._yaml`'s bounded, strict reader.

Safe tags only, lines kept, a key written twice refused; nesting and alias expansion bounded before
anything is built (``lbee._yaml.MAX_YAML_DEPTH``, ``MAX_YAML_ALIAS_NODES``, ``MAX_YAML_ALIAS_CHARS``);
numbers in ASCII decimal only (``INT_PATTERN``, ``FLOAT_PATTERN``), merge keys refused.
"""

from __future__ import annotations

from .._yaml import LineMapping, YAMLLimitError, key_line, load_yaml, strict_loader


def _loader():
    return strict_loader()


def yaml_loader():
    """The strict YAML loader class (safe, lines kept, a key written twice refused), without the bounds.

    Read files with `load_yaml`, which also bounds nesting and alias expansion.
    """
    return strict_loader()


__all__ = ["LineMapping", "YAMLLimitError", "key_line", "load_yaml", "yaml_loader"]
