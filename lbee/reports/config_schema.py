"""The JSON Schema of a ``lbee report`` config, for editors (``lbee report --schema``)."""

from __future__ import annotations

from .._validation import MAX_SEED
from ..run.limits import MAX_SWEEP_POINTS
from .config_entries import INT_RANGES, KNOB_KEYS, SWEEP_RANGES


def _int(key):
    """An integer setting's schema with its documented range (lbee.run.limits, as the entry parser checks it)."""
    low, high = INT_RANGES[key]
    return {"type": "integer", "minimum": low, "maximum": high}


def config_schema():
    """The JSON Schema of a ``lbee report`` config, for editors (``lbee report --schema``).

    The analysis knobs come from [`lbee.run.settings.RunSettings`][lbee.RunSettings] (their
    choices from the registries), so the schema cannot drift from the checks.
    """
    from ..run.settings_schema import knob_schema

    path = {"type": "string", "description": "A path, relative to the config file."}
    settings = {k: knob_schema(k) for k in KNOB_KEYS}
    settings.update(
        {
            "encoder": {
                "type": "string",
                "description": "open_clip[:MODEL[@TAG|@CHECKPOINT|@random[:SEED]]] or spotcheck",
            },
            "sentences": {"type": "string", "description": "A built-in sentence set or a sentence file."},
            "relevance": {
                "description": "none, ground_truth, a file, {ground_truth: FILE} or {vqa: FILE}",
                "anyOf": [{"type": "string"}, {"type": "null"}, {"type": "object", "maxProperties": 1}],
            },
            "batch_size": _int("batch_size"),
            "num_workers": _int("num_workers"),
            "logits": {"type": "boolean", "description": "The prob_<class> columns hold logits (softmax them)."},
            "thumbnails": _int("thumbnails"),
            "classes_shown": _int("classes_shown"),
            "group_order": {
                "enum": ["risk", "size"],
                "description": "Hard groups on the page: by error rate × size, or by size.",
            },
            "sweep": {
                "anyOf": [
                    {"type": "boolean"},
                    {"type": "null"},
                    {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            k: {
                                "type": "array",
                                "maxItems": MAX_SWEEP_POINTS,
                                "items": {"type": "integer" if kind is int else "number", "minimum": lo, "maximum": hi},
                            }
                            for k, (kind, lo, hi) in SWEEP_RANGES.items()
                        },
                    },
                ]
            },
        }
    )
    model = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "name": {"type": "string"},
            "predictions": path,
            "model": {"type": "string"},
            "weights": path,
            "num_classes": _int("num_classes"),
            "image_size": _int("image_size"),
        },
    }
    seed = {"type": "integer", "minimum": 0, "maximum": MAX_SEED}
    dataset = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "name": {"type": "string"},
            "images": path,
            "image_embeddings": path,
            "sentence_embeddings": path,
            "masks": path,
            "sensitivity": path,
            "spotcheck": {
                "anyOf": [
                    seed,
                    {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {"seed": seed, "path": path},
                    },
                ]
            },
            "rival10": {
                "anyOf": [
                    path,
                    {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["path"],
                        "properties": {"path": path, "split": {"enum": ["train", "test"]}, "class_map": path},
                    },
                ]
            },
            "models": {"type": "array", "minItems": 1, "items": model},
            **{k: v for k, v in model["properties"].items() if k != "name"},
            **settings,
        },
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "lbee report config",
        "type": "object",
        "additionalProperties": False,
        "required": ["datasets"],
        "properties": {
            "output": path,
            "cache_dir": path,
            "defaults": {"type": "object", "additionalProperties": False, "properties": settings},
            "datasets": {"type": "array", "minItems": 1, "items": dataset},
        },
    }
