"""RFS on two SpotCheck worlds: a model that can only use the object vs one given a background shortcut.

Both worlds label an image by whether it holds a square (SpotCheck's task) and
draw every other attribute at random; in the *shortcut* world the background
colour also predicts the label (grey with a square, white without), in train
and test alike. The same small CNN (lbee.spotcheck's SquareClassifier) is
trained on each, briefly, on CPU; then RIVAL10 §5.1's noise analysis runs on
each world's test split with the renderer's exact object masks (all shapes).

Expected: the object model has a clearly higher RFS than the shortcut model.

    python scripts/rfs_spotcheck.py [--n-train 2000] [--epochs 8] [--n-test 300] [--trials 5] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np


def make_world(kind, n, rng, size=64):
    from lbee.spotcheck import DatasetDefinition, render
    from lbee.spotcheck._world import ATTRIBUTES

    layers = ["square", "rectangle", "circle", "text"]
    rollable = [k for k in ATTRIBUTES if k not in (("square", "presence"), ("background", "color"))]
    world = DatasetDefinition(layers, rollable)
    images = np.empty((n, size, size, 3), np.uint8)
    masks = np.empty((n, size, size), bool)
    labels = rng.integers(0, 2, n)
    for i, y in enumerate(labels):
        if kind == "shortcut":
            color = "grey" if y else "white"
        else:
            color = "grey" if rng.random() < 0.5 else "white"
        attrs = world.sample_attributes(
            rng, {("square", "presence"): "true" if y else "false", ("background", "color"): color}
        )
        images[i], _, masks[i] = render(attrs, rng, size, return_mask=True)
    return images, masks, labels.astype(np.int64)


def main(argv=None):
    import torch

    from lbee.analyses.sensitivity import Preprocess, region_sensitivity
    from lbee.spotcheck import train_classifier

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-train", type=int, default=2000)
    ap.add_argument("--n-test", type=int, default=300)
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="Write both summaries to this JSON file.")
    args = ap.parse_args(argv)
    torch.set_num_threads(2)
    sigmas = (30, 60, 90, 120, 150, 180, 210)
    results = {}
    for kind in ("objects", "shortcut"):
        rng = np.random.default_rng(args.seed)
        t0 = time.perf_counter()
        x_tr, _, y_tr = make_world(kind, args.n_train, rng)
        x_te, m_te, y_te = make_world(kind, args.n_test, rng)
        model = train_classifier(x_tr, y_tr, epochs=args.epochs, random_state=args.seed)
        t_train = time.perf_counter() - t0
        res = region_sensitivity(
            model,
            list(x_te),
            list(m_te),
            y_te,
            sigmas=sigmas,
            trials=args.trials,
            seed=args.seed,
            preprocess=Preprocess.preset("spotcheck"),
            class_names=["no square", "square"],
            batch_size=256,
        )
        s = res.summary
        results[kind] = s
        print(
            f"\n[{kind}] trained in {t_train:.0f} s; test clean accuracy {s['accuracy_clean']:.3f}, "
            f"background grayed {s['accuracy_gray_background']:.3f}, mean fg fraction "
            f"{res.table['fg_fraction'].mean():.3f}"
        )
        print(f"  {'sigma':>5} {'a_fg':>6} {'a_bg':>6} {'RFS':>7}")
        for b in s["per_sigma"]:
            r = "n/a" if b["rfs"] is None else f"{b['rfs']:+.3f}"
            print(f"  {b['sigma']:>5g} {b['a_fg']:>6.3f} {b['a_bg']:>6.3f} {r:>7}")
        print(f"  RFS mean over σ {s['rfs_mean']:+.3f}; mean iRFS {s['irfs_mean']:+.3f}")
    print(
        f"\nRFS (mean over σ): objects {results['objects']['rfs_mean']:+.3f}, "
        f"background shortcut {results['shortcut']['rfs_mean']:+.3f}"
    )
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
