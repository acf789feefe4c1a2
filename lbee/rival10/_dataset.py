"""Reading a RIVAL10 split: images, classes, exact attribute relevance Γ and object masks.

Layout of the release (RIVAL10 §3, app. A), per split ``train/`` or ``test/``::

    <root>/<split>/ordinary/<stem>.JPEG                image
    <root>/<split>/ordinary/<stem>_attr_labels.npy     (2, 18): row 0 attributes present,
                                                       row 1 attributes added / removed by augmentation
    <root>/<split>/ordinary/<stem>_merged_mask.JPEG    merged mask
    <root>/<split>/ordinary/<stem>_attr_dict.pkl       dict: attribute or 'entire-object' -> base64 JPEG mask

An image's class comes from the ImageNet wnid that starts its stem
(``n02099712_1234`` -> dog), through the 20-wnid table of RIVAL10 app. A,
Table 1 (`WNID_TO_CLASS`); a user mapping file can replace it.
"""

from __future__ import annotations

import base64
import io
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..io.images import open_image

#: The 18 attributes, in the column order of ``*_attr_labels.npy``.
ATTRIBUTES = (
    "long-snout",
    "wings",
    "wheels",
    "text",
    "horns",
    "floppy-ears",
    "ears",
    "colored-eyes",
    "tail",
    "mane",
    "beak",
    "hairy",
    "metallic",
    "rectangular",
    "wet",
    "long",
    "tall",
    "patterned",
)

#: The 10 classes; an image's integer label is its index here (RIVAL10's label order).
CLASSES = ("truck", "car", "plane", "ship", "cat", "dog", "equine", "deer", "frog", "bird")

#: ImageNet wnid -> RIVAL10 class (RIVAL10 app. A, Table 1; names checked against ImageNet-1k).
WNID_TO_CLASS = {
    "n03796401": "truck",  # moving van
    "n04467665": "truck",  # trailer truck ("semi")
    "n02814533": "car",  # beach wagon
    "n03100240": "car",  # convertible
    "n02690373": "plane",  # airliner
    "n04552348": "plane",  # warplane
    "n03673027": "ship",  # liner
    "n03095699": "ship",  # container ship
    "n02123394": "cat",  # Persian cat
    "n02124075": "cat",  # Egyptian cat
    "n02099712": "dog",  # Labrador retriever
    "n02099601": "dog",  # golden retriever
    "n02389026": "equine",  # sorrel
    "n02391049": "equine",  # zebra
    "n02423022": "deer",  # gazelle
    "n02422699": "deer",  # impala
    "n01644900": "frog",  # tailed frog
    "n01644373": "frog",  # tree frog
    "n01531178": "bird",  # goldfinch
    "n01532829": "bird",  # house finch
}

#: One sentence per attribute, in `ATTRIBUTES` order (the first 18 lines of ``sentence_sets/rival10.txt``).
ATTRIBUTE_SENTENCES = (
    "An image of an animal with a long snout",
    "An image of something with wings",
    "An image of something with wheels",
    "An image of an object with text on it",
    "An image of an animal with horns",
    "An image of an animal with floppy ears",
    "An image of an animal with pointed ears",
    "An image of an animal with colored eyes",
    "An image of something with a tail",
    "An image of an animal with a mane",
    "An image of a bird with a beak",
    "An image of a hairy animal",
    "An image of a metallic object",
    "An image of a rectangular object",
    "An image of something wet",
    "An image of a long object",
    "An image of a tall object",
    "An image of a patterned object",
)

#: One sentence per class, in `CLASSES` order (the last 10 lines of ``sentence_sets/rival10.txt``).
CLASS_SENTENCES = (
    "An image of a truck",
    "An image of a car",
    "An image of a plane",
    "An image of a ship",
    "An image of a cat",
    "An image of a dog",
    "An image of a horse or a zebra",
    "An image of a deer",
    "An image of a frog",
    "An image of a bird",
)

OBJECT_KEY = "entire-object"
#: What `export_rival10` writes into its folder (replaced whole).
EXPORT_ENTRIES = ("manifest.csv", "relevance.parquet", "rival10.txt", "masks")
SPLITS = ("train", "test")


def rival10_sentences():
    """The ``rival10`` sentence set in column order: 18 attribute sentences, then 10 class sentences."""
    return list(ATTRIBUTE_SENTENCES) + list(CLASS_SENTENCES)


