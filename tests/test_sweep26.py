"""Sweep 26 (on 751ca32): compare read a run file linked out of its folder (S-1, in tests/test_service.py), the
client trusted a server's page count (H-1), TorchScript entries stored over one another (H-2), a stored run's
blocks and values that contradict each other (SW-1 to SW-4), a reordered image cache shard (SW-5), and an output
that replaced a device (L-1)."""

import io
import json
import os
import re

import numpy as np
import pandas as pd
import pytest

from tests.test_sweep18 import repoint
from tests.test_sweep25 import rewrite_digested, run_copy


def test_a_torchscript_file_of_entries_stored_over_one_another_is_refused(tmp_path):
    """H-2: a 4.2 MB TorchScript file whose stored entries all point at one blob took 263 MB to load."""
    import torch

    from lbee.scoring.torch_files import check_torchscript_zip

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            for k in range(12):
                self.register_buffer(f"b{k}", torch.full((2**18,), float(k)))

        def forward(self, x):
            return x

    buf = io.BytesIO()
    torch.jit.save(torch.jit.script(Net()), buf)
    (tmp_path / "ok.pt").write_bytes(buf.getvalue())
    check_torchscript_zip(tmp_path / "ok.pt")  # as torch.jit.save writes it
    (tmp_path / "bomb.pt").write_bytes(repoint(buf.getvalue(), 2**20))
    assert (tmp_path / "bomb.pt").stat().st_size < 3 << 20  # 12 MiB once loaded
    with pytest.raises(ValueError, match="its entries overlap"):
        check_torchscript_zip(tmp_path / "bomb.pt")


def test_the_client_does_not_trust_a_servers_page_count():
    """H-1: a server claiming a billion pages drove Client.group_images from 1.4 to 2.9 GB in 10 s; L-3: an answer
    without a run id raised KeyError."""
    from lbee.service.client import Client, ServiceError

    class Fake(Client):
        def __init__(self, pages, metrics=None):
            self.pages, self._metrics, self.asked = pages, metrics or {"id": 1}, 0

        def metrics(self, job_id, model=None):
            return self._metrics

        def _request(self, method, path, body=None, **kw):
            self.asked += 1
            return self.pages(path)

    def rows(k):
        return [{"image": f"i{j}"} for j in range(k)]

    liar = Fake(lambda path: {"n": 10, "n_pages": 10**9, "rows": rows(5)})
    with pytest.raises(ServiceError, match="1,000,000,000 pages of 10 images; at most 2"):
        liar.group_images("j", 0)
    assert liar.asked == 1
    padded = Fake(lambda path: {"n": 10, "n_pages": 2, "rows": rows(8)})
    with pytest.raises(ServiceError, match="holds more images than the group has"):
        padded.group_images("j", 0)
    honest = Fake(lambda path: {"n": 7, "n_pages": 2, "rows": rows(4 if "page=1" in path else 3)})
    assert len(honest.group_images("j", 0)) == 7
    with pytest.raises(ServiceError, match="names no run id"):
        Fake(lambda path: {}, metrics={"runs": []}).group("j", 0)


def _statement0(key, value):
    return lambda p: p["confirmation"]["statements"][0].__setitem__(key, value)


EDITS = {
    "a confirmation off that keeps its statements": (
        lambda p: p["confirmation"].update(status="off"),
        "'confirmation.outcome'.*nothing: the confirmation is off",
    ),
    "a count against its rate": (_statement0("errors_in", 0), "error_rate_in.*its counts' ratio"),
    "an inverted interval": (_statement0("ci", [5, -3]), "'confirmation.statements\\[0\\].ci'"),
    "an ablation's rate of 7": (_statement0("ablation", [{"n": -1, "error_rate": 7}]), "ablation\\[0\\].n"),
    "a sentence index of a billion": (_statement0("sentence", 10**9), "statements\\[0\\].sentence"),
    "a hypothesis of 3 images for a group of 194": (  # its size is the demo's (read in the test, never written here)
        lambda p: p["hypotheses"][0].__setitem__("images", 3),
        "'hypotheses\\[0\\].images' is 3; expected (\\d+), the size of hard group 0",
    ),
    "a group of 3 images": (
        lambda p: p["confirmation"]["groups"][0].__setitem__("images", 3),
        "'confirmation.groups\\[0\\].images'",
    ),
    "pieces true": (lambda p: p["hypotheses"][0].__setitem__("pieces", True), "hypotheses\\[0\\].pieces"),
    "pieces beyond the slicer's groups": (
        lambda p: p["hypotheses"][0].__setitem__("pieces", 6000),
        "at most the 15 groups the slicer made",
    ),
    "a billion images said": (lambda p: p["params"].__setitem__("n_images", 10**9), "'params.n_images'"),
}


