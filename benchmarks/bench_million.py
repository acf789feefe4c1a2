"""A million images on one machine (issue 35): time and peak memory of the whole analysis from a memory-mapped .npy.

The data (written to --dir in row blocks, never held whole): n unit embeddings, d = 512, of a world of 10
subjects with a colour and a size each (50 atom sentences: bench_compose.py's grammar), three planted failures
of four conditions; φ is lower on the failures; N = 1,400 sentences (the 50 atoms and 1,350 random ones);
Γ (n x N, bool, memory-mapped) is the atoms' truth and 5 % random relevance elsewhere.

Each stage runs in its own process, which reports its time and its peak RSS (``ru_maxrss``):

- baseline: one pass ``X @ S.T`` (float32) over the memory-mapped X, in 16,384-row blocks (the whole product,
  n x 1,400 float32, would not fit in the budget at 1M), best of two;
- analysis: ``lbee.partition`` (split + Ward), the merging into one hypothesis per failure (50-atom grammar),
  the five describers, 'compose', and the metrics of the five (S* once, as ``lbee.analyses`` compute them),
  from ``np.load(mmap_mode="r")``;
- agreement: the same analysis on the first 50,000 rows, memory-mapped and in memory: ARI of the hard groups
  and the sentences of every method;
- per class: ``explain_per_class`` with metrics, 1,000 classes x 50 images, serial, ratio to its own pass;
- Domino's EM: ``DominoSlicer`` against ``sklearn.mixture.GaussianMixture`` (diag), n x 128, 15 iterations.

Usage: python benchmarks/bench_million.py [--n 1000000] [--dir /tmp/lbee-million] [--skip STAGE ...]
(never more than one run at a time on a shared machine: at 1M the data is 2 GB and the analysis peaks at
several GB).
"""

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_compose import SUBJECTS, grammar_text  # noqa: E402

D, N_SENT, TAU, C, SUBSET = 512, 1400, 0.09, 15, 50_000
CHUNK = 50_000  # rows generated at a time
PASS_BLOCK = 16_384


def world_block(i0, i1, d, dirs):
    """Rows i0:i1 of the world (seeded by i0): unit embeddings (float32), φ, the atoms' truth (m, 50)."""
    rng = np.random.default_rng([7, i0])
    m = i1 - i0
    present = rng.random((m, SUBJECTS)) < 0.5
    colour = rng.integers(0, 2, (m, SUBJECTS))
    size = rng.integers(0, 2, (m, SUBJECTS))
    truth = np.zeros((m, 5 * SUBJECTS), bool)
    for s in range(SUBJECTS):
        truth[:, 5 * s] = present[:, s]
        truth[:, 5 * s + 1] = present[:, s] & (colour[:, s] == 0)
        truth[:, 5 * s + 2] = present[:, s] & (colour[:, s] == 1)
        truth[:, 5 * s + 3] = present[:, s] & (size[:, s] == 0)
        truth[:, 5 * s + 4] = present[:, s] & (size[:, s] == 1)
    x = rng.normal(scale=0.15, size=(m, d)).astype(np.float32) + (truth.astype(np.float32) @ dirs)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    fail = (
        (present[:, 0] & present[:, 1] & (colour[:, 0] == 0) & ~present[:, 2])
        | (present[:, 3] & ~present[:, 4] & (colour[:, 3] == 1) & present[:, 5])
        | (~present[:, 6] & present[:, 7] & (colour[:, 7] == 0) & present[:, 8])
    )
    phi = rng.normal(size=m) - 2.5 * fail
    return x, phi, truth


def make_data(n, folder):
    """Write X.npy (memory-mappable), phi.npy, S.npy, atoms.npy and gamma.npy (bool, n x N) into ``folder``."""
    from numpy.lib.format import open_memmap

    os.makedirs(folder, exist_ok=True)
    stamp = os.path.join(folder, f"done-{n}")
    if os.path.exists(stamp):
        return
    rng = np.random.default_rng(0)
    dirs = rng.normal(size=(5 * SUBJECTS, D))
    dirs = (dirs / np.linalg.norm(dirs, axis=1, keepdims=True)).astype(np.float32)
    rest = rng.normal(size=(N_SENT - len(dirs), D)).astype(np.float32)
    S = np.concatenate([dirs, rest / np.linalg.norm(rest, axis=1, keepdims=True)])
    X = open_memmap(os.path.join(folder, "X.npy"), mode="w+", dtype=np.float32, shape=(n, D))
    G = open_memmap(os.path.join(folder, "gamma.npy"), mode="w+", dtype=bool, shape=(n, N_SENT))
    phi = np.empty(n)
    for i0 in range(0, n, CHUNK):
        i1 = min(i0 + CHUNK, n)
        x, p, truth = world_block(i0, i1, D, dirs)
        X[i0:i1], phi[i0:i1] = x, p
        G[i0:i1, : truth.shape[1]] = truth
        G[i0:i1, truth.shape[1] :] = np.random.default_rng([9, i0]).random((i1 - i0, N_SENT - truth.shape[1])) < 0.05
    X.flush()
    G.flush()
    del X, G
    np.save(os.path.join(folder, "phi.npy"), phi)
    np.save(os.path.join(folder, "S.npy"), S)
    np.save(os.path.join(folder, "atoms.npy"), dirs)
    open(stamp, "w").close()


