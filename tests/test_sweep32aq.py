"""Sweep 32aq: a never-denied subject's blank row, TMPDIR judged (B2, a Γ array against a folder reordered by its
embeddings' ids, went with the reordering: tests/test_trial34.py)."""

import os
import stat
import tempfile

import numpy as np
import pandas as pd
import pytest
from conftest import generated_sentences

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


def test_the_ray_engine_without_an_address_starts_its_own_ray(tmp_path):
    """Sweep 32ar B3: `ray.init(address=None)` joins the cluster `TMPDIR/ray/ray_current_cluster` names, a file
    another user could plant in a shared TMPDIR (lbee then waited on their port, and would have sent them the
    images and the model). Without --ray-address, lbee starts a local Ray of its own."""
    import shutil
    import subprocess
    import sys

    pytest.importorskip("ray")
    short = tempfile.mkdtemp(prefix="r", dir="/tmp")  # Ray's socket paths under it must fit in 107 bytes
    try:
        os.mkdir(os.path.join(short, "ray"))
        with open(os.path.join(short, "ray", "ray_current_cluster"), "w") as f:
            f.write("127.0.0.1:1\n")  # nothing listens there
        code = "from lbee.ray_pool import ensure_ray as e; r = e(); print(r.cluster_resources()['CPU']); r.shutdown()"
        env = {**os.environ, "TMPDIR": short, "RAY_ADDRESS": ""}
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=180)
    finally:
        shutil.rmtree(short, ignore_errors=True)
    assert done.returncode == 0 and float(done.stdout.split()[-1]) >= 1, done.stderr[-2000:]


def test_lbees_own_ray_keeps_its_token_and_session_to_this_user(tmp_path):
    """Sweep 32as: started plainly, Ray wrote its cluster token to ~/.ray/auth_token at the umask's 0644 (another
    user who read it was let into the cluster) and its session into TMPDIR/ray, mode 0777. lbee's own local Ray
    keeps the token in its environment and the session in a 0700 folder, removed at exit."""
    import shutil
    import subprocess
    import sys

    pytest.importorskip("ray")
    home = tmp_path / "home"
    home.mkdir()
    short = tempfile.mkdtemp(prefix="r", dir="/tmp")  # Ray's socket paths under it must fit in 107 bytes
    code = (
        "import os, stat; from lbee.ray_pool import ensure_ray as e; r = e(); import ray._private.worker as w; "
        "s = w._global_node.get_session_dir_path(); top = os.path.join(os.environ['TMPDIR'], "
        "os.path.relpath(s, os.environ['TMPDIR']).split(os.sep)[0]); "
        "print(top, oct(stat.S_IMODE(os.stat(top).st_mode)), r.cluster_resources()['CPU'])"
    )
    try:
        os.chmod(short, 0o700)
        env = {**os.environ, "TMPDIR": short, "HOME": str(home), "RAY_ADDRESS": ""}
        for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"):
            env.pop(k, None)
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=180)
        left = os.listdir(short)
    finally:
        shutil.rmtree(short, ignore_errors=True)
    assert done.returncode == 0, done.stderr[-2000:]
    top, mode, cpus = done.stdout.split()[-3:]
    assert os.path.basename(top).startswith("lbee-ray-") and mode == "0o700" and float(cpus) >= 1
    assert not (home / ".ray" / "auth_token").exists()
    assert left == [], left  # the session folder was removed when the process ended
