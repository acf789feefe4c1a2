"""Train the SpotCheck-world encoder (deterministic; CPU, about ten minutes on 2 cores).

Renders images from a dataset where every layer and attribute is rollable,
captions each with random partial subsets of its true facts in varied wording
(absences included: "a square but no circle", "an image without text"),
embeds the captions with the frozen all-MiniLM-L6-v2, and trains the CNN image
tower with a symmetric InfoNCE loss onto those embeddings. Two refinements:

- in-batch negatives that are in fact true of the image (exact, from the
  attributes: "an image with no text" is true of half the batch) are masked out;
- every caption comes with hard negatives, captions that differ from it in one
  fact and are false for its image ("a square and a circle" for "a square but no
  circle", a colour / size / texture / background / position flipped); they are
  extra columns of the image->text logits of their own image only. A hard
  negative reuses the wording of a training caption with the same conditions
  when there is one (fewer sentences to embed).

Writes lbee/weights/spotcheck_encoder.pt with the calibrated default tau.

    python scripts/train_spotcheck_encoder.py [--n-images 16000] [--epochs 15] [--hard-negatives 2]
"""

import argparse
import time
from pathlib import Path

import numpy as np
import torch

from lbee.encoders._spotcheck import WEIGHTS, load_text_model
from lbee.spotcheck._network import ImageTower, to_tensor
from lbee.spotcheck._render import render
from lbee.spotcheck._sentences import (CAPTION_VALUES, caption_from_conditions, hard_negative_conditions,
                                       sample_caption_conditions)
from lbee.spotcheck._world import ATTRIBUTES, DatasetDefinition

UNIVERSAL = DatasetDefinition(["background", "square", "rectangle", "circle", "text"], list(ATTRIBUTES))


def render_set(n, seed, size):
    rng = np.random.default_rng(seed)
    images, attrs = np.empty((n, size, size, 3), np.uint8), []
    for i in range(n):
        images[i], a = render(UNIVERSAL.sample_attributes(rng), rng, size)
        attrs.append(a)
    return images, attrs


def encode_attributes(attrs):
    """(n, n_keys) int64: index of each image's value among CAPTION_VALUES[key] (-2 when neither)."""
    keys = list(CAPTION_VALUES)
    return torch.tensor([[CAPTION_VALUES[k].index(a[k]) if a.get(k) in CAPTION_VALUES[k] else -2 for k in keys]
                         for a in attrs])


def encode_conditions(conds):
    """(n, n_keys) int64: the value index each condition dict requires (-1 when unconstrained)."""
    keys = list(CAPTION_VALUES)
    return torch.tensor([[CAPTION_VALUES[k].index(c[k]) if k in c else -1 for k in keys] for c in conds])


