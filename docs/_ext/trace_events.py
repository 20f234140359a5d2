"""``.. trace-events::``: the table of every trace event kind and its fields, read off the schema.

The page cannot drift from the code: the table is built from
:data:`netsleuth.trace.schema.EVENT_KINDS` and the event dataclasses at every build.
"""

from __future__ import annotations

import dataclasses

from docutils import nodes
from docutils.parsers.rst import Directive
from sphinx.application import Sphinx


def _type_text(tp: object) -> str:
    text = tp if isinstance(tp, str) else getattr(tp, "__name__", repr(tp))
    return str(text).replace("typing.", "")


def _rows() -> list[tuple[str, str, str, str]]:
    from netsleuth.trace import schema as ts

    rows = []
    for kind, cls in sorted(ts.EVENT_KINDS.items()):
        fields = []
        for f in dataclasses.fields(cls):
            if f.name in ("seq", "t"):
                continue
            fields.append(f"{f.name}: {_type_text(f.type)}")
        doc = (cls.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
        rows.append((kind, "input" if cls.is_input else "observed", ", ".join(fields), doc))
    return rows


class TraceEvents(Directive):
    has_content = False

    def run(self) -> list[nodes.Node]:
        table = nodes.table()
        group = nodes.tgroup(cols=4)
        table += group
        for width in (14, 8, 40, 38):
            group += nodes.colspec(colwidth=width)
        head = nodes.thead()
        group += head
        body = nodes.tbody()
        group += body

        def row(cells: tuple[str, ...], literal: tuple[bool, ...]) -> nodes.row:
            r = nodes.row()
            for text, lit in zip(cells, literal, strict=True):
                entry = nodes.entry()
                entry += nodes.paragraph("", "", nodes.literal(text, text) if lit else nodes.Text(text))
                r += entry
            return r

        head += row(("kind", "made by", "fields (besides seq and t)", "what it records"), (False,) * 4)
        for cells in _rows():
            body += row(cells, (True, False, True, False))
        return [table]


def setup(app: Sphinx) -> dict[str, object]:
    app.add_directive("trace-events", TraceEvents)
    return {"parallel_read_safe": True, "version": "1"}
