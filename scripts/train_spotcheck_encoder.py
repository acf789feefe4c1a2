"""Train the SpotCheck-world encoder in two stages (deterministic for one machine and thread count; CPU).

Stage 1, the image tower: renders images from a dataset where every layer and
attribute is rollable, captions each with random partial subsets of its true
*positive* facts in varied wording, embeds the captions with the frozen
all-MiniLM-L6-v2 and trains the CNN image tower with a symmetric InfoNCE loss
onto those embeddings, plus an attribute loss: for every object the image
holds (and the background), the sentence of its value ("an image with a blue
circle") against its sibling values' ("... an orange circle"), the margin the
composed relevance (lbee.core.atoms) reads.

Stage 2, the text head, the tower locked: all-MiniLM-L6-v2 puts "an image with
no circle" at cosine 0.88 from "an image with a circle", and captions that state
absences, trained into the tower, cost it its presence and attribute AUCs
(commit 553fcff: presence 1.000 -> 0.824). So stage 2 trains only a small
residual head on the frozen sentence embeddings (``lbee.spotcheck._network.
TextHead``), as LiT locks one tower and tunes the other, with captions that may
state absences ("a square but no circle", "an image without text"; half worded
by the SpotCheck grammar, the demo's sentences, half in varied wording). Each
caption comes with hard negatives, captions that differ from it in one fact and
are false for its image (extra image->text columns of its own image); in-batch
negatives that are in fact true of an image are masked out exactly (from the
attributes); and the attribute loss of stage 1 goes on through the head.

Writes lbee/weights/spotcheck_encoder.pt with the default tau calibrated on
held-out renders (with the head). About 25 minutes on 2 busy cores, most of it
embedding the captions (``--text-cache DIR`` keeps them for a rerun).

    python scripts/train_spotcheck_encoder.py [--text-cache DIR]           # both stages
    python scripts/train_spotcheck_encoder.py --tower PATH                  # stage 2 on a trained tower
"""

import argparse
import hashlib
import time
from pathlib import Path

import numpy as np
import torch

from lbee.encoders._spotcheck import WEIGHTS, load_text_model
from lbee.spotcheck._captions import (
    CAPTION_VALUES,
    caption_from_conditions,
    hard_negative_conditions,
    sample_caption,
    sample_caption_conditions,
)
from lbee.spotcheck._network import ImageTower, TextHead, to_tensor
from lbee.spotcheck._render import render
from lbee.spotcheck._world import ATTRIBUTES, DatasetDefinition

UNIVERSAL = DatasetDefinition(["background", "square", "rectangle", "circle", "text"], list(ATTRIBUTES))
WIDTHS = (16, 32, 64, 128, 128)


def render_set(n, seed, size):
    rng = np.random.default_rng(seed)
    images, attrs = np.empty((n, size, size, 3), np.uint8), []
    for i in range(n):
        images[i], a = render(UNIVERSAL.sample_attributes(rng), rng, size)
        attrs.append(a)
    return images, attrs


def embed_captions(text, captions, cache=None):
    """Unit embeddings of ``captions`` by the frozen sentence encoder, read from ``cache`` (a folder) when there."""
    key = hashlib.sha256("\n".join(captions).encode()).hexdigest()[:16]
    path = None if cache is None else Path(cache) / f"captions-{key}.npy"
    if path is not None and path.is_file():
        return torch.tensor(np.load(path))
    bank = text.encode(captions, batch_size=256, normalize_embeddings=True, show_progress_bar=False)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, bank)
    return torch.tensor(bank)


def info_nce(img, txt, scale, mask=None, extra=None):
    """Symmetric InfoNCE of matching rows; ``mask`` (B, B) drops pairs that are no negatives, ``extra`` (B, H) are
    more image->text logits of each row's own hard negatives."""
    logits = scale * img @ txt.T
    if mask is not None:
        logits = logits.masked_fill(mask & ~torch.eye(len(img), dtype=torch.bool), -1e4)
    target = torch.arange(len(img))
    t2i = torch.nn.functional.cross_entropy(logits.T, target)
    if extra is not None:
        logits = torch.cat([logits, extra], dim=1)
    return (torch.nn.functional.cross_entropy(logits, target) + t2i) / 2


