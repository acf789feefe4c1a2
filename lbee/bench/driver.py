"""``lbee spotcheck bench``: many ECs, one table of means and 95% intervals. Resumable."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from ..io.cache import atomic_write_bytes
from ..io.confinement import MAX_CONFIG_BYTES, read_text_file


def mean_ci(values):
    """Mean and half-width of a 95% normal interval over the finite values (NaN when none)."""
    v = np.asarray([x for x in values if x is not None and np.isfinite(x)], dtype=float)
    if v.size == 0:
        return float("nan"), float("nan"), 0
    half = 1.96 * v.std(ddof=1) / math.sqrt(v.size) if v.size > 1 else float("nan")
    return float(v.mean()), float(half), int(v.size)


def run_benchmark(
    n_ecs,
    out_dir,
    *,
    encoder,
    first_seed=0,
    progress=None,
    log=None,
    with_slicers=True,
    protocol="paper",
    device="cpu",
    worlds=None,
    **ec_kwargs,
):
    """Run ``n_ecs`` ECs (seeds first_seed..), one JSON per EC in ``out_dir/ecs``; done ECs are skipped.

    ECs are independent, so disjoint seed ranges may run in separate processes
    into one ``out_dir``; a last run over the whole range reads them back and
    writes the table. ``device`` is where each EC's classifier trains; it is
    kept in the record, not in the configuration (a CPU run may resume a GPU one).

    A bench never dies on one EC: an EC whose generation or analysis raises is
    recorded with ``"failed": reason`` and the bench goes on. Every record keeps
    the rejected candidates of its generation (``attempts``), so the table can
    say how many ECs were regenerated and why.

    ``worlds`` (a folder) keeps each EC — renders and trained classifier — and
    reuses it when its generation settings match, so a rerun with another
    encoder or describer (a new ``--out``) analyses the same worlds without
    regenerating them. The bench configuration names the encoder's weights, so
    records of two encoders are never averaged together.
    """
    import time

    from ..io.own_store import foreign_inside, make_own, own_file
    from ..spotcheck import PAPER_WORLD, make_ec
    from .analysis import analyze_ec
    from .counterfactual import blindspot_counterfactuals

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if foreign_inside(out, "ecs"):  # another user's, or one they can write: their records were read (sweep 32ak B7)
        raise ValueError(f"{str(out / 'ecs')!r} is not this user's own folder (said above); use another --out.")
    make_own(out, "ecs")
    config = bench_config(protocol=protocol, with_slicers=with_slicers, encoder=encoder, **ec_kwargs)
    generation = world_config(protocol=protocol, **ec_kwargs)
    records = []
    seeds = range(first_seed, first_seed + n_ecs)
    for seed in progress(seeds) if progress else seeds:
        path = out / "ecs" / f"ec_{seed:04d}.json"
        theirs = path.is_file() and not path.is_symlink() and not own_file(path)  # a FIFO is refused below (sweep 25)
        if theirs:  # not read: a record another user wrote or can write is not this bench's
            if log:
                log(f"{str(path)!r} is another user's, or one they can write; EC {seed} is recomputed")
        elif path.exists() or path.is_symlink():
            try:  # checked as every file lbee reads: a FIFO blocked, a link to /dev/zero took 6 GB (sweep 25)
                old = json.loads(read_text_file(path, "Bench record", limit=MAX_CONFIG_BYTES))
            except json.JSONDecodeError:
                old = None  # a damaged record is recomputed
            except (ValueError, OSError) as exc:
                raise ValueError(f"{exc} Remove it to have EC {seed} computed again, or use another --out.") from None
            if not _complete(old):
                if log:
                    log(f"{str(path)!r} is damaged or incomplete; EC {seed} is recomputed")
                old = None
            if old is not None:
                if old.get("config") != config:
                    raise ValueError(
                        f"{str(path)!r} was written by a bench with another configuration "
                        f"({old.get('config')} vs {config}); use another --out, or remove the folder "
                        "to start over."
                    )
                records.append(old)
                continue
        t0 = time.perf_counter()
        rec = {"seed": seed, "protocol": protocol, "config": config, "device": str(device)}
        try:
            world_kwargs = {**(PAPER_WORLD if protocol == "paper" else {}), **ec_kwargs}
            ec = None if worlds is None else load_world(worlds, seed, generation, gate=_gate(world_kwargs), log=log)
            if ec is None:
                ec = make_ec(
                    seed,
                    log=log,
                    device=device,
                    train=True,  # every EC trains: never the demo's weights
                    **world_kwargs,
                )
                if worlds is not None:
                    save_world(ec, worlds, seed, generation)
            t1 = time.perf_counter()
            rec.update(
                {
                    "ec_seed": ec.seed,
                    "blindspots": ec.describe_blindspots(),
                    "n_blindspots": len(ec.blindspots),
                    "attempts": ec.verification.get("attempts", []),
                    "verification": {
                        k: ec.verification.get(k) for k in ("accuracy_outside", "accuracy_inside", "n_inside")
                    },
                    "n_test": int(len(ec.images["test"])),
                    "generate_and_train_s": t1 - t0,
                }
            )
            analysis = analyze_ec(ec, encoder, with_slicers=with_slicers, protocol=protocol)
            analysis.counterfactual = blindspot_counterfactuals(ec, analysis)  # beside the description score
            rec.update({"analysis_s": time.perf_counter() - t1, **analysis.summary()})
        except Exception as exc:  # noqa: BLE001 - one EC's failure is recorded, never fatal to the bench
            rec["failed"] = f"{type(exc).__name__}: {exc}"
            rec.setdefault("attempts", getattr(exc, "attempts", []))
            if log:
                log(f"EC {seed}: failed ({rec['failed']})")
        atomic_write_bytes(path, json.dumps(rec, indent=1, default=_jsonable).encode(), private=True)
        records.append(rec)
    return records


#: Bumped when the peer slicers change (2: scvis as the reference ``scvis train`` runs it; 3: "domino-model").
SLICERS_VERSION = 3


#: What a successful EC record must hold for the table (a record missing any is recomputed).
RECORD_KEYS = ("seed", "config", "scores", "failure_analysis")


def _complete(record):
    return isinstance(record, dict) and (
        "failed" in record and "seed" in record and "config" in record or all(k in record for k in RECORD_KEYS)
    )


#: 2: the SpotCheck grammar's sentences, 'compose', merged hypotheses ranked by error concentration.
DESCRIBERS_VERSION = 2


def bench_config(*, protocol="paper", with_slicers=True, encoder=None, **ec_kwargs):
    """What an EC record depends on besides its seed (a resumed bench never mixes configurations).

    ``encoder``: its weights' digest is part of the configuration (records of two encoders never mix).
    """
    from ..spotcheck import EC_VERSION

    slicers = {"slicers_version": SLICERS_VERSION} if with_slicers else {}
    identity = encoder.identity() if hasattr(encoder, "identity") else {}
    weights = {"encoder_weights": identity["weights"]} if "weights" in identity else {}
    return json.loads(
        json.dumps(
            {
                "protocol": protocol,
                "ec_version": EC_VERSION,
                "with_slicers": with_slicers,
                "describers_version": DESCRIBERS_VERSION,
                **slicers,
                **weights,
                **ec_kwargs,
            },
            default=_jsonable,
            sort_keys=True,
        )
    )


def world_config(*, protocol="paper", **ec_kwargs):
    """What an EC's world and classifier depend on besides the seed (what ``worlds`` folders are matched by)."""
    from ..spotcheck import EC_VERSION

    return json.loads(
        json.dumps({"protocol": protocol, "ec_version": EC_VERSION, **ec_kwargs}, default=_jsonable, sort_keys=True)
    )


