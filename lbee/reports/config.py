"""The ``lbee report CONFIG.yaml`` file: datasets × models × methods (and slicers).

Example::

    output: lbee_out/reports          # where the reports go (relative to this file)
    defaults:                         # any dataset setting, applied to every dataset
      methods: [tops, setdiff, pdiff, fpdiff]
      clusters: 15
    datasets:
      - name: synthetic
        spotcheck: {seed: 0}          # a SpotCheck world (or {path: an EC folder})
      - name: street scenes
        images: data/street/manifest.csv
        sentences: urban_scenes
        encoder: open_clip
        relevance: {vqa: data/street/vqa_relevance.parquet}
        slicers: [ward, domino]
        models:
          - {name: convnext, predictions: data/street/convnext.csv}
          - {name: resnet50, model: "torchvision:resnet50", weights: ckpt/resnet50.pt}

Errors name the key or path and the line of the file. A problem inside one
dataset entry is recorded on that dataset (the batch runs the others); a
problem with the file as a whole raises `ConfigError`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..io.confinement import MAX_CONFIG_BYTES, NotRegularFile, check_regular_file, read_text_file
from ..run.specs import DatasetSpec, ModelSpec
from .config_entries import (
    DATASET_KEYS,
    INPUT_DEFAULTS,
    KNOB_KEYS,
    MODEL_KEYS,
    REPORT_DEFAULTS,
    RIVAL10_KEYS,
    SETTING_KEYS,
    SOURCE_KEYS,
    SPOTCHECK_KEYS,
    TOP_KEYS,
    EntryError,
    check_setting,
    parse_dataset,
    parse_dataset_entry,
    unknown_key_message,
)
from .config_schema import config_schema
from .yaml_reader import YAMLLimitError, key_line, load_yaml, yaml_loader


class ConfigError(ValueError):
    """The config file cannot be used at all (unreadable, not a mapping, bad top-level key)."""


# Old names, kept for scripts that imported them.
ModelConfig = ModelSpec
DatasetConfig = DatasetSpec


@dataclass
class ReportConfig:
    """The parsed file."""

    path: Path
    output: Path
    cache_dir: Path | None
    datasets: list


def read_config_data(path):
    """A config file's top-level mapping, read and checked as a file (size, UTF-8, YAML's limits).

    A single dataset entry (a mapping with ``name`` and no top-level key), as `lbee submit` and the service take, is
    read as a config of that one dataset.

    Raises
    ------
    ConfigError
    """
    import yaml

    path = Path(path)
    try:
        check_regular_file(path, "Config")
    except NotRegularFile as exc:
        raise ConfigError(str(exc)) from None
    try:
        text = read_text_file(path, "Config", limit=MAX_CONFIG_BYTES)
    except ValueError as exc:  # over the size limit
        raise ConfigError(str(exc)) from None
    except OSError as exc:
        raise ConfigError(f"Cannot read config {str(path)!r}: {exc.strerror or exc}.") from None
    except UnicodeDecodeError as exc:
        line = exc.object[: exc.start].count(b"\n") + 1  # the bytes read, never the file again
        raise ConfigError(
            f"{path}, line {line}: not UTF-8 text (byte {exc.object[exc.start]:#04x}); save the config as UTF-8."
        ) from None
    try:
        data = load_yaml(text, source=str(path))
    except YAMLLimitError as exc:
        raise ConfigError(str(exc)) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping with 'datasets'; received {type(data).__name__}.")
    if "name" in data and not set(data) & set(TOP_KEYS):  # one dataset entry, as `lbee submit` takes (trial 18)
        data = {"datasets": [data]}
    return data


def load_report_config(path):
    """Parse and check a report config.

    Parameters
    ----------
    path : path-like

    Returns
    -------
    ReportConfig
        Datasets whose entry is wrong carry ``error`` (naming key, path and line).

    Raises
    ------
    ConfigError
        When the file is unreadable, not YAML, or its top level is wrong.
    """
    path = Path(path)
    data = read_config_data(path)
    for key in data:
        if key not in TOP_KEYS:
            raise ConfigError(unknown_key_message(key, TOP_KEYS, "the top level", key_line(data, key), path))
    datasets = data.get("datasets")
    if not isinstance(datasets, list) or not datasets:
        raise ConfigError(f"{path}, line {key_line(data, 'datasets')}: 'datasets' must be a non-empty list.")
    base = path.parent
    defaults = data.get("defaults") or {}
    if not isinstance(defaults, dict):
        raise ConfigError(f"{path}, line {key_line(data, 'defaults')}: 'defaults' must be a mapping.")
    checked = {}
    for key, value in defaults.items():
        if key not in SETTING_KEYS:
            raise ConfigError(unknown_key_message(key, SETTING_KEYS, "defaults", key_line(defaults, key), path))
        try:
            checked[key] = check_setting(key, value, "defaults", key_line(defaults, key), path)
        except EntryError as exc:
            raise ConfigError(str(exc)) from None
    from .config_entries import name_key

    out = []
    names = set()
    for i, entry in enumerate(datasets):
        try:
            ds = parse_dataset(entry, i, checked, base, path)
        except EntryError as exc:
            name = str(entry.get("name") or f"dataset_{i}") if isinstance(entry, dict) else f"dataset_{i}"
            ds = DatasetSpec(name=name, line=key_line(entry), error=str(exc))
        if name_key(ds.name) in names:  # 'ﬁ' and 'fi', 'M' and 'm': one folder on many disks, one name to a reader
            ds.error = f"{path}, line {ds.line}: dataset name {ds.name!r} is used twice; names must be unique."
        names.add(name_key(ds.name))
        out.append(ds)
    output = data.get("output", "lbee_out/report")
    cache_dir = data.get("cache_dir")
    return ReportConfig(
        path,
        base / output if not Path(output).is_absolute() else Path(output),
        (base / cache_dir) if cache_dir else None,
        out,
    )


# The YAML reader, the entry parser and the schema live in their own modules; their names stay importable from here.
__all__ = [
    "DATASET_KEYS",
    "INPUT_DEFAULTS",
    "KNOB_KEYS",
    "MODEL_KEYS",
    "REPORT_DEFAULTS",
    "RIVAL10_KEYS",
    "SETTING_KEYS",
    "SOURCE_KEYS",
    "SPOTCHECK_KEYS",
    "TOP_KEYS",
    "ConfigError",
    "DatasetConfig",
    "ModelConfig",
    "ReportConfig",
    "config_schema",
    "load_report_config",
    "parse_dataset_entry",
    "yaml_loader",
]
