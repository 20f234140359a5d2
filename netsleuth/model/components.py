"""Connected components of the small graphs a check walks (a topology's live links, a routing map's).

A walk of its own rather than ``networkx.connected_components``: the graphs have tens of
nodes, every check asks for their components, and building a networkx graph cost more than a
small network's whole check (importing networkx costs some 0.4 s of CPU in each short-lived
process that would otherwise not need it). The numbering is networkx's order: components
numbered from 0 in the order of each one's first node.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping


def components(nodes: Iterable[str], neighbours: Mapping[str, Iterable[str]]) -> dict[str, int]:
    """Node -> its component's number, for every node of ``nodes`` and every node reached from one
    through ``neighbours`` (node -> its neighbours, each link listed both ways)."""
    out: dict[str, int] = {}
    count = 0
    for start in nodes:
        if start in out:
            continue
        out[start] = count
        todo = [start]
        while todo:
            for peer in neighbours.get(todo.pop(), ()):
                if peer not in out:
                    out[peer] = count
                    todo.append(peer)
        count += 1
    return out