WORLD_FILE = "bench_world.json"


def _gate(world_kwargs):
    """The blindspot gate's thresholds [`make_ec`][lbee.spotcheck.make_ec] verifies with, given its arguments."""
    from ..spotcheck import DEFAULT_GATE

    return {k: world_kwargs.get(k, default) for k, default in DEFAULT_GATE.items()}


def load_world(worlds, seed, generation, *, gate=None, log=None):
    """The EC of ``seed`` kept in ``worlds`` when it was generated with ``generation``, else None (said why).

    With ``gate`` ([`verify_blindspots`][lbee.spotcheck.verify_blindspots] thresholds), a kept EC whose
    classifier fails today's blindspot gate is generated again too: a world kept before the gate grew a
    check is not analysed as if it had passed it.
    """
    from ..io.own_store import foreign_in_tree
    from ..spotcheck import CorruptECError, ExperimentalConfiguration, verification_failure, verify_blindspots

    folder = Path(worlds) / f"ec_{seed:04d}"
    if not (folder / WORLD_FILE).is_file():
        return None
    foreign = foreign_in_tree(folder)  # its renders, labels or classifier changed by another user (sweep 32ak B7)
    if foreign:
        if log:
            log(f"{str(folder)!r} is not this user's alone ({foreign}); EC {seed} is generated again")
        return None
    try:
        kept = json.loads(read_text_file(folder / WORLD_FILE, "Kept world's record", limit=MAX_CONFIG_BYTES))
        if not isinstance(kept, dict) or kept.get("generation") != generation:
            if log:
                log(f"{str(folder)!r} was generated with other settings; EC {seed} is generated again")
            return None
        ec = ExperimentalConfiguration.load(folder)
        if gate is not None and ec.model is not None:
            verification = verify_blindspots(ec, **gate)
            if not verification["passed"]:
                if log:
                    log(
                        f"{str(folder)!r} fails the blindspot gate ({verification_failure(verification)}); "
                        f"EC {seed} is generated again"
                    )
                return None
            ec.verification.update(verification)
        return ec
    except (json.JSONDecodeError, CorruptECError, OSError, ValueError) as exc:
        if log:
            log(f"{str(folder)!r} cannot be read ({exc}); EC {seed} is generated again")
        return None