@dataclass
class Rival10Split:
    """One RIVAL10 split in memory (masks are decoded on demand).

    Attributes
    ----------
    root : str
    split : str
        'train' or 'test'.
    paths : list of str, length n
        Image files.
    ids : list of str, length n
        Image file names (``<stem>.JPEG``), as in ``relevance.parquet``.
    labels : ndarray of int64, shape (n,)
        Index into ``class_names``.
    class_names : list of str, length 10
    sentences : list of str, length N = 28
        The ``rival10`` sentence set (18 attributes, then 10 classes).
    relevance : ndarray of bool, shape (n, N)
        Exact Γ: attribute sentence j is relevant when row 0 of the attribute
        labels has a 1 in column j; class sentence c when the image is of class c.
    attributes : ndarray of bool, shape (n, 18)
        Row 0 of ``*_attr_labels.npy`` (row 1, the augmentation changes, is not used).
    attr_dict_paths : list of (str or None), length n
        ``*_attr_dict.pkl`` files (None when absent).
    mask_paths : list of (str or None), length n
        ``*_merged_mask.JPEG`` files (None when absent).
    """

    root: str
    split: str
    paths: list
    ids: list
    labels: np.ndarray
    class_names: list
    sentences: list
    relevance: np.ndarray
    attributes: np.ndarray
    attr_dict_paths: list = field(default_factory=list)
    mask_paths: list = field(default_factory=list)

    def __len__(self):
        return len(self.paths)

    @property
    def classes(self):
        """Class name of every image, list of length n."""
        return [self.class_names[i] for i in self.labels]

    def object_mask(self, i):
        """The object mask of image ``i``, ndarray of bool with the image's (H, W).

        From the ``entire-object`` entry of the attribute file (read with the
        restricted unpickler); the merged mask when that entry or file is absent.
        """
        with open_image(self.paths[i]) as img:  # checked through its descriptor, as every image
            size = img.size
        return object_mask(self.attr_dict_paths[i], self.mask_paths[i], size)


def read_class_map(path):
    """Read a user wnid -> class mapping: JSON object, or CSV / TSV with columns ``wnid``, ``class``.

    Every class must be one of `CLASSES` (labels are indices into it).
    """
    from .._validation import loads_each_key_once

    path = Path(path)
    try:
        if path.suffix.lower() == ".json":
            from ..io.confinement import read_text_file

            mapping = loads_each_key_once(read_text_file(path, "class map"))  # a wnid twice: which class?
            if not isinstance(mapping, dict):
                raise ValueError(f"holds a {type(mapping).__name__}, expected an object {{wnid: class}}")
        else:
            from ..io.images import read_table

            table = read_table(path)
            if not {"wnid", "class"} <= set(table.columns):
                raise ValueError(f"has columns {list(table.columns)}, expected 'wnid' and 'class'")
            from ..io.table_reader import check_unique

            check_unique(table, "wnid", "class map", what="wnid")  # a wnid twice: which class?
            mapping = dict(zip(table["wnid"].astype(str), table["class"].astype(str)))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, ValueError) as exc:
        raise ValueError(f"Class map {str(path)!r} cannot be used: {str(exc).rstrip('.')}.") from None
    bad = {w: c for w, c in mapping.items() if c not in CLASSES}
    if bad:
        w, c = next(iter(bad.items()))
        raise ValueError(f"Class map {str(path)!r} maps {w!r} to {c!r}; expected one of {list(CLASSES)}.")
    return {str(w): str(c) for w, c in mapping.items()}


def _split_dir(root, split):
    if split not in SPLITS:
        raise ValueError(f"`split` must be one of {list(SPLITS)}; received {split!r}.")
    folder = Path(root) / split / "ordinary"
    if not folder.is_dir():
        raise FileNotFoundError(
            f"RIVAL10 folder {str(folder)!r} does not exist; expected ROOT/{split}/ordinary/ "
            f"with <stem>.JPEG and <stem>_attr_labels.npy files (ROOT = {str(root)!r})."
        )
    return folder


