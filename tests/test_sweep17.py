"""The seventeenth hostile-input sweep's findings: 4 unbounded (H9-H12), 1 silently wrong (W2), and the lower ones."""

import time

import numpy as np
import pytest

from lbee.io.confinement import confined_to


def test_ids_of_thousands_of_slashes_are_matched_in_linear_time():
    """H9: matching ids to images built a string for every tail of an id: 300 ids of 4,090 '/' took 20 s (61 KB of
    5,000 such ids held a worker for 330 s). Only the tails as deep as an image's path are tried now."""
    from lbee.io.matching import IdMatcher

    m = IdMatcher([f"img{i}.png" for i in range(1000)], [f"/data/x/a/img{i}.png" for i in range(1000)])
    t0 = time.perf_counter()
    assert all(m.index("/" * 4090 + f"{i:06d}") is None for i in range(300))
    IdMatcher(["/" * 4090 + f"{i:06d}" for i in range(1000)])  # the same ids as the run's own
    assert time.perf_counter() - t0 < 8.0  # 20 s before (a loaded machine: the bound is a hang's, not a speed goal)
    assert (m.index("a/img5.png"), m.index("/elsewhere/data/x/a/img7.png"), m.index("img9.png")) == (5, 7, 9)


def test_long_ids_with_one_accent_are_checked_at_c_speed_and_each_once():
    """H10: the H8 fix sped up ASCII ids only: 65,000 rows of 'a' * 4095 + 'é' (1,573 bytes of parquet) held a worker
    150 s, checked character by character on every row. The check reads each distinct id once, at C speed, and
    refuses exactly what it refused (every code point compared in the grammar's tests)."""
    import pandas as pd

    from lbee._validation import _breaks_a_line, line_break_in
    from lbee.io.table_reader import check_unique

    distinct = pd.DataFrame({"image_id": ["a" * 4090 + f"{i:05d}é" for i in range(3000)]})
    check_unique(distinct, "image_id")
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match="repeats the id"):
        check_unique(pd.DataFrame({"image_id": ["a" * 4095 + "é"] * 65_000}), "image_id")
    assert time.perf_counter() - t0 < 20.0  # 143 s before (every row checked, character by character)
    for text in ["é\u00a0x", "é\ue000x", "é\u2028", "é\u200b", "é\ufe0f", "\u00a0\u202e", "é\U0010fffe", "é\ud800"]:
        assert line_break_in(text) == next((c for c in text if _breaks_a_line(c)), None), repr(text)


def test_a_sparse_state_dict_is_refused_before_it_is_read(tmp_path):
    """H11: a world's model.pt of 364 KB on disk and 3 GB apparent made torch.load read 3 GB; a job's weights: and an
    open_clip checkpoint go through the same load."""
    from lbee.encoders._base import EncoderLoadError
    from lbee.encoders._open_clip import _checkpoint
    from lbee.spotcheck._configuration import CorruptECError, load_classifier_weights

    root = tmp_path / "root"
    root.mkdir()
    sparse = root / "model.pt"
    with open(sparse, "wb") as fh:
        fh.write(b"PK")
        fh.truncate(200 << 20)  # 200 MB declared, a few bytes written
    if sparse.stat().st_blocks * 512 >= (200 << 20) / 8:
        pytest.skip("this file system does not keep sparse files")
    with confined_to(root):
        with pytest.raises(CorruptECError, match=r"Model weights '.*model.pt' is a sparse file"):
            load_classifier_weights(sparse)
        with pytest.raises(EncoderLoadError, match="is a sparse file"), _checkpoint(str(sparse), "ViT-B-32"):
            pass


def test_a_sentence_longer_than_an_encoder_reads_is_refused(tmp_path):
    """H12: a /v1/explain sentence of U+FDFA (NFKC expands it 18-fold) took the explain worker from 85 MB to 1.8 GB
    on a 15 MB body; 744 such lines in a sentence file made describe take 28 s and write 37 MB."""
    from lbee.io.sentences import MAX_SENTENCE_CHARS, load_sentence_set
    from lbee.service.explain import check_sentence_list

    path = tmp_path / "s.txt"
    path.write_text("a dog\n" + "\ufdfa" * 8000 + "\n")
    with pytest.raises(ValueError, match=r"line 2 holds a sentence of 8,000 characters; expected at most 1,000"):
        load_sentence_set(path)
    with pytest.raises(ValueError, match=r"`sentences\[1\]` holds a sentence of 5,000,000 characters"):
        check_sentence_list(["a dog", "\ufdfa" * 5_000_000])
    check_sentence_list(["a dog", "x" * MAX_SENTENCE_CHARS])  # as long as allowed: read


