"""The bench's counterfactual columns on the demo world, per describer, beside the description score.

The demo world (``make_ec(seed)``; seed 0 uses the shipped classifiers, no training), analysed as ``lbee demo``
does (``protocol="lbee"``, 15 hard clusters, K = 3) and as the bench does (``protocol="paper"``). For each
describer: the description score, and on fresh renders (:func:`lbee.bench.counterfactual.blindspot_counterfactuals`,
200 per statement and per one-condition variant) the model's accuracy where the first sentence describing each
covered blindspot holds, and the share of its conditions the failure needs. Also the seconds the check took
beside the seconds of the analysis, in the same run.

Usage: python benchmarks/bench_counterfactual.py [--seed 0] [--n-images 200]
"""

import argparse
import time

from lbee.bench import analyze_ec
from lbee.bench.counterfactual import blindspot_counterfactuals
from lbee.encoders import create_encoder
from lbee.spotcheck import N_COUNTERFACTUAL, make_ec


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n-images", type=int, default=N_COUNTERFACTUAL)
    args = ap.parse_args()
    ec = make_ec(args.seed)
    enc = create_encoder("spotcheck")
    print(f"demo world seed {args.seed} (EC {ec.seed}): blindspots {ec.describe_blindspots()}")
    for protocol, clusters in (("lbee", 15), ("paper", None)):
        t0 = time.perf_counter()
        analysis = analyze_ec(ec, enc, protocol=protocol, n_clusters=clusters, k=3, a=0.2)
        t1 = time.perf_counter()
        cf = blindspot_counterfactuals(ec, analysis, n_images=args.n_images)
        t2 = time.perf_counter()
        print(
            f"\nprotocol {protocol}: analysis {t1 - t0:.1f} s, counterfactual check {t2 - t1:.1f} s "
            f"({args.n_images} renders per statement and per variant)"
        )
        print(f"  {'describer':<8} {'description score':>17} {'accuracy where it holds':>24} {'conditions needed':>18}")
        for m, score in analysis.description_score.items():
            print(f"  {m:<8} {score:>17.2f} {cf[m]['accuracy']:>24.2f} {cf[m]['needed']:>18.2f}")
        for m, details in analysis.description_details.items():
            for d in details:
                c = d.get("counterfactual")
                if c is not None:
                    print(f'    {m} blindspot {d["blindspot"]}: "{c["statement"]}" {c["holds"]["accuracy"]:.2f}')


if __name__ == "__main__":
    main()
