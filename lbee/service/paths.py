"""Confinement of a job's paths to the service's data root.

A dataset entry may only name paths inside ``--root``: relative paths are read
from the root, an absolute path must lie inside it, no ``..`` component is
accepted, and every path is resolved (symlinks followed) and checked again, so
a link inside the root that points outside is refused. Folders are walked so
that a link inside them cannot lead out either, and a manifest's image paths
are checked the same way. The raw strings are checked before the entry is
parsed, so a request cannot learn whether a file outside the root exists.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path

from .._validation import shown
from ..io.confinement import PathEscape, confine, inside, real_path

#: Entry keys that hold a path (``relevance`` and ``sentences`` also take names, handled below).
PATH_KEYS = ("images", "image_embeddings", "sentence_embeddings", "masks", "sensitivity", "predictions", "weights")
MODEL_SPEC_PREFIXES = ("torchvision:", "timm:")
#: Folders with more entries than this are not walked (a job that big belongs in `lbee report`).
MAX_WALK = 500_000


def named_sentence_set(value):
    """Whether ``value`` names a built-in sentence set rather than a file.

    ``spotcheck``, or a built-in grammar's ``street_scenes.grammar``, as
    `lbee.io.sentences.load_sentence_set` reads it.
    """
    from ..io.sentences import is_builtin_set_name

    return is_builtin_set_name(value)


def check_encoder(spec, root, allowed=()):
    """The encoder spec to run if the server's allow-list has it; raises `EncoderRefused` otherwise.

    Allowed: the specs in ``allowed`` (exact), the SpotCheck encoder, and open_clip
    models with a named pretrained tag (``open_clip:ViT-B-32@laion2b_s34b_b79k``;
    open_clip resolves a name only against its own registry) or a checkpoint file
    inside ``root``. ``hf-hub:`` names (which download and load any repository) and
    other backends are refused unless listed in ``allowed``
    (`lbee.service.settings.DEFAULT_ENCODERS`, ``lbee serve --allow-encoder``).

    Returns
    -------
    str
        ``spec``, with a checkpoint path made absolute (resolved inside ``root``: the
        worker must load the file that was checked, whatever its working folder).
    """
    import re

    from ..encoders import parse_encoder_spec
    from .settings import DEFAULT_ENCODERS

    if spec in tuple(allowed) + DEFAULT_ENCODERS:
        return spec
    backend, model, tag = parse_encoder_spec(spec)
    hint = (
        "allowed: "
        + ", ".join(repr(a) for a in DEFAULT_ENCODERS + tuple(allowed))
        + ", open_clip:<model>@<pretrained tag>, or open_clip:<model>@<checkpoint file inside the data root> "
        "(the server's operator adds others with lbee serve --allow-encoder SPEC)"
    )
    if (
        backend == "open_clip"
        and model
        and not model.startswith("hf-hub:")
        and not (tag or "").startswith("hf-hub:")
        and "://" not in (tag or "")
    ):
        if tag is None or re.fullmatch(r"[A-Za-z0-9_-]+(:[0-9]+)?", tag):  # a tag name (or @random:SEED)
            if tag and tag.lower().startswith("random:"):
                from .._validation import check_seed

                check_seed(int(tag.partition(":")[2]), "encoder @random:SEED")
            return spec
        return f"open_clip:{model}@{confine(tag, root, 'encoder checkpoint')}"  # a file: inside the root only
    if backend == "spotcheck" and model is None and tag is None:
        return spec
    raise EncoderRefused(f"`encoder` {spec!r} is not on this server's allow-list; {hint}.")


class EncoderRefused(ValueError):
    """An encoder spec outside the server's allow-list."""


