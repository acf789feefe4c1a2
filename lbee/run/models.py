"""The run layer's one door to models and encoders: checking a spec, loading what it names.

The CLI, the report batch and the service reach `lbee.scoring` and
`lbee.encoders` through here (and `lbee.run.scores` /
`lbee.run.inputs`), so a spec is checked and loaded one way everywhere.
Nothing heavy is imported until a function is called.
"""

from __future__ import annotations


def check_model_spec(spec):
    """Check a model spec in a fraction of a second, before torch (`lbee.scoring.classifier.check_model_spec`)."""
    from ..scoring.classifier import check_model_spec as check

    return check(spec)


def load_model(spec, weights=None, *, num_classes=None):
    """A classifier or segmentation ``nn.Module`` in eval mode (`lbee.scoring.classifier.load_classifier`).

    Parameters
    ----------
    spec : str
        TorchScript file, ``torchvision:<arch>``, ``timm:<arch>`` or ``package.module:factory``.
    weights : path-like, optional
        A state-dict file.
    num_classes : int, optional
        Output classes, for architectures built here.
    """
    from ..scoring.classifier import load_classifier

    return load_classifier(spec, weights, num_classes=num_classes)


def check_encoder_spec(spec, *, weights=False):
    """Check an encoder spec (and with ``weights``, its default weights) before any model is loaded.

    `lbee.encoders.check_encoder_spec`; torch is not imported.
    """
    from ..encoders import check_encoder_spec as check

    return check(spec, weights=weights)


def encoder_caveat(spec, images=None):
    """A warning when an encoder cannot describe ordinary images, else None (`lbee.encoders.encoder_caveat`)."""
    from ..encoders import encoder_caveat as caveat

    return caveat(spec, images)


def load_encoder(spec, *, device=None):
    """The encoder a spec names, on ``device`` ([`lbee.encoders.create_encoder`][lbee.encoders.create_encoder])."""
    from ..encoders import create_encoder

    return create_encoder(spec, **({"device": device} if device else {}))
