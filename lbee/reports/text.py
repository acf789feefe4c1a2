"""Alias of `lbee.run.text`: the plain-text views of a run (the run layer writes ``report.md`` itself)."""

from ..run.text import render_markdown, summary_dict, terminal_blocks, top_sentences

__all__ = ["render_markdown", "summary_dict", "terminal_blocks", "top_sentences"]
