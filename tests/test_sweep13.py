"""The thirteenth hostile-input sweep's findings, each reproduced and fixed (1 security, 2 hang, 7 lower)."""

import re

import numpy as np
import pytest

from lbee.io.confinement import confined_to


def test_a_mask_or_image_is_decoded_only_through_the_descriptor_checked(tmp_path):
    """S1: PNG masks of a segmentation job were checked at the start, then opened by path: one swapped for a link
    out showed the outside image's size in the job error (7 of 20 jobs), or scored against it in silence (3 of 14).
    Every image is now opened once and checked through its descriptor."""
    from PIL import Image

    from lbee.io.images import open_image

    root, outside = tmp_path / "root", tmp_path / "secret"
    root.mkdir()
    outside.mkdir()
    Image.new("L", (55, 77)).save(outside / "secret.png")
    Image.new("L", (8, 8)).save(root / "ok.png")
    (root / "mask.png").symlink_to(outside / "secret.png")
    with confined_to(root):
        with open_image(root / "ok.png") as img:
            assert img.size == (8, 8)
        with pytest.raises(ValueError, match="leads outside the data root") as err, open_image(root / "mask.png"):
            pass
    said = str(err.value).replace(str(tmp_path), "")  # the image's size is never in it (the path may hold digits)
    assert "77" not in said and "55" not in said


def test_a_parquet_of_nested_or_wide_binary_columns_is_refused_before_it_is_decoded(tmp_path, monkeypatch):
    """H1: the decoded-size check counted top-level text columns only: a fixed-size binary column (24.7 KB, 4.2 GB
    in memory), a struct or a list column (6.8 KB asking for about 10 GB) got past it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    import lbee.io.table_header as header
    from lbee.io.table_reader import read_table

    monkeypatch.setattr(header, "PARQUET_FREE_BYTES", 1 << 20)
    n = 200
    ids = pa.array([f"{i:03d}.png" for i in range(n)])
    wide = pa.array([b"x" * 100_000] * n, type=pa.binary(100_000))  # 20 MB decoded, a few KB on disk
    pq.write_table(pa.table({"image": ids, "confidence": [0.5] * n, "blob": wide}), tmp_path / "w.parquet")
    with pytest.raises(ValueError, match=r"decodes to 20,[\d,]+ bytes"):
        read_table(tmp_path / "w.parquet")
    for name, column in [
        ("list", pa.array([[1.0] * 10] * n)),
        ("struct", pa.array([{"a": 1}] * n)),
        ("view", pa.array(["x" * 1000] * n, type=pa.string_view())),  # sweep 14, H2: 24.9 KB took 5.7 GB
    ]:
        pq.write_table(pa.table({"image": ids, "confidence": [0.5] * n, "extra": column}), tmp_path / f"{name}.parquet")
        with pytest.raises(ValueError, match=r"column 'extra' holds .*; lbee reads tables of plain values"):
            read_table(tmp_path / f"{name}.parquet")


def test_the_client_shows_no_reordering_character_and_names_a_malformed_answer(monkeypatch):
    """Lower 2 and 3: bidi controls (U+202E) and line separators passed `printable` and could make 'failed' read as
    'done'; a malformed answer showed Python's error names (RecursionError, KeyError 'status')."""
    from conftest import server_answers

    from lbee.service.client import Client, ServiceError, printable

    assert printable("job \u202edeliaf\u2028x\u00ad") == "job \\u202edeliaf\\u2028x\\xad"
    assert printable("é → ok\n\tnext") == "é → ok\n\tnext"
    c = Client("http://127.0.0.1:9", "tok")
    server_answers(
        monkeypatch,
        [
            b"[" * 100_000 + b"]" * 100_000,
            b'{"id": "j1"}',
            b'"just text"',
            b'{"id": "j1", "status": "running", "fraction": "half"}',  # sweep 14: a TypeError's words
            b'{"id": "j1", "status": "done", "runs": {"a": 1}}',
            b'{"id": "j1", "status": "running", "log": [1, 2]}',  # sweep 15, lower 2
            b'{"id": "j1", "status": "running", "phase": {"a": 1}}',
        ],
    )
    for said in ["is not JSON an lbee server sends", "is not a job", "is not JSON an lbee server sends"] + [
        "is not a job"
    ] * 4:
        with pytest.raises(ServiceError, match=re.escape(said)):
            c.job("j1")