def check_entry_paths(entry, root):
    """Check every path of a raw dataset entry (before parsing). Returns None; raises `PathEscape`."""
    if not isinstance(entry, dict):
        return
    for key in PATH_KEYS:
        if key in entry:
            confine(entry[key], root, key)
    for key, sub in (("spotcheck", ("path",)), ("rival10", ("path", "class_map"))):
        value = entry.get(key)
        if isinstance(value, str) and key == "rival10":
            confine(value, root, key)
        elif isinstance(value, dict):
            for k in sub:
                if k in value:
                    confine(value[k], root, f"{key}.{k}")
    rel = entry.get("relevance")
    if isinstance(rel, str) and rel not in ("none", "ground_truth"):
        confine(rel, root, "relevance")
    elif isinstance(rel, dict):
        for k, v in rel.items():
            confine(v, root, f"relevance.{k}")
    sentences = entry.get("sentences")
    if isinstance(sentences, str) and not named_sentence_set(sentences):
        confine(sentences, root, "sentences")
    models = entry.get("models")
    for i, m in enumerate(models if isinstance(models, list) else []):
        if isinstance(m, dict):
            for k in ("predictions", "weights"):
                if k in m:
                    confine(m[k], root, f"models[{i}].{k}")
            _check_model_spec(m.get("model"), root, f"models[{i}].model")
    _check_model_spec(entry.get("model"), root, "model")


def _check_model_spec(spec, root, key):
    """A model spec: ``torchvision:`` / ``timm:`` names (a model file is refused later, by `check_dataset_paths`).

    ``package.module:factory`` specs import Python code, which a service must not let a request choose.
    """
    if spec is None or not isinstance(spec, str):
        return
    if spec.startswith(MODEL_SPEC_PREFIXES):
        from ..scoring.classifier import check_model_spec  # the architecture's form: never a source such as
        # timm's 'local-dir:PATH', which reads a file anywhere (sweep 22 S1); refused at submission

        try:
            check_model_spec(spec)
        except ValueError as exc:
            raise ValueError(f"`{key}`: {exc}") from None
        return
    if ":" in spec and not Path(spec).suffix:
        raise PathEscape(
            f"`{key}` {spec!r}: the service does not import model factories; use "
            "'torchvision:<arch>' or 'timm:<arch>' with a state dict as `weights`."
        )
    confine(spec, root, key)


def _walk_check(folder, root, key):
    n = 0
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        for name in dirnames + filenames:
            n += 1
            if n > MAX_WALK:
                raise PathEscape(f"`{key}` folder {str(folder)!r} has more than {MAX_WALK} entries.")
            p = os.path.join(dirpath, name)
            if os.path.islink(p) and not inside(real_path(p, f"`{key}` entry"), root):
                rel = os.path.relpath(p, root)
                raise PathEscape(f"`{key}`: {rel!r} is a symbolic link leading outside the data root.")


def check_dataset_paths(ds, root, *, deep=True):
    """Check a parsed `lbee.run.specs.DatasetSpec` (resolved paths; with ``deep``, folders and manifest rows).

    Parameters
    ----------
    deep : bool, default=True
        Walk folders (a link inside that leads out) and read a manifest's rows. Their cost grows with the
        data (a 1M-row manifest took 108 s), so a submission checks the resolved paths only and the worker
        runs the deep check before it reads anything.
    """
    root = Path(root).resolve()
    found = []
    for key in ("images", "image_embeddings", "sentence_embeddings", "masks", "sensitivity"):
        if getattr(ds, key) is not None:
            found.append((key, getattr(ds, key)))
    for key, d in (("spotcheck", ds.spotcheck), ("rival10", ds.rival10)):
        for k, v in (d or {}).items():
            if isinstance(v, Path):
                found.append((f"{key}.{k}", v))
    if isinstance(ds.relevance, dict):
        found += [(f"relevance.{k}", v) for k, v in ds.relevance.items()]
    if not named_sentence_set(ds.sentence_set):  # any other value is a file, in the root (`.netrc` has no suffix)
        sentences = Path(ds.sentence_set) if Path(ds.sentence_set).is_absolute() else root / ds.sentence_set
        if not os.path.lexists(sentences):  # read from the root, not from the server's working folder
            raise ValueError(f"`sentences` path {ds.sentence_set!r} does not exist in the data root.")
        found.append(("sentences", sentences))
        ds.sentence_set = str(sentences)  # the worker reads this file, not the name against its working folder
    for m in ds.models:
        for k in ("predictions", "weights"):
            if getattr(m, k) is not None:
                found.append((f"{m.name}.{k}", getattr(m, k)))
        if m.model and not m.model.startswith(MODEL_SPEC_PREFIXES):
            # A TorchScript file or a module:factory is code: it ran in the worker and read and wrote files
            # anywhere (torch.from_file), whatever its path. A job names an architecture and a state dict.
            specs = " or ".join(p + "NAME" for p in MODEL_SPEC_PREFIXES)
            raise ValueError(
                f"`{m.name}.model` {shown(m.model)}: a model file (TorchScript) or a module:factory runs its own "
                f"code in the server, so a job cannot name one; give a {specs} spec with `weights:` (a state dict "
                "in the data root), or the model's `predictions:` table."
            )
    for key, p in found:
        resolved = Path(real_path(p, f"`{key}`"))
        if not inside(resolved, root):
            raise PathEscape(f"`{key}` leads outside the data root.")
        if deep and resolved.is_dir():
            _walk_check(resolved, root, key)
    if deep and ds.images is not None and Path(ds.images).is_file():  # a manifest: its rows name the images
        from ..io.images import discover_images

        for p in discover_images(ds.images).paths:
            if not inside(Path(real_path(p, "`images` manifest row")), root):
                raise PathEscape(f"`images` manifest row {str(p)!r} is outside the data root.")


