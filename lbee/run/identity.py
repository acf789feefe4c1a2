"""An encoder's identity in words: which encoder, which weights, and whether they are random.

Every report of a run says what produced its sentences (the terminal, ``report.md``,
the HTML page and the service's run page all read these functions): the encoder,
its weights (a pretrained tag, a checkpoint digest, or ``@random``) and τ. A run on
random weights carries `RANDOM_WEIGHTS_BANNER`, because its sentences look
like real CLIP output and mean nothing.
"""

from __future__ import annotations

from ..encoders import RANDOM_WEIGHTS_BANNER  # one text for every place (lbee.encoders)

#: Characters of a sha256 digest shown (the whole digest stays in explanation.json).
DIGEST_SHOWN = 12


def is_random_weights(identity):
    """Whether an encoder identity (`lbee.encoders.Encoder.identity`) has seeded random weights."""
    weights = (identity or {}).get("weights")
    return isinstance(weights, str) and weights.startswith("random:")


def is_random_spec(spec):
    """Whether an encoder spec (``open_clip:ViT-B-32@random``) asks for random weights; False for a bad spec."""
    from ..encoders import is_random_tag, parse_encoder_spec

    try:
        return is_random_tag(parse_encoder_spec(spec)[2])
    except ValueError:
        return False


def encoder_words(identity):
    """``'open_clip ViT-B-32'``: the encoder and its model; precomputed embeddings say so."""
    identity = identity or {}
    name = identity.get("encoder") or "unknown encoder"
    if name == "precomputed":
        return "unknown (precomputed embeddings without a provenance record)"
    model = identity.get("model")
    return f"{name} {model}" if model else str(name)


def weights_words(identity):
    """The weights in words.

    ``'pretrained tag laion2b_s34b_b79k'``, ``'checkpoint sha256:2d164f5d11ce…'``,
    ``'@random (seed 0)'``, an ``hf-hub:`` name, or ``'unknown'``.
    """
    weights = (identity or {}).get("weights")
    if not isinstance(weights, str) or not weights:
        return "unknown"
    if weights.startswith("tag:"):
        return f"pretrained tag {weights[len('tag:') :]}"
    if weights.startswith("sha256:"):
        return f"checkpoint sha256:{weights[len('sha256:') :][:DIGEST_SHOWN]}…"
    if is_random_weights(identity):
        seed = weights.split(":")[1].removeprefix("seed=")  # 'random:seed=0:<fingerprint>'
        return f"@random (seed {seed})"
    return weights


def random_weights_banner(identity):
    """The banner of a run whose sentences mean nothing, or None.

    `RANDOM_WEIGHTS_BANNER` when the weights are random; the encoder's caveat when it was run on images it
    cannot describe (``identity['caveat']``: the SpotCheck encoder on images of no saved SpotCheck world).
    """
    caveat = (identity or {}).get("caveat")
    if isinstance(caveat, str) and caveat:
        return "Meaningless sentences: the " + caveat
    if not is_random_weights(identity):
        return None
    return RANDOM_WEIGHTS_BANNER.format(encoder=encoder_words(identity))


def means_nothing(identity):
    """Whether a run of this encoder identity (any value read from a file) has sentences that mean nothing.

    Random weights, or an encoder's caveat: `random_weights_banner` is said. Its findings say so (trial 37).
    """
    return random_weights_banner(identity if isinstance(identity, dict) else None) is not None


#: What a run on lbee's simulated encoder (`lbee.bench.simulated_encoder`) finds, said in every report of it: a
#: page shared without the how-to read as an image model's findings (trial 29).
SIMULATED_NOTE = (
    "The embeddings come from lbee's simulated encoder, which reads an attribute table, not the pixels: what this "
    "run finds is what the table says."
)


def encoder_note(identity):
    """`SIMULATED_NOTE` for a run on the simulated encoder, else None.

    A note, not a warning: its sentences mean what the table means.
    """
    return SIMULATED_NOTE if (identity or {}).get("encoder") == "simulated" else None


def spec_banner(spec, images=None):
    """The banner a run on encoder ``spec`` will carry, known before any embedding (None when it carries none)."""
    from .models import encoder_caveat

    caveat = encoder_caveat(spec, images)
    if caveat is None:
        return None
    if is_random_spec(spec):
        return RANDOM_WEIGHTS_BANNER.format(encoder=spec.rsplit("@", 1)[0])
    return random_weights_banner({"caveat": caveat})  # the caveat's banner, worded as the results' is


def run_identity_lines(identity, tau, criterion=None):
    """The lines every report of a run starts with: encoder, weights and τ, then how the split was made.

    The random-weights banner is apart (`random_weights_banner`): each report shows it its own way.

    Parameters
    ----------
    identity : dict
        The encoder identity of the run.
    tau : float
        The τ the describers used.
    criterion : str, optional
        How the easy / hard split was made, and why (``Scores.extra['split_criterion']``).

    Returns
    -------
    list of str
    """
    lines = [f"Encoder {encoder_words(identity)}, weights {weights_words(identity)}; τ = {float(tau):.4g}."]
    if encoder_note(identity):
        lines.append(encoder_note(identity))
    if criterion:
        lines.append(criterion)
    return lines
