"""The eighteenth hostile-input sweep's findings: the id matcher's tails and depths (H13, H14), a zip of overlapping
entries (H15), the client's JSON answers (H16), the Spotlight export's image reads (H17), and the lower ones."""

import io
import struct
import time
import zipfile

import pytest


def test_the_id_matcher_keeps_short_tails_and_tries_few_depths():
    """H13: 64 levels of 63-character names made 126 KB of tails an id (190 KB of ids: 1.8 GB). H14: run ids at 2,000
    depths made every deep key cost 11 ms (a 17 KB Γ table: 35 s), each row matched again."""
    import tracemalloc

    from lbee.io.matching import MAX_TAIL_CHARS, IdMatcher

    ids = ["/".join(["x" * 63] * 63) + f"/{i:06d}" for i in range(1000)]
    tracemalloc.start()
    m = IdMatcher(ids)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 60 << 20, peak  # 126 MB before
    assert all(len(t) <= MAX_TAIL_CHARS for t in m.by_tail)
    deep = IdMatcher(["a/" * k + "z" for k in range(1, 2001)])
    t0 = time.perf_counter()
    for _ in range(3000):
        assert deep.index("b/" * 2047 + "q") is None  # one key repeated on every row
    for i in range(300):
        deep.index("c/" * 2040 + f"{i:06d}")
    assert time.perf_counter() - t0 < 12.0  # 35 s for 3,000 rows before (a bound for a hang, on a loaded machine)
    assert deep.index("a/a/z") == 1  # matching as before: exactly, or by a tail that fits one image
    with pytest.raises(ValueError, match="matches 5 images"):
        deep.index("/root/" + "a/" * 5 + "z")


def _overlapping_zip(path, n):
    """A torch archive whose ``n`` storages of 1 MiB all point at one stored entry (sweep 18's construction)."""
    import torch

    sd = {f"zz{k}": torch.zeros(2**18) for k in range(n)}
    buf = io.BytesIO()
    torch.save(sd, buf)
    path.write_bytes(repoint(buf.getvalue(), 2**20))


def repoint(raw, size):
    """``raw`` (a zip) with every stored entry of ``size`` bytes pointing at the first one's data."""
    infos = zipfile.ZipFile(io.BytesIO(raw)).infolist()
    big = [i for i in infos if i.file_size == size]
    new, offsets = bytearray(), {}
    for i in infos:
        if i in big and i is not big[0]:
            continue
        offsets[i.filename] = len(new)
        fnl, exl = struct.unpack("<HH", raw[i.header_offset + 26 : i.header_offset + 30])
        new += raw[i.header_offset : i.header_offset + 30 + fnl + exl + i.compress_size]
    for i in big:
        offsets[i.filename] = offsets[big[0].filename]
    cd = bytearray()
    for i in infos:
        fn = i.filename.encode()
        head = (0x02014B50, 20, 20, 0, i.compress_type, 0, 0x21, i.CRC, i.compress_size, i.file_size, len(fn))
        cd += struct.pack("<IHHHHHHIIIHHHHHII", *head, 0, 0, 0, 0, 0, offsets[i.filename]) + fn
    eocd = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(infos), len(infos), len(cd), len(new), 0)
    return bytes(new) + bytes(cd) + eocd


def test_a_zip_of_overlapping_stored_entries_is_refused(tmp_path):
    """H15: 2,000 entries pointing at one stored 1 MiB entry: 1.36 MB on disk, neither sparse nor compressed, 2 GB
    loaded (a world's model.pt, weights:, an open_clip checkpoint)."""
    from lbee.scoring.classifier import check_stored_zip
    from lbee.spotcheck._configuration import CorruptECError, load_classifier_weights

    _overlapping_zip(tmp_path / "model.pt", 40)
    assert (tmp_path / "model.pt").stat().st_size < 3 << 20  # 40 MiB once loaded
    with pytest.raises(ValueError, match="its entries overlap"):
        check_stored_zip(tmp_path / "model.pt")
    with pytest.raises(CorruptECError, match="its entries overlap"):
        load_classifier_weights(tmp_path / "model.pt")


def test_names_that_read_alike_or_show_nothing_are_refused():
    """Lower 1: 'x' and 'x\\ufe0f', 'm' and 'm ' were two models; U+3164 and U+2800 made job names that show blank."""
    from lbee._validation import check_name_text

    for bad in ["x\ufe0f", "m ", " m", "\u3164", "\u2800", "\u115f\u1160"]:
        with pytest.raises(ValueError, match="blank|invisible|spaces at an end"):
            check_name_text(bad, "name")
    assert check_name_text("café au lait", "name") == "café au lait"