def save_world(ec, worlds, seed, generation):
    """Keep ``ec`` in ``worlds``: its folder is written in a stage, then replaced whole (`lbee.io.staging`)."""
    from ..io.own_store import tighten_tree
    from ..io.staging import staged_entries

    with staged_entries(Path(worlds) / f"ec_{seed:04d}", replaces=("*",)) as stage:
        ec.save(stage)
        (stage / WORLD_FILE).write_text(json.dumps({"seed": seed, "generation": generation}, indent=1))
        tighten_tree(stage)  # this user's alone whatever the umask: a kept world is read back as its own


def _jsonable(x):
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    raise TypeError(f"{type(x).__name__} is not JSON serialisable")


#: SpotCheck Table 2 (100 ECs, mean (standard error)); "domino-model" is app. I, Table 16.
PAPER_TABLE2 = {
    "domino": ("0.64 (0.04)", "0.07 (0.01)"),
    "planespot-scvis": ("0.88 (0.03)", "0.02 (0.01)"),
    "domino-model": ("0.80 (0.03) (Table 16)", "0.02 (0.01) (Table 16)"),
    "spotlight": ("0.79 (0.03)", "0.09 (0.01)"),
    "barlow": ("0.43 (0.04)", "0.03 (0.01)"),
}


#: How the table names LBEE's hypotheses: merged pieces ranked by error concentration, and fixed-C Ward beside it.
SLICER_LABELS = {
    "ward": "ward (LBEE split-and-cluster)",
    "ward-fixed-c": "ward, fixed C by importance (before merging)",
}


#: The counterfactual columns (`lbee.bench.counterfactual`): key of an EC record's "counterfactual" -> label.
COUNTERFACTUAL_METRICS = {
    "accuracy": "counterfactual accuracy where the sentence holds (lower: it is the failure)",
    "needed": "counterfactual share of the sentence's conditions the failure needs",
}


