"""One dataset entry of a report config (or a service job), parsed and checked into a `DatasetSpec`.

Errors name the key or path and the line of the file. Every independent
problem of an entry is listed, not only the first.
"""

from __future__ import annotations

import difflib
import stat
from pathlib import Path

from .._validation import check_name_text, check_seed, shown
from ..grammar import said_alike
from ..io.confinement import data_root, file_kind
from ..io.sentences import WORLD_SENTENCE_SET
from ..run import limits
from ..run.settings import RunSettings, check_knob
from ..run.specs import DatasetSpec, ModelSpec
from .yaml_reader import LineMapping, key_line

TOP_KEYS = ("output", "cache_dir", "defaults", "datasets")
#: The analysis knobs: exactly the fields of RunSettings (defaults, choices and validation live there).
KNOB_KEYS = tuple(RunSettings.knobs())
#: Input and presentation settings of a dataset, with their defaults.
INPUT_DEFAULTS = {
    "encoder": "open_clip",
    "sentences": "conditions",
    "relevance": None,
    "batch_size": 64,
    "num_workers": 0,
    "logits": False,
}
REPORT_DEFAULTS = {"thumbnails": 8, "classes_shown": 12, "sweep": None, "group_order": "risk"}
SETTING_KEYS = KNOB_KEYS + tuple(INPUT_DEFAULTS) + tuple(REPORT_DEFAULTS)
SOURCE_KEYS = ("images", "spotcheck", "rival10", "image_embeddings", "sentence_embeddings", "masks", "sensitivity")
MODEL_KEYS = ("name", "predictions", "model", "weights", "num_classes", "image_size")


def name_key(name):
    """How two names are compared: 'ﬁ' and 'fi', 'M' and 'm', 'a b' and 'a  b' read as one (and name one folder)."""
    return " ".join(said_alike(str(name)).split())


#: The most models one dataset entry may list (each is a table read and a describe run).
MAX_MODELS = 64
DATASET_KEYS = ("name",) + SOURCE_KEYS + ("models",) + MODEL_KEYS[1:] + SETTING_KEYS
SPOTCHECK_KEYS = ("seed", "path")
RIVAL10_KEYS = ("path", "split", "class_map")


class EntryError(ValueError):
    """A problem inside one dataset entry (the batch records it on that dataset and runs the others)."""


#: Integer settings of an entry besides the knobs, with their documented ranges (lbee.run.limits).
INT_RANGES = {
    "thumbnails": (1, limits.MAX_THUMBNAILS),
    "batch_size": (1, limits.MAX_BATCH_SIZE),
    "classes_shown": (1, limits.MAX_CLASSES_SHOWN),
    "num_workers": (0, limits.MAX_NUM_WORKERS),
    "num_classes": (1, limits.MAX_NUM_CLASSES),
    "image_size": (1, limits.MAX_IMAGE_SIZE),
}
SWEEP_RANGES = limits.SWEEP_RANGES
#: Unknown keys named (with a did-you-mean) in one message; an entry of 90,000 keys is refused in linear time.
MAX_UNKNOWN_NAMED = 5


def in_range(value, low, high, kind=int):
    """Whether ``value`` is a ``kind`` (int: not a bool; float: any finite real) in [low, high]."""
    if isinstance(value, bool) or not isinstance(value, int if kind is int else (int, float)):
        return False
    return low <= value <= high  # also false for nan; an int too large for a float compares exactly


def unknown_key_message(key, allowed, where, line, path):
    near = difflib.get_close_matches(str(key), allowed, n=1)
    hint = f" (did you mean {near[0]!r}?)" if near else ""
    return f"{path}, line {line}: unknown key {shown(key)} in {where}{hint}; expected one of {', '.join(allowed)}."


