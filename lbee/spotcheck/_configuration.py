"""An experimental configuration (EC): dataset + blindspots + images + a model with those blindspots, and its folder.

On-disk layout of an EC folder::

    ec.json              definition: dataset, blindspots, seed, sizes, verification
    metadata.parquet     one row per image: split, file, label, attributes, blindspot membership
    images/<split>/<i>.png
    model.pt             the classifier's state dict (weights_only loadable)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ._world import ATTRIBUTES, META, Blindspot, DatasetDefinition

SPLITS = ("train", "val", "test")
#: The entries of an EC folder (the layout above): replaced together when an EC is saved over another.
EC_ENTRIES = ("ec.json", "metadata.parquet", "images", "model.pt")
#: The largest ec.json read (lbee writes a few kB; a sparse file of gigabytes was read whole).
MAX_EC_JSON_BYTES = 16 << 20
EC_VERSION = 2  # 2: renders aligned with the official generator; text size values (normal, large)


class CorruptECError(ValueError):
    """An EC folder is missing files or holds inconsistent data."""


def _attr_column(key):
    return f"{key[0]}.{key[1]}"


@dataclass
class ExperimentalConfiguration:
    """A SpotCheck EC in memory.

    Attributes
    ----------
    dataset : DatasetDefinition
    blindspots : list of Blindspot
    images : dict of str to ndarray of uint8, shape (n, S, S, 3)
        Per split.
    attributes : dict of str to list of dict
        Per split, each image's attributes (MetaAttribute included).
    labels : dict of str to ndarray of int
        Per split, the labels the model saw (train/val: blindspot images flipped) or true (test).
    seed : int
    image_size : int
    model : torch.nn.Module or None
    verification : dict
    """

    dataset: DatasetDefinition
    blindspots: list
    images: dict
    attributes: dict
    labels: dict
    seed: int
    image_size: int
    model: object = None
    verification: dict = field(default_factory=dict)

    def true_labels(self, split):
        """Whether a square is present, shape (n,)."""
        return np.array([a[("square", "presence")] == "true" for a in self.attributes[split]], dtype=np.int64)

    def membership(self, split):
        """Boolean (n, n_blindspots): which images lie in which blindspot."""
        attrs = self.attributes[split]
        return np.array([[b.contains(a) for b in self.blindspots] for a in attrs], dtype=bool).reshape(
            len(attrs), len(self.blindspots)
        )

    def blindspot_indices(self, split="test"):
        """The true blindspots Ψ as index arrays into ``split``."""
        m = self.membership(split)
        return [np.flatnonzero(m[:, j]) for j in range(m.shape[1])]

    def describe_blindspots(self):
        return [b.describe() for b in self.blindspots]

    def blindspot_sentences(self):
        """Each blindspot in the grammar's words (`Blindspot.sentence`), as lbee's sentences say it."""
        return [b.sentence() for b in self.blindspots]

    # ---- persistence
    def save(self, folder):
        """Write the EC to ``folder`` (layout in the module docstring) as one unit.

        The files are staged beside ``folder`` and moved in together
        (`lbee.io.staging`): an error or a kill leaves the previous EC
        whole (or none), never a mix of two; other files in ``folder`` stay.
        """
        from ..io.own_store import tighten_tree
        from ..io.staging import staged_entries

        folder = Path(folder)
        with staged_entries(folder, replaces=EC_ENTRIES) as stage:
            self._write(stage)
            tighten_tree(stage)  # this user's alone whatever the umask: a rerun reads it as its own (sweep 32al BL3)
        return folder

    def _write(self, folder):
        import pandas as pd
        import torch
        from PIL import Image

        rows = []
        for split in SPLITS:
            (folder / "images" / split).mkdir(parents=True, exist_ok=True)
            memb = self.membership(split)
            for i, (img, attrs) in enumerate(zip(self.images[split], self.attributes[split])):
                rel = _image_file(split, i)
                Image.fromarray(img).save(folder / rel)
                row = {
                    "split": split,
                    "index": i,
                    "file": rel,
                    "label": int(self.labels[split][i]),
                    "has_square": attrs[("square", "presence")] == "true",
                }
                row.update({_attr_column(k): v for k, v in attrs.items()})
                row.update({f"blindspot_{j}": bool(memb[i, j]) for j in range(memb.shape[1])})
                rows.append(row)
        pd.DataFrame(rows).to_parquet(folder / "metadata.parquet", index=False)
        if self.model is not None:
            torch.save(self.model.state_dict(), folder / "model.pt")
        definition = {
            "version": EC_VERSION,
            "seed": self.seed,
            "image_size": self.image_size,
            "dataset": self.dataset.to_dict(),
            "blindspots": [b.to_dict() for b in self.blindspots],
            "blindspot_descriptions": self.describe_blindspots(),
            "verification": self.verification,
            "sizes": {s: int(len(self.images[s])) for s in SPLITS},
            # the attributes every metric is scored against: an edited metadata.parquet is refused on loading
            "metadata_sha256": _file_sha256(folder / "metadata.parquet"),
        }
        (folder / "ec.json").write_text(json.dumps(definition, indent=1))

    @classmethod
    def load(cls, folder, *, load_images=True):
        """Read an EC folder; a missing or inconsistent part raises `CorruptECError`."""
        import pandas as pd

        from .._validation import loads_each_key_once
        from ..io.confinement import check_regular_file

        folder = Path(folder)
        try:
            for name in ("ec.json", "metadata.parquet", "model.pt"):  # a FIFO would block a job past its cancel
                check_regular_file(folder / name, f"EC file {name!r} of {str(folder)!r}")
            if (folder / "ec.json").stat().st_size > MAX_EC_JSON_BYTES:
                raise ValueError(f"ec.json is over {MAX_EC_JSON_BYTES:,} bytes; a world's is a few kB")
            from ..io.confinement import pinned, read_text_file

            definition = loads_each_key_once(read_text_file(folder / "ec.json", "EC file 'ec.json'"))
            recorded = definition.get("metadata_sha256") if isinstance(definition, dict) else None
            if recorded is None and isinstance(definition, dict):  # saved before lbee recorded it, or deleted
                import warnings

                warnings.warn(
                    f"EC folder {str(folder)!r} records no digest of its metadata.parquet (ec.json has no "
                    "'metadata_sha256'): an edit of its attributes cannot be told, and the metrics would move with "
                    "it. Save the world again (`lbee spotcheck generate`) to have it checked.",
                    UserWarning,
                    stacklevel=2,
                )
            with pinned(folder / "metadata.parquet", "EC file 'metadata.parquet'") as src:  # checked = read
                if recorded is not None and recorded != _file_sha256(src):
                    raise ValueError(
                        "metadata.parquet differs from the one the world was saved with (ec.json's metadata_sha256): "
                        "its attributes, labels or blindspots were edited"
                    )
                from ..io.table_header import refuse_parquet_bomb

                refuse_parquet_bomb(src, "EC file 'metadata.parquet'")
                meta = pd.read_parquet(src)
        except (OSError, ValueError) as exc:
            raise CorruptECError(f"EC folder {str(folder)!r} is incomplete or corrupt: {exc}") from None
        if definition.get("version") != EC_VERSION:
            raise CorruptECError(
                f"EC folder {str(folder)!r} has version {definition.get('version')!r}; expected {EC_VERSION}."
            )
        try:
            dataset = DatasetDefinition.from_dict(definition["dataset"])
            blindspots = [Blindspot.from_dict(b) for b in definition["blindspots"]]
            keys = list(ATTRIBUTES) + [META]
            images, attributes, labels = {}, {}, {}
            _check_metadata(meta, folder)
            for split in SPLITS:
                part = meta[meta["split"] == split].sort_values("index")
                if len(part) != definition["sizes"][split]:
                    raise CorruptECError(
                        f"EC folder {str(folder)!r}: metadata has {len(part)} {split} rows, "
                        f"ec.json says {definition['sizes'][split]}."
                    )
                records = part.to_dict("records")
                attributes[split] = [{k: str(r[_attr_column(k)]) for k in keys} for r in records]
                labels[split] = part["label"].to_numpy().astype(np.int64)
                _check_rows_agree(records, attributes[split], blindspots, split, folder)
                files = [str(f) for f in part["file"]]
                for index, f in zip(part["index"], files):  # a world names its own renders, nothing else
                    if f != _image_file(split, index):
                        raise CorruptECError(
                            f"EC folder {str(folder)!r}: metadata.parquet's {split} image {index} is {f[:80]!r}; "
                            f"a world's images are {_image_file(split, index)!r} in its folder."
                        )
                if load_images:
                    images[split] = (
                        np.stack([_read_png(folder / f) for f in files])
                        if len(part)
                        else np.zeros((0, definition["image_size"], definition["image_size"], 3), np.uint8)
                    )
        except KeyError as exc:
            raise CorruptECError(f"EC folder {str(folder)!r} lacks the field {exc}.") from None
        verification = definition.get("verification", {})
        if not isinstance(verification, dict):
            raise CorruptECError(
                f"EC folder {str(folder)!r}: ec.json's 'verification' is a {type(verification).__name__}; "
                "expected an object."
            )
        model = None
        if (folder / "model.pt").exists():
            model = load_classifier_weights(folder / "model.pt")
        return cls(
            dataset,
            blindspots,
            images,
            attributes,
            labels,
            definition["seed"],
            definition["image_size"],
            model,
            verification,
        )


def _check_rows_agree(records, attributes, blindspots, split, folder):
    """Refuse rows whose columns contradict each other.

    ``has_square`` and the square's presence say one thing, and each ``blindspot_j`` column is what the blindspot's
    conditions say of the row's attributes (a training label may differ: the model is taught to fail). A world
    saved before ec.json recorded its metadata's digest has only these checks (an absent square with a number and a
    size, and ``has_square`` true, loaded without a word and moved the metrics).
    """
    for r, attrs in zip(records, attributes):
        present = attrs[("square", "presence")] == "true"
        stated = []
        if "has_square" in r:
            stated.append(("has_square", bool(r["has_square"]) == present))
        stated += [
            (f"blindspot_{j}", bool(r[f"blindspot_{j}"]) == b.contains(attrs))
            for j, b in enumerate(blindspots)
            if f"blindspot_{j}" in r
        ]
        wrong = [name for name, ok in stated if not ok]
        if wrong:
            raise CorruptECError(
                f"EC folder {str(folder)!r}: metadata.parquet's {split} image {r['index']} has {', '.join(wrong)} "
                f"disagreeing with its attributes (square {'present' if present else 'absent'}); the table was "
                "edited or is not a world's."
            )


def _check_metadata(meta, folder):
    """Refuse a ``metadata.parquet`` that is not as a world writes it.

    Its splits, image indices 0..n-1 once each (integers) and 0 / 1 labels: a tampered table loaded image 0
    twice and dropped image 1, or took a label of 7.
    """
    where = f"EC folder {str(folder)!r}: metadata.parquet"
    unknown = sorted(set(map(str, meta["split"])) - set(SPLITS))
    if unknown:
        raise CorruptECError(f"{where} has rows of the split(s) {unknown[:3]}; a world's splits are {list(SPLITS)}.")
    for split in SPLITS:
        index = meta.loc[meta["split"] == split, "index"].tolist()
        if not all(isinstance(i, int) and not isinstance(i, bool) for i in index) or sorted(index) != list(
            range(len(index))
        ):
            raise CorruptECError(f"{where}: the {split} images are not numbered 0 to {len(index) - 1}, once each.")
    bad = sorted(set(meta["label"].tolist()) - {0, 1})
    if bad:
        raise CorruptECError(f"{where} has the label(s) {bad[:3]}; a world's square classifier has labels 0 and 1.")


def _image_file(split, index):
    """Where a world keeps image ``index`` of ``split``, relative to its folder."""
    return f"images/{split}/{int(index):05d}.png"


def _file_sha256(path):
    from ..io.cache import file_sha256

    return file_sha256(path)


def _read_png(path):
    from .._files import may_read
    from ..io.images import check_image_file, open_image

    # a link among the renders that leads out (a job reads its world in its own output folder: readable there)
    if not may_read(Path(path).resolve()):
        raise CorruptECError(f"EC image {str(path)!r} leads outside the data root.")
    try:
        check_image_file(path)
        with open_image(path) as img:
            return np.asarray(img.convert("RGB"))
    except (OSError, ValueError) as exc:
        raise CorruptECError(f"EC image {str(path)!r} cannot be read: {exc}") from None


def load_classifier_weights(path):
    import torch

    from .._files import pinned
    from ..scoring.torch_files import check_stored_zip, load_error_line
    from ._network import SquareClassifier

    model = SquareClassifier()
    try:
        # the file checked is the file loaded: a link out of a job's data root or a FIFO swapped in is refused
        with pinned(path, "Model weights") as src:
            check_stored_zip(src, "Model weights", name=path)  # compressed or sparse: gigabytes once loaded
            model.load_state_dict(torch.load(src, map_location="cpu", weights_only=True))
    except Exception as exc:  # not a state dict (torch's unpickling error advises unsafe loading: never quoted)
        said = exc.strerror if isinstance(exc, OSError) and exc.strerror and str(path) in exc.strerror else None
        if said is None and isinstance(exc, ValueError) and str(path) in str(exc):
            said = str(exc)  # the check's own words name the file
        raise CorruptECError(said or f"Model weights {str(path)!r} cannot be loaded: {load_error_line(exc)}") from None
    return model.eval()