def test_a_parquet_whose_index_repeats_a_column_reads_and_an_outlier_is_named_in_skewed_confidences(tmp_path):
    """Lower 3: set_index('image', drop=False).to_parquet (a common idiom) was refused with pandas's 'cannot insert
    image, already exists'. Lower 2: one 1e308 among probabilities near 1 went unnamed (the real tail hid it)."""
    import numpy as np
    import pandas as pd

    import lbee
    from lbee.io.table_reader import read_table

    df = pd.DataFrame({"image": ["a.png", "b.png"], "confidence": [0.1, 0.9]})
    df.set_index("image", drop=False).to_parquet(tmp_path / "p.parquet")
    assert read_table(tmp_path / "p.parquet").columns.tolist() == ["image", "confidence"]
    rng = np.random.default_rng(0)
    phi = np.where(rng.random(500) < 0.9, 1 - rng.exponential(0.001, 500), rng.uniform(0, 1, 500))
    phi[3] = 1e308
    with pytest.raises(ValueError, match=r"1 lies far from the rest \(e\.g\. 1e\+308 at position 3"):
        lbee.partition(rng.normal(size=(500, 8)), confidence=phi)


def test_join_of_huge_numbers_and_state_dict_errors_are_said_in_lbee_s_words():
    """Lower 5: a 5,000-digit group in join gave Python's 'Exceeds the limit (4300 digits)'. Lower 8: 'Error(s) in
    loading state_dict for X:' ended at its colon."""
    from lbee import RunSettings
    from lbee.scoring.classifier import load_error_line

    with pytest.raises(ValueError, match="group numbers separated by commas"):
        RunSettings(join=["1," + "9" * 5000])
    said = load_error_line(RuntimeError("Error(s) in loading state_dict for CLIP:\n\tUnexpected key(s): 'zz0'."))
    assert said == "Error(s) in loading state_dict for CLIP: Unexpected key(s): 'zz0'."


def test_sentences_generate_writes_no_sentence_the_reader_refuses(tmp_path):
    """Lower 4: a grammar of 200-character words wrote sentences of 1,414 characters that lbee then refused."""
    from lbee.grammar import load_grammar
    from lbee.io.grammar_sets import write_grammar_set
    from lbee.io.sentences import MAX_SENTENCE_CHARS

    g = load_grammar("spotcheck")
    cond = {("square", "presence"): "true"}
    long = "x" * (MAX_SENTENCE_CHARS + 1)
    with pytest.raises(ValueError, match=r"in a sentence of 1,001 characters; a sentence file holds sentences of"):
        write_grammar_set(tmp_path / "s.txt", g, [long], [cond], max_conditions=1, source_ref="spotcheck")


