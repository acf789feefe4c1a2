"""How often the condition a finding "may need too" (`narrower`) is a condition of a planted failure.

Runs `lbee.audit` with confirmation on worlds of `lbee bench worlds`' families, at one encoder quality, with the
worlds' Γ as the regions or the encoder's own reading, and checks each statement's `narrower` condition against
the worlds' planted failures. Prints one line per condition said and the totals::

    python scripts/narrowing_check.py                    # 3 families x seeds 0-2, AUC 0.88, by Γ and by the encoder
    python scripts/narrowing_check.py --seeds 1000 1003 --quality 0.97
"""

from __future__ import annotations

import argparse
import tempfile
import warnings
from pathlib import Path

import numpy as np


def check(family, seed, quality, by_gamma, n, sentence_set):
    """(conditions of a planted failure, others) said on one world, printing each."""
    import lbee
    from lbee.bench.simulated_encoder import SimulatedEncoder
    from lbee.bench.worlds import make_world
    from lbee.grammar import parse_conditions

    world = make_world(family, n=n, random_state=seed)
    g = world.grammar
    enc = SimulatedEncoder(g, random_state=seed).fit_quality(world, quality)
    x = enc.embed_images(world).astype(np.float32)
    s = enc.embed_sentences(sentence_set.conditions).astype(np.float32)
    gamma = np.stack([world.holds(c) for c in sentence_set.conditions], 1) if by_gamma else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # bare arrays: no provenance to read
        result = lbee.audit(
            x,
            s,
            sentences=sentence_set,
            confidence=world.confidence,
            performance=world.correct.astype(float),
            relevance=gamma,
            tau=float(enc.default_tau(world, x)),
        )
    truths = [g.implied(dict(f)).items() for f in world.failures]
    good = bad = 0
    for st in result.main.extra["confirmation"].get("statements", []):
        said = st.get("narrower")
        if not said:
            continue
        literal = next(iter(parse_conditions(said["condition"]).items()))
        ok = any(literal in t for t in truths)
        good, bad = good + ok, bad + (not ok)
        print(f"  {family} {seed} {'failure   ' if ok else 'NOT planted'} \"{st['text']}\" + '{said['phrase']}'")
    return good, bad


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", nargs="+", default=["street_scenes", "object_photos", "camera_traps"])
    parser.add_argument("--seeds", nargs=2, type=int, default=[0, 3], metavar=("FIRST", "STOP"))
    parser.add_argument("--quality", type=float, default=0.88, help="median atom ROC-AUC of the simulated encoder")
    parser.add_argument("--n", type=int, default=6000, help="images per world")
    args = parser.parse_args(argv)
    from click.testing import CliRunner

    from lbee.cli import cli
    from lbee.io.sentences import load_sentence_set

    folder = Path(tempfile.mkdtemp())
    sets = {}
    for family in args.families:
        out = folder / f"{Path(family).name.removesuffix('.grammar.yaml')}.txt"
        r = CliRunner().invoke(cli, ["sentences", "generate", family, "--out", str(out)])
        assert r.exit_code == 0, r.output
        sets[family] = load_sentence_set(out)
    for by_gamma in (True, False):
        good = bad = 0
        print(f"regions by {'the given Γ' if by_gamma else 'the encoder'}:")
        for family in args.families:
            for seed in range(*args.seeds):
                g, b = check(family, seed, args.quality, by_gamma, args.n, sets[family])
                good, bad = good + g, bad + b
        print(
            f"by {'Γ' if by_gamma else 'the encoder'}: {good} of {good + bad} conditions said are a planted failure's"
        )


if __name__ == "__main__":
    main()