def peak_gb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def analysis(X, phi, S, atoms, gamma):
    """The whole analysis: split, Ward, merging, the five describers, compose, metrics. -> (explanations, part)."""
    import lbee
    from lbee.core.selection import METHODS
    from lbee.core.sentence_index import SentenceIndex
    from lbee.grammar import embedded_atoms, parse_grammar

    g = parse_grammar(grammar_text(), source="bench")
    texts, conds = embedded_atoms(g)
    atom_index = SentenceIndex(atoms, conditions=list(conds), grammar=g)
    index = SentenceIndex(S)
    part = lbee.partition(X, confidence=phi, n_clusters=C)
    part.merge(atom_index, tau=TAU, k=3)
    exps = {m: part.describe(index, m, k=3, tau=TAU) for m in METHODS}
    exps["compose"] = part.describe(atom_index, "compose", k=3, tau=TAU, sentences=list(texts))
    omega = (np.asarray(phi) > -1.0).astype(float)
    # the metrics as lbee's analyses compute them for several methods (per class, sweeps): S* once, then each
    # explanation; compose's sentences are conjunctions outside the N columns of Γ: the five describers are scored
    from lbee.core.evaluation import failure_sentences, score_explanation

    star = set(failure_sentences(gamma, omega).tolist())
    metrics = {m: score_explanation(e, gamma, star) for m, e in exps.items() if m != "compose"}
    return exps, part, metrics


def stage(name, folder, n):
    """Run one stage in this process; print one JSON line."""
    out = {"stage": name}
    load = lambda f, **kw: np.load(os.path.join(folder, f), **kw)  # noqa: E731
    if name == "baseline":
        X, S = load("X.npy", mmap_mode="r"), load("S.npy")
        best = float("inf")
        for _ in range(2):
            t0 = time.perf_counter()
            for i0 in range(0, n, PASS_BLOCK):
                np.asarray(X[i0 : i0 + PASS_BLOCK]) @ S.T
            best = min(best, time.perf_counter() - t0)
        out["seconds"] = best
    elif name == "analysis":
        import warnings

        warnings.simplefilter("ignore")
        X, phi, S, atoms, gamma = (
            load("X.npy", mmap_mode="r"),
            load("phi.npy"),
            load("S.npy"),
            load("atoms.npy"),
            load("gamma.npy", mmap_mode="r"),
        )
        t0 = time.perf_counter()
        exps, part, metrics = analysis(X, phi, S, atoms, gamma)
        out["seconds"] = time.perf_counter() - t0
        out["n_hard"], out["groups"] = int(part.n_hard_), len(part.hard_groups_)
        out["compose"] = [exps["compose"].sentence_texts[c.sentences[0]] for c in exps["compose"].hard_clusters]
        out["fpdiff_JI"] = metrics["fpdiff"]["JI"]
    elif name == "agreement":
        import warnings

        from sklearn.metrics import adjusted_rand_score

        warnings.simplefilter("ignore")
        m = min(SUBSET, n)
        X, phi, S, atoms, gamma = (
            load("X.npy", mmap_mode="r")[:m],
            load("phi.npy")[:m],
            load("S.npy"),
            load("atoms.npy"),
            load("gamma.npy", mmap_mode="r")[:m],
        )
        lazy, p1, _ = analysis(X, phi, S, atoms, gamma)
        full, p2, _ = analysis(np.array(X), phi, S, atoms, np.array(gamma))

        def labels(p):
            lab = np.full(m, -1)
            for i, grp in enumerate(p.hard_groups_):
                lab[grp] = i
            return lab

        out["ari"] = adjusted_rand_score(labels(p1), labels(p2))
        out["same_sentences"] = all(
            [c.sentences for c in lazy[k].hard_clusters] == [c.sentences for c in full[k].hard_clusters]
            and lazy[k].sentence_texts == full[k].sentence_texts
            for k in lazy
        )
    elif name == "per_class":
        out.update(per_class())
    elif name == "domino":
        out.update(domino(n))
    out["peak_gb"] = peak_gb()
    print(json.dumps(out))