def check_setting(key, value, where, line, path):
    """Validate one setting; returns the value (normalised). Knobs are validated by `RunSettings`."""

    def bad(expected):
        return EntryError(f"{path}, line {line}: {where} key {key!r} is {shown(value)}; expected {expected}.")

    if key in KNOB_KEYS:
        try:
            return check_knob(key, value)
        except ValueError as exc:
            raise EntryError(
                f"{path}, line {line}: {where} " + str(exc).replace(f"`{key}`", f"key {key!r}", 1)
            ) from None
    if key in INT_RANGES and not in_range(value, *INT_RANGES[key]):
        raise bad("an integer in [{}, {}]".format(*INT_RANGES[key]))
    if key == "logits" and not isinstance(value, bool):
        raise bad("true (the prob_<class> columns hold logits) or false")
    if key == "group_order" and value not in ("risk", "size"):
        raise bad("risk (error rate × size, the default) or size")
    if key == "sweep" and value not in (None, False, True):
        if (
            not isinstance(value, dict)
            or any(k not in ("K", "C", "o") for k in value)
            or any(not isinstance(v, list) for v in value.values())
        ):
            raise bad("true (the default grids) or a mapping with lists K, C and/or o")
        for grid, values in value.items():
            kind, low, high = SWEEP_RANGES[grid]
            if len(values) > limits.MAX_SWEEP_POINTS or not all(in_range(v, low, high, kind) for v in values):
                raise bad(
                    f"sweep {grid} as a list of at most {limits.MAX_SWEEP_POINTS} "
                    f"{'integers' if kind is int else 'numbers'} in [{low}, {high}]"
                )
    if key == "relevance" and not (
        value is None
        or value in ("none", "ground_truth")
        or isinstance(value, str)
        or (isinstance(value, dict) and len(value) == 1 and next(iter(value)) in ("ground_truth", "vqa"))
    ):
        raise bad("none, ground_truth (SpotCheck), a file path, {ground_truth: FILE} or {vqa: FILE}")
    if key in ("encoder", "sentences") and not isinstance(value, str):
        raise bad("a string")
    return value


#: Path keys that name one file (the others may name a folder), with what the file holds, for messages.
FILE_KEYS = {
    "weights": "a weights file",
    "image_embeddings": "an .npy file",
    "sentence_embeddings": "an .npy file",
    "rival10.class_map": "a class map file",
}


def _resolve_path(value, key, base, line, path, must_exist=True):
    if not isinstance(value, str) or not value:
        raise EntryError(f"{path}, line {line}: key {key!r} must be a path string; received {shown(value)}.")
    p = Path(value).expanduser()
    p = p if p.is_absolute() else base / p
    try:
        exists = p.exists()
    except OSError as exc:  # a name too long for the file system, say
        raise EntryError(f"{path}, line {line}: {key} path {shown(value)} cannot be used: {exc.strerror}.") from None
    if must_exist and not exists:
        from .._files import near_file

        where = "in the data root" if data_root() is not None else f"(resolved to {shown(str(p))})"  # no server path
        near = near_file(p)
        hint = "" if near is None else f" (did you mean {shown(str(Path(value).with_name(Path(near).name)))}?)"
        raise EntryError(f"{path}, line {line}: {key} path {shown(value)} does not exist {where}{hint}.")
    if exists:
        try:
            mode = p.stat().st_mode
        except OSError as exc:  # gone (or changed) since exists(): said, not a server error
            raise EntryError(
                f"{path}, line {line}: {key} path {shown(value)} cannot be used: {exc.strerror}."
            ) from None
        if key in FILE_KEYS and stat.S_ISDIR(mode):
            raise EntryError(f"{path}, line {line}: {key} {shown(value)} is a folder; expected {FILE_KEYS[key]}.")
        if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):  # a FIFO would block its reader, a device never ends
            raise EntryError(f"{path}, line {line}: {key} {shown(value)} is {file_kind(mode)}, not a regular file.")
    return p


def _parse_model(entry, where, base, path, line):
    if not isinstance(entry, dict):
        raise EntryError(
            f"{path}, line {line}: each entry of {where} must be a mapping with 'name' and "
            f"'predictions' or 'model'; received {shown(entry)}."
        )
    for key in entry:
        if key not in MODEL_KEYS:
            raise EntryError(unknown_key_message(key, MODEL_KEYS, where, key_line(entry, key), path))
    if ("predictions" in entry) == ("model" in entry):
        raise EntryError(f"{path}, line {key_line(entry)}: {where} needs exactly one of 'predictions' or 'model'.")
    if "name" in entry:
        try:
            check_name_text(entry["name"], f"{where}.name")
        except ValueError as exc:
            raise EntryError(f"{path}, line {key_line(entry, 'name')}: {exc}") from None
    m = ModelSpec(name=str(entry.get("name") or entry.get("model") or Path(entry["predictions"]).stem))
    if "predictions" in entry:
        m.predictions = _resolve_path(entry["predictions"], "predictions", base, key_line(entry, "predictions"), path)
    if "model" in entry:
        spec = entry["model"]
        if not isinstance(spec, str):
            raise EntryError(f"{path}, line {key_line(entry, 'model')}: key 'model' must be a spec string.")
        local = base / spec
        m.model = str(local) if local.is_file() else spec
    if "weights" in entry:
        m.weights = _resolve_path(entry["weights"], "weights", base, key_line(entry, "weights"), path)
    for key in ("num_classes", "image_size"):
        if key in entry:
            if not in_range(entry[key], *INT_RANGES[key]):
                raise EntryError(
                    f"{path}, line {key_line(entry, key)}: {key!r} is {shown(entry[key])}; expected an integer "
                    "in [{}, {}].".format(*INT_RANGES[key])
                )
            setattr(m, key, entry[key])
    return m


