r"""Text->image ROC-AUC of SpotCheck encoders against the exact relevance Γ, by kind of sentence.

Renders fresh held-out SpotCheck images (every layer and attribute rollable, as the
training script's dataset; a seed the training never uses), embeds them with each
encoder, and for every sentence scores all images by cosine similarity; the AUC is
taken against Γ computed exactly from the render attributes. A row gives, per kind,
the number of sentences and the median AUC (min in brackets) of each encoder:

- presence ("An image with a circle"), pairs of objects, absence alone ("An image
  with no circle", "An image without a circle"), absence beside a present object
  ("An image with a circle but no text"), and the spotcheck set's own "no X"
  sentences ("An image with a square but no circle": the acceptance criterion);
- each attribute: size / colour / texture of an object, background colour /
  texture, the square's position and number (the set's single-attribute sentences);
- random conjunctions of 1-6 conditions that some image satisfies, in the sentence
  set's wording, positive only and with at least one absence. The size counts the
  conditions of Γ: an object's attribute brings its presence ("a small circle" = 2).

    python benchmarks/bench_encoder_auc.py                                  # the shipped encoder
    python benchmarks/bench_encoder_auc.py --weights old=/tmp/old_encoder.pt \
        --weights new=lbee/weights/spotcheck_encoder.pt

CPU, about a minute for 2,000 images and two encoders.
"""

import argparse
import os
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

OBJECTS = ("square", "rectangle", "circle", "text")


def universal_renders(n, seed, size=64):
    """``n`` renders where every layer and attribute is rollable, and their attributes."""
    from lbee.spotcheck import ATTRIBUTES, DatasetDefinition, render

    d = DatasetDefinition(["background", *OBJECTS], list(ATTRIBUTES))
    rng = np.random.default_rng(seed)
    images, attrs = np.empty((n, size, size, 3), np.uint8), []
    for i in range(n):
        images[i], a = render(d.sample_attributes(rng), rng, size)
        attrs.append(a)
    return images, attrs


def _noun(layer, article=True):
    if layer == "text":
        return "text"
    return f"a {layer}" if article else layer


def sentence(conds):
    """The sentence set's wording for a condition dict ("An image with a small blue circle but no text ...")."""
    from lbee.spotcheck._sentences import VALUE_WORDS, value_words

    present = [l_ for l_ in OBJECTS if conds.get((l_, "presence")) == "true"]
    absent = [l_ for l_ in OBJECTS if conds.get((l_, "presence")) == "false"]
    objs = []
    for layer in present:
        words = [value_words(layer, a)[conds[(layer, a)]] for a in VALUE_WORDS if (layer, a) in conds]
        if layer == "square" and ("square", "number") in conds:
            two = conds[("square", "number")] == "2"
            objs.append(" ".join(["two" if two else "a single", *words, "squares" if two else "square"]))
        elif layer == "text":
            objs.append(" ".join(words + ["text"]) if words else "some text")
        else:
            phrase = " ".join(words + [layer])
            objs.append(("an " if phrase[0] in "aeiou" else "a ") + phrase)
    text = "An image"
    if objs:
        text += " with " + " and ".join(objs)
        if absent:
            text += " but no " + " and no ".join(_noun(l_, False) for l_ in absent)
    elif absent:
        text += " with no " + " and no ".join(_noun(l_, False) for l_ in absent)
    bg = (
        [{"grey": "grey", "white": "white"}[conds[("background", "color")]]] if ("background", "color") in conds else []
    )
    if ("background", "texture") in conds:
        bg.append("noisy" if conds[("background", "texture")] == "noise" else "clean")
    if bg:
        text += f" on a {' '.join(bg)} background"
    if ("background", "position") in conds:
        text += f" where the square is {conds[('background', 'position')]} the center"
    return text


def random_conjunction(k, rng, *, absence):
    """A condition dict of exactly ``k`` conditions true of some image (None when the draw fails).

    With ``absence`` it holds at least one absent object, otherwise none.
    """
    from lbee.spotcheck import ATTRIBUTES, DatasetDefinition

    attrs = DatasetDefinition(["background", *OBJECTS], list(ATTRIBUTES)).sample_attributes(rng)
    if attrs[("square", "presence")] == "true":
        attrs[("background", "position")] = str(rng.choice(["above", "below"]))
    present = [l_ for l_ in OBJECTS if attrs[(l_, "presence")] == "true"]
    absent = [l_ for l_ in OBJECTS if l_ not in present]
    if absence and not absent:
        return None
    facts = [[(l_, "presence")] for l_ in present]
    facts += [[(l_, "presence"), (l_, a)] for l_ in present for a in ("size", "color", "texture")]
    facts += [[("background", "color")], [("background", "texture")]]
    if "square" in present:
        facts += [[("square", "presence"), ("square", "number")], [("background", "position")]]
    chosen = set()
    if absence:
        chosen.add((str(rng.choice(absent)), "presence"))
        facts += [[(l_, "presence")] for l_ in absent]
    for i in rng.permutation(len(facts)):
        if len(chosen | set(facts[i])) <= k:
            chosen |= set(facts[i])
        if len(chosen) == k:
            return {key: attrs[key] for key in chosen}
    return None