def summarize(records):
    """Rows (metric, method, mean, ci95, n) over the successful EC records, plus the bookkeeping rows."""
    ok = [r for r in records if "failed" not in r]
    rows = []
    # every slicer any record has (records of another configuration may lack some), each over its own records
    slicer_names = list(dict.fromkeys(name for r in ok for name in r.get("slicers", {}))) or ["ward"]
    for name in slicer_names:
        for metric in ("DR", "FDR", "fit_s"):
            vals = [
                r["slicers"][name][metric] if "slicers" in r else r.get(metric)
                for r in ok
                if "slicers" not in r or name in r["slicers"]
            ]
            m, h, n = mean_ci(vals)
            label = SLICER_LABELS.get(name, name)
            rows.append(
                {
                    "metric": metric if metric != "fit_s" else "fit time (s)",
                    "method": label,
                    "mean": m,
                    "ci95": h,
                    "n": n,
                }
            )
    methods = list(ok[0]["scores"]) if ok else []
    for metric in ("AHR", "ACR", "TPR", "JI"):
        for meth in methods:
            m, h, n = mean_ci([r["scores"][meth][metric] for r in ok])
            rows.append({"metric": metric, "method": meth, "mean": m, "ci95": h, "n": n})
    for meth in methods:
        m, h, n = mean_ci([r.get("description_score", r.get("description_accuracy", {})).get(meth) for r in ok])
        rows.append({"metric": "description score", "method": meth, "mean": m, "ci95": h, "n": n})
    variants = list(dict.fromkeys(v for r in ok for v in r.get("description_variants", {})))
    for variant in variants:  # beside the score, never instead (lbee.bench.analysis)
        for meth in methods:
            m, h, n = mean_ci([r.get("description_variants", {}).get(variant, {}).get(meth) for r in ok])
            rows.append({"metric": f"description score ({variant})", "method": meth, "mean": m, "ci95": h, "n": n})
    for key, label in COUNTERFACTUAL_METRICS.items():  # beside the description score, never instead
        for meth in methods if any(r.get("counterfactual") for r in ok) else ():
            m, h, n = mean_ci([r.get("counterfactual", {}).get(meth, {}).get(key) for r in ok])
            rows.append({"metric": label, "method": meth, "mean": m, "ci95": h, "n": n})
    conf = [r["confirmation"] for r in ok if r.get("confirmation")]
    for what, label in (("blindspots", "blindspots' hypotheses"), ("others", "hypotheses matching no blindspot")):
        for rule, said in (("", ""), ("_at_q", ", q <= 0.05 alone (no effect asked)")):
            m, h, n = mean_ci(
                [c[f"{what}_confirmed{rule}"] / c[what] for c in conf if c[what] and f"{what}_confirmed{rule}" in c]
            )
            row = {"metric": f"confirmed (held out{said}): {label}", "method": "compose", "mean": m, "ci95": h, "n": n}
            rows.append(row)
    fails = [f for r in ok for f in r["failure_analysis"]]
    for cat in ("not_returned", "found", "merged", "impure"):
        m, h, n = mean_ci([f[cat] for f in fails])
        rows.append(
            {"metric": f"uncovered: {cat}", "method": "ward (LBEE split-and-cluster)", "mean": m, "ci95": h, "n": n}
        )
    regenerated = [r for r in records if r.get("attempts")]
    rows.append(
        {"metric": "ECs analysed", "method": "-", "mean": float(len(ok)), "ci95": float("nan"), "n": len(records)}
    )
    rows.append(
        {
            "metric": "ECs failed",
            "method": "-",
            "mean": float(len(records) - len(ok)),
            "ci95": float("nan"),
            "n": len(records),
        }
    )
    rows.append(
        {
            "metric": "ECs regenerated",
            "method": "-",
            "mean": float(len(regenerated)),
            "ci95": float("nan"),
            "n": len(records),
        }
    )
    rows.append(
        {
            "metric": "rejected candidates",
            "method": "-",
            "mean": float(sum(len(r.get("attempts", [])) for r in records)),
            "ci95": float("nan"),
            "n": len(records),
        }
    )
    return rows


def failure_notes(records):
    """One line per failed EC and per rejected candidate (why), for the bench's Markdown."""
    lines = []
    for r in records:
        for a in r.get("attempts", []):
            lines.append(f"- EC {r['seed']}: candidate seed {a['seed']} rejected: {a['reason']}")
        if "failed" in r:
            lines.append(f"- EC {r['seed']}: failed: {r['failed']}")
    return lines


def write_tables(rows, out_dir, notes=None):
    """``bench.csv`` and ``bench.md`` in ``out_dir``, replaced together; returns the Markdown text.

    Written in place one after the other, a kill between them left a csv of 3 ECs beside a md of 2, and one
    during the csv an empty file (sweep 32): they are staged and swapped as a pair.
    """
    import pandas as pd

    from ..io.staging import staged_entries

    out = Path(out_dir)
    table = pd.DataFrame(rows)
    lines = ["| metric | method | mean | 95% CI ± | n | SpotCheck Table 2 |", "|---|---|---|---|---|---|"]
    for r in rows:
        paper = ""
        if r["metric"] in ("DR", "FDR") and r["method"] in PAPER_TABLE2:
            paper = PAPER_TABLE2[r["method"]][0 if r["metric"] == "DR" else 1]
        lines.append(f"| {r['metric']} | {r['method']} | {r['mean']:.3f} | {r['ci95']:.3f} | {r['n']} | {paper} |")
    md = "\n".join(lines) + "\n"
    if notes:
        md += "\nRegenerated and failed ECs:\n\n" + "\n".join(notes) + "\n"
    with staged_entries(out, home=out, label="bench-tables") as stage:
        table.to_csv(stage / "bench.csv", index=False)
        (stage / "bench.md").write_text(md)
    return md