def parse_dataset(entry, i, defaults, base, path):
    where = f"datasets[{i}]"
    if not isinstance(entry, dict):
        raise EntryError(f"{path}, line ?: {where} must be a mapping; received {shown(entry)}.")
    name = str(entry.get("name") or f"dataset_{i}")
    ds = DatasetSpec(name=name, line=key_line(entry))
    problems = []  # every independent problem of the entry is listed, not only the first
    if "name" in entry and (isinstance(entry["name"], bool) or not isinstance(entry["name"], (str, int))):
        name = f"dataset_{i}"  # a list or mapping as a name would be its repr in every folder and page
        problems.append(
            f"{path}, line {key_line(entry, 'name')}: {where} 'name' is {shown(entry['name'])}; expected a string."
        )
    elif "name" in entry:
        try:
            check_name_text(name, f"{where}.name")
        except ValueError as exc:
            name = f"dataset_{i}"  # never shown: the entry is refused
            problems.append(f"{path}, line {key_line(entry, 'name')}: {exc}")

    def attempt(check, *args):
        try:
            return check(*args)
        except EntryError as exc:
            problems.append(str(exc))
            return None

    unknown = [key for key in entry if key not in DATASET_KEYS]
    for key in unknown[:MAX_UNKNOWN_NAMED]:  # did-you-mean for a few: linear however many keys the entry has
        problems.append(unknown_key_message(key, DATASET_KEYS, f"{where} ({name})", key_line(entry, key), path))
    if len(unknown) > MAX_UNKNOWN_NAMED:
        problems.append(
            f"{path}, line {ds.line}: {where} ({name}) has {len(unknown) - MAX_UNKNOWN_NAMED} more unknown keys."
        )
    settings = {**RunSettings().to_dict(), **INPUT_DEFAULTS, **REPORT_DEFAULTS}
    settings.update(defaults)
    for key in SETTING_KEYS:
        if key in entry:
            checked = attempt(check_setting, key, entry[key], where, key_line(entry, key), path)
            if checked is not None or entry[key] is None:
                settings[key] = checked
    try:
        _parse_dataset_rest(entry, where, name, ds, settings, defaults, base, path, attempt)
    except EntryError as exc:
        problems.append(str(exc))
    if problems:
        raise EntryError("\n  ".join(dict.fromkeys(problems)))
    return ds


