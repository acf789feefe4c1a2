"""A run opened in Renumics Spotlight: one row per image with its hypothesis, sentence, split and confidence.

``lbee export spotlight RUN_DIR`` writes ``RUN_DIR/spotlight.parquet`` from the
run's per-image table (`lbee.reports.stored_table.stored_images_table`), with
``image`` the absolute path of each image file, and prints the ``spotlight``
command that opens it. Writing the file needs no Spotlight; ``--open`` starts
Spotlight in this Python (``pip install "lbee[spotlight]"``).
"""

from __future__ import annotations

from pathlib import Path

from .._files import check_regular_file
from .finding_images import NO_FINDING  # noqa: F401  (named from here too)

#: The exported file, written into the run's folder by default.
SPOTLIGHT_FILE = "spotlight.parquet"
#: The hypothesis of an image in no hard group: an easy or a neutral one.
NO_HYPOTHESIS = "none"
#: The hypothesis of a hard image in none: told apart from an easy one without the split column (trial 25).
HARD_UNEXPLAINED = "hard, in no hypothesis"
#: Columns of the export, in order: the image file, its id, its hypothesis (``group 3``, the hard group;
#: `HARD_UNEXPLAINED` for a hard image in none, `NO_HYPOTHESIS` for an easy or a neutral one), the hypothesis'
#: sentence, its split (hard / easy / neutral / held-out), φ, ω, label, prediction and whether the sentence holds
#: for it (Γ, when the run had one). ``finding`` (``finding 1``, numbered as the report lists them, or
#: `NO_FINDING`) and ``finding_statement``: the strongest confirmed statement that holds for the image
#: (`lbee.reports.finding_images`), so that one filter shows a finding's images (a Category of the statements'
#: texts fails to load in Spotlight 1.8: they hold commas).
SPOTLIGHT_COLUMNS = (
    "image",
    "image_id",
    "hypothesis",
    "sentence",
    "finding",
    "finding_statement",
    "split",
    "confidence",
    "performance",
    "label",
    "prediction",
    "holds",
)
#: The optional last column: each image's embedding, for Spotlight's similarity map (`run_embeddings`).
EMBEDDING_COLUMN = "embedding"
#: Spotlight column types that are not read from the data (``image``: paths shown as pictures).
SPOTLIGHT_DTYPES = {
    "image": "Image",
    EMBEDDING_COLUMN: "Embedding",
    "split": "Category",
    "hypothesis": "Category",
    "finding": "Category",
    "label": "Category",
    "prediction": "Category",
}


def _image_file(row, run_dir):
    """The absolute path of a row's image: its recorded path, else its id, relative to ``run_dir``; or None."""
    for candidate in (row["path"], row["image"]):
        if not isinstance(candidate, str) or not candidate:
            continue
        p = Path(candidate)
        p = p if p.is_absolute() else run_dir / p
        try:
            check_regular_file(p, "image")  # a kernel file is a file that never ends (/proc/kmsg: sweep 22 H2)
        except (OSError, ValueError):
            continue
        if p.is_file():
            return str(p.resolve())
    return None


def _findings(run_dir, n):
    """Per image, the strongest finding that holds for it: ``finding`` and ``finding_statement``, shape (n,) each.

    Read from ``explanation.json``'s confirmation block (checked as every reader checks it); a run without one, or
    written before it recorded each finding's images, has none (`NO_FINDING`, and no statement).
    """
    from .finding_images import image_findings

    path = Path(run_dir) / "explanation.json"
    conf = None
    if path.is_file():
        from ..run.pipeline import load_explanations

        conf = load_explanations(path)[1].get("confirmation")
    return image_findings(conf, n)


def spotlight_table(run_dir, images=None):
    """The Spotlight table of a stored run: a DataFrame with `SPOTLIGHT_COLUMNS`, one row per image.

    Parameters
    ----------
    run_dir : path-like
        The output folder of ``lbee describe --out``, ``lbee report`` (one model's folder) or ``lbee demo``.
    images : path-like, optional
        The folder relative image paths are read from; default ``run_dir``. A copy fetched from ``lbee serve``
        names its images as inside the server's data root: give your copy of that folder.

    Returns
    -------
    pandas.DataFrame of shape (n_images, 12)

    Raises
    ------
    ValueError
        The folder holds no run (`lbee.reports.stored_table.stored_images_table`).
    """
    import pandas as pd

    from .stored_table import stored_images_table

    run_dir = Path(run_dir).resolve()
    base = run_dir if images is None else Path(images).resolve()
    table = stored_images_table(run_dir)
    hard = (table["split"] == "hard") & (table["group"] >= 0)  # a hard image in no hypothesis has none
    return pd.DataFrame(
        {
            "image": [_image_file(r, base) for r in table[["path", "image"]].to_dict("records")],
            "image_id": table["image"].astype(str),
            # text, not an int: Spotlight 1.8's Category of an integer column has no categories and shows blank
            "hypothesis": ("group " + table["group"].astype("Int64").astype(str))
            .where(hard, HARD_UNEXPLAINED)
            .where(table["split"] == "hard", NO_HYPOTHESIS),
            "sentence": table["sentence"].where(hard, None),
            **_findings(run_dir, len(table)),
            "split": table["split"].astype(str),
            "confidence": table["confidence"],
            "performance": table["performance"],
            # text, as the hypothesis: a Category of integers shows blank in Spotlight 1.8
            "label": table["label"].map(lambda v: None if pd.isna(v) else str(v)),
            "prediction": table["prediction"].map(lambda v: None if pd.isna(v) else str(v)),
            "holds": table["holds"],
        },
        columns=list(SPOTLIGHT_COLUMNS),
    )


