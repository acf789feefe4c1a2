import base64
import io
import json
import os
import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from PIL import Image

from lbee.cli import cli
from lbee.io.sentences import load_sentence_set
from lbee.rival10 import (
    ATTRIBUTES,
    CLASSES,
    UnsafePickleError,
    load_attr_dict,
    load_rival10,
    read_class_map,
    rival10_sentences,
)


def _jpeg_b64(mask):
    buf = io.BytesIO()
    Image.fromarray(mask.astype(np.uint8) * 255).save(buf, format="JPEG", quality=95)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _box(y0, y1, x0, x1, size=32):
    m = np.zeros((size, size), bool)
    m[y0:y1, x0:x1] = True
    return m


# stem, object box (8-pixel aligned, so JPEG keeps it exact), present attributes, where the object mask lives
ITEMS = [
    ("n02099712_11", _box(8, 24, 8, 24), ["floppy-ears", "tail", "hairy"], "pkl"),
    ("n01531178_7", _box(0, 16, 16, 32), ["wings", "beak", "tail"], "merged"),  # no 'entire-object' entry
    ("n03796401_3", _box(16, 32, 0, 32), ["wheels", "text", "metallic", "rectangular"], "pkl"),
]


@pytest.fixture
def rival_root(tmp_path):
    folder = tmp_path / "RIVAL10" / "test" / "ordinary"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for stem, box, present, where in ITEMS:
        Image.fromarray(rng.integers(0, 255, (32, 32, 3), dtype=np.uint8)).save(folder / f"{stem}.JPEG")
        labels = np.zeros((2, 18), np.int64)
        labels[0, [ATTRIBUTES.index(a) for a in present]] = 1
        labels[1, 0] = 1  # augmentation row: must be ignored
        np.save(folder / f"{stem}_attr_labels.npy", labels)
        Image.fromarray(box.astype(np.uint8) * 255).save(folder / f"{stem}_merged_mask.JPEG", quality=95)
        entries = {a: _jpeg_b64(box) for a in present[:1]}
        if where == "pkl":
            entries["entire-object"] = _jpeg_b64(box)
        (folder / f"{stem}_attr_dict.pkl").write_bytes(pickle.dumps(entries, protocol=4))
    return tmp_path / "RIVAL10"


def test_sentence_set_matches_the_columns():
    # the repository file (an editable install may point lbee.sentence_sets at another checkout)
    s = load_sentence_set(Path(__file__).resolve().parents[1] / "sentence_sets" / "rival10.txt")
    assert "Built by" in s.header
    assert list(s.sentences) == rival10_sentences() and len(s) == 28
    assert s.sentences[ATTRIBUTES.index("floppy-ears")] == "An image of an animal with floppy ears"
    assert s.sentences[18 + CLASSES.index("dog")] == "An image of a dog"


def test_load_rival10_exact_relevance(rival_root):
    data = load_rival10(rival_root, "test")
    assert data.ids == ["n01531178_7.JPEG", "n02099712_11.JPEG", "n03796401_3.JPEG"]  # sorted by name
    assert data.labels.tolist() == [9, 5, 0] and data.classes == ["bird", "dog", "truck"]
    rel = data.relevance
    assert rel.shape == (3, 28) and rel.dtype == bool
    # dog: floppy-ears (5), tail (8), hairy (11) and the class sentence 18 + 5; long-snout (augmentation row) not
    assert np.flatnonzero(rel[1]).tolist() == [5, 8, 11, 23]
    assert np.flatnonzero(rel[0]).tolist() == [1, 8, 10, 27]
    assert rel.sum() == 3 + 3 + 4 + 3
    assert np.array_equal(data.object_mask(1), ITEMS[0][1])
    assert np.array_equal(data.object_mask(0), ITEMS[1][1])  # from the merged mask