def _parse_dataset_rest(entry, where, name, ds, settings, defaults, base, path, attempt):
    """The dataset entry past its keys and settings: sources, paths, models (independent checks via ``attempt``)."""
    sources = [k for k in ("images", "spotcheck", "rival10") if k in entry]
    if len(sources) > 1 or not (sources or "image_embeddings" in entry):
        raise EntryError(
            f"{path}, line {ds.line}: {where} ({name}) needs exactly one of 'images' (a folder or "
            "manifest), 'spotcheck' ({seed: N} or {path: EC folder}) or 'rival10' ({path: ROOT, "
            "split: test}), or precomputed 'image_embeddings' whose rows follow the predictions table."
        )
    if "rival10" in entry:
        rv = entry["rival10"]
        rv = {"path": rv} if isinstance(rv, str) else rv
        if (
            not isinstance(rv, dict)
            or "path" not in rv
            or any(k not in RIVAL10_KEYS for k in rv)
            or rv.get("split", "test") not in ("train", "test")
        ):
            raise EntryError(
                f"{path}, line {key_line(entry, 'rival10')}: {where} 'rival10' must be {{path: ROOT, "
                f"split: train|test}} (optionally class_map: FILE); received {shown(rv)}."
            )
        line = key_line(entry, "rival10")
        rv = dict(rv, path=_resolve_path(rv["path"], "rival10.path", base, line, path))
        if "class_map" in rv:
            rv["class_map"] = _resolve_path(rv["class_map"], "rival10.class_map", base, line, path)
        ds.rival10 = rv
        if "sentences" not in entry and "sentences" not in defaults:
            settings["sentences"] = "rival10"
        if "relevance" not in entry:
            settings["relevance"] = "ground_truth"  # the attribute labels
    if "spotcheck" in entry:
        sc = entry["spotcheck"]
        sc = {"seed": sc} if isinstance(sc, int) and not isinstance(sc, bool) else sc
        if not isinstance(sc, dict) or not sc or any(k not in SPOTCHECK_KEYS for k in sc):
            raise EntryError(
                f"{path}, line {key_line(entry, 'spotcheck')}: {where} 'spotcheck' must be {{seed: N}} "
                f"or {{path: EC folder}}; received {shown(sc)}."
            )
        if "seed" in sc:
            try:
                check_seed(sc["seed"], "spotcheck.seed")
            except ValueError as exc:
                raise EntryError(f"{path}, line {key_line(entry, 'spotcheck')}: {where} {exc}") from None
        if "path" in sc:
            sc = dict(sc, path=_resolve_path(sc["path"], "spotcheck.path", base, key_line(entry, "spotcheck"), path))
        ds.spotcheck = dict(sc)
        for key, own in (("encoder", "spotcheck"), ("sentences", WORLD_SENTENCE_SET)):  # the world's own
            if key not in entry and key not in defaults:
                settings[key] = own
        if "confidence_from" not in entry and "confidence_from" not in defaults:
            settings["confidence_from"] = "true_class"  # as `lbee demo`: the test labels are clean
        if "relevance" not in entry:
            settings["relevance"] = "ground_truth"
    elif "rival10" not in entry:
        if "images" in entry:
            ds.images = attempt(_resolve_path, entry["images"], "images", base, key_line(entry, "images"), path)
        if settings["relevance"] == "ground_truth":
            raise EntryError(
                f"{path}, line {key_line(entry, 'relevance')}: relevance 'ground_truth' without a "
                "file is only known for SpotCheck worlds and RIVAL10; give {ground_truth: FILE}."
            )
    rel = settings["relevance"]
    if isinstance(rel, str) and rel not in ("none", "ground_truth"):
        rel = {"ground_truth": rel}
    if isinstance(rel, dict):
        ((kind, file),) = rel.items()
        rel = {kind: attempt(_resolve_path, file, f"relevance.{kind}", base, key_line(entry, "relevance"), path)}
    settings["relevance"] = None if rel == "none" else rel
    if settings["sweep"] and settings["relevance"] in (None, "none"):
        raise EntryError(
            f"{path}, line {key_line(entry, 'sweep')}: a sweep scores AHR / ACR / TPR / JI and needs 'relevance'."
        )
    if settings["per_class"] and settings["task"] == "segmentation":
        raise EntryError(f"{path}, line {key_line(entry, 'per_class')}: per_class is for classification.")
    if settings["task"] == "segmentation" and ds.spotcheck is not None:
        raise EntryError(f"{path}, line {key_line(entry, 'task')}: a SpotCheck world is a classification task.")
    if settings["split_by"] != "entropy" and "masks" not in entry:
        raise EntryError(
            f"{path}, line {key_line(entry, 'split_by')}: split_by {settings['split_by']!r} needs "
            "ground-truth 'masks' (a folder of label maps)."
        )
    for key in ("image_embeddings", "sentence_embeddings", "masks", "sensitivity"):
        if key in entry:
            setattr(ds, key, attempt(_resolve_path, entry[key], key, base, key_line(entry, key), path))
    if "models" in entry:
        if not isinstance(entry["models"], list) or not entry["models"]:
            raise EntryError(f"{path}, line {key_line(entry, 'models')}: {where} 'models' must be a non-empty list.")
        if any(k in entry for k in MODEL_KEYS[1:]):
            raise EntryError(
                f"{path}, line {key_line(entry, 'models')}: {where} has both 'models' and a single "
                "model's keys; use one."
            )
        if len(entry["models"]) > MAX_MODELS:
            raise EntryError(
                f"{path}, line {key_line(entry, 'models')}: {where} lists {len(entry['models']):,} models; expected "
                f"at most {MAX_MODELS} (one dataset entry per group of models beyond that)."
            )
        ds.models = [
            attempt(_parse_model, m, f"{where}.models[{j}]", base, path, key_line(entry, "models"))
            for j, m in enumerate(entry["models"])
        ]
        ds.models = [m for m in ds.models if m is not None]
        named = {}
        for j, m in enumerate(ds.models):  # results are asked for by model name (?model=, --model): one each
            first = named.setdefault(name_key(m.name), j)
            if first != j:
                raise EntryError(
                    f"{path}, line {key_line(entry, 'models')}: {where}.models[{j}] is named {shown(m.name)}, as "
                    f"models[{first}] is ({shown(ds.models[first].name)}); expected a name of its own for each model."
                )
    elif any(k in entry for k in ("predictions", "model")):
        single = {k: entry[k] for k in MODEL_KEYS[1:] if k in entry}
        single = LineMapping(single)
        single.line, single.key_lines = ds.line, {k: key_line(entry, k) for k in single}
        ds.models = [_parse_model(single, where, base, path, ds.line)]
        ds.models[0].name = str(entry.get("model") or Path(str(entry.get("predictions"))).stem)
    elif ds.spotcheck is None:
        raise EntryError(
            f"{path}, line {ds.line}: {where} ({name}) needs the model's outputs: 'predictions', "
            "'model' or a 'models' list."
        )
    if settings["task"] != "segmentation":  # a folder of per-image outputs is a segmentation model's
        for m in ds.models:
            if m.predictions is not None and Path(m.predictions).is_dir():
                raise EntryError(
                    f"{path}, line {key_line(entry, 'predictions') or ds.line}: predictions "
                    f"{shown(entry['predictions'] if 'models' not in entry else Path(m.predictions).name)} is a "
                    "folder; expected a CSV/TSV/parquet file "
                    "(a folder of per-image outputs is for task: segmentation)."
                )
    try:
        ds.settings = RunSettings(**{k: settings[k] for k in KNOB_KEYS})
    except ValueError as exc:
        raise EntryError(f"{path}, line {ds.line}: {where} ({name}): {exc}") from None
    sentences = settings["sentences"]
    if (base / sentences).is_file():  # a sentence file beside the config, like every other relative path
        sentences = str(base / sentences)
    elif (Path(sentences).suffix or "/" in sentences) and (base / sentences).exists():  # a folder, a FIFO
        raise EntryError(
            f"{path}, line {key_line(entry, 'sentences')}: sentences {sentences!r} is "
            f"{file_kind((base / sentences).stat().st_mode)}; expected a text file of sentences, one per line."
        )
    ds.encoder, ds.sentence_set, ds.relevance = settings["encoder"], sentences, settings["relevance"]
    ds.batch_size, ds.num_workers, ds.logits = settings["batch_size"], settings["num_workers"], settings["logits"]
    ds.report = {k: settings[k] for k in REPORT_DEFAULTS}
    return ds


