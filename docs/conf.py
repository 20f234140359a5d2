"""Sphinx configuration of netsleuth's documentation site (``make docs``; warnings are errors)."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))        # trace_events: the trace format page, read off the schema

project = "netsleuth"
author = "the netsleuth developers"
extensions = [
    "myst_parser",      # the pages are Markdown, as the README is
    "sphinxarg.ext",    # the CLI reference is generated from the argparse parser itself
    "trace_events",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "_ext", "Thumbs.db", ".DS_Store"]
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]
html_theme = "furo"
html_title = "netsleuth"
html_static_path: list[str] = []


def setup(app: object) -> None:
    from pygments.lexers.special import TextLexer

    # CONTRACTS.md's ```layers block is data read by the layering test, shown as plain text
    app.add_lexer("layers", TextLexer)  # type: ignore[attr-defined]