def build_captions(attrs, n_captions, n_hard, rng):
    """Captions (texts and conditions) per image and hard-negative texts per caption."""
    cap_conds = [[sample_caption_conditions(a, rng) for _ in range(n_captions)] for a in attrs]
    cap_text = [[caption_from_conditions(c, rng) for c in cs] for cs in cap_conds]
    by_conds = {}
    for cs, ts in zip(cap_conds, cap_text):
        for c, t in zip(cs, ts):
            by_conds.setdefault(frozenset(c.items()), t)
    hard = []
    for a, cs in zip(attrs, cap_conds):
        row = []
        for c in cs:
            presence, attribute = hard_negative_conditions(c, a)
            picks, first = [], int(rng.integers(2))
            for i in range(n_hard):
                pool = presence if ((i + first) % 2 == 0 and presence) or not attribute else attribute
                neg = pool[int(rng.integers(len(pool)))]
                key = frozenset(neg.items())
                if key not in by_conds:
                    by_conds[key] = caption_from_conditions(neg, rng)
                picks.append(by_conds[key])
            row.append(picks)
        hard.append(row)
    return cap_conds, cap_text, hard


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-images", type=int, default=16000)
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--captions-per-image", type=int, default=4)
    ap.add_argument("--hard-negatives", type=int, default=2, help="hard negatives per caption")
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--image-size", type=int, default=64)
    ap.add_argument("--out", type=Path, default=WEIGHTS)
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True, warn_only=True)
    t0 = time.time()
    images, attrs = render_set(args.n_images, 0, args.image_size)
    rng = np.random.default_rng(1)
    cap_conds, captions, hard = build_captions(attrs, args.captions_per_image, args.hard_negatives, rng)
    unique = sorted({c for cs in captions for c in cs} | {t for row in hard for ts in row for t in ts})
    print(f"rendered {len(images)} images, {len(unique)} unique captions ({time.time() - t0:.0f}s)", flush=True)
    text = load_text_model()
    bank = torch.tensor(text.encode(unique, batch_size=256, normalize_embeddings=True, show_progress_bar=False))
    lookup = {c: i for i, c in enumerate(unique)}
    cap_idx = torch.tensor([[lookup[c] for c in cs] for cs in captions])
    hard_idx = torch.tensor([[[lookup[t] for t in ts] for ts in row] for row in hard]).reshape(
        len(images), args.captions_per_image, args.hard_negatives)
    img_code = encode_attributes(attrs)
    cap_code = encode_conditions([c for cs in cap_conds for c in cs]).reshape(len(images), args.captions_per_image, -1)
    assert ((cap_code == -1) | (cap_code == img_code[:, None])).all(-1).all(), "a caption is false of its image"
    print(f"embedded captions ({time.time() - t0:.0f}s)", flush=True)

    x_all = to_tensor(images)
    model = ImageTower(out_dim=bank.shape[1], image_size=args.image_size)
    logit_scale = torch.nn.Parameter(torch.tensor(np.log(1 / 0.07), dtype=torch.float32))
    opt = torch.optim.AdamW(list(model.parameters()) + [logit_scale], lr=2e-3, weight_decay=1e-4)
    steps = args.epochs * ((len(images) + args.batch_size - 1) // args.batch_size)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=2e-3, total_steps=steps, pct_start=0.1)
    gen = torch.Generator().manual_seed(0)
    for epoch in range(args.epochs):
        model.train()
        perm = torch.randperm(len(images), generator=gen)
        total = 0.0
        for start in range(0, len(perm), args.batch_size):
            idx = perm[start:start + args.batch_size]
            pick = torch.randint(0, args.captions_per_image, (len(idx),), generator=gen)
            cids = cap_idx[idx, pick]
            img = model(x_all[idx])
            txt = bank[cids]
            scale = logit_scale.exp().clamp(max=100)
            logits = scale * img @ txt.T
            # a caption true of another image of the batch is no negative of it (exact, from the attributes)
            code = cap_code[idx, pick]
            true_of = ((code[None] == -1) | (code[None] == img_code[idx][:, None])).all(-1)
            logits = logits.masked_fill(true_of & ~torch.eye(len(idx), dtype=torch.bool), -1e4)
            target = torch.arange(len(idx))
            loss_t2i = torch.nn.functional.cross_entropy(logits.T, target)
            if args.hard_negatives:  # extra image->text columns, each row its own caption's hard negatives
                hn = scale * torch.einsum("bd,bhd->bh", img, bank[hard_idx[idx, pick]])
                logits = torch.cat([logits, hn], dim=1)
            loss = (torch.nn.functional.cross_entropy(logits, target) + loss_t2i) / 2
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += loss.item() * len(idx)
        print(f"epoch {epoch + 1}/{args.epochs} loss {total / len(perm):.3f} ({time.time() - t0:.0f}s)", flush=True)

    # Calibrate tau on fresh renders: midway between mean true-pair and false-pair similarity.
    from lbee.spotcheck._sentences import relevance_matrix, spotcheck_sentences

    model.eval()
    val_images, val_attrs = render_set(2000, 123, args.image_size)
    sents = spotcheck_sentences()
    with torch.no_grad():
        iv = model(to_tensor(val_images)).numpy()
    sv = text.encode([s for s, _, _ in sents], normalize_embeddings=True, show_progress_bar=False)
    sims = iv @ sv.T
    rel = relevance_matrix(val_attrs, [c for _, c, _ in sents])
    tau = float((sims[rel].mean() + sims[~rel].mean()) / 2)
    print(f"tau = {tau:.3f} (true pairs {sims[rel].mean():.3f}, false pairs {sims[~rel].mean():.3f})")
    state = {k: v.half() if v.is_floating_point() else v for k, v in model.state_dict().items()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"state_dict": state, "config": {"out_dim": int(bank.shape[1]), "widths": [16, 32, 64, 128, 128],
                                                "image_size": args.image_size, "tau": tau,
                                                "text_model": "all-MiniLM-L6-v2",
                                                "n_images": args.n_images, "epochs": args.epochs,
                                                "captions": "absences+hard-negatives",
                                                "hard_negatives": args.hard_negatives}}, args.out)
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.1f} MB) in {time.time() - t0:.0f}s")


if __name__ == "__main__":
    main()