@pytest.mark.parametrize("case", sorted(EDITS))
def test_blocks_that_contradict_themselves_are_refused(demo_run, tmp_path, case):
    """SW-1 to SW-3: with the digest recomputed, a confirmation 'off' still gave the client 14 confirmed
    statements; counts against rates, an interval of [5, -3], a hypothesis of 3 images for a group of 194 and
    `params.n_images` of 10⁹ all loaded."""
    from lbee.run.stored import load_explanations
    from lbee.service.reading import confirmed_statements

    run = run_copy(demo_run, tmp_path)
    edit, said = EDITS[case]
    size = len(load_explanations(run / "explanation.json")[0]["compose"].hard_clusters[0].indices)
    rewrite_digested(run / "explanation.json", edit)
    with pytest.raises(ValueError, match=said) as err:
        load_explanations(run / "explanation.json")
    if "(\\d+)" in said:  # the size the message expects is hard group 0's, as the run recorded it
        assert re.search(said, str(err.value)).group(1) == str(size)
    with pytest.raises(ValueError):
        confirmed_statements(json.loads((run / "explanation.json").read_text()))


def test_per_image_values_that_contradict_the_run_are_refused(demo_run, tmp_path):
    """SW-4: φ and ω edited in both tables with every digest renewed made a failure's page say error rate 0.00;
    a NaN φ loaded too."""
    from lbee.reports.browse import IMAGE_COLUMNS
    from lbee.reports.stored_table import stored_images_table
    from lbee.run.outputs import assignments_digest, table_digest

    run = run_copy(demo_run, tmp_path)
    table, assign = pd.read_parquet(run / "images.parquet"), pd.read_parquet(run / "assignments.parquet")

    def forge(edit):
        t, a = table.copy(), assign.copy()
        edit(t), edit(a)
        t.to_parquet(run / "images.parquet")
        a.to_parquet(run / "assignments.parquet")
        rewrite_digested(
            run / "explanation.json",
            lambda p: p.update(images_sha256=table_digest(t, IMAGE_COLUMNS), assignments_sha256=assignments_digest(a)),
        )

    group0 = ((table["split"] == "hard") & (table["group"] == 0)).to_numpy()
    forge(lambda f: f.__setitem__("performance", np.where(group0, 1.0, f["performance"])))
    with pytest.raises(ValueError, match="hard group 0's images fail at 0.0000 by its ω, where the run recorded 1"):
        stored_images_table(run)
    forge(lambda f: f.__setitem__("confidence", np.where(group0, np.nan, f["confidence"])))
    with pytest.raises(ValueError, match="confidence nan; expected a finite number"):
        stored_images_table(run)


def test_a_cache_shard_whose_rows_moved_is_encoded_again(tmp_path):
    """SW-5: an image shard with its embeddings reversed against its hashes served 1,999 wrong rows of 2,000."""
    from lbee.io.cache import EmbeddingCache

    cache = EmbeddingCache({"encoder": "x"}, tmp_path)
    hashes = [f"h{i}" for i in range(4)]
    emb = np.eye(4, dtype=np.float32)
    cache.put_images(hashes, emb)
    assert set(EmbeddingCache({"encoder": "x"}, tmp_path).get_images(hashes)) == set(hashes)
    (shard,) = (cache.root / "images").glob("shard-*.npz")
    with np.load(shard) as data:
        parts = dict(data)
    np.savez(shard, **{**parts, "embeddings": parts["embeddings"][::-1]})
    assert EmbeddingCache({"encoder": "x"}, tmp_path).get_images(hashes) == {}
    np.savez(shard, hashes=parts["hashes"], embeddings=parts["embeddings"])  # a shard of before the row hashes
    assert EmbeddingCache({"encoder": "x"}, tmp_path).get_images(hashes) == {}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_an_output_that_is_a_device_or_a_fifo_is_never_replaced(tmp_path):
    """L-1: `lbee export spotlight RUN --out /dev/null --overwrite`, as root, replaced /dev/null with a file."""
    from lbee.io.staging import OutputExistsError, check_no_replace

    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(OutputExistsError, match="is a FIFO .* never replaced, even with --overwrite"):
        check_no_replace([tmp_path / "fifo"], overwrite=True)
    (tmp_path / "file").write_text("x")
    check_no_replace([tmp_path / "file", tmp_path], overwrite=True)  # a file or a folder: replaced when asked
    if os.geteuid() == 0:
        os.mknod(tmp_path / "null", 0o600 | __import__("stat").S_IFCHR, os.makedev(1, 3))
        with pytest.raises(OutputExistsError, match="is a character device"):
            check_no_replace([tmp_path / "null"], overwrite=True)
