"""How well 'compose' turns similarities into probabilities, on worlds of any grammar (issue 31, item 2).

For every world (``lbee.bench.worlds.make_world``) and encoder quality (median atom ROC-AUC of the simulated
encoder), the atoms' literal probabilities (``lbee.core.atoms.literal_probabilities``, the marginal P of each
literal that states a presence or a value) are compared with the world's truth:

- **ECE**: expected calibration error, 10 equal-width bins of P, the mean |P − holds| gap weighted by bin size,
  averaged over literals;
- **Brier** score, averaged over literals;
- **flat**: the share of literals whose P takes one value for every image (information discarded);
- **Spearman**: rank correlation of P with the atom's own similarity, median over literals (1: the ranking kept).

Usage: python benchmarks/bench_calibration.py [--worlds 3] [--n 10000] [--levels 0.75,0.88,0.97]
"""

import argparse
import warnings

import numpy as np
from scipy.stats import spearmanr

from lbee.bench.simulated_encoder import SimulatedEncoder
from lbee.bench.worlds import make_world
from lbee.core.atoms import literal_probabilities
from lbee.grammar import embedded_atoms

FAMILIES = ("street_scenes", "object_photos", "camera_traps")


def ece(p, truth, bins=10):
    idx = np.minimum((p * bins).astype(int), bins - 1)
    gap = 0.0
    for b in range(bins):
        m = idx == b
        if m.any():
            gap += m.mean() * abs(p[m].mean() - truth[m].mean())
    return gap


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worlds", type=int, default=3)
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--levels", default="0.75,0.88,0.97")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    print("| median atom AUC | ECE | Brier | flat literals | Spearman with the similarity |")
    print("|---|---|---|---|---|")
    for level in (float(q) for q in args.levels.split(",")):
        eces, briers, flats, rhos = [], [], [], []
        for family in FAMILIES:
            for seed in range(args.worlds):
                world = make_world(family, n=args.n, random_state=seed)
                enc = SimulatedEncoder(world.grammar, random_state=seed).fit_quality(world, level)
                x = enc.embed_images(world)
                _, conds = embedded_atoms(world.grammar)
                s = enc.embed_sentences(conds)
                lits = literal_probabilities(x, s, conds, enc.default_tau(world, x), world.grammar)
                sims = x @ s.T
                col = {next(iter(c.items())): j for j, c in enumerate(conds)}
                for j, (key, value) in enumerate(lits.keys):
                    if (key, value) not in col:
                        continue  # "no X": 1 - P(X)
                    p = lits.probs[:, j]
                    truth = world.holds({key: value}).astype(float)
                    eces.append(ece(p, truth))
                    briers.append(np.mean((p - truth) ** 2))
                    flats.append(np.ptp(p) < 1e-9)
                    if np.ptp(p) > 0:
                        rhos.append(spearmanr(p, sims[:, col[(key, value)]]).statistic)
        print(
            f"| {level:.2f} | {np.mean(eces):.3f} | {np.mean(briers):.3f} | {np.mean(flats):.1%} | "
            f"{np.median(rhos):.3f} |"
        )


if __name__ == "__main__":
    main()
