"""The run layer: one settings object, the inputs of a run, and the one pipeline every command calls.

- :mod:`lbee.run.settings`: :class:`RunSettings`, every analysis knob with its default, choices and validation.
- :mod:`lbee.run.specs`: :class:`DatasetSpec` / :class:`ModelSpec`, and what loading them gives.
- :mod:`lbee.run.inputs`: loading a dataset (embeddings, sentences, Γ); :mod:`lbee.run.scores`: one model's φ and ω;
  :mod:`lbee.run.preflight`: the checks that cost seconds.
- :mod:`lbee.run.models`: the one door to models and encoders (check a spec, load what it names).
- :mod:`lbee.run.pipeline`: :func:`analyse` / :func:`run_model` and writing the outputs.
- :mod:`lbee.run.text`: the plain-text views of a run (``report.md``, the terminal tables).
"""

from .settings import RunSettings

__all__ = ["RunSettings"]
