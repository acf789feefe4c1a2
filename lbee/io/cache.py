"""On-disk embedding cache.

Image embeddings are keyed by the encoder's identity (name, weights,
preprocessing) and each image's content hash. They are written in shards as a
run goes, each shard atomically (temp file + rename), so an interrupted run
keeps everything it finished and a rerun encodes only what is missing.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from pathlib import Path

import numpy as np

from .own_store import foreign_inside, make_own, own_file


def default_cache_dir():
    """``$LBEE_CACHE_DIR`` if set, else ``~/.cache/lbee``."""
    return Path(os.environ.get("LBEE_CACHE_DIR") or Path.home() / ".cache" / "lbee")


def cache_folder(cache_dir=None):
    """The cache folder (``cache_dir`` or `default_cache_dir`), refused when another user can change it.

    A cache in a folder of another user's (``LBEE_CACHE_DIR=/tmp/A/cache``, ``/tmp/A`` theirs) let them plant
    embeddings lbee reads as its own, or swap a folder of it for a link that takes lbee's writes elsewhere (sweep
    32u B4). The rule is the outputs' (`lbee.io.folder_trust`). The folder is made here, through the checked walk,
    and its real path returned: made later by path, at the first write, a folder or link another user put there
    during the encoding was used (sweep 32aa B2).
    """
    from .folder_trust import SharedFolderError, check_trusted_folder, trusted_real_folder

    base = Path(cache_dir or default_cache_dir())
    try:
        real, _ = trusted_real_folder(base, make=True)
    except SharedFolderError:
        raise
    except OSError:  # a cache that cannot be made (a read-only home): checked, and its writes will say so
        check_trusted_folder(base)
        return base
    return Path(real)


def file_sha256(path, chunk=1 << 20, *, limit=None):
    """Hex SHA-256 of a file's content; with ``limit``, a ValueError past that many bytes (the read stops there)."""
    h = hashlib.sha256()
    seen = 0
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            seen += len(block)
            if limit is not None and seen > limit:
                raise ValueError(f"the file holds more than {limit:,} bytes (it changed since it was checked?)")
            h.update(block)
    return h.hexdigest()


def identity_key(identity):
    """Stable short hash of a JSON-serialisable identity dict."""
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:24]


def _temp_beside(path):
    """A new temp file's path beside ``path``, after removing the temp files of ``path`` a killed writer left.

    The name carries the host and the writing process (`lbee._files.process_tag`): a leftover of a process of this
    host that no longer runs is removed (sweep 31: a killed `lbee vqa` left its .tmp file for good); another live
    writer's is never touched.
    """
    import glob
    import socket

    from .._files import process_tag, tag_alive

    host = socket.gethostname().replace("-", "_")[:32] or "host"
    stem = f".tmp-{path.name[:80]}-{host}-"  # a file name stays far below the 255 bytes a folder entry may have
    me = process_tag()
    for old in path.parent.glob(f"{glob.escape(stem)}*"):
        tag = old.name[len(stem) :].split("-", 1)[0]
        if tag != me and not tag_alive(tag):
            old.unlink(missing_ok=True)
    return path.parent / f"{stem}{me}-{uuid.uuid4().hex[:12]}{path.suffix}"


