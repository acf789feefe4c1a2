"""Presentation: terminal/Markdown text, HTML pages, batch reports and their config."""