def parse_dataset_entry(mapping, *, base, source="request", defaults=None):
    """One dataset entry of a report config, parsed and checked as `load_report_config` does.

    For callers that receive an entry outside a YAML file (``lbee serve``'s
    ``POST /v1/jobs``).

    Parameters
    ----------
    mapping : dict
        The entry (``name``, a source such as ``spotcheck`` or ``images``, models, settings).
    base : path-like
        Folder that relative paths are resolved against.
    source : str, default='request'
        Names the entry in error messages (in place of a file name).
    defaults : dict, optional
        Settings applied before the entry's own (a config's ``defaults`` block).

    Returns
    -------
    DatasetSpec

    Raises
    ------
    ValueError
        Naming the key, the value received and what is expected.
    """
    import re

    checked = {}
    for key, value in (defaults or {}).items():
        if key not in SETTING_KEYS:
            raise ValueError(unknown_key_message(key, SETTING_KEYS, "defaults", 0, source))
        checked[key] = check_setting(key, value, "defaults", 0, source)
    try:
        return parse_dataset(mapping, 0, checked, Path(base), source)
    except EntryError as exc:  # entries that do not come from a file have no line to name
        msg = re.sub(rf"(^|\n  ){re.escape(str(source))}, line (0|\?): ", rf"\g<1>{source}: ", str(exc))
        raise ValueError(msg.replace("datasets[0]", "the entry")) from None