def atomic_write_bytes(path, data, *, private=False):
    """Write ``data`` to ``path`` via a temp file in the same folder and a rename.

    The file is created with mode ``0o666`` minus the process umask (0644
    under the usual umask 022), like any file a tool writes; ``mkstemp``'s
    0600 would hide outputs from the rest of a group. A reader sees either the
    old file or the complete new one, never a partial write. ``private``: a file
    of lbee's own stores (`lbee.io.own_store`), ``0o644`` minus the umask.
    """
    from .own_store import FILE_MODE

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temp_beside(path)
    mode = FILE_MODE if private else 0o666
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), mode)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_save_npy(path, array):
    """``np.save`` of ``array`` to ``path`` atomically: streamed into a temp file beside it, then renamed.

    A full disk or a crash leaves the previous file whole (``np.save`` onto the
    path itself truncates it first). Mode as `atomic_write_bytes`.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temp_beside(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as fh:
            np.save(fh, np.asarray(array), allow_pickle=False)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_save_npz(path, *, private=False, **arrays):
    """``np.savez`` through `atomic_write_bytes` (atomic, umask-honouring; ``private`` as there)."""
    import io

    buf = io.BytesIO()
    np.savez(buf, **arrays)
    atomic_write_bytes(path, buf.getvalue(), private=private)


def sentence_list_key(sentences):
    r"""Hex SHA-256 of a sentence list in an unambiguous (JSON) encoding.

    Joining with newlines let ``["a\nb"]`` and ``["a", "b"]`` share a key; the
    JSON array keeps every sentence's boundaries.
    """
    return hashlib.sha256(json.dumps(list(sentences), ensure_ascii=False).encode()).hexdigest()


def row_hashes(labels, rows, *, dtype=np.float32):
    """Per row: a hash of its label (a sentence, an image's content hash, a VQA key) and its values: a moved row shows.

    Parameters
    ----------
    labels : sequence of str
        One per row.
    rows : array-like of shape (m, ...)
        The cached values, one row per label (an embedding; a VQA answer as a row of one).
    dtype : numpy dtype, default=float32
        The precision the values are cached in.

    Returns
    -------
    ndarray of str, shape (m,)
        An image shard written before it carried these hashes is re-encoded once.
    """
    arr = np.ascontiguousarray(rows, dtype=dtype)
    return np.asarray(
        [hashlib.sha256(s.encode() + b"\0" + row.tobytes()).hexdigest()[:32] for s, row in zip(labels, arr)],
        dtype=str,
    )


def plain_npz(path):
    """Whether ``path`` is an ``.npz`` as lbee writes one; anything else is read as a cache miss, never loaded.

    A regular file whose entries are stored, not compressed, and hold no more bytes than the file.
    """
    import stat
    import zipfile

    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode):
            return False
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
    except (OSError, zipfile.BadZipFile, ValueError):
        return False
    stored = all(i.compress_type == zipfile.ZIP_STORED for i in infos)
    return stored and sum(i.file_size for i in infos) <= st.st_size


class EmbeddingCache:
    """Cache of unit embeddings for one encoder identity.

    Parameters
    ----------
    identity : dict
        JSON-serialisable; encoder name, weights identity and preprocessing.
    cache_dir : path-like, optional
        Root folder, default `default_cache_dir`.
    """

    def __init__(self, identity, cache_dir=None):
        self.identity = identity
        self.base = cache_folder(cache_dir)
        self.root = self.base / "embeddings" / identity_key(identity)
        self._images = None

    def linked(self, *below):
        """Whether a folder of this cache, from its ``embeddings`` folder down to ``below``, is not its own.

        The whole way down, not the last folder alone: a link at ``embeddings/<key>`` replaced a file outside the
        cache (sweep 32u B4); a folder another user could write held their shards (sweep 32ak B1, B8).
        """
        return foreign_inside(self.base, "embeddings", self.root.name, *below)

    def _load_images(self):
        if self._images is None:
            self._images = {}
            if self.linked("images"):
                return self._images
            for shard in sorted((self.root / "images").glob("shard-*.npz")):
                if not own_file(shard) or not plain_npz(shard):
                    continue  # another user's, a FIFO, a 3 MB deflated shard that took 3 GB (sweep 27): encoded again
                try:
                    with np.load(shard) as data:
                        hashes, emb, rows = data["hashes"], data["embeddings"], data["row_hashes"]
                    if hashes.ndim != 1 or emb.ndim != 2 or len(hashes) != len(emb) or not np.all(np.isfinite(emb)):
                        continue  # a foreign or damaged shard: its images are re-encoded
                    if not np.array_equal(rows, row_hashes([str(h) for h in hashes], emb)):
                        continue  # rows moved against their hashes (sweep 26: reversed, 1,999 of 2,000 wrong)
                    for h, e in zip(hashes, emb):
                        self._images[str(h)] = e
                except (OSError, ValueError, KeyError, EOFError):
                    continue  # a damaged shard is re-encoded, never fatal
        return self._images

    def get_images(self, hashes):
        """Cached embeddings for the given content hashes: dict hash -> (d,) array."""
        store = self._load_images()
        return {h: store[h] for h in hashes if h in store}

    def put_images(self, hashes, embeddings):
        """Persist one shard of (hash, embedding) pairs atomically."""
        if len(hashes) == 0 or self.linked("images"):
            return  # nothing written through a link planted in the cache (sweep 32t): encoded again next time
        make_own(self.base, "embeddings", self.root.name, "images")  # for this user alone, whatever the umask
        meta = self.root / "identity.json"
        if not meta.exists():
            atomic_write_bytes(meta, json.dumps(self.identity, indent=2, sort_keys=True).encode(), private=True)
        emb = np.asarray(embeddings, dtype=np.float32)
        hashes = [str(h) for h in hashes]
        atomic_save_npz(  # each row's content hash and embedding digested together: a moved row shows
            self.root / "images" / f"shard-{uuid.uuid4().hex}.npz",
            hashes=np.asarray(hashes, dtype=str),
            embeddings=emb,
            row_hashes=row_hashes(hashes, emb),
            private=True,
        )
        store = self._load_images()
        store.update(zip(hashes, emb))

    def _sentence_path(self, sentences):
        return self.root / "sentences" / f"{sentence_list_key(sentences)[:32]}.npz"

    def get_sentences(self, sentences):
        """The cached (N, d) matrix for exactly this list of sentences, or None.

        Each entry stores, per row, a hash of the sentence and its embedding; an
        entry whose rows do not match ``sentences`` one by one (rows shuffled,
        embeddings moved, truncated, foreign or damaged) is ignored, and the
        caller recomputes.
        """
        sentences = [str(s) for s in sentences]
        path = self._sentence_path(sentences)
        if not self.linked("sentences") and own_file(path) and plain_npz(path):
            try:
                with np.load(path) as data:
                    arr, rows = data["embeddings"], data["row_hashes"]
                if (
                    arr.ndim == 2
                    and arr.shape[0] == len(sentences)
                    and rows.shape == (len(sentences),)
                    and np.array_equal(rows, row_hashes(sentences, arr))
                ):
                    return arr
            except (OSError, ValueError, KeyError, EOFError):
                pass
        return None

    def put_sentences(self, sentences, embeddings):
        """Persist the (N, d) embeddings of ``sentences`` atomically, with each row's sentence hash."""
        sentences = [str(s) for s in sentences]
        emb = np.asarray(embeddings, dtype=np.float32)
        if emb.ndim != 2 or emb.shape[0] != len(sentences):
            raise ValueError(
                f"`embeddings` must have shape ({len(sentences)}, d), one row per sentence; received shape {emb.shape}."
            )
        if self.linked("sentences"):
            return  # as put_images
        make_own(self.base, "embeddings", self.root.name, "sentences")
        path = self._sentence_path(sentences)
        atomic_save_npz(path, embeddings=emb, row_hashes=row_hashes(sentences, emb), private=True)


def json_bytes(obj, *, indent=1):
    """UTF-8 JSON of ``obj`` with NaN and ±inf written as ``null`` (standard JSON has no NaN)."""
    import json
    import math

    def clean(x):
        if isinstance(x, float) and not math.isfinite(x):
            return None
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [clean(v) for v in x]
        if hasattr(x, "item") and getattr(x, "ndim", 1) == 0:  # numpy scalars
            return clean(x.item())
        return x

    return json.dumps(clean(obj), indent=indent, allow_nan=False).encode("utf-8")