def test_export_cli_end_to_end(rival_root, tmp_path):
    out = tmp_path / "export"
    result = CliRunner().invoke(
        cli, ["-q", "rival10", "export", str(rival_root), "--split", "test", "--out", str(out)], obj={}
    )
    assert result.exit_code == 0, result.output
    assert "Exported 3 images, 28 sentences, 3 masks" in result.output
    assert "1 image(s) had no 'entire-object' mask" in result.output
    manifest = pd.read_csv(out / "manifest.csv")
    assert manifest["label"].tolist() == [9, 5, 0] and manifest["class"].tolist() == ["bird", "dog", "truck"]
    assert all(os.path.isabs(p) and os.path.isfile(p) for p in manifest["path"])
    rel = pd.read_parquet(out / "relevance.parquet")
    assert len(rel) == 3 * 28 and rel["relevant"].sum() == 13
    dog = rel[(rel["image"] == "n02099712_11.JPEG") & rel["relevant"]]["sentence"].tolist()
    assert dog == [
        "An image of an animal with floppy ears",
        "An image of something with a tail",
        "An image of a hairy animal",
        "An image of a dog",
    ]
    for stem, box, _, _ in ITEMS:
        assert np.array_equal(np.asarray(Image.open(out / "masks" / f"{stem}.png")) > 127, box)
    # what lbee's relevance reader makes of it, aligned to the manifest's order
    from lbee.io.relevance import load_relevance

    gamma = load_relevance(out / "relevance.parquet", list(manifest["path"]), rival10_sentences())
    assert np.array_equal(gamma, load_rival10(rival_root, "test").relevance)
    assert list(load_sentence_set(out / "rival10.txt").sentences) == rival10_sentences()


def test_export_never_replaces_an_export_in_silence(rival_root, tmp_path):
    out = tmp_path / "export"
    args = ["-q", "rival10", "export", str(rival_root), "--out", str(out)]
    assert CliRunner().invoke(cli, args, obj={}).exit_code == 0
    (out / "masks" / "stale.png").write_bytes(b"x")  # an earlier export's entry: replaced whole with --overwrite
    (out / "notes.txt").write_text("mine")  # not the export's: kept
    before = (out / "manifest.csv").read_bytes()
    refused = CliRunner().invoke(cli, args, obj={})
    assert refused.exit_code == 2 and "--overwrite" in refused.output and "manifest.csv" in refused.output
    assert (out / "manifest.csv").read_bytes() == before and (out / "masks" / "stale.png").exists()
    assert CliRunner().invoke(cli, args + ["--overwrite"], obj={}).exit_code == 0
    assert not (out / "masks" / "stale.png").exists() and (out / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in (out / "masks").iterdir()) == sorted(f"{stem}.png" for stem, *_ in ITEMS)
    assert not [p for p in tmp_path.iterdir() if "lbee-staging" in p.name or "replaced" in p.name]


def test_a_killed_export_is_settled_before_a_later_one_is_refused(rival_root, tmp_path):
    """Sweep 32r N3: after an export --overwrite killed mid-swap, the next export without --overwrite refused with the
    folder still half swapped (old masks, no manifest.csv); other commands settle a killed writer's swap first."""
    import subprocess
    import sys

    out = tmp_path / "export"
    args = ["-q", "rival10", "export", str(rival_root), "--out", str(out)]
    assert CliRunner().invoke(cli, args, obj={}).exit_code == 0
    env = {**os.environ, "LBEE_TEST_KILL_AT": "swapping", "HF_HUB_OFFLINE": "1"}
    killed = subprocess.run([sys.executable, "-m", "lbee.cli", *args, "--overwrite"], env=env, capture_output=True)
    assert killed.returncode == -9, killed.stderr
    assert not (out / "relevance.parquet").exists()  # killed after the first new entry moved in: half swapped
    refused = CliRunner().invoke(cli, args, obj={})
    assert refused.exit_code == 2 and "--overwrite" in refused.output
    assert (out / "manifest.csv").is_file() and (out / "relevance.parquet").is_file()  # whole again
    assert not [p for p in tmp_path.iterdir() if ".lbee-" in p.name]