def test_the_client_reads_a_job_state_of_bounded_size_and_refuses_dot_ids(monkeypatch):
    """H16: a hostile server's 50 MiB job answer ([] after [] ...) became 3.7 GB of Python objects in `lbee submit`.
    Lower 9: a job id '..' made the client ask for /v1/jobs/../report."""
    from conftest import server_answers

    from lbee.service.client import MAX_JOB_BYTES, Client, ServiceError

    server_answers(
        monkeypatch,
        [
            b'{"id": "j1", "status": "done", "x": [' + b"[]," * (MAX_JOB_BYTES // 3) + b"[]]}",
            b'{"id": "..", "status": "running"}',
        ],
    )
    c = Client("http://127.0.0.1:9", "tok")
    with pytest.raises(ServiceError, match="the answer is larger than 4 MiB"):
        c.job("j1")
    with pytest.raises(ServiceError, match="is not a job"):
        c.job("j1")


def test_the_spotlight_export_reads_no_image_past_the_images_bound(tmp_path, monkeypatch):
    """H17: `lbee export spotlight` hashed every image images.parquet names in full: a sparse 20 GB file took 25 s."""
    import json

    import pandas as pd

    import lbee.io.images as images
    from lbee.reports.spotlight import run_embeddings

    big = tmp_path / "big.png"
    with open(big, "wb") as fh:
        fh.truncate(4096)
    monkeypatch.setattr(images, "MAX_IMAGE_BYTES", 1024)  # the bound, scaled down
    (tmp_path / "explanation.json").write_text(json.dumps({"encoder": {"encoder": "open_clip", "model": "m"}}))
    table = pd.DataFrame({"image": [str(big)], "image_id": ["big.png"]})
    emb, why = run_embeddings(tmp_path, table, cache_dir=tmp_path / "cache")
    assert emb is None and "4,096 bytes, over the 1,024 an image may be" in why


def test_sweep19_tails_in_all_the_client_s_json_and_one_file_named_on_every_row(tmp_path, monkeypatch):
    """Sweep 19: H18, 64 tails of 450 characters above U+FFFF kept 114 KB an id; H19, explanation() and metrics()
    parsed up to 512 MiB (27 times that in memory); H20, one sparse 1 GiB file named on 2,000 rows was read 2,000
    times; lower 2, a parquet index of two levels lost the one that repeats no column."""
    import json

    import pandas as pd
    from conftest import server_answers

    import lbee.io.images as images
    from lbee.io.matching import MAX_TAILS_CHARS, _tails
    from lbee.io.table_reader import read_table
    from lbee.reports.spotlight import run_embeddings
    from lbee.service.client import MAX_JSON_BYTES, Client, ServiceError

    wide = "/".join(["\U0001f600"] * 63) + "/" + "\U0001f600" * 382
    assert sum(map(len, _tails(wide))) <= MAX_TAILS_CHARS
    server_answers(monkeypatch, [b"[" + b"[]," * (MAX_JSON_BYTES // 3) + b"[]]"] * 2)
    with pytest.raises(ServiceError, match="the answer is larger than 64 MiB"):
        Client("http://127.0.0.1:9", "tok").explanation("j1")
    sparse = tmp_path / "s.png"
    with open(sparse, "wb") as fh:
        fh.truncate(80 << 20)
    if sparse.stat().st_blocks * 512 < (80 << 20) / 8:  # a file system that keeps sparse files
        (tmp_path / "explanation.json").write_text(json.dumps({"encoder": {"encoder": "open_clip", "model": "m"}}))
        table = pd.DataFrame({"image": [str(sparse)] * 2000, "image_id": [f"{i}.png" for i in range(2000)]})
        emb, why = run_embeddings(tmp_path, table, cache_dir=tmp_path / "cache")
        assert emb is None and "sparse file" in why
    monkeypatch.setattr(images, "MAX_IMAGE_BYTES", 1 << 30)
    df = pd.DataFrame({"image": ["a.png", "b.png"], "split": ["x", "y"], "confidence": [0.1, 0.9]})
    df.set_index(["image", "split"], drop=False).drop(columns="split").to_parquet(tmp_path / "m.parquet")
    assert sorted(read_table(tmp_path / "m.parquet").columns) == ["confidence", "image", "split"]


def test_sweep20_hard_links_are_one_file_and_sparse_text_files_are_refused(tmp_path):
    """Sweep 20: H21, 2,000 hard links to one 1 GiB file were hashed 2,000 times by the Spotlight export; H22, a 1 GiB
    sparse ids.txt or sentence file (0 blocks on disk) took a worker to 2.6 GB."""
    import json
    import os

    import pandas as pd

    import lbee.reports.spotlight as spotlight
    from lbee._files import read_text_file

    img = tmp_path / "a.png"
    img.write_bytes(b"x" * 1000)
    for i in range(50):
        os.link(img, tmp_path / f"l{i}.png")
    read = []
    real = spotlight.__dict__.get("file_sha256")
    (tmp_path / "explanation.json").write_text(json.dumps({"encoder": {"encoder": "open_clip", "model": "m"}}))
    table = pd.DataFrame({"image": [str(tmp_path / f"l{i}.png") for i in range(50)], "image_id": list(range(50))})
    import lbee.io.cache as cache

    original = cache.file_sha256

    def counting(path, *a, **k):
        read.append(path)
        return original(path, *a, **k)

    cache.file_sha256 = counting
    try:
        spotlight.run_embeddings(tmp_path, table, cache_dir=tmp_path / "cache")
    finally:
        cache.file_sha256 = original
    assert real is None and len(read) == 1  # one inode, read once
    sparse = tmp_path / "ids.txt"
    with open(sparse, "wb") as fh:
        fh.truncate(100 << 20)
    if sparse.stat().st_blocks * 512 < (100 << 20) / 8:
        with pytest.raises(ValueError, match="is a sparse file"):
            read_text_file(sparse, "Row ids")


def test_sweep21_kernel_files_requires_chains_and_the_run_s_own_predictions(tmp_path):
    """Sweep 21: H23, a link to /proc/kmsg as ids.txt (0 bytes by its size, never ending) hung a run; H24, a chain of
    N 'requires' cost N² a sentence (a 680 KB grammar: 154 s for 20 sentences); H25, the Spotlight export read the
    run's inputs/predictions.csv unbounded (a sparse 8 GiB one: out of memory)."""
    import os

    from lbee._files import NotRegularFile, read_text_file
    from lbee.grammar import load_grammar

    link = tmp_path / "ids.txt"
    os.symlink("/proc/self/status", link)  # any kernel file: refused before it is opened
    with pytest.raises(NotRegularFile, match="is a system file"):
        read_text_file(link, "Row ids")
    lines = ["name: chain", "lead: A photo of", "bare: A photo", "max_conditions: 1", "subjects:", "  - id: o"]
    lines += ["    noun: thing", "    attributes:"]
    n = 4000
    for i in range(n):
        lines += [f"      - id: a{i}", f"        values: {{v: v{i}, w: w{i}}}"]
        lines += [f"        requires: [o.a{i + 1}=v]"] if i + 1 < n else []
    (tmp_path / "chain.grammar.yaml").write_text("\n".join(lines) + "\n")
    g = load_grammar(tmp_path / "chain.grammar.yaml")
    t0 = time.perf_counter()
    for _ in range(20):
        assert g.contradiction(g.implied({("o", "a0"): "v"})) is None
    assert time.perf_counter() - t0 < 3.0  # 8 s before (0.42 s a sentence at 4,000 attributes)
