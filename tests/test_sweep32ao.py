"""Sweep 32ao: weights read once, a half-swapped embeddings folder, another user's sidecar beside an input."""

import hashlib
import os
import shutil

import numpy as np
import pytest

IDENTITY = {"encoder": "simulated", "model": "m", "weights": "seed-0"}
needs_root = pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="needs root to chown")


def test_the_spotcheck_encoders_digest_is_of_the_weights_it_loaded(tmp_path, monkeypatch):
    """R1: the weights were loaded, then read again for their digest; a file swapped in between was recorded (and its
    model's embeddings cached) under the first file's digest. The digest is now of the bytes loaded."""
    import torch

    from lbee.encoders._spotcheck import WEIGHTS, SpotCheckEncoder

    path = tmp_path / "weights.pt"
    shutil.copyfile(WEIGHTS, path)
    honest = hashlib.sha256(path.read_bytes()).hexdigest()
    load = torch.load

    def swapped_after_loading(*args, **kwargs):
        out = load(*args, **kwargs)
        path.write_bytes(b"another model's weights")  # another user's file, rewritten once it was read
        return out

    monkeypatch.setattr(torch, "load", swapped_after_loading)
    assert SpotCheckEncoder(path).identity()["weights"] == f"sha256:{honest}"


def test_embeddings_whose_recorded_ids_file_is_gone_are_refused(tmp_path):
    """R2: a killed `lbee embed --overwrite` left the new embeddings.npy and no ids.txt; describe warned "no row ids"
    and read the rows in the old order (256 of 300 images in the wrong group). The provenance records the ids file
    written with the rows: without it, the rows are refused."""
    from lbee.io.provenance import make_provenance, write_embeddings
    from lbee.io.row_ids import check_row_ids, ids_bytes

    x = np.eye(4, dtype=np.float32)
    ids = ["a.png", "b.png", "c.png", "d.png"]
    write_embeddings(
        tmp_path / "embeddings.npy", x, make_provenance("image_embeddings", x, identity=IDENTITY, tau=0.1, row_ids=ids)
    )
    (tmp_path / "ids.txt").write_bytes(ids_bytes(ids))
    import json

    recorded = json.loads((tmp_path / "embeddings.provenance.json").read_text())["ids_sha256"]
    check_row_ids(tmp_path / "embeddings.npy", 4, ids, "image_embeddings", against="p.csv", ids_sha256=recorded)
    (tmp_path / "ids.txt").unlink()
    with pytest.raises(ValueError, match="records the ids file written with it, but none is beside it"):
        check_row_ids(tmp_path / "embeddings.npy", 4, ids, "image_embeddings", against="p.csv", ids_sha256=recorded)
    check_row_ids(tmp_path / "embeddings.npy", 4, ids, "image_embeddings", against="p.csv")  # bare: a warning


def _bare_with_sidecar(tmp_path):
    from lbee.io.provenance import make_provenance, write_embeddings

    x = np.eye(4, dtype=np.float32)
    write_embeddings(tmp_path / "x.npy", x, make_provenance("image_embeddings", x, identity=IDENTITY, tau=0.2))
    os.chmod(tmp_path / "x.npy", 0o644)
    os.chmod(tmp_path / "x.provenance.json", 0o644)
    return tmp_path / "x.npy", tmp_path / "x.provenance.json"


def test_a_sidecar_other_users_can_change_is_not_taken_as_the_inputs_record(tmp_path):
    """R3: a record beside an input says what the input is (its encoder, τ): one that users who cannot change the
    input can change is refused, as is the conditions table beside a sentence file."""
    from lbee.io.provenance import read_provenance

    npy, record = _bare_with_sidecar(tmp_path)
    assert read_provenance(npy, "image_embeddings")["tau"] == 0.2
    os.chmod(record, 0o666)
    with pytest.raises(ValueError, match="can be changed by other users who cannot change the input"):
        read_provenance(npy, "image_embeddings")
    os.chmod(npy, 0o666)  # the input as open as its record: one owner's pair, as they left it
    assert read_provenance(npy, "image_embeddings")["tau"] == 0.2


@needs_root
def test_another_users_sidecar_beside_an_input_is_refused(tmp_path):
    """R3: `nobody` planted `<name>.provenance.json` (the arrays' real digests, τ 0.2) beside root's bare embeddings in
    /tmp; lbee used that τ and encoder with no warning. Another user's sidecar is refused, naming both owners."""
    import pwd

    from lbee.io.provenance import read_provenance
    from lbee.io.row_ids import ROW_IDS_NAME, row_ids_path

    npy, record = _bare_with_sidecar(tmp_path)
    nobody = pwd.getpwnam("nobody").pw_uid
    os.chown(record, nobody, -1)
    with pytest.raises(ValueError, match="belongs to user nobody and the input to user root"):
        read_provenance(npy, "image_embeddings")
    (tmp_path / ROW_IDS_NAME).write_text("a\nb\nc\nd\n")
    os.chown(tmp_path / ROW_IDS_NAME, nobody, -1)
    with pytest.raises(ValueError, match="row ids file .* belongs to user nobody"):
        row_ids_path(npy, "image_embeddings")
    os.chown(record, 0, -1)
    os.chown(npy, nobody, -1)  # a colleague's input and its record, both theirs: their word on their file
    os.chown(record, nobody, -1)
    assert read_provenance(npy, "image_embeddings")["tau"] == 0.2


def test_a_model_part_of_the_spotcheck_encoder_is_refused():
    """N2: `--encoder spotcheck:/tmp/evil.pt` ran the shipped weights and recorded the spec it was given."""
    from lbee.encoders import check_encoder_spec, create_encoder

    for spec in ("spotcheck:/tmp/evil.pt", "spotcheck:x"):
        with pytest.raises(ValueError, match="the SpotCheck encoder has one model"):
            check_encoder_spec(spec)
        with pytest.raises(ValueError, match="has one model"):
            create_encoder(spec)
    assert check_encoder_spec("spotcheck")[0] == "spotcheck"


def test_lbee_embed_refuses_embeddings_that_are_not_finite(tmp_path):
    """N3: a checkpoint whose batch-norm variances went negative gave all-NaN rows, written with exit status 0 (a
    later describe refused them). The embedding is refused before anything is written."""
    from click.testing import CliRunner
    from PIL import Image

    from lbee.cli import cli
    from lbee.encoders import register_encoder
    from lbee.encoders._base import Encoder

    class NanEncoder(Encoder):
        name = "nantest"
        default_tau = 0.1

        def __init__(self, model=None, pretrained=None, **kwargs):
            pass

        def identity(self):
            return {"encoder": "nantest", "model": "nan", "weights": "tag:x", "preprocess": "mean"}

        def preprocess(self, image):
            import torch

            return torch.zeros(3)

        def encode_image_batch(self, batch):
            return np.full((len(batch), 3), np.nan, np.float32)

    register_encoder("nantest")(NanEncoder)
    (tmp_path / "imgs").mkdir()
    for i in range(3):
        Image.new("RGB", (8, 8), (40 * i, 0, 0)).save(tmp_path / "imgs" / f"{i}.png")
    args = ["--cache-dir", tmp_path / "cache", "embed", tmp_path / "imgs", "--encoder", "nantest", "--out"]
    r = CliRunner().invoke(cli, [*map(str, args), str(tmp_path / "emb")], obj={})
    assert r.exit_code == 1 and "holds a NaN or inf" in r.output and "nantest" in r.output, r.output
    assert not (tmp_path / "emb" / "embeddings.npy").exists()