def _read_attr_labels(path):
    try:
        from ..io.arrays import load_npy  # sparse, .npz and header checks (a 4 KB sparse file took 2.4 GB: sweep 24)

        arr = load_npy(path, "attribute labels")
    except (OSError, ValueError) as exc:
        raise ValueError(f"Cannot read attribute labels {str(path)!r}: {exc}") from None
    if arr.shape != (2, len(ATTRIBUTES)):
        raise ValueError(
            f"Attribute labels {str(path)!r} have shape {arr.shape}; expected (2, {len(ATTRIBUTES)}) "
            "(row 0: attributes present, row 1: augmentation changes)."
        )
    if arr.dtype.kind not in "biuf" or not np.all((arr == 0) | (arr == 1)):
        raise ValueError(
            f"Attribute labels {str(path)!r} must hold 0 / 1; received values "
            f"{sorted(set(np.unique(arr).tolist()))[:5]} of dtype {arr.dtype}."
        )
    return arr[0].astype(bool)


def load_rival10(root, split="test", *, class_map=None):
    """Read a RIVAL10 split (RIVAL10 §3, app. A) with exact relevance over the ``rival10`` sentence set.

    Parameters
    ----------
    root : path-like
        The folder holding ``train/`` and ``test/``.
    split : {'test', 'train'}, default='test'
    class_map : dict or path-like, optional
        wnid -> class name; default `WNID_TO_CLASS` (RIVAL10 Table 1).
        A path is read with [`read_class_map`][lbee.rival10.read_class_map].

    Returns
    -------
    Rival10Split
        Images sorted by file name.
    """
    folder = _split_dir(root, split)
    if class_map is None:
        class_map = WNID_TO_CLASS
    elif not isinstance(class_map, dict):
        class_map = read_class_map(class_map)
    images = sorted(
        p for p in folder.iterdir() if p.suffix.lower() in (".jpeg", ".jpg") and not p.stem.endswith("_merged_mask")
    )
    if not images:
        raise ValueError(f"No image (<stem>.JPEG) found in {str(folder)!r}.")
    labels, attrs, dicts, masks = [], [], [], []
    for img in images:
        stem = img.stem
        wnid = stem.split("_", 1)[0]
        if wnid not in class_map:
            raise ValueError(
                f"Image {str(img)!r} starts with wnid {wnid!r}, which the class map does not know "
                f"(it has {len(class_map)} wnids); pass a class map file (JSON {{wnid: class}})."
            )
        labels.append(CLASSES.index(class_map[wnid]))
        lab = folder / f"{stem}_attr_labels.npy"
        if not lab.is_file():
            raise FileNotFoundError(f"Image {str(img)!r} has no attribute labels {lab.name!r} beside it.")
        attrs.append(_read_attr_labels(lab))
        pkl = folder / f"{stem}_attr_dict.pkl"
        dicts.append(str(pkl) if pkl.is_file() else None)
        merged = [
            p for p in (folder / f"{stem}_merged_mask{img.suffix}", folder / f"{stem}_merged_mask.JPEG") if p.is_file()
        ]
        masks.append(str(merged[0]) if merged else None)
    labels = np.asarray(labels, dtype=np.int64)
    attributes = np.stack(attrs)
    relevance = np.zeros((len(images), len(ATTRIBUTES) + len(CLASSES)), dtype=bool)
    relevance[:, : len(ATTRIBUTES)] = attributes
    relevance[np.arange(len(images)), len(ATTRIBUTES) + labels] = True
    return Rival10Split(
        str(root),
        split,
        [str(p) for p in images],
        [p.name for p in images],
        labels,
        list(CLASSES),
        rival10_sentences(),
        relevance,
        attributes,
        dicts,
        masks,
    )


def decode_mask(encoded, size=None, *, source="<mask>"):
    """Decode one base64 JPEG mask to bool (H, W), thresholded at 128 (JPEG blurs the edges).

    Parameters
    ----------
    encoded : str or bytes
        Base64 text, optionally with a ``data:image/...;base64,`` prefix.
    size : (width, height), optional
        Resize (nearest) to this size when the mask has another one.
    """
    from PIL import Image

    if isinstance(encoded, bytes):
        encoded = encoded.decode("ascii", errors="replace")
    if "base64," in encoded[:64]:
        encoded = encoded.split("base64,", 1)[1]
    try:
        raw = base64.b64decode(encoded, validate=False)
        with open_image(io.BytesIO(raw), f"the mask of {source}") as img:
            img = img.convert("L")
            if size is not None and img.size != tuple(size):
                img = img.resize(tuple(size), Image.NEAREST)
            return np.asarray(img) >= 128
    except Exception as exc:
        raise ValueError(f"Mask in {source} is not a base64 image: {type(exc).__name__}: {exc}") from None