class _Evil:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def test_malicious_pickle_is_refused_and_does_not_run(rival_root, tmp_path):
    marker = tmp_path / "pwned"
    pkl = rival_root / "test" / "ordinary" / "n02099712_11_attr_dict.pkl"
    pkl.write_bytes(pickle.dumps({"entire-object": _Evil(marker)}))
    with pytest.raises(UnsafePickleError, match="system"):
        load_attr_dict(pkl)
    assert not marker.exists()
    result = CliRunner().invoke(cli, ["-q", "rival10", "export", str(rival_root), "--out", str(tmp_path / "o")], obj={})
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "n02099712_11_attr_dict.pkl" in result.output and "nothing in it was run" in result.output
    assert not marker.exists()


def test_pickle_of_other_types_refused(tmp_path):
    p = tmp_path / "x.pkl"
    p.write_bytes(pickle.dumps([1, 2]))
    with pytest.raises(UnsafePickleError, match="holds a list"):
        load_attr_dict(p)
    p.write_bytes(pickle.dumps({"wings": 3}))
    with pytest.raises(UnsafePickleError, match="'wings'"):
        load_attr_dict(p)
    p.write_bytes(b"not a pickle")
    with pytest.raises(ValueError, match="not a readable pickle"):
        load_attr_dict(p)


def test_bad_labels_unknown_wnid_and_class_map(rival_root, tmp_path):
    folder = rival_root / "test" / "ordinary"
    np.save(folder / "n02099712_11_attr_labels.npy", np.zeros((18,)))
    with pytest.raises(ValueError, match=r"n02099712_11_attr_labels.npy.*shape \(18,\); expected \(2, 18\)"):
        load_rival10(rival_root)
    np.save(folder / "n02099712_11_attr_labels.npy", np.full((2, 18), 2))
    with pytest.raises(ValueError, match="must hold 0 / 1"):
        load_rival10(rival_root)
    np.save(folder / "n02099712_11_attr_labels.npy", np.zeros((2, 18)))
    Image.new("RGB", (32, 32)).save(folder / "n99999999_1.JPEG")
    with pytest.raises(ValueError, match="n99999999"):
        load_rival10(rival_root)
    cmap = tmp_path / "map.json"
    cmap.write_text(json.dumps({"n99999999": "frog", "n02099712": "dog", "n01531178": "bird", "n03796401": "truck"}))
    np.save(folder / "n99999999_1_attr_labels.npy", np.zeros((2, 18)))
    assert load_rival10(rival_root, class_map=cmap).labels.tolist() == [9, 5, 0, 8]
    cmap.write_text(json.dumps({"n99999999": "unicorn"}))
    with pytest.raises(ValueError, match="'unicorn'"):
        read_class_map(cmap)
    cmap.write_text('{"n99999999": "truck", "n99999999": "dog"}')  # ninth sweep W4: the last one was kept
    with pytest.raises(ValueError, match="the key 'n99999999' is written twice"):
        read_class_map(cmap)
    (tmp_path / "cmap.csv").write_text("wnid,class\nn99999999,truck\nn99999999,dog\n")
    with pytest.raises(ValueError, match="repeats the wnid 'n99999999'"):
        read_class_map(tmp_path / "cmap.csv")
    with pytest.raises(FileNotFoundError, match="train"):
        load_rival10(rival_root, "train")


@pytest.mark.parametrize("inside", ["", "test/ordinary"])
def test_an_export_into_the_release_itself_is_refused(rival_root, inside):
    """Sweep 32: `lbee rival10 export A --out A --overwrite` wrote manifest.csv, masks/ ... into the release."""
    before = sorted(p.relative_to(rival_root) for p in rival_root.rglob("*"))
    out = rival_root / inside
    r = CliRunner().invoke(cli, ["-q", "rival10", "export", str(rival_root), "--out", str(out), "--overwrite"], obj={})
    assert r.exit_code == 2 and "lies in the release ROOT" in r.output and "Traceback" not in r.output, r.output
    assert sorted(p.relative_to(rival_root) for p in rival_root.rglob("*")) == before