def sentence_kinds(n_conj, seed):
    """{kind: [(sentence, conditions)]} in table order."""
    from lbee.spotcheck import spotcheck_sentences

    kinds = {}
    single = [(s, c) for s, c, flag in spotcheck_sentences() if flag]
    kinds["presence"] = [(s, c) for s, c in single if len(c) == 1 and next(iter(c))[1] == "presence"]
    kinds["pair of objects"] = [
        (s, c)
        for s, c, _ in spotcheck_sentences()
        if len(c) == 2 and all(k[1] == "presence" and v == "true" for k, v in c.items())
    ]
    kinds["absence alone (no X / without X)"] = [
        (f"An image with no {_noun(l_, False)}", {(l_, "presence"): "false"}) for l_ in OBJECTS
    ] + [(f"An image without {_noun(l_)}", {(l_, "presence"): "false"}) for l_ in OBJECTS]
    kinds["absence beside an object (a Y but no X)"] = [
        (
            sentence({(y, "presence"): "true", (x, "presence"): "false"}),
            {(y, "presence"): "true", (x, "presence"): "false"},
        )
        for y in OBJECTS
        for x in OBJECTS
        if x != y
    ]
    kinds["absence, spotcheck set ('no X')"] = [(s, c) for s, c, _ in spotcheck_sentences() if " no " in s]
    for label, pick in [
        ("object size", lambda k: k[1] == "size"),
        ("object colour", lambda k: k[1] == "color" and k[0] != "background"),
        ("object texture", lambda k: k[1] == "texture" and k[0] != "background"),
        ("background colour", lambda k: k == ("background", "color")),
        ("background texture", lambda k: k == ("background", "texture")),
        ("square position", lambda k: k == ("background", "position")),
        ("number of squares", lambda k: k == ("square", "number")),
    ]:
        kinds[label] = [(s, c) for s, c in single if any(pick(k) for k in c)]
    rng = np.random.default_rng(seed)
    for absence in (False, True):
        for k in range(2 if absence else 1, 7):
            found = {}
            for _ in range(50 * n_conj):  # few distinct sentences of one or two conditions exist
                if len(found) == n_conj:
                    break
                c = random_conjunction(k, rng, absence=absence)
                if c is not None:
                    found.setdefault(sentence(c), c)
            kinds[f"conjunction of {k}{' with an absence' if absence else ''}"] = list(found.items())
    return kinds


def aucs(X, S, rel, min_pos):
    """ROC-AUC per sentence column (NaN where fewer than ``min_pos`` images are relevant or irrelevant)."""
    from sklearn.metrics import roc_auc_score

    scores = X @ S.T
    out = np.full(rel.shape[1], np.nan)
    for j in range(rel.shape[1]):
        if min_pos <= rel[:, j].sum() <= len(rel) - min_pos:
            out[j] = roc_auc_score(rel[:, j], scores[:, j])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--weights",
        action="append",
        default=None,
        metavar="[NAME=]PATH",
        help="an encoder checkpoint (repeatable); default the shipped one",
    )
    ap.add_argument("--n-images", type=int, default=2000)
    ap.add_argument("--n-conjunctions", type=int, default=40, help="random sentences per conjunction size")
    ap.add_argument("--seed", type=int, default=7, help="held out: training renders use seeds 0 and 123")
    ap.add_argument("--min-positives", type=int, default=10)
    args = ap.parse_args()

    import torch

    from lbee.encoders._spotcheck import WEIGHTS, SpotCheckEncoder, load_text_model
    from lbee.spotcheck import relevance_matrix

    torch.set_num_threads(min(2, os.cpu_count() or 1))
    named = []
    for spec in args.weights or [f"shipped={WEIGHTS}"]:
        name, _, path = spec.rpartition("=")
        named.append((name or Path(path).stem, Path(path)))
    t0 = time.time()
    images, attrs = universal_renders(args.n_images, args.seed)
    kinds = sentence_kinds(args.n_conjunctions, args.seed + 1)
    flat = [(kind, s, c) for kind, rows in kinds.items() for s, c in rows]
    rel = relevance_matrix(attrs, [c for _, _, c in flat])
    text = load_text_model()
    results, taus = {}, {}
    for name, path in named:
        enc = SpotCheckEncoder(path, text_model=text)
        S = enc.encode_text([s for _, s, _ in flat])
        results[name] = aucs(enc.encode_arrays(images), S, rel, args.min_positives)
        taus[name] = enc.default_tau
    names = [n for n, _ in named]
    print(
        f"SpotCheck encoder text->image ROC-AUC vs exact Γ: {args.n_images} fresh renders (seed {args.seed}, "
        f"every attribute rollable); median (min) over the sentences of each kind"
    )
    width = max(len(k) for k in kinds) + 2
    header = f"{'kind':<{width}}{'n':>4}" + "".join(f"{n:>18}" for n in names)
    print(header)
    print("-" * len(header))
    kind_of = np.array([k for k, _, _ in flat])
    for kind in kinds:
        cols = kind_of == kind
        cells = []
        for n in names:
            v = results[n][cols]
            v = v[~np.isnan(v)]
            cells.append(f"{np.median(v):.3f} ({v.min():.3f})" if len(v) else "n/a")
        n_used = int((~np.isnan(results[names[0]][cols])).sum())
        print(f"{kind:<{width}}{n_used:>4}" + "".join(f"{c:>18}" for c in cells))
    print("-" * len(header))
    print(f"{'default tau':<{width}}{'':>4}" + "".join(f"{taus[n]:>18.3f}" for n in names))
    print(f"({time.time() - t0:.0f}s)")


if __name__ == "__main__":
    main()
