"""Connected components of the small graphs a check walks (a topology's live links, a routing map's).

A walk of its own rather than ``networkx.connected_components``: the graphs have tens of
nodes, every check asks for their components, and building a networkx graph cost more than a
small network's whole check (importing networkx costs some 0.4 s of CPU in each short-lived
process that would otherwise not need it). The numbering is networkx's order: components
numbered from 0 in the order of each one's first node.
"""

from __future__ import annotations

from collections.abc import Iterable


def components(nodes: Iterable[str], links: Iterable[tuple[str, str]]) -> dict[str, int]:
    """Node -> its component's number in the graph of ``links`` (pairs of nodes, either way round),
    for every node of ``nodes`` and every node a link joins to one."""
    neighbours: dict[str, list[str]] = {}
    for a, b in links:
        neighbours.setdefault(a, []).append(b)
        neighbours.setdefault(b, []).append(a)
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