#: An absolute path in a message: from a '/' that does not continue a word, up to a space, quote or separator.
_ABSOLUTE = re.compile(r"(?<![\w.~>/-])/[^\s'\"`,;:()\[\]{}<>|]+")


def inside_root(path, settings):
    """``path`` relative to the service's data root, as a job names it; None when it is not a path inside the root."""
    if not isinstance(path, str) or not path:
        return None
    for base in {str(settings.root), os.path.realpath(settings.root)}:
        if path.startswith(base.rstrip("/") + "/"):
            return path[len(base.rstrip("/")) + 1 :]
    return None


def redact_paths(text, settings):
    """``text`` (a job's error or log line) without the server's paths.

    A path inside the data root is shown relative to it (as the job named it), one in the output folder or
    the cache as ``<output>/...`` / ``<cache>/...``; any other absolute path (site-packages, a home folder)
    shows only its last component, as ``…/name``.
    """
    places = [(Path(settings.root), None), (Path(settings.output), "<output>"), (Path(settings.cache_dir), "<cache>")]
    places = sorted(places, key=lambda p: -len(str(p[0])))  # the most specific folder first (cache in output)

    def shown(match):
        token = match.group(0)
        if token.startswith("/v1/") or token.count("/") < 2:  # an API path or a bare '/x', not a server path
            return token
        for folder, label in places:
            for base in {str(folder), os.path.realpath(folder)}:
                if token == base or token.startswith(base.rstrip("/") + "/"):
                    rel = token[len(base) :].lstrip("/")
                    return (f"{label}/{rel}" if rel else label) if label else (rel or ".")
        return "…/" + token.rstrip("/").rsplit("/", 1)[-1]

    # the server's own folders and the folders above them first, literally: a path may hold a space or a ':'
    # (sweep 32), where the pattern below stops, and what follows the stop would be shown
    bases = {b: label or "." for folder, label in places for b in (str(folder), os.path.realpath(folder))}
    literal = {str(up): "…" for b in bases for up in Path(b).parents if len(str(up)) > 1}
    literal.update({b.rstrip("/"): said for b, said in bases.items() if b.rstrip("/")})
    text = str(text)
    for base in sorted(literal, key=len, reverse=True):  # the most specific first
        said = literal[base]
        inside = "" if said == "." else f"{said}/"
        # a folder above the server's: the folders under it go too, names with spaces included ("…/real.yaml", not
        # "……/real.yaml" after the pattern below), up to a quote or a ' /' that starts other words
        deeper = r"(?:[^/\n'\"`]*[^/\s'\"`]/)*" if said == "…" else ""
        pattern = rf"(?<![\w.~>/-]){re.escape(base)}(/{deeper}|(?![\w.-]))"
        text = re.sub(pattern, lambda m, inside=inside, said=said: inside if m[1] else said, text)
    return _ABSOLUTE.sub(shown, text)


def run_file(output, folder, name):
    """The file ``name`` of a stored run's ``folder`` (relative to ``output``), resolved; None when it is missing.

    None too when the run's folder leads out of the output folder, or the file out of the run's folder (a symbolic
    link): such a file is never read, since an error could quote it. Every endpoint that reads a stored run's
    files asks here.
    """
    output = Path(output).resolve()
    run_dir = (output / folder).resolve()
    if not run_dir.is_relative_to(output) or not run_dir.is_dir():
        return None
    path = (run_dir / name).resolve()
    if not path.is_relative_to(run_dir) or not path.is_file():
        return None
    return path