def run_embeddings(run_dir, table, cache_dir=None, images=None):
    """Each image's embedding, from the run's own inputs or the embedding cache: (array of shape (n, d), why).

    The run's ``inputs/image_embeddings.npy`` when its ``inputs/predictions.csv`` lists the same image ids in
    the same order (``lbee demo``); else the embedding cache of the run's encoder (``explanation.json``'s
    ``encoder``), looked up by each image file's content hash, as ``lbee describe`` and ``lbee embed`` store them.
    None, with the reason, when some image has neither.

    Parameters
    ----------
    run_dir : pathlib.Path
    table : pandas.DataFrame
        `spotlight_table`'s rows (``image`` the file, ``image_id`` the run's id).
    cache_dir : path-like, optional
        The embedding cache (default: lbee's, as ``--cache-dir``).
    images : path-like, optional
        The folder the images are read from (``--images``): a run's precomputed embeddings named relative to the
        server's data root are looked for there too.
    """
    import json

    import numpy as np

    inputs = run_dir / "inputs"
    if (inputs / "image_embeddings.npy").is_file() and (inputs / "predictions.csv").is_file():
        from ..io.provenance import check_row_ids, load_embeddings

        path = inputs / "image_embeddings.npy"
        from ..io.predictions import id_column_of
        from ..io.table_reader import read_table  # bounded, as every table lbee reads (a sparse 8 GiB one: OOM)

        try:
            recorded = read_table(inputs / "predictions.csv")
            ids = recorded[id_column_of(recorded)].astype(str).tolist()
        except ValueError:  # no id column (an edited run folder, sweep 22 L1): the cache below, by the files
            ids = None
        if ids == table["image_id"].tolist():
            try:  # as lbee describe reads them: the provenance digest, and an ids file beside when there is one
                emb, record = load_embeddings(path, "inputs/image_embeddings.npy", kind="image_embeddings")
                if record is None:
                    raise ValueError("it has no provenance record to check its rows against")
                check_row_ids(path, emb.shape[0], ids, "inputs/image_embeddings.npy", against="the run's images")
            except ValueError as exc:
                return None, f"the run's inputs/image_embeddings.npy is not the run's ({exc})"
            if emb.ndim == 2 and emb.shape[0] == len(ids):
                return np.asarray(emb, dtype=np.float32), "the run's inputs/image_embeddings.npy"
    from ..io.cache import EmbeddingCache, file_sha256

    try:
        identity = json.loads((run_dir / "explanation.json").read_text(encoding="utf-8")).get("encoder")
    except (OSError, ValueError):
        identity = None
    if isinstance(identity, dict) and identity.get("image_embeddings_sha256"):
        return _recorded_embeddings(identity, table, run_dir, images)
    if not isinstance(identity, dict) or identity.get("encoder") in (None, "precomputed"):
        return None, "the run does not record the encoder its embeddings came from"
    identity = {k: v for k, v in identity.items() if k != "caveat"}  # a note on the run, not part of the cache key
    files = table["image"].tolist()
    if any(not isinstance(f, str) for f in files):  # None, or NaN once pandas stored a None among paths (sweep 25)
        return None, "some image files are missing"
    import os

    from .._files import refuse_sparse
    from ..io.images import MAX_IMAGE_BYTES

    hashes, seen = [], {}
    for f in files:  # as the run hashed them, each file once (by its inode: 2,000 hard links to one file read it
        # 2,000 times); an image over the images' bound, or a sparse one (a sparse 20 GB file), is not read
        try:
            check_regular_file(f, "image")
            st = os.stat(f)
            key = (st.st_dev, st.st_ino)
            if key not in seen:
                if st.st_size > MAX_IMAGE_BYTES:
                    raise ValueError(f"{st.st_size:,} bytes, over the {MAX_IMAGE_BYTES:,} an image may be")
                refuse_sparse(f, "image")
                seen[key] = file_sha256(f, limit=MAX_IMAGE_BYTES)
        except (OSError, ValueError) as exc:
            return None, f"image {str(f)!r} cannot be read ({getattr(exc, 'strerror', None) or exc})"
        hashes.append(seen[key])
    found = EmbeddingCache(identity, cache_dir).get_images(hashes)
    missing = sum(h not in found for h in hashes)
    if missing:
        return None, f"{missing} of the {len(hashes)} images have no embedding in the cache"
    return np.stack([found[h] for h in hashes]).astype(np.float32), "the embedding cache"


