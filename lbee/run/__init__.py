"""The run layer: one settings object, the inputs of a run, and the one pipeline every command calls.

- :mod:`lbee.run.settings`: :class:`RunSettings`, every analysis knob with its default, choices and validation.
- :mod:`lbee.run.inputs`: :class:`DatasetSpec` / :class:`ModelSpec` and loading them (embeddings, φ, ω, Γ).
- :mod:`lbee.run.pipeline`: :func:`analyse` / :func:`run_model` and writing the outputs.
- :mod:`lbee.run.text`: the plain-text views of a run (``report.md``, the terminal tables).
"""

from .settings import RunSettings

__all__ = ["RunSettings"]
