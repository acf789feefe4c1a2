"""Sweep 32aq: a never-denied subject's blank row, a Γ array against a folder reordered by ids, TMPDIR judged."""

import os
import stat
import tempfile

import numpy as np
import pandas as pd
import pytest
from conftest import generated_sentences, lbee_cli
from PIL import Image

GRAMMAR = """name: belts
lead: A parcel on the belt with
bare: A parcel on the belt
max_conditions: 2
subjects:
  - id: box
    noun: box
    attributes:
      - id: colour
        values: {brown: brown, white: white}
settings:
  - id: belt
    noun: belt
    attributes:
      - id: lighting
        kind: clause
        values: {normal: in normal light, glare: under harsh glare}
"""


def _column(sentences, conditions):
    from lbee.io.sentences import load_sentence_set

    return load_sentence_set(sentences).conditions.index(conditions)


def test_a_never_denied_subject_with_blank_attributes_is_still_there(tmp_path):
    """B1: with no box.presence column, a row whose box.colour was blank was read as one without a box: Γ said
    "with a box" false there (the contradiction a 'false' presence is refused for). The box is in every image."""
    from lbee.bench.from_table import simulate_embeddings

    s = generated_sentences(tmp_path, GRAMMAR, "belts")
    table = pd.DataFrame(
        {"image": ["a.png", "b.png"], "box.colour": ["", "white"], "belt.lighting": ["glare", "normal"]}
    )
    sim = simulate_embeddings(table, s, quality=0.97)
    assert sim.relevance[:, _column(s, {("box", "presence"): "true"})].tolist() == [True, True]
    white = _column(s, {("box", "colour"): "white"})
    assert sim.relevance[:, white].tolist() == [False, True]  # a's colour is NA: no colour holds
    blank = table.assign(**{"box.presence": ["", "true"]})  # N1: no "NA is ''" where '' is what is refused
    with pytest.raises(ValueError, match=r"row 1: '' .*a presence is never NA") as info:
        simulate_embeddings(blank, s, quality=0.97)
    assert "NA is ''" not in str(info.value)


def test_a_relevance_array_is_refused_when_the_folder_follows_the_embeddings_ids(tmp_path):
    """B2: a folder's images taken in the order of the embeddings' ids.txt (stop 55) paired a Γ .npy, which has no
    ids, with that order: one written in the folder's sorted order scored other images, exit 0. It is refused
    unless an ids file beside it lists the run's order (lbee simulate's own relevance.npy is)."""
    s = generated_sentences(tmp_path, GRAMMAR, "belts")
    (tmp_path / "imgs").mkdir()
    names = [f"i{k:02d}.png" for k in range(40)]
    for k, name in enumerate(names):
        Image.new("RGB", (8, 8), (k * 6, 0, 0)).save(tmp_path / "imgs" / name)
    rng = np.random.default_rng(0)
    shuffled = list(rng.permutation(names))
    table = pd.DataFrame(
        {
            "image": shuffled,
            "box.colour": rng.choice(["brown", "white"], 40),
            "belt.lighting": rng.choice(["glare", "normal"], 40),
        }
    )
    table.to_csv(tmp_path / "attributes.csv", index=False)
    assert lbee_cli("simulate", tmp_path / "attributes.csv", "--sentences", s, "--out", tmp_path / "sim").exit_code == 0
    preds = pd.DataFrame({"image": names, "confidence": rng.uniform(0, 1, 40)})
    preds.to_csv(tmp_path / "preds.csv", index=False)
    gamma = np.load(tmp_path / "sim" / "relevance.npy")
    sorted_rows = [shuffled.index(name) for name in names]
    (tmp_path / "elsewhere").mkdir()
    np.save(tmp_path / "elsewhere" / "gamma.npy", gamma[sorted_rows])  # the same truth, in the folder's order

    def describe(relevance, out):
        sim = tmp_path / "sim"
        return lbee_cli(
            "describe", tmp_path / "imgs", "--predictions", tmp_path / "preds.csv", "--sentences", s,
            "--image-embeddings", sim / "embeddings.npy", "--sentence-embeddings", sim / "sentence_embeddings.npy",
            "--relevance", relevance, "--clusters", 2, "--out", tmp_path / out,
        )  # fmt: skip

    refused = describe(tmp_path / "elsewhere" / "gamma.npy", "run_sorted")
    assert refused.exit_code != 0 and not (tmp_path / "run_sorted").exists()
    assert "array without image ids" in refused.output and "ids.txt" in refused.output, refused.output
    ok = describe(tmp_path / "sim" / "relevance.npy", "run_listed")  # beside the ids file it follows
    assert ok.exit_code == 0, ok.output
    (tmp_path / "elsewhere" / "ids.txt").write_text("\n".join(shuffled) + "\n")  # an ids file of its own: taken
    np.save(tmp_path / "elsewhere" / "gamma.npy", gamma)
    assert describe(tmp_path / "elsewhere" / "gamma.npy", "run_own_ids").exit_code == 0


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="user ids")
def test_tmpdir_others_can_rename_in_is_refused_for_lbee_s_private_copies(tmp_path, monkeypatch):
    """B3: the open_clip checkpoint's copy, hashed in a 0700 folder of TMPDIR and then loaded by its path, was
    another user's model where they could rename entries of TMPDIR (0777, not sticky): their folder was swapped
    in. TMPDIR is judged as an output folder is; sticky (/tmp) or one's own is fine."""
    from lbee.encoders._base import EncoderLoadError
    from lbee.encoders._open_clip import _checkpoint
    from lbee.io.folder_trust import SharedFolderError, private_temporary_folder

    ckpt = tmp_path / "model.pt"
    ckpt.write_bytes(b"\x00" * 64)
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    with pytest.raises(SharedFolderError, match="writable by every user.*This folder is TMPDIR"):
        private_temporary_folder("lbee-x-")
    with pytest.raises(EncoderLoadError, match="copies it into TMPDIR.*writable by every user") as info:
        with _checkpoint(str(ckpt), "ViT-B-32"):
            pass
    assert "point TMPDIR at a folder of your own" in str(info.value)
    assert os.listdir(shared) == []  # nothing written there
    for mode in (0o1777, 0o700):  # sticky, or one's own: the copy is made, 0700, and goes after
        shared.chmod(mode)
        with _checkpoint(str(ckpt), "ViT-B-32") as (copy, digest):
            assert stat.S_IMODE(os.stat(os.path.dirname(copy)).st_mode) == 0o700 and len(digest) == 64
        assert os.listdir(shared) == []


def test_lbee_audit_refuses_logits_without_probs():
    """N3: `logits=True` with φ and ω given (no probs) was ignored without a word."""
    import lbee

    rng = np.random.default_rng(0)
    X, S, phi = rng.normal(size=(50, 4)), np.eye(4), rng.uniform(size=50)
    with pytest.raises(ValueError, match="no `probs` was given"):
        lbee.audit(X, S, sentences=list("abcd"), confidence=phi, performance=phi > 0.5, logits=True, tau=0.2)
