"""Time the 'compose' describer at scale, as a ratio to one dense pass ``X @ S.T`` measured in the same run.

n = 50,000 images, d = 512; a grammar of 10 deniable subjects with two
two-valued attributes each: 50 atoms (10 presences, 40 values) and 10 denials,
up to 6 conditions (about 10^7 conjunctions, never enumerated); 15 hard groups
(three planted failures of four conditions, each cut into five pieces). Timed:
the literal probabilities (atom similarities, calibration) and the beam search
of all 15 groups (K = 3), then the merging into one hypothesis per failure.
The baseline is the best of three passes of ``X @ S.T`` with N = 1,400
sentences (the scale benchmark's, ``bench_analysis.py``). Goal: compose <= 2x.
It also counts the groups whose first sentence says exactly their planted
failure's conditions.

Usage: python benchmarks/bench_compose.py [--n 50000]
"""

import argparse
import os
import platform
import time

import numpy as np

from lbee.core.atoms import literal_probabilities
from lbee.core.compose import ComposeSearch
from lbee.core.hypotheses import one_hypothesis_per_failure
from lbee.grammar import count_conjunctions, parse_grammar

SUBJECTS = 10


def grammar_text():
    lines = ["name: bench", "lead: An image with", "subjects:"]
    for s in range(SUBJECTS):
        lines += [
            f"  - id: thing{s}",
            f"    noun: thing{s}",
            "    deniable: true",
            "    attributes:",
            "      - id: colour",
            f"        values: {{red: red{s}, blue: blue{s}}}",
            "      - id: size",
            f"        values: {{small: small{s}, large: large{s}}}",
        ]
    return "\n".join(lines) + "\n"


def world(n, d, rng):
    """Random attributes; an image embeds the directions of what holds for it, plus noise."""
    g = parse_grammar(grammar_text(), source="bench")
    conds = []
    for s in range(SUBJECTS):
        conds.append({(f"thing{s}", "presence"): "true"})
        for attr, values in (("colour", ("red", "blue")), ("size", ("small", "large"))):
            for v in values:
                conds.append({(f"thing{s}", attr): v})
    present = rng.random((n, SUBJECTS)) < 0.5
    colour = rng.integers(0, 2, (n, SUBJECTS))
    size = rng.integers(0, 2, (n, SUBJECTS))
    dirs = rng.normal(size=(len(conds), d))
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    x = rng.normal(scale=0.15, size=(n, d)).astype(np.float32)
    for s in range(SUBJECTS):
        base = 5 * s
        x += present[:, s : s + 1] * dirs[base]
        x += (present[:, s] * (colour[:, s] == 0))[:, None] * dirs[base + 1]
        x += (present[:, s] * (colour[:, s] == 1))[:, None] * dirs[base + 2]
        x += (present[:, s] * (size[:, s] == 0))[:, None] * dirs[base + 3]
        x += (present[:, s] * (size[:, s] == 1))[:, None] * dirs[base + 4]
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return g, conds, dirs.astype(np.float32), x, present, colour


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=50_000)
    ap.add_argument("--d", type=int, default=512)
    args = ap.parse_args()
    import scipy.stats  # noqa: F401  (the merging's binomial test: an import paid once per process, not timed)

    rng = np.random.default_rng(0)
    g, conds, atoms, x, present, colour = world(args.n, args.d, rng)
    # three planted failures of four conditions; each cut into five pieces at random (Ward's pieces)
    fails = [
        present[:, 0] & present[:, 1] & (colour[:, 0] == 0) & ~present[:, 2],
        present[:, 3] & ~present[:, 4] & (colour[:, 3] == 1) & present[:, 5],
        ~present[:, 6] & present[:, 7] & (colour[:, 7] == 0) & present[:, 8],
    ]
    hard = np.zeros(args.n, bool)
    groups = []
    for f in fails:
        idx = np.flatnonzero(f & ~hard)
        hard[idx] = True
        groups += np.array_split(rng.permutation(idx), 5)
    S = rng.normal(size=(1400, args.d)).astype(np.float32)
    S /= np.linalg.norm(S, axis=1, keepdims=True)
    base = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        x @ S.T
        base = min(base, time.perf_counter() - t0)
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores; n = {args.n:,}, d = {args.d}, "
        f"{len(conds)} atoms, up to 6 conditions: {count_conjunctions(g, 6):,} conjunctions (not enumerated)"
    )
    print(f"baseline X @ S.T (N = 1,400): {base:.3f} s")
    t0 = time.perf_counter()
    # τ as an encoder sets it: between the similarity of an atom that holds (about 0.17 here) and one that does not (0)
    lits = literal_probabilities(x, atoms, conds, tau=0.09, grammar=g)
    t_lit = time.perf_counter() - t0
    t0 = time.perf_counter()
    search = ComposeSearch(lits, g, np.flatnonzero(~hard))
    found = [search.search(grp, k=3) for grp in groups]
    t_search = time.perf_counter() - t0
    t0 = time.perf_counter()
    hyps, _ = one_hypothesis_per_failure(search, groups, hard)
    t_merge = time.perf_counter() - t0
    total = t_lit + t_search
    print(f"literal probabilities: {t_lit:.3f} s ({t_lit / base:.2f}x)")
    print(f"beam search, 15 groups: {t_search:.3f} s ({t_search / base:.2f}x)")
    print(f"compose (both): {total:.3f} s = {total / base:.2f}x one X @ S.T pass (goal <= 2x)")
    print(
        f"merging into one hypothesis per failure: {t_merge:.3f} s ({t_merge / base:.2f}x); "
        f"{len(groups)} groups -> {len(hyps)} hypotheses"
    )
    planted = [
        {("thing0", "presence"): "true", ("thing1", "presence"): "true", ("thing0", "colour"): "red"},
        {("thing3", "presence"): "true", ("thing4", "presence"): "false", ("thing3", "colour"): "blue"},
        {("thing6", "presence"): "false", ("thing7", "presence"): "true", ("thing7", "colour"): "red"},
    ]
    planted[0][("thing2", "presence")] = "false"
    planted[1][("thing5", "presence")] = "true"
    planted[2][("thing8", "presence")] = "true"
    right = sum(g.implied(f[0].conditions) == g.implied(planted[i // 5]) for i, f in enumerate(found))
    print(f"groups whose first sentence says exactly their planted failure's four conditions: {right} / {len(groups)}")


if __name__ == "__main__":
    main()
