"""The run layer: one settings object, the inputs of a run, and the one pipeline every command calls.

- `lbee.run.settings`: [`RunSettings`][lbee.RunSettings], every analysis knob with its default, choices and validation.
- `lbee.run.specs`: `DatasetSpec` / `ModelSpec`, and what loading them gives.
- `lbee.run.inputs`: loading a dataset (embeddings, sentences, Γ); `lbee.run.scores`: one model's φ and ω;
  `lbee.run.preflight`: the checks that cost seconds.
- `lbee.run.models`: the one door to models and encoders (check a spec, load what it names).
- `lbee.run.pipeline`: `analyse` / `run_model` and writing the outputs.
- `lbee.run.text`: the plain-text views of a run (``report.md``, the terminal tables).
"""

from .settings import RunSettings

__all__ = ["RunSettings"]