def run_folder(output, folder):
    """A stored run's folder, resolved, or None when it is missing or leads out of the output folder."""
    output = Path(output).resolve()
    run_dir = (output / folder).resolve()
    return run_dir if run_dir.is_relative_to(output) and run_dir.is_dir() else None


#: A service run's files whose digests are recorded with it: served only while they are these (`check_own_files`).
RECORDED_FILES = (
    "explanation.json",
    "assignments.parquet",
    "images.parquet",
    "report.html",
    "report.md",
    "metrics.json",
    "metrics.csv",
)
#: A recorded file is hashed up to this size (a run's table of a million images is some hundreds of MB).
MAX_RECORDED_BYTES = 4 << 30


def file_digests(folder):
    """``{name: sha256}`` of the `RECORDED_FILES` in a run's ``folder`` (those it has), as they are now."""
    out = {}
    for name in RECORDED_FILES:
        digest = _digest_now(Path(folder) / name)
        if digest is not None:
            out[name] = digest
    return out


def check_own_files(output, run):
    """Raise ValueError unless ``run``'s folder holds the very files recorded with the run (`RECORDED_FILES`).

    Another run's whole, consistent files copied into a run's folder were served as that run's by every endpoint,
    beside the run's own database row (sweep 32v B4, B5), and another run's report.html alone as its report (32w
    B2). A run recorded without digests (before schema 0004, and not yet given them: `record_missing_digests`) is
    not checked.
    """
    import json

    recorded = json.loads(getattr(run, "files_sha256", None) or "null")
    if recorded is None:  # ({} is a run whose folder had no files when it was pinned: it must still have none)
        return
    folder = run_folder(output, run.folder)
    for name in RECORDED_FILES:
        path = None if folder is None else folder / name
        now = _digest_now(path) if path is not None else None
        if now != recorded.get(name):
            raise ValueError(
                f"run {run.id}'s folder no longer holds its own files: its {name} is not the one recorded with the "
                "run (edited, removed, or another run's put in its place)."
            )


def own_files(output, run):
    """Whether ``run``'s folder holds its own files (`check_own_files`)."""
    try:
        check_own_files(output, run)
    except ValueError:
        return False
    return True


def record_missing_digests(db, output):
    """Give every run recorded without its files' digests (before schema 0004) those of its files as they are now.

    Left empty, such a run's files were never checked (sweep 32w B3): they are pinned when a server first starts
    at this schema. Returns how many runs were given digests.
    """
    import json

    from sqlalchemy import select

    from ..io.own_store import foreign_in_tree
    from .db import Run

    with db.session() as s:
        runs = list(s.scalars(select(Run).where(Run.files_sha256.is_(None))))
        for run in runs:
            folder = run_folder(output, run.folder)
            why = None if folder is None else foreign_in_tree(folder)
            if why:  # pinned as they are now, another user's edit was served as the run's (sweep 32am AM2)
                import logging

                logging.getLogger("lbee").warning(
                    "run %s was recorded without its files' digests and its folder is not this server's alone (%s): "
                    "its files are not pinned, and not served.",
                    run.id,
                    why,
                )
            run.files_sha256 = json.dumps(file_digests(folder) if folder is not None and not why else {})
        s.commit()
    return len(runs)


def recorded_digest(run, name):
    """The sha256 recorded with ``run`` for its file ``name`` (None: none recorded, or a run without digests)."""
    import json

    return (json.loads(getattr(run, "files_sha256", None) or "null") or {}).get(name)


def _digest_now(path):
    """sha256 of the regular file at ``path`` (not through a link out of its folder), or None when there is none."""
    try:
        if path.is_symlink() or not path.is_file():
            return None
        st = os.stat(path)
    except OSError:
        return None
    return _digest(str(path), st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)


@functools.lru_cache(maxsize=4096)
def _digest(path, mtime_ns, ctime_ns, size, ino):
    """The sha256 of one version of a file, or None when it cannot be read.

    The key: its path, times, size and inode. The change time too, which no user can set back: a file edited in
    place at the same size, its modification time restored, kept its old digest (sweep 32x B3).
    """
    from .._files import pinned
    from ..io.cache import file_sha256

    try:
        with pinned(Path(path), "Run file") as src:  # never waiting on a FIFO swapped in
            return file_sha256(src, limit=MAX_RECORDED_BYTES)
    except (OSError, ValueError):
        return None