def object_mask(attr_dict_path, merged_mask_path, size):
    """Object mask, bool (H, W): ``entire-object`` from the attribute file, else the merged mask.

    Parameters
    ----------
    attr_dict_path, merged_mask_path : str or None
    size : (width, height)
        The image's size; a mask of another size is resized (nearest).
    """
    from PIL import Image

    from ._pickle import load_attr_dict

    if attr_dict_path is not None:
        entries = load_attr_dict(attr_dict_path)
        if OBJECT_KEY in entries:
            return decode_mask(entries[OBJECT_KEY], size, source=f"{attr_dict_path!r}[{OBJECT_KEY!r}]")
    if merged_mask_path is None:
        raise ValueError(
            f"No object mask: {attr_dict_path!r} has no {OBJECT_KEY!r} entry and there is no merged mask file."
        )
    try:
        with open_image(merged_mask_path) as img:
            img = img.convert("L")
            if img.size != tuple(size):
                img = img.resize(tuple(size), Image.NEAREST)
            return np.asarray(img) >= 128
    except OSError as exc:
        raise ValueError(f"Cannot read merged mask {merged_mask_path!r}: {exc}") from None


def export_rival10(root, out, split="test", *, class_map=None, progress=False):
    """Write a RIVAL10 split in lbee's formats.

    Writes, under ``out`` (staged and moved in together, so an error or a kill leaves the previous export whole;
    the caller decides whether an existing export may be replaced, as ``lbee rival10 export --overwrite`` does):

    - ``manifest.csv``: ``path`` (absolute image path), ``label`` (int), ``class``;
    - ``relevance.parquet``: long form ``image`` (file name), ``sentence`` (text), ``relevant`` (bool),
      every (image, sentence) pair of the ``rival10`` set;
    - ``rival10.txt``: the sentence set (same as the built-in ``rival10``);
    - ``masks/<stem>.png``: object masks (0 / 255), from ``entire-object``.

    Returns
    -------
    dict
        ``n_images``, ``n_sentences``, ``n_masks``, ``mask_fallbacks`` (images whose
        mask came from the merged mask), ``out``.
    """
    from ..io.staging import staged_entries

    data = load_rival10(root, split, class_map=class_map)
    out = Path(out)
    with staged_entries(out, replaces=EXPORT_ENTRIES) as stage:  # the export replaced whole, never mixed
        fallbacks = _write_export(data, stage, progress)
    n, m = data.relevance.shape
    return {"n_images": n, "n_sentences": m, "n_masks": n, "mask_fallbacks": fallbacks, "out": str(out)}


def _write_export(data, out, progress):
    """Write the export's entries (`EXPORT_ENTRIES`) into ``out``; returns how many masks fell back."""
    import pandas as pd
    from PIL import Image
    from tqdm.auto import tqdm

    from ..io.cache import atomic_write_bytes

    (out / "masks").mkdir(parents=True, exist_ok=True)
    fallbacks = 0
    for i in tqdm(range(len(data)), desc="masks", disable=not progress):
        from ._pickle import load_attr_dict

        if data.attr_dict_paths[i] is None or OBJECT_KEY not in load_attr_dict(data.attr_dict_paths[i]):
            fallbacks += 1
        mask = data.object_mask(i)
        buf = io.BytesIO()
        Image.fromarray(mask.astype(np.uint8) * 255).save(buf, format="PNG")
        atomic_write_bytes(out / "masks" / f"{Path(data.ids[i]).stem}.png", buf.getvalue())
    manifest = pd.DataFrame(
        {"path": [str(Path(p).resolve()) for p in data.paths], "label": data.labels, "class": data.classes}
    )
    atomic_write_bytes(out / "manifest.csv", manifest.to_csv(index=False).encode())
    n, m = data.relevance.shape
    rel = pd.DataFrame(
        {
            "image": np.repeat(data.ids, m),
            "sentence": np.tile(data.sentences, n),
            "relevant": data.relevance.reshape(-1),
        }
    )
    buf = io.BytesIO()
    rel.to_parquet(buf, index=False)
    atomic_write_bytes(out / "relevance.parquet", buf.getvalue())
    header = [
        "# rival10: RIVAL10's 18 object attributes, then its 10 classes (RIVAL10 §3, app. A).",
        "# Written by lbee.rival10.export_rival10; the same sentences as the built-in set 'rival10'.",
        "",
    ]
    atomic_write_bytes(out / "rival10.txt", "\n".join(header + data.sentences).encode("utf-8") + b"\n")
    return fallbacks
