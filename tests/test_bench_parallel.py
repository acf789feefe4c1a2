"""scripts/bench_spotcheck_parallel.py: a table of sentence embeddings, and seed ranges in worker processes."""

import importlib
import json
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "bench_spotcheck_parallel.py"


@pytest.fixture()
def script(monkeypatch):
    # importable by name, so that spawned workers can unpickle its functions (spawn passes sys.path on)
    monkeypatch.syspath_prepend(str(SCRIPT.parent))
    return importlib.import_module(SCRIPT.stem)


def test_text_table_stands_in_for_the_sentence_model(tmp_path, script):
    mod = script
    emb = np.arange(6, dtype=np.float32).reshape(3, 2)
    np.savez(tmp_path / "t.npz", sentences=np.array(["a", "b", "c"]), embeddings=emb)
    table = mod.TableTextModel(tmp_path / "t.npz")
    assert np.array_equal(table.encode(["c", "a"], batch_size=2, convert_to_numpy=True), emb[[2, 0]])
    with pytest.raises(KeyError, match="not in the text table"):
        table.encode(["a", "zzz"])
    with pytest.raises(SystemExit):
        mod.main(["run", "--out", str(tmp_path / "o"), "--per-combination", "1,2"])


def test_workers_write_one_record_per_seed_and_the_last_pass_the_table(tmp_path, script):
    """Two seeds over two spawned workers; the summary pass reads both records back (nothing recomputed)."""
    from lbee.bench import bench_config

    mod = script
    out = tmp_path / "bench"
    mod.main(
        [
            "run",
            "--n-ecs",
            "2",
            "--first-seed",
            "5",
            "--workers",
            "2",
            "--per-combination",
            "3,2,3",
            "--epochs",
            "1",
            "--min-outside",
            "0",
            "--max-inside",
            "1",
            "--min-neighbour",
            "0",
            "--out",
            str(out),
        ]
    )
    records = [json.loads((out / "ecs" / f"ec_{s:04d}.json").read_text()) for s in (5, 6)]
    assert [r["seed"] for r in records] == [5, 6] and all(r["device"] == "cpu" for r in records)
    enc = mod._encoder("cpu", None)
    assert records[0]["config"] == bench_config(
        epochs=1,
        arch="cnn",
        per_combination=(3, 2, 3),
        min_outside=0.0,
        max_inside=1.0,
        min_neighbour=0.0,
        encoder=enc,
    )
    assert records[0]["config"]["encoder_weights"] == enc.identity()["weights"]
    assert "| ECs analysed |" in (out / "bench.md").read_text()