def per_class(n_classes=1000, per=50):
    # imports the call makes on first use (pandas, SciPy's distances, fastcluster): paid once per process, not timed
    import fastcluster  # noqa: F401
    import pandas  # noqa: F401
    import scipy.spatial  # noqa: F401

    from lbee.analyses.per_class import explain_per_class

    rng = np.random.default_rng(0)
    n = n_classes * per
    centres = rng.normal(size=(n_classes, D))
    labels = np.repeat(np.arange(n_classes), per)
    X = centres[labels] / np.sqrt(D) + 0.8 * rng.normal(size=(n, D)) / np.sqrt(D) * 8
    X = (X / np.linalg.norm(X, axis=1, keepdims=True)).astype(np.float32)
    S = rng.normal(size=(1410, D))
    S = (S / np.linalg.norm(S, axis=1, keepdims=True)).astype(np.float32)
    preds = np.where(rng.random(n) < 0.25, rng.integers(0, n_classes, n), labels)
    rel = rng.random((n, 1410)) < 0.05
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        X @ S.T
        best = min(best, time.perf_counter() - t0)
    t0 = time.perf_counter()
    explain_per_class(X, S, labels=labels, preds=preds, n_clusters=5, relevance=rel, n_jobs=1)
    return {"seconds": time.perf_counter() - t0, "pass": best}


def domino(n, d=128, k=25):
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.mixture import GaussianMixture

    from lbee.slicers import DominoSlicer

    rng = np.random.default_rng(0)
    X = rng.normal(size=(k, d))[rng.integers(k, size=n)] * 3 + rng.normal(size=(n, d))
    y = rng.integers(2, size=n)
    p = np.clip(y + rng.normal(0, 0.3, size=n), 0, 1)
    dom = DominoSlicer(
        n_mixture_components=k, n_pca_components=None, max_iter=15, tol=0.0, init_params="random", random_state=0
    )
    gmm = GaussianMixture(
        k, covariance_type="diag", max_iter=15, tol=0.0, init_params="random", reg_covar=1e-6, random_state=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        t0 = time.perf_counter()
        dom.fit(X, y, p)
        t_lbee = time.perf_counter() - t0
        t0 = time.perf_counter()
        gmm.fit(X)
        t_sk = time.perf_counter() - t0
    return {"lbee": t_lbee, "sklearn": t_sk}


def run_stage(name, root, n):
    cmd = [sys.executable, os.path.abspath(__file__), "--stage", name, "--dir", root, "--n", str(n)]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode:
        sys.exit(f"stage {name} failed:\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--dir", default="/tmp/lbee-million")
    ap.add_argument("--stage", help=argparse.SUPPRESS)
    ap.add_argument("--skip", nargs="*", default=[], help="stages to skip: agreement per_class domino")
    args = ap.parse_args()
    folder = os.path.join(args.dir, str(args.n))
    if args.stage:
        return stage(args.stage, folder, args.n)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}")
    t0 = time.perf_counter()
    make_data(args.n, folder)
    emb_gb = args.n * D * 4 / 2**30
    print(
        f"data: n = {args.n:,}, d = {D}, N = {N_SENT} ({time.perf_counter() - t0:.0f} s to write; "
        f"embeddings {emb_gb:.2f} GB float32, memory-mapped)"
    )
    base = run_stage("baseline", args.dir, args.n)
    print(f"baseline: one X @ S.T pass (blocked, from the memory map): {base['seconds']:.2f} s")
    a = run_stage("analysis", args.dir, args.n)
    print(
        f"whole analysis (split, Ward, merging, 5 describers, compose, metrics): {a['seconds']:.2f} s = "
        f"{a['seconds'] / base['seconds']:.2f}x the pass (goal <= 3x); peak RSS {a['peak_gb']:.2f} GB = "
        f"{a['peak_gb'] / emb_gb:.2f}x the embeddings (goal <= 8 GB at 1M); hard split {a['n_hard']:,}, "
        f"{a['groups']} hypotheses; compose: {a['compose']}"
    )
    if "agreement" not in args.skip:
        g = run_stage("agreement", args.dir, args.n)
        print(
            f"memory-mapped vs in memory, first {min(SUBSET, args.n):,} rows: ARI {g['ari']:.3f}, "
            f"same sentences: {g['same_sentences']}"
        )
    if "per_class" not in args.skip:
        p = run_stage("per_class", args.dir, args.n)
        print(
            f"per class (explain_per_class + metrics, 1,000 x 50, serial): {p['seconds']:.2f} s = "
            f"{p['seconds'] / p['pass']:.1f}x its pass ({p['pass']:.3f} s; goal <= 4x)"
        )
    if "domino" not in args.skip:
        dm = run_stage("domino", args.dir, args.n)
        print(
            f"Domino EM, {args.n:,} x 128, 25 components, 15 iterations: lbee {dm['lbee']:.2f} s, "
            f"sklearn {dm['sklearn']:.2f} s = {dm['lbee'] / dm['sklearn']:.2f}x (goal <= 1.5x)"
        )


if __name__ == "__main__":
    main()