def test_join_reads_ascii_digits_only():
    """Lower 7: `--join ٣,4` (an Arabic-Indic digit) was read as 3,4."""
    from lbee import RunSettings

    with pytest.raises(ValueError, match="group numbers separated by commas"):
        RunSettings(join=("\u0663,4",))
    assert RunSettings(join=(" 3, 4",)).join == ((3, 4),)


def test_vqa_agreement_reads_the_truth_as_written_and_matches_pairs_exactly(tmp_path):
    """Sweep 14, W1 and lower 5: `lbee vqa agreement` read a 'no' as relevant (astype(bool)) and counted truth rows
    whose ids were spelled otherwise as irrelevant, in silence (accuracy 0.500 for 1.000); a repeated pair ended in
    pandas' 'cannot handle a non-unique multi-index!'."""
    import pandas as pd
    from click.testing import CliRunner

    from lbee.cli import cli

    pseudo = pd.DataFrame(
        {"image": ["a.png", "a.png", "b.png", "b.png"], "sentence": ["s1", "s2"] * 2, "m_p": 0.5, "m": [1, 0, 0, 1]}
    )
    pseudo.to_csv(tmp_path / "pseudo.csv", index=False)

    def agree(truth):
        truth.to_csv(tmp_path / "truth.csv", index=False)
        args = ["vqa", "agreement", "--pseudo", str(tmp_path / "pseudo.csv"), "--truth", str(tmp_path / "truth.csv")]
        return CliRunner().invoke(cli, args, obj={})

    truth = pseudo[["image", "sentence"]].assign(relevant=["yes", "no", "no", "yes"])
    r = agree(truth)
    assert r.exit_code == 0 and re.search(r"(?m)^m\s+1\.000", r.output), r.output
    r = agree(truth.assign(image=["data/" + i for i in truth["image"]]))
    assert r.exit_code == 1 and "name a pair the VQA table has not" in r.output, r.output
    r = agree(pd.concat([truth, truth.iloc[:1]]))
    assert r.exit_code == 1 and "more than once" in r.output, r.output
    r = agree(truth.iloc[:2])
    assert r.exit_code == 0 and "2 of the VQA table's 4 pairs have no truth row" in r.output, r.output
    r = agree(truth.assign(relevant=["maybe", "no", "no", "yes"]))
    assert r.exit_code == 1 and "non-boolean" in r.output, r.output
    pd.concat([pseudo, pseudo.iloc[:1]]).to_csv(tmp_path / "pseudo.csv", index=False)  # sweep 15: counted twice
    r = agree(truth)
    assert r.exit_code == 1 and "more than once" in r.output, r.output


def test_an_image_is_hashed_through_the_descriptor_checked(tmp_path, monkeypatch):
    """Sweep 14, S1 and H1: images were checked, then hashed by path: a link to /dev/zero swapped in between held the
    only job worker reading 511 GB, and an outside file's content keyed the embedding cache."""
    import lbee.encoders.embedding as embedding
    from lbee.encoders.embedding import embed_images

    root, secret = tmp_path / "root", tmp_path / "secret.png"
    root.mkdir()
    secret.write_bytes(b"outside")
    image = root / "a.png"
    image.write_bytes(b"inside")
    checked = embedding.check_image_file

    def then_swapped(path):  # the race, made certain
        checked(path)
        image.unlink()
        image.symlink_to(secret)

    monkeypatch.setattr(embedding, "check_image_file", then_swapped)

    class Never:
        def identity(self):
            return {"model": "never"}

    with confined_to(root):
        out = embed_images(Never(), [str(image)], cache_dir=tmp_path / "cache", progress=False)
    assert out.embeddings.shape[0] == 0 and "leads outside the data root" in str(out.failures), out.failures


