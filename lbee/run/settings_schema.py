"""The JSON-Schema of one analysis knob, read from `lbee.run.settings.RunSettings` (for the YAML reference)."""

from __future__ import annotations

import dataclasses

from .settings import RunSettings, _choices


def knob_schema(name):
    """JSON-Schema-like description of one knob (for docs and the YAML reference)."""
    f = {f.name: f for f in dataclasses.fields(RunSettings)}[name]
    m = f.metadata
    out = {"description": m["help"]}
    choices = _choices(name)
    item = {"enum": list(choices)} if choices else {"type": {int: "integer", float: "number", str: "string"}[m["kind"]]}
    if m["minimum"] is not None:
        item["minimum"] = m["minimum"]
    if m["maximum"] is not None:
        item["maximum"] = m["maximum"]
    if name == "slicers":  # {name: {options}} entries too
        item = {
            "anyOf": [
                item,
                {
                    "type": "object",
                    "minProperties": 1,
                    "maxProperties": 1,
                    "propertyNames": {"enum": list(choices)},
                    "additionalProperties": {"type": ["object", "null"]},
                },
            ]
        }
    if name == "join":  # [[1, 2, 3], ...]; '1,2,3' as the CLI writes it
        item = {"anyOf": [{"type": "array", "items": item, "minItems": 2}, {"type": "string"}]}
    out.update({"type": "array", "items": item} if m["many"] else item)
    return out
