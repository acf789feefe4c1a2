"""The run layer: settings, inputs and the one pipeline every command calls."""