def train_tower(images, attrs, text, args, t0):
    """Stage 1: the image tower on positive captions (identical captions are not negatives of each other)."""
    rng = np.random.default_rng(1)
    captions = [[sample_caption(a, rng) for _ in range(args.captions_per_image)] for a in attrs]
    unique = sorted({c for cs in captions for c in cs})
    bank = embed_captions(text, unique, args.text_cache)
    lookup = {c: i for i, c in enumerate(unique)}
    cap_idx = torch.tensor([[lookup[c] for c in cs] for cs in captions])
    print(f"stage 1: {len(unique)} unique captions embedded ({time.time() - t0:.0f}s)", flush=True)
    atoms, sizes, labels = value_atoms(attrs, text, args.text_cache)
    x_all = to_tensor(images)
    model = ImageTower(out_dim=bank.shape[1], widths=WIDTHS, image_size=args.image_size)
    logit_scale = torch.nn.Parameter(torch.tensor(np.log(1 / 0.07), dtype=torch.float32))
    attr_scale = torch.nn.Parameter(torch.tensor(np.log(1 / 0.07), dtype=torch.float32))
    opt = torch.optim.AdamW(list(model.parameters()) + [logit_scale, attr_scale], lr=2e-3, weight_decay=1e-4)
    steps = args.epochs * ((len(images) + args.batch_size - 1) // args.batch_size)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=2e-3, total_steps=steps, pct_start=0.1)
    gen = torch.Generator().manual_seed(0)
    for epoch in range(args.epochs):
        model.train()
        perm = torch.randperm(len(images), generator=gen)
        total = 0.0
        for start in range(0, len(perm), args.batch_size):
            idx = perm[start : start + args.batch_size]
            pick = torch.randint(0, args.captions_per_image, (len(idx),), generator=gen)
            cids = cap_idx[idx, pick]
            img = model(x_all[idx])
            loss = info_nce(img, bank[cids], logit_scale.exp().clamp(max=100), mask=cids[:, None] == cids[None, :])
            if args.attribute_weight:
                loss = loss + args.attribute_weight * attribute_loss(
                    img, atoms, sizes, labels[idx], attr_scale.exp().clamp(max=100)
                )
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += loss.item() * len(idx)
        print(
            f"stage 1 epoch {epoch + 1}/{args.epochs} loss {total / len(perm):.3f} ({time.time() - t0:.0f}s)",
            flush=True,
        )
    return model.eval()


def _codes(dicts, missing):
    """(len(dicts), n_keys) int64: each dict's value index per CAPTION_VALUES key (``missing`` when absent)."""
    keys = list(CAPTION_VALUES)
    return torch.tensor(
        [[CAPTION_VALUES[k].index(d[k]) if d.get(k) in CAPTION_VALUES[k] else missing for k in keys] for d in dicts]
    )


def absence_captions(attrs, n_captions, n_hard, rng, p_grammar):
    """Stage 2's captions: texts and conditions per image, and each caption's hard-negative texts.

    A caption is worded by the SpotCheck grammar with probability ``p_grammar``, otherwise in varied wording; its
    hard negatives are worded the same way (half presence flips, half attribute flips when both exist).
    """
    from lbee.grammar import load_grammar

    grammar = load_grammar("spotcheck")
    conds = [[sample_caption_conditions(a, rng) for _ in range(n_captions)] for a in attrs]
    by_grammar = rng.random((len(attrs), n_captions)) < p_grammar
    worded = {}

    def word(c, g):
        key = (frozenset(c.items()), bool(g))
        if key not in worded:  # one wording per dict and style: fewer sentences to embed
            worded[key] = grammar.render(c) if g else caption_from_conditions(c, rng)
        return worded[key]

    texts = [[word(c, g) for c, g in zip(cs, gs)] for cs, gs in zip(conds, by_grammar)]
    hard = []
    for a, cs, gs in zip(attrs, conds, by_grammar):
        row = []
        for c, g in zip(cs, gs):
            presence, attribute = hard_negative_conditions(c, a)
            picks, first = [], int(rng.integers(2))
            for i in range(n_hard):
                pool = presence if ((i + first) % 2 == 0 and presence) or not attribute else attribute
                picks.append(word(pool[int(rng.integers(len(pool)))], g))
            row.append(picks)
        hard.append(row)
    return conds, texts, hard


def value_atoms(attrs, text, cache):
    """The grammar's one-value sentences per attribute ("an image with a blue circle" / "… an orange circle") and,
    per image, the index of its value (-1 where the subject is absent): the targets of the attribute loss."""
    from lbee.grammar import load_grammar

    grammar = load_grammar("spotcheck")
    keys = [(key, values) for key, values in grammar.keys() if key[1] != "presence"]
    texts = [grammar.atom_sentence(key[0], key[1], v) for key, values in keys for v in values]
    sizes = [len(values) for _, values in keys]

    def label(a, key, values):
        present = key[0] == "background" or a.get((key[0], "presence")) == "true"
        return values.index(a[key]) if present and a.get(key) in values else -1

    labels = torch.tensor([[label(a, key, values) for key, values in keys] for a in attrs])
    return embed_captions(text, texts, cache), sizes, labels


def attribute_loss(img, atoms, sizes, labels, scale):
    """Mean cross-entropy of each image's value of each attribute among its sibling values' sentences: what the
    composed relevance (lbee.core.atoms) reads, the margin between a value's sentence and its siblings'."""
    logits = scale * img @ atoms.T
    losses, start = [], 0
    for t, size in enumerate(sizes):
        y = labels[:, t]
        if (y >= 0).any():
            losses.append(torch.nn.functional.cross_entropy(logits[:, start : start + size], y, ignore_index=-1))
        start += size
    return torch.stack(losses).mean()


def train_head(tower, images, attrs, text, args, t0):
    """Stage 2: the text head on captions that may state absences, the tower locked."""
    torch.manual_seed(0)
    rng = np.random.default_rng(2)
    k, h = args.captions_per_image, args.hard_negatives
    conds, texts, hard = absence_captions(attrs, k, h, rng, args.p_grammar)
    unique = sorted({t for ts in texts for t in ts} | {t for row in hard for ts in row for t in ts})
    bank = embed_captions(text, unique, args.text_cache)
    lookup = {c: i for i, c in enumerate(unique)}
    cap_idx = torch.tensor([[lookup[t] for t in ts] for ts in texts])
    hard_idx = torch.tensor([[[lookup[t] for t in ts] for ts in row] for row in hard]).reshape(len(images), k, h)
    img_code = _codes(attrs, -2)
    cap_code = _codes([c for cs in conds for c in cs], -1).reshape(len(images), k, -1)
    assert ((cap_code == -1) | (cap_code == img_code[:, None])).all(-1).all(), "a caption is false of its image"
    with torch.no_grad():
        x = torch.cat([tower(to_tensor(images[i : i + 1024])) for i in range(0, len(images), 1024)])
    atoms, sizes, labels = value_atoms(attrs, text, args.text_cache)
    print(
        f"stage 2: {len(unique)} unique captions embedded, images embedded by the locked tower "
        f"({time.time() - t0:.0f}s)",
        flush=True,
    )
    head = TextHead(bank.shape[1], args.text_head)
    logit_scale = torch.nn.Parameter(torch.tensor(np.log(1 / 0.07), dtype=torch.float32))
    attr_scale = torch.nn.Parameter(torch.tensor(np.log(1 / 0.07), dtype=torch.float32))
    opt = torch.optim.AdamW(list(head.parameters()) + [logit_scale, attr_scale], lr=args.head_lr, weight_decay=1e-4)
    steps = args.head_epochs * ((len(images) + args.batch_size - 1) // args.batch_size)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.head_lr, total_steps=steps, pct_start=0.1)
    gen = torch.Generator().manual_seed(0)
    for epoch in range(args.head_epochs):
        head.train()
        perm = torch.randperm(len(images), generator=gen)
        total = 0.0
        for start in range(0, len(perm), args.batch_size):
            idx = perm[start : start + args.batch_size]
            pick = torch.randint(0, k, (len(idx),), generator=gen)
            scale = logit_scale.exp().clamp(max=100)
            img = x[idx]
            # a caption true of another image of the batch is no negative of it (exact, from the attributes)
            code = cap_code[idx, pick]
            true_of = ((code[None] == -1) | (code[None] == img_code[idx][:, None])).all(-1)
            extra = scale * torch.einsum("bd,bhd->bh", img, head(bank[hard_idx[idx, pick]]))
            loss = info_nce(img, head(bank[cap_idx[idx, pick]]), scale, mask=true_of, extra=extra)
            if args.attribute_weight:
                loss = loss + args.attribute_weight * attribute_loss(
                    img, head(atoms), sizes, labels[idx], attr_scale.exp().clamp(max=100)
                )
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += loss.item() * len(idx)
        if (epoch + 1) % 5 == 0 or epoch + 1 == args.head_epochs:
            print(
                f"stage 2 epoch {epoch + 1}/{args.head_epochs} loss {total / len(perm):.3f} ({time.time() - t0:.0f}s)",
                flush=True,
            )
    return head.eval()


def calibrate_tau(tower, head, text, image_size):
    """Midway between the mean true-pair and false-pair similarity of the spotcheck sentences on fresh renders."""
    from lbee.spotcheck._sentences import relevance_matrix, spotcheck_sentences

    images, attrs = render_set(2000, 123, image_size)
    sents = spotcheck_sentences()
    with torch.no_grad():
        iv = tower(to_tensor(images)).numpy()
        sv = head(
            torch.as_tensor(text.encode([s for s, _, _ in sents], normalize_embeddings=True, show_progress_bar=False))
        ).numpy()
    sims = iv @ sv.T
    rel = relevance_matrix(attrs, [c for _, c, _ in sents])
    tau = float((sims[rel].mean() + sims[~rel].mean()) / 2)
    print(f"tau = {tau:.3f} (true pairs {sims[rel].mean():.3f}, false pairs {sims[~rel].mean():.3f})")
    return tau


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-images", type=int, default=16000)
    ap.add_argument("--epochs", type=int, default=15, help="stage 1")
    ap.add_argument("--captions-per-image", type=int, default=4)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--image-size", type=int, default=64)
    ap.add_argument(
        "--tower",
        type=Path,
        default=None,
        help="skip stage 1: the image tower of this checkpoint (e.g. the shipped one)",
    )
    ap.add_argument("--text-head", type=int, default=768, help="hidden width of the text head")
    ap.add_argument("--head-epochs", type=int, default=30)
    ap.add_argument("--head-lr", type=float, default=1e-3)
    ap.add_argument("--hard-negatives", type=int, default=2, help="hard negatives per caption (stage 2)")
    ap.add_argument("--p-grammar", type=float, default=0.5, help="share of stage 2 captions worded by the grammar")
    ap.add_argument(
        "--attribute-weight",
        type=float,
        default=1.0,
        help="weight of the attribute loss (each value's sentence against its siblings', both stages)",
    )
    ap.add_argument("--text-cache", type=Path, default=None, help="a folder caching the captions' embeddings")
    ap.add_argument("--out", type=Path, default=WEIGHTS)
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True, warn_only=True)
    t0 = time.time()
    images, attrs = render_set(args.n_images, 0, args.image_size)
    print(f"rendered {len(images)} images ({time.time() - t0:.0f}s)", flush=True)
    text = load_text_model()
    if args.tower is None:
        tower = train_tower(images, attrs, text, args, t0)
        stage1 = {"n_images": args.n_images, "epochs": args.epochs, "attribute_weight": args.attribute_weight}
    else:
        ckpt = torch.load(args.tower, map_location="cpu", weights_only=True)
        cfg = ckpt["config"]
        tower = ImageTower(out_dim=cfg["out_dim"], widths=tuple(cfg["widths"]), image_size=cfg["image_size"])
        tower.load_state_dict({k: v.float() for k, v in ckpt["state_dict"].items()})
        tower.eval()
        stage1 = {"n_images": cfg.get("n_images"), "epochs": cfg.get("epochs"), "from": args.tower.name}
    for p in tower.parameters():
        p.requires_grad_(False)
    head = train_head(tower, images, attrs, text, args, t0)
    tau = calibrate_tau(tower, head, text, args.image_size)
    half = lambda m: {k: v.half() if v.is_floating_point() else v for k, v in m.state_dict().items()}  # noqa: E731
    args.out.parent.mkdir(parents=True, exist_ok=True)
    torch.save(
        {
            "state_dict": half(tower),
            "text_head": half(head),
            "config": {
                "out_dim": 384,
                "widths": list(WIDTHS),
                "image_size": args.image_size,
                "tau": tau,
                "text_model": "all-MiniLM-L6-v2",
                "text_head": args.text_head,
                **stage1,
                "head": {
                    "n_images": args.n_images,
                    "epochs": args.head_epochs,
                    "lr": args.head_lr,
                    "hard_negatives": args.hard_negatives,
                    "p_grammar": args.p_grammar,
                    "attribute_weight": args.attribute_weight,
                },
            },
        },
        args.out,
    )
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.1f} MB) in {time.time() - t0:.0f}s")


if __name__ == "__main__":
    main()
