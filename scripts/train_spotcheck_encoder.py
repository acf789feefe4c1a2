"""Train the SpotCheck-world encoder (deterministic; CPU, about ten minutes on 2 cores).

Renders images from a dataset where every layer and attribute is rollable,
captions each with random partial subsets of its true facts in varied wording,
embeds the captions with the frozen all-MiniLM-L6-v2, and trains the CNN image
tower with a symmetric InfoNCE loss onto those embeddings. Writes
lbee/weights/spotcheck_encoder.pt with the calibrated default tau.

    python scripts/train_spotcheck_encoder.py [--n-images 16000] [--epochs 15]
"""

import argparse
import time
from pathlib import Path

import numpy as np
import torch

from lbee.encoders._spotcheck import WEIGHTS, load_text_model
from lbee.spotcheck._network import ImageTower, to_tensor
from lbee.spotcheck._render import render
from lbee.spotcheck._sentences import sample_caption
from lbee.spotcheck._world import ATTRIBUTES, DatasetDefinition

UNIVERSAL = DatasetDefinition(["background", "square", "rectangle", "circle", "text"], list(ATTRIBUTES))


def render_set(n, seed, size):
    rng = np.random.default_rng(seed)
    images, attrs = np.empty((n, size, size, 3), np.uint8), []
    for i in range(n):
        images[i], a = render(UNIVERSAL.sample_attributes(rng), rng, size)
        attrs.append(a)
    return images, attrs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-images", type=int, default=16000)
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--captions-per-image", type=int, default=4)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--image-size", type=int, default=64)
    ap.add_argument("--out", type=Path, default=WEIGHTS)
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True, warn_only=True)
    t0 = time.time()
    images, attrs = render_set(args.n_images, 0, args.image_size)
    rng = np.random.default_rng(1)
    captions = [[sample_caption(a, rng) for _ in range(args.captions_per_image)] for a in attrs]
    unique = sorted({c for cs in captions for c in cs})
    print(f"rendered {len(images)} images, {len(unique)} unique captions ({time.time() - t0:.0f}s)", flush=True)
    text = load_text_model()
    bank = torch.tensor(text.encode(unique, batch_size=256, normalize_embeddings=True, show_progress_bar=False))
    lookup = {c: i for i, c in enumerate(unique)}
    cap_idx = torch.tensor([[lookup[c] for c in cs] for cs in captions])
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
            logits = logit_scale.exp().clamp(max=100) * img @ txt.T
            # captions repeat across images: identical captions are not negatives of each other
            same = cids[:, None] == cids[None, :]
            logits = logits.masked_fill(same & ~torch.eye(len(idx), dtype=torch.bool), -1e4)
            target = torch.arange(len(idx))
            loss = (torch.nn.functional.cross_entropy(logits, target)
                    + torch.nn.functional.cross_entropy(logits.T, target)) / 2
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
                                                "n_images": args.n_images, "epochs": args.epochs}}, args.out)
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.1f} MB) in {time.time() - t0:.0f}s")


if __name__ == "__main__":
    main()
