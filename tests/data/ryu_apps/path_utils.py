"""Shortest-path helper of shortest_path.py (imported from the app's own folder)."""

from collections import deque


def next_hops(root, links):
    """Breadth-first tree towards ``root``: dpid -> (port out of it, next dpid); ties go to the lower dpid."""
    towards = {}
    for (a, a_port), (b, _b_port) in sorted(links.items()):
        towards.setdefault(b, []).append((a, a_port))
    hops = {}
    seen = {root}
    queue = deque([root])
    while queue:
        node = queue.popleft()
        for prev, prev_port in sorted(towards.get(node, [])):
            if prev not in seen:
                seen.add(prev)
                hops[prev] = (prev_port, node)
                queue.append(prev)
    return hops
