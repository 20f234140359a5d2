"""The violations a command found, printed the one way every command prints them.

:func:`netsleuth.invariants.violation_text.violation_lines` words one
violation; this adds what only a command with a trace on disk knows: the
trace's traffic inputs, so an example packet comes with the
``trace-packet`` command that follows a recorded packet like it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from netsleuth.invariants.violation_text import violation_lines


def traffic_of(trace: str | Path | None) -> list[tuple[str, str, str | None]]:
    """(input id, sending host, destination host) of every traffic input of a trace, in order.
    Reads only the lines that are traffic inputs (a cheap scan, even of a long fuzz trace);
    the trace was validated when it was read or written, so a line that does not parse is skipped."""
    if trace is None or not Path(trace).is_file():
        return []
    out = []
    with open(trace, encoding="utf-8") as fh:
        for line in fh:
            if '"kind":"traffic"' not in line and '"kind": "traffic"' not in line:
                continue
            try:
                e = json.loads(line)
            except ValueError:
                continue
            out.append((str(e.get("id")), str(e.get("host")), e.get("dst")))
    return out


def violation_block(violations: Sequence[Any], *, trace: str | Path | None = None, verbose: bool = False,
                    limit: int | None = None, indent: str = "  ") -> list[str]:
    """Every violation's lines (at most ``limit`` violations, then how many more), each violation
    as :func:`violation_lines` words it, with its ``trace-packet`` command when ``trace`` is given."""
    traffic = traffic_of(trace)
    shown = violations if limit is None else violations[:limit]
    lines: list[str] = []
    for v in shown:
        body = violation_lines(v, verbose=verbose, trace=str(trace) if trace else None, traffic=traffic,
                               indent=indent + "    ")
        lines.append(f"{indent}- {body[0]}")
        lines.extend(body[1:])
    if limit is not None and len(violations) > limit:
        lines.append(f"{indent}... {len(violations) - limit} more in result.json")
    return lines


def by_invariant(violations: Iterable[Any]) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for v in violations:
        name = v["invariant"] if isinstance(v, dict) else v.invariant
        out.setdefault(name, []).append(v)
    return out


def target_lines(trace: str | Path, index: int = 0, *, verbose: bool = False) -> list[str]:
    """The lines of a trace's ``index``-th persistent violation (the one replay and minimize aim at)."""
    from netsleuth.trace import schema as ts
    from netsleuth.trace.io import read_trace

    found = [e for e in read_trace(trace).events if isinstance(e, ts.Violation) and e.persistent]
    if index >= len(found):
        return []
    return violation_lines(found[index], verbose=verbose, trace=str(trace), traffic=traffic_of(trace))