def test_sweep15_a_parquet_of_many_constant_columns_or_a_dictionary_id_column_is_refused(tmp_path, monkeypatch):
    """Sweep 15, H3 and H4: a dictionary column was left out of the decoded count (2 KB held a worker at 3.7 GB); the
    row bound ignored the columns (1.6 MB of 1,000,000 rows x 200 constant columns took 3.7 GB). Scaled down."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    import lbee.io.table_header as header
    from lbee.io.table_reader import read_table

    monkeypatch.setattr(header, "PARQUET_FREE_BYTES", 1 << 20)
    monkeypatch.setattr(header, "PARQUET_FREE_CELLS", 100_000)
    n = 400
    ids = pa.array(["x" * 200_000] * n).dictionary_encode()  # 80 MB of text on reading, a few KB on disk
    pq.write_table(pa.table({"image": ids, "confidence": [0.5] * n}), tmp_path / "d.parquet")
    with pytest.raises(ValueError, match=r"decodes to 80,[\d,]+ bytes"):
        read_table(tmp_path / "d.parquet")
    wide = {f"c{j}": pa.array(np.zeros(20_000)) for j in range(60)}  # 1,200,000 cells of a constant
    pq.write_table(pa.table({"image": [f"{i}.png" for i in range(20_000)], **wide}), tmp_path / "w.parquet")
    with pytest.raises(ValueError, match=r"declares 20,000 rows × 61 columns"):
        read_table(tmp_path / "w.parquet")


def test_sweep15_a_file_that_vanishes_under_a_root_is_never_opened_again_by_name(tmp_path, monkeypatch):
    """Sweep 15, S1 / H1 / H2: when `pinned`'s open failed (the file absent for an instant), it gave the bare path
    back and the reader opened it again: a link out or a FIFO put there then was followed (194 outside hashes in
    25 s)."""
    import os

    from lbee._files import pinned

    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "secret").write_text("outside")
    target = root / "a.png"
    real_open = os.open

    def vanished_then_linked(path, flags, *a):  # the race, made certain
        if str(path) == str(target):
            target.symlink_to(tmp_path / "secret")
            raise FileNotFoundError(2, "No such file or directory")
        return real_open(path, flags, *a)

    monkeypatch.setattr(os, "open", vanished_then_linked)
    with confined_to(root), pytest.raises(FileNotFoundError, match=r"image '.*a.png' cannot be opened"):
        with pinned(target, "image") as src:
            open(src).read()


def test_sweep16_a_world_s_classifier_is_loaded_through_the_descriptor_checked(tmp_path, monkeypatch):
    """Sweep 16, S2 and H6: a world's model.pt was checked by name, then loaded by name: a link out swapped in between
    was read (its first byte in the job error), and a FIFO blocked the worker in is_zipfile past any cancel."""
    import os

    import lbee.scoring.classifier as classifier
    from lbee.spotcheck._configuration import CorruptECError, load_classifier_weights

    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "secret.pt").write_bytes(b"x" * 64)
    weights = root / "model.pt"
    weights.write_bytes(b"not a checkpoint")
    checked = classifier.check_stored_zip

    def then_swapped(path):  # the race, made certain: the name leads out (or to a FIFO) right after the check
        weights.unlink()
        os.mkfifo(weights)
        return checked(path)

    monkeypatch.setattr(classifier, "check_stored_zip", then_swapped)
    with confined_to(root), pytest.raises(CorruptECError) as err:
        load_classifier_weights(weights)  # returns: the FIFO is never opened by name
    assert "x" * 4 not in str(err.value).replace(str(tmp_path), "")
