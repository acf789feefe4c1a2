"""The JSON Schema of a ``lbee report`` config, for editors (``lbee report --schema``)."""

from __future__ import annotations

from .config_entries import KNOB_KEYS


def config_schema():
    """The JSON Schema of a ``lbee report`` config, for editors (``lbee report --schema``).

    The analysis knobs come from :class:`lbee.run.settings.RunSettings` (their
    choices from the registries), so the schema cannot drift from the checks.
    """
    from ..run.settings import knob_schema

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
            "batch_size": {"type": "integer", "minimum": 1},
            "num_workers": {"type": "integer", "minimum": 0},
            "logits": {"type": "boolean", "description": "The prob_<class> columns hold logits (softmax them)."},
            "thumbnails": {"type": "integer", "minimum": 1},
            "classes_shown": {"type": "integer", "minimum": 1},
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
                        "properties": {k: {"type": "array", "items": {"type": "number"}} for k in ("K", "C", "o")},
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
            "num_classes": {"type": "integer", "minimum": 1},
            "image_size": {"type": "integer", "minimum": 1},
        },
    }
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
                    {"type": "integer"},
                    {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {"seed": {"type": "integer"}, "path": path},
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
