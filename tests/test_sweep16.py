"""The sixteenth hostile-input sweep's findings left after stop 41: a local open_clip checkpoint, parquet cells
weighed by their width, and an id's length bounded."""

import hashlib
import os
import stat

import pytest

from lbee.io.confinement import confined_to


def test_an_open_clip_checkpoint_under_a_root_is_read_through_the_descriptor_checked(tmp_path):
    """S2 / H5: ``open_clip:MODEL@FILE`` was confined when the job was checked, then loaded by name seconds later: a
    link out renamed in was read (its first byte in the job error), a FIFO wedged the worker past any cancel."""
    from lbee.encoders._base import EncoderLoadError
    from lbee.encoders._open_clip import _checkpoint

    root, secret = tmp_path / "root", tmp_path / "secret.bin"
    root.mkdir()
    secret.write_bytes(b"outside")
    ckpt = root / "ckpt.safetensors"
    ckpt.write_bytes(b"inside")
    with confined_to(root):
        with _checkpoint(str(ckpt), "ViT-B-32") as (name, _):
            assert name.endswith(".safetensors")  # open_clip picks the format by the suffix
            ckpt.unlink()
            ckpt.symlink_to(secret)  # swapped once checked: the name open_clip opens still reads the file checked
            with open(name, "rb") as fh:
                assert fh.read() == b"inside"
        with pytest.raises(EncoderLoadError, match="leads outside the data root"), _checkpoint(str(ckpt), "m"):
            pass
        ckpt.unlink()
        os.mkfifo(ckpt)
        with pytest.raises(EncoderLoadError, match="FIFO|not a regular file"), _checkpoint(str(ckpt), "m"):
            pass  # refused, never opened for reading (that would block)
        with pytest.raises(EncoderLoadError, match="does not exist"), _checkpoint(str(root / "no.pt"), "m"):
            pass
    ckpt.unlink()
    ckpt.write_bytes(b"mine")
    with _checkpoint(str(ckpt), "m") as (name, digest):  # no root (the command line): the user's own file, pinned
        ckpt.write_bytes(b"theirs")  # rewritten in place while the model loads (sweep 32ao R1): the copy is loaded,
        with open(name, "rb") as fh:  # and the digest is of the bytes loaded (sweep 32t: every reader pins the file)
            assert fh.read() == b"mine" and name.endswith(".safetensors")
        assert digest == hashlib.sha256(b"mine").hexdigest()
        assert stat.S_IMODE(os.stat(os.path.dirname(name)).st_mode) == 0o700  # this user's alone


def test_a_parquet_of_constant_decimal_columns_is_refused_by_what_it_decodes_to(tmp_path):
    """H7: the cell bound weighed a decimal cell like an int64 one, but pandas makes a ``Decimal`` object of each: an
    831 KB file of 30 constant decimal128 columns took a worker from 1.5 GB to 5.7 GB."""
    import decimal

    import pyarrow as pa
    import pyarrow.parquet as pq

    from lbee.io.table_reader import read_table

    rows = 400_000
    value = pa.array([decimal.Decimal("0.5")] * rows, pa.decimal128(5, 2))
    pq.write_table(
        pa.table({"image_id": pa.array(range(rows)), **{f"c{i}": value for i in range(24)}}), tmp_path / "d.parquet"
    )
    with pytest.raises(ValueError, match=r"decodes to [\d,]+ bytes of text, binary and decimal values"):
        read_table(tmp_path / "d.parquet")
    small = pa.table({"image_id": ["a", "b"], "p": pa.array([decimal.Decimal("0.25")] * 2, pa.decimal128(5, 2))})
    pq.write_table(small, tmp_path / "ok.parquet")
    assert list(read_table(tmp_path / "ok.parquet")["p"].astype(float)) == [0.25, 0.25]  # a real table reads


def test_an_id_longer_than_a_path_is_refused_naming_its_row_and_never_quoted_whole(tmp_path):
    """H8: a 978-byte parquet with a 130,000-character id on 2,000 rows held the only worker at 100 % CPU for 135 s in
    the id checks, and a job error quoted a whole id (130 KB)."""
    import pandas as pd

    from lbee.io.table_reader import MAX_ID_CHARS, check_unique

    long_id = "a" * 130_000
    table = pd.DataFrame({"image_id": ["ok.png", long_id, long_id]})
    with pytest.raises(ValueError, match=r"at row 2 holds an id of 130,000 characters; expected at most 4,096") as err:
        check_unique(table, "image_id")
    assert len(str(err.value)) < 400
    near = "b" * MAX_ID_CHARS  # as long as a path may be: still read, and quoted short when repeated
    with pytest.raises(ValueError, match="repeats the id") as err:
        check_unique(pd.DataFrame({"image_id": [near, near]}), "image_id")
    assert len(str(err.value)) < 600


def test_a_checkpoint_that_is_no_state_dict_is_said_in_one_line_without_torch_s_advice(tmp_path):
    """Lower 1: torch's kilobyte of advice ("Re-running torch.load with weights_only set to False will likely
    succeed") reached a service user through the encoder's error; a deflated archive was loaded unchecked."""
    import zipfile

    from lbee.encoders import create_encoder
    from lbee.encoders._base import EncoderLoadError

    bad = tmp_path / "ckpt.pt"
    bad.write_bytes(b"x" * 64)
    with pytest.raises(EncoderLoadError) as err:
        create_encoder(f"open_clip:ViT-B-32@{bad}")
    assert "weights_only" not in str(err.value) and "False" not in str(err.value)
    packed = tmp_path / "packed.pt"
    with zipfile.ZipFile(packed, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("archive/data.pkl", b"0" * 10_000)
    with pytest.raises(EncoderLoadError, match="Checkpoint file .*packed.pt' has compressed entries"):
        create_encoder(f"open_clip:ViT-B-32@{packed}")
