"""Isolation policies: which hosts must never reach each other.

A policy is a small file a user writes by hand, JSON or TOML, listing host
pairs: ``{"isolate": [["h1", "h3"], ["h2", "h4"]]}`` or
``isolate = [["h1", "h3"]]``. Pairs are symmetric. Names are checked
against the topology so a typo is an error, not a silently empty policy.
"""

from __future__ import annotations

import json
from pathlib import Path

from netsleuth.errors import NetsleuthError
from netsleuth.model.topology import Topology

EXAMPLE = '{"isolate": [["h1", "h3"]]}  or TOML: isolate = [["h1", "h3"]]'


class PolicyError(NetsleuthError):
    pass


def load_isolation(path: str | Path, topology: Topology) -> tuple[tuple[str, str], ...]:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise PolicyError(f"cannot read isolation policy {p}: {exc.strerror}", f"write it like {EXAMPLE}") from exc
    import tomllib  # here: only a policy or rates file needs TOML; importing it costs every command

    try:
        data = json.loads(text) if p.suffix == ".json" else tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        raise PolicyError(f"isolation policy {p} is not valid {'JSON' if p.suffix == '.json' else 'TOML'}: {exc}",
                          f"write it like {EXAMPLE}") from exc
    pairs = data.get("isolate") if isinstance(data, dict) else None
    if not isinstance(pairs, list):
        raise PolicyError(f"isolation policy {p} has no 'isolate' list", f"write it like {EXAMPLE}")
    known = {h.name for h in topology.hosts}
    out = []
    for i, pair in enumerate(pairs):
        if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(h, str) for h in pair)):
            raise PolicyError(f"isolation policy {p}: entry {i + 1} is not a pair of host names",
                              f"write it like {EXAMPLE}")
        for h in pair:
            if h not in known:
                raise PolicyError(f"isolation policy {p}: unknown host '{h}'",
                                  f"use hosts of the topology: {', '.join(sorted(known)[:8])}...")
        out.append((pair[0], pair[1]))
    return tuple(out)
