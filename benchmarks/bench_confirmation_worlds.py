"""Confirmation on worlds of other grammars (issue 33): which hypotheses confirm, with and without the test beyond
the groups above.

Worlds of `lbee bench worlds` (street scenes, object photos, camera traps; 10,000 images, two planted failures
with confounders, a simulated encoder of median atom ROC-AUC ``--level``), on the held-out seeds 1000 on. Each
world is analysed as `lbee describe` does (``lbee.run.pipeline.analyse``: compose, C = 15, K = 3, 30 % held out),
once as it is and once with the test beyond the groups above turned off (every confirmed statement then counts
on its own). A hypothesis *matches* a failure when at least half of its images lie in it.

Prints per family and in all: the hypotheses that match a failure and how many confirm, those that match none
and how many confirm (the false confirmations the test is for), and the planted failures with a confirmed
hypothesis; each by the run's rule (q <= 0.05 and a region failing surely at least twice as often) and by issue
33's definition beside it (q <= 0.05 alone).

Usage: python benchmarks/bench_confirmation_worlds.py [--worlds 6] [--first-seed 1000] [--level 0.88]
"""

import argparse

import numpy as np

import lbee.run.confirm as confirm
import lbee.run.confirm_rank as confirm_rank
from lbee.bench.simulated_encoder import SimulatedEncoder
from lbee.bench.world_bench import FAMILIES
from lbee.bench.worlds import make_world
from lbee.grammar import generate, load_grammar
from lbee.run.pipeline import analyse
from lbee.run.settings import RunSettings
from lbee.run.specs import RunInputs, Scores

WITH_TEST = confirm_rank.beyond_the_groups_above


#: The run's rule (q <= 0.05 and at least twice as often), and issue 33's definition beside it (q <= 0.05 alone).
RULES = {"confirmed": "q and effect", "confirmed_at_q": "q alone"}


def without_test(lead, *args, **kwargs):
    return [None] * len(lead)


def one_world(family, level, seed, beyond):
    g = load_grammar(family)
    world = make_world(g, n=10_000, n_failures=2, random_state=seed)
    enc = SimulatedEncoder(g, random_state=seed).fit_quality(world, level)
    x = enc.embed_images(world)
    texts, conditions, _ = generate(g)
    tau = enc.default_tau(world, x)
    inputs = RunInputs(
        x,
        enc.embed_sentences(conditions),
        list(texts),
        [f"img{i}" for i in range(world.n)],
        None,
        None,
        None,
        None,
        "none",
        tau,
        {"encoder": "simulated"},
        f"{family}.grammar",
        sentence_conditions=conditions,
        grammar=g,
    )
    scores = Scores(world.confidence, world.correct.astype(float), "φ", "correctness")
    test = WITH_TEST if beyond else without_test
    confirm.beyond_the_groups_above = confirm_rank.beyond_the_groups_above = test
    try:
        result = analyse(inputs, scores, RunSettings(methods=("compose",), clusters=15, k=3, tau=tau)).main
    finally:
        confirm.beyond_the_groups_above = confirm_rank.beyond_the_groups_above = WITH_TEST
    masks = world.failure_masks()
    # per rule: matching, matching confirmed, other, other confirmed, failures confirmed
    counts = {rule: np.zeros(5, int) for rule in RULES}
    found = {rule: set() for rule in RULES}
    groups = result.extra["confirmation"]["groups"]
    for cluster, group in zip(result.explanations["compose"].hard_clusters, groups):
        idx = np.asarray(cluster.indices)
        share = masks[idx].mean(axis=0) if len(idx) else np.zeros(masks.shape[1])
        for rule in RULES:
            if share.max() >= 0.5:
                counts[rule][:2] += (1, group[rule])
                if group[rule]:
                    found[rule].add(int(share.argmax()))
            else:
                counts[rule][2:4] += (1, group[rule])
    for rule in RULES:
        counts[rule][4] = len(found[rule])
    return counts


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worlds", type=int, default=6)
    ap.add_argument("--first-seed", type=int, default=1000)
    ap.add_argument("--level", type=float, default=0.88)
    args = ap.parse_args()
    seeds = range(args.first_seed, args.first_seed + args.worlds)
    print(f"{args.worlds} worlds per family (seeds {seeds[0]}-{seeds[-1]}), median atom AUC {args.level:g}")
    total = {(b, r): np.zeros(5, int) for b in (False, True) for r in RULES}
    for family in FAMILIES:
        for beyond in (False, True):
            per = [one_world(family, args.level, s, beyond) for s in seeds]
            name = "with the test beyond the groups above" if beyond else "each statement on its own"
            for rule, said in RULES.items():
                c = sum(p[rule] for p in per)
                total[beyond, rule] += c
                print(
                    f"  {family:<14} {name:<40} {said:<12} matching a failure: {c[1]} of {c[0]} confirm; matching "
                    f"none: {c[3]} of {c[2]} confirm; failures with a confirmed hypothesis: {c[4]} of {2 * len(seeds)}"
                )
    for beyond in (False, True):
        for rule, said in RULES.items():
            c = total[beyond, rule]
            print(
                f"all, {'with the test' if beyond else 'on its own':<14} {said:<12} matching none confirm: {c[3]} of "
                f"{c[2]} ({c[3] / max(c[2], 1):.0%}); matching a failure: {c[1]} of {c[0]}; failures: {c[4]} of "
                f"{2 * len(seeds) * len(FAMILIES)}"
            )


if __name__ == "__main__":
    main()
