"""Can lbee say "no"? Text→image ROC-AUC of the demo set's "no X" sentences, against the exact Γ.

The demo world (``make_ec(seed)``; seed 0 uses the shipped classifier), the SpotCheck grammar's sentences up to
two conditions, and every sentence with an absence ("An image with a square but no circle") that is true of some
test images and false of others. Two scores per sentence: the cosine similarity of its own embedding (the
SpotCheck encoder, trained on captions that never state an absence) and the composed relevance of its atoms
(``lbee.core.atoms``: 1 − P(X present) for "no X"). Median and minimum AUC of each.

Usage: python benchmarks/bench_absence.py [--seed 0] [--weights [NAME=]PATH ...]
"""

import argparse

import numpy as np
from sklearn.metrics import roc_auc_score

from lbee.core.atoms import composed_relevance, literal_probabilities
from lbee.encoders import create_encoder
from lbee.encoders._spotcheck import SpotCheckEncoder
from lbee.grammar import generate, load_grammar
from lbee.run.inputs import spotcheck_relevance
from lbee.spotcheck import make_ec


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--weights",
        action="append",
        default=None,
        metavar="[NAME=]PATH",
        help="a SpotCheck encoder checkpoint (repeatable); default the shipped one",
    )
    args = ap.parse_args()
    ec = make_ec(args.seed)
    g = load_grammar("spotcheck")
    texts, conds, _ = generate(g, 2)
    neg = [j for j, c in enumerate(conds) if any(k[1] == "presence" and v == "false" for k, v in c.items())]
    rel = spotcheck_relevance(ec.attributes["test"], [conds[j] for j in neg], g)
    keep = [t for t in range(len(neg)) if 0 < rel[:, t].sum() < len(rel)]
    print(
        f"demo world seed {args.seed}: {len(keep)} 'no X' sentences of the demo set, "
        f"{len(ec.images['test'])} test images"
    )
    for spec in args.weights or [None]:
        name, _, path = (spec or "").rpartition("=")
        enc = create_encoder("spotcheck") if spec is None else SpotCheckEncoder(path)
        X, S = enc.encode_arrays(ec.images["test"]), enc.encode_text(texts)
        lits = literal_probabilities(X, S, conds, enc.default_tau, g)
        probs, _ = composed_relevance(lits, [conds[j] for j in neg], g)
        sims = X @ S[neg].T
        own = [roc_auc_score(rel[:, t], sims[:, t]) for t in keep]
        comp = [roc_auc_score(rel[:, t], probs[:, t]) for t in keep]
        print(f"encoder {name or path or 'shipped'}:")
        print(f"  the sentence's own embedding:  median AUC {np.median(own):.3f} (min {np.min(own):.3f})")
        print(f"  composed relevance (1 - P(X)): median AUC {np.median(comp):.3f} (min {np.min(comp):.3f})")


if __name__ == "__main__":
    main()