def _recorded_embeddings(identity, table, run_dir, images=None):
    """The rows of the precomputed embeddings a run read (`--image-embeddings`), when the file is still those rows.

    The run records the file as it was named and the digest of its data (its provenance's ``data_sha256``); the
    file is read as `lbee describe` reads it (its provenance checked, its ids file against the run's images) and
    used only when its digest is the recorded one. A relative name is looked for from the current folder, then
    from the run's folder and each folder above it (an export run from elsewhere found none, trial 25): only a
    file of the recorded digest is taken, so a namesake is never. With ``images`` (``--images``), from that
    folder too: a copy fetched from ``lbee serve`` names them inside the server's data root (trial 28).
    """
    import numpy as np

    from ..io.provenance import load_embeddings
    from ..io.row_ids import check_row_ids

    given = identity.get("image_embeddings")
    if not isinstance(given, str):
        return None, f"the run records no file for its precomputed embeddings ({given!r})"
    here = [Path(given)] + ([] if images is None else [Path(images).resolve() / given])
    places = here if Path(given).is_absolute() else [*here, *(d / given for d in (run_dir, *run_dir.parents))]
    found = [p for p in dict.fromkeys(places) if p.is_file()]
    if not found:
        return (
            None,
            f"the precomputed embeddings the run read ({given!r}) are not found from here, from the run's folder"
            + (" or from --images" if images is not None else ""),
        )
    problem = None
    for path in found:
        try:
            emb, record = load_embeddings(path, "image_embeddings", kind="image_embeddings")
            if record is None or record.get("data_sha256") != identity["image_embeddings_sha256"]:
                raise ValueError("its rows are not those the run read (their digest differs)")
            ids = table["image_id"].tolist()
            check_row_ids(path, emb.shape[0], ids, "image_embeddings", against="the run's images")
            if emb.ndim != 2 or emb.shape[0] != len(ids):
                raise ValueError(f"it has shape {emb.shape}; the run has {len(ids)} images")
        except ValueError as exc:
            problem = problem or f"the precomputed embeddings {str(path)!r} cannot be used ({exc})"
            continue
        return np.asarray(emb, dtype=np.float32), f"the run's precomputed embeddings {str(path)!r}"
    return None, problem


def export_spotlight(run_dir, out=None, *, cache_dir=None, images=None, without_images=False):
    """Write the Spotlight table of ``run_dir`` as parquet, with an embedding column when one is found.

    Parameters
    ----------
    run_dir : path-like
    out : path-like, optional
        Default ``run_dir / spotlight.parquet``.
    cache_dir : path-like, optional
        Where `run_embeddings` looks for the images' embeddings.
    images : path-like, optional
        Where relative image paths are read from (`spotlight_table`).
    without_images : bool, default=False
        Write the table when none of the images' files is found (else a ValueError, before anything is written).

    Returns
    -------
    path : pathlib.Path
    embeddings : str
        Where the embedding column came from, or why there is none.
    """
    import io

    from ..run.outputs import run_digest, write_beside_run

    read = run_digest(run_dir)  # written beside this run only if it is still the one there (sweep 32m)
    table = spotlight_table(run_dir, images)
    if not without_images and len(table) and table["image"].isna().all():  # nothing to see: where to look first
        raise ValueError(  # a twenty-second user's fetched copy: a table of no picture, then --overwrite asked for
            f"none of the {len(table)} images' files is found from {str(images or run_dir)!r} (the paths the run "
            "recorded); "
            "give --images with the folder they are read from (for a copy fetched from lbee serve, your copy of "
            "the server's data root), or --without-images for a table without pictures."
        )
    emb, why = run_embeddings(Path(run_dir).resolve(), table, cache_dir, images)
    if emb is not None:
        table[EMBEDDING_COLUMN] = list(emb)
    out = Path(out) if out is not None else Path(run_dir) / SPOTLIGHT_FILE
    buf = io.BytesIO()
    table.to_parquet(buf, index=False)
    write_beside_run(run_dir, out, buf.getvalue(), read)
    return out, (f"embeddings from {why}" if emb is not None else f"no embedding column: {why}")


def spotlight_command(path, columns=None):
    """The ``spotlight`` command line (list of str) that opens an exported file with its column types."""
    args = ["spotlight", str(path)]
    for column, dtype in SPOTLIGHT_DTYPES.items():
        if columns is not None and column not in columns:
            continue
        args += ["--dtype", f"{column}={dtype}"]
    return args


def open_in_spotlight(path, *, host="127.0.0.1", port="auto", browser=True):
    """Start Spotlight on an exported file in this Python (needs ``lbee[spotlight]``); returns its viewer."""
    import pandas as pd

    from ..extras import import_extra

    spotlight = import_extra("renumics.spotlight", "spotlight", needed_for="lbee export spotlight --open")
    table = pd.read_parquet(path)
    dtype = {k: v for k, v in SPOTLIGHT_DTYPES.items() if k in table.columns}
    return spotlight.show(table, dtype=dtype, host=host, port=port, no_browser=not browser, wait=True)