def test_two_models_of_one_name_and_blank_names_are_refused(tmp_path):
    """W2: two models named 'm' in one dataset: `?model=m` answered with the first run without a word. Names alike
    (NFKC, case) are one name; a blank name ('   ', U+3000, accents only) showed as nothing in every listing."""
    from lbee.reports.config_entries import parse_dataset_entry

    (tmp_path / "p.csv").write_text("image_id,confidence\na.png,0.5\n")
    (tmp_path / "q.csv").write_text("image_id,confidence\na.png,0.5\n")

    def entry(*names, name="d"):
        models = [{"name": n, "predictions": p} for n, p in zip(names, ["p.csv", "q.csv"])]
        return {"name": name, "spotcheck": {"seed": 0}, "models": models}

    parse_dataset_entry(entry("m", "n"), base=tmp_path)
    for names in [("m", "m"), ("ﬁ", "fi"), ("M", "m")]:
        with pytest.raises(ValueError, match=r"models\[1\] is named .* as models\[0\] is"):
            parse_dataset_entry(entry(*names), base=tmp_path)
    for blank in ["   ", "\u3000", "\u0301\u0301"]:
        with pytest.raises(ValueError, match="is blank|blank-drawn"):
            parse_dataset_entry(entry(blank), base=tmp_path)
        with pytest.raises(ValueError, match="is blank|blank-drawn"):
            parse_dataset_entry(entry("m", name=blank), base=tmp_path)
    many = {
        "name": "d",
        "spotcheck": {"seed": 0},
        "models": [{"name": f"m{i}", "predictions": "p.csv"} for i in range(65)],
    }
    with pytest.raises(ValueError, match="lists 65 models; expected at most 64"):
        parse_dataset_entry(many, base=tmp_path)


def test_a_weights_file_error_carries_no_terminal_escape_and_no_unsafe_advice(tmp_path):
    """Lower 1: a job model's weights: error quoted torch's first line, raw ESC bytes and 'This file can still be
    loaded' included."""
    from lbee.scoring.torch_files import load_error_line

    said = load_error_line(RuntimeError("Weights only load failed. This file can still be loaded, \x1b[1mdo\x1b[0m"))
    assert said == "not a plain state dict of tensors"
    assert load_error_line(RuntimeError("bad \x1b[2J file\nmore")) == "bad [2J file"


def test_the_client_refuses_a_job_id_that_would_break_its_next_request(monkeypatch):
    """Lower 2: a hostile server's job id holding CR LF or a space made `lbee submit` print Python's InvalidURL
    traceback (after printing the line break)."""
    from conftest import server_answers

    from lbee.service.client import Client, ServiceError, _quoted

    assert _quoted("j1\r\nX-Injected: 1") == "j1%0D%0AX-Injected%3A%201"
    server_answers(monkeypatch, [b'{"id": "j1\\r\\nX: 1", "status": "running"}'])
    with pytest.raises(ServiceError, match="is not a job"):
        Client("http://127.0.0.1:9", "tok").job("j1")


def test_ids_are_quoted_short_in_matching_messages_and_an_indexed_parquet_reads_its_index(tmp_path):
    """Lower 3 and 8: the matcher quoted ids of up to 4,096 characters whole (12 KB warnings in a job log); a parquet
    written from an indexed frame (df.set_index('image').to_parquet) was said to have no image id column."""
    import pandas as pd

    from lbee.io.matching import IdMatcher
    from lbee.io.table_reader import read_table

    long = "x" * 250  # a file name of 250 characters (Linux's NAME_MAX is 255)
    m = IdMatcher([f"a/{long}", f"b/{long}"])
    with pytest.raises(ValueError, match="matches 2 images") as err:
        m.index(long)
    assert len(str(err.value)) < 600
    pd.DataFrame({"image": ["a.png", "b.png"], "confidence": [0.1, 0.9]}).set_index("image").to_parquet(
        tmp_path / "i.parquet"
    )
    assert read_table(tmp_path / "i.parquet").columns.tolist() == ["image", "confidence"]
    assert np.allclose(read_table(tmp_path / "i.parquet")["confidence"], [0.1, 0.9])


def test_an_empty_hard_split_names_a_confidence_far_from_the_rest():
    """Lower 6: one 1e308 among confidences in [0, 1] emptied the hard split, and the message said only 'try a
    smaller --a'."""
    import lbee

    rng = np.random.default_rng(0)
    phi = rng.uniform(size=300)
    phi[7] = 1e308
    with pytest.raises(ValueError, match=r"1 lies far from the rest \(e\.g\. 1e\+308 at position 7"):
        lbee.partition(rng.normal(size=(300, 8)), confidence=phi)


def test_a_relevance_of_no_true_cell_is_said(tmp_path, caplog):
    """Lower 7: an all-false Γ .npy was read without a word: every metric 0, TPR nan."""
    import logging

    from lbee.io.relevance import load_relevance

    np.save(tmp_path / "g.npy", np.zeros((3, 2), bool))
    with caplog.at_level(logging.WARNING, logger="lbee"):
        rel = load_relevance(tmp_path / "g.npy", ["a", "b", "c"], ["x", "y"])
    assert not rel.any() and "holds no relevant (image, sentence) pair" in caplog.text
    caplog.clear()
    np.save(tmp_path / "h.npy", np.eye(3, 2, dtype=bool))
    with caplog.at_level(logging.WARNING, logger="lbee"):
        load_relevance(tmp_path / "h.npy", ["a", "b", "c"], ["x", "y"])
    assert "no relevant" not in caplog.text
