"""Where one header goes, hop by hop: the path and the rule behind a loop, blackhole or unreached
pair, read off an :class:`~netsleuth.invariants.headerspace.engine.Analysis` (the batch engine's
one-probe port indexes, else the general engine), and the analysis a check shares with the others.
"""

from __future__ import annotations

from netsleuth.invariants.forwarding import why_sends_nothing
from netsleuth.invariants.headerspace.batch import TAG_SHIFT
from netsleuth.invariants.headerspace.codes import F_DROP, F_NOTHING, F_PUNT
from netsleuth.invariants.headerspace.compiled import interner
from netsleuth.invariants.headerspace.engine import Analysis, analyze
from netsleuth.invariants.headerspace.general import Port, reachable
from netsleuth.invariants.headerspace.space import (
    SHIFT_BY_NAME,
    HeaderSpace,
    field_wildcard,
    unpack,
)
from netsleuth.invariants.view import NetworkView

_DL_DST_SHIFT = SHIFT_BY_NAME["dl_dst"]
_DL_SRC_SHIFT = SHIFT_BY_NAME["dl_src"]
_MAC = (1 << 48) - 1
_IDM = (1 << TAG_SHIFT) - 1  # a class's key id bits


def _analysis(view: NetworkView, outcomes: object) -> Analysis:
    """The analysis the registry shares between checks when it is of this view, else a fresh one."""
    if isinstance(outcomes, Analysis) and outcomes.view is view:
        return outcomes
    if type(outcomes).__name__ == "Analysis13" and getattr(outcomes, "view", None) is view:
        return outcomes  # type: ignore[return-value]
    return analyze(view)


def _rule_of(why: str) -> str:
    """The rule a drop reason names ("rule MATCH priority N"), or the reason itself when it names
    none (an output to a port without a live link, a switch that is down): the blackhole's
    identity.  Reading it off the reason (not off one header) keeps it the same whichever
    engine, batch or general, found the drop."""
    if why.startswith("rule ") and " priority " in why:
        head, tail = why.split(" priority ", 1)
        return f"{head} priority {tail.split()[0]}"
    return why


def _rule_at(a: Analysis, path: list[str], w: int | None) -> str:
    """The rule one header (``w``, packed) matches at the last hop of ``path``."""
    if w is None or not path:
        return ""
    sw, _, port = path[-1].rpartition(":")
    entry = a.view.switches[sw].table.peek(unpack(w, int(port)))
    return "" if entry is None else f"rule {entry.match or 'catch-all'} priority {entry.priority}"


def _drop_path(a: Analysis, ing: Port, w: int | None, where: str) -> list[str]:
    """The hops one header (``w``, packed) takes from ``ing`` to a drop at ``where``."""
    if w is None:
        return []
    walked = walk(a, ing, w)
    if walked is not None:
        (kind, *rest), hops = walked
        return [f"{s}:{p}" for s, p in hops] if kind == "drop" and rest[0] == where else []
    r = reachable(a.view, ing[0], ing[1], HeaderSpace.wildcard(w, (1 << 248) - 1), _net=a.net)
    for (sw, _why, _hs), path in zip(r.drops, r.drop_paths, strict=True):
        if sw == where:
            return [f"{s}:{p}" for s, p in path]
    return []


def walk(a: Analysis, ing: Port, w: int) -> tuple[tuple, list[Port]] | None:
    """Where one header (``w``, packed) entering at ``ing`` goes, hop by hop through the batch
    engine's one-probe port indexes: ``(outcome, path)``, the outcome being ("drop", switch, why),
    ("loop",) (the path ends with the hop it repeats), ("punt", switch), ("filter", switch) or
    ("deliver", host).  None when a hop needs the general engine (a port with several patterns,
    a rule that rewrites or sends several copies): :func:`reachable` then says the same thing
    the slow way (it compiles every switch's general index, costly on a big table)."""
    net = a.net
    switches = net.switches
    s, p = ing
    path: list[Port] = []
    while True:
        here = (s, p)
        if here in path:
            path.append(here)
            return ("loop",), path
        path.append(here)
        if not net.up(s):
            return ("drop", s, "switch is down"), path
        cs = net.compiled(s)
        pi = cs.port(p)
        fm = pi.fast_mask
        if pi.ids is None or fm is None:
            return None
        j = interner(fm)[0].get(w & fm)
        code = None if j is None else pi.code(j)  # ids may be the table's key id -> slot map
        if code is None or code == F_PUNT:
            return ("punt", s), path
        if code >= 0:
            peer = net.peer(s, code)
            if peer is None:
                return ("drop", s, f"port {code} has no live link"), path
            if peer[0] not in switches:
                return ("deliver", peer[0]), path
            s, p = peer
            continue
        if code == F_DROP:
            return ("filter", s), path
        if code == F_NOTHING:
            return ("drop", s, why_sends_nothing(cs.hit_entry(p, w & fm), p)), path
        return None


_DL_DST_FULL = field_wildcard(dl_dst=0)[1]
