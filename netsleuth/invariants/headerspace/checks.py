"""Loops, blackholes and reachability for every packet header (Header Space Analysis).

The findings of the invariants registered as ``loops``, ``blackholes`` and
``reachability``, read off one :class:`~netsleuth.invariants.headerspace.engine.Analysis`
of the view (:func:`~netsleuth.invariants.headerspace.engine.analyze` computes it
once for all three). A violation is reported as the header space it
affects (a wildcard expression), where those headers entered, the path and
the rule that dropped or looped them, with one concrete witness header.
The concrete-packet versions, which push only the packet each host pair
would send, are in :mod:`netsleuth.invariants.forwarding`.

Loops and blackholes are here, with the registry's adapters for all three;
reachability (host pairs judged in bulk) is in ``reachability.py``, and the
hop-by-hop walk of one header that says where and why is in ``paths.py``.
"""

from __future__ import annotations

from collections.abc import Iterable

from netsleuth.invariants.forwarding import Finding
from netsleuth.invariants.headerspace import report as R
from netsleuth.invariants.headerspace.engine import (
    Analysis,
    Port,
    analyze,
    union_of,
)
from netsleuth.invariants.headerspace.paths import (
    _analysis,
    _drop_path,
    _rule_at,
    _rule_of,
)
from netsleuth.invariants.headerspace.reachability import hsa_reachability
from netsleuth.invariants.headerspace.report import components
from netsleuth.invariants.headerspace.space import (
    HeaderSpace,
    describe_headerspace,
)
from netsleuth.invariants.view import NetworkView

# --------------------------------------------------------------------------- loops
# Each check is split in two: what one ingress contributes (its "items", a function of that
# ingress's results alone) and the grouping of every ingress's items into findings.  A full
# check runs both over all ingresses; IncrementalHSA keeps the items per ingress, recomputes
# those of the ingresses a flow_mod touched, and groups again with a ``memo`` that reuses the
# finding of every group whose items are the very same objects as last time.
LoopItem = tuple[tuple[Port, ...], tuple[Port, ...], HeaderSpace]     # (cycle, path, headers)
DropItem = tuple[str, str, str, HeaderSpace]                          # (switch, rule, why, headers)


def loop_items(a: Analysis, ing: Port) -> list[LoopItem]:
    """The looping headers entering at ``ing``: (canonical cycle, path, header space)."""
    return [(R.canonical_cycle(path), tuple(path), hs) for path, hs in a.loops(ing)]


def group_loops(view: NetworkView, a: Analysis, items: Iterable[tuple[Port, list[LoopItem]]],
                memo: dict | None = None, macs: dict[int, str] | None = None) -> list[Finding]:
    """One finding per distinct cycle from every ingress's :func:`loop_items` (in ingress order)."""
    macs = R.mac_hosts(view) if macs is None else macs
    found: dict[tuple[Port, ...], dict[Port, tuple[tuple[Port, ...], list[HeaderSpace]]]] = {}
    srcs: dict[tuple[Port, ...], list] = {}
    for ing, lst in items:
        for cycle, path, hs in lst:
            per = found.setdefault(cycle, {})
            if ing in per:
                per[ing][1].append(hs)
            else:
                per[ing] = (path, [hs])
                srcs.setdefault(cycle, []).extend((ing, lst))
    old = dict(memo) if memo is not None else {}
    if memo is not None:
        memo.clear()
    out = []
    for cycle, per in sorted(found.items()):
        f = R.memo_hit(old, cycle, srcs[cycle])
        if f is None:
            entries = [(ing, union_of(spaces).compact()) for ing, (_p, spaces) in per.items()]
            entries = [(ing, hs) for ing, hs in entries if hs.terms]
            if entries:
                hosts = tuple(dict.fromkeys(h for ing, hs in entries for h in R.hosts_of(a, ing, hs, macs)))
                f = R.loop_finding(view, a, cycle, entries, per[entries[0][0]][0], hosts, describe_headerspace)
        if memo is not None:
            memo[cycle] = (srcs[cycle], f)
        if f is not None:
            out.append(f)
    return out


def hsa_loops(view: NetworkView, analysis: Analysis | None = None) -> list[Finding]:
    """Header spaces that come back to a (switch, in_port) they already crossed; one finding
    per distinct cycle (every entry point and rotation of it is the same defect), with the
    header class, the cycle, the entry points and hosts, and one example header."""
    a = _analysis(view, analysis)
    if not isinstance(a, Analysis):  # a network of OpenFlow 1.3 pipelines
        from netsleuth.invariants.headerspace.of13.checks import loops13
        return loops13(view, a)
    return group_loops(view, a, ((ing, loop_items(a, ing)) for ing in a.ingresses))


# --------------------------------------------------------------------------- blackholes
def drop_items(a: Analysis, ing: Port, comp: dict[str, int], macs: dict[int, str]) -> list[DropItem]:
    """The headers entering at ``ing`` that are blackholed: (switch, rule, why, header space),
    without those for hosts the ingress need not reach (:func:`report.need_not_reach`)."""
    drops = a.drops(ing)
    if not drops:
        return []
    cut_off = R.need_not_reach(a, ing, comp, macs)
    out = []
    for sw, why, hs in drops:
        hs = hs.minus_values("dl_dst", cut_off)
        if not hs.terms or hs.is_empty():
            continue
        out.append((sw, _rule_of(why), why, hs))
    return out


def group_blackholes(view: NetworkView, a: Analysis, items: Iterable[tuple[Port, list[DropItem]]],
                     memo: dict | None = None, macs: dict[int, str] | None = None) -> list[Finding]:
    """One finding per dropping rule from every ingress's :func:`drop_items` (in ingress order)."""
    macs = R.mac_hosts(view) if macs is None else macs
    # (switch, rule) -> ingress -> (whys, spaces)
    groups: dict[tuple[str, str], dict[Port, tuple[list[str], list[HeaderSpace]]]] = {}
    srcs: dict[tuple[str, str], list] = {}
    for ing, lst in items:
        for sw, rule, why, hs in lst:
            per = groups.setdefault((sw, rule), {})
            got = per.get(ing)
            if got is None:
                got = per[ing] = ([], [])
                srcs.setdefault((sw, rule), []).extend((ing, lst))
            whys, spaces = got
            if why not in whys:
                whys.append(why)
            spaces.append(hs)
    old = dict(memo) if memo is not None else {}
    if memo is not None:
        memo.clear()
    out = []
    for (sw, rule), per in groups.items():
        f = R.memo_hit(old, (sw, rule), srcs[(sw, rule)])
        if f is None:
            f = _blackhole(view, a, sw, rule, per, macs)
        if memo is not None:
            memo[(sw, rule)] = (srcs[(sw, rule)], f)
        out.append(f)
    return out


def _blackhole(view: NetworkView, a: Analysis, sw: str, rule: str,
               per: dict[Port, tuple[list[str], list[HeaderSpace]]], macs: dict[int, str]) -> Finding:
    entries = [(ing, union_of(spaces)) for ing, (_w, spaces) in per.items()]
    whys = list(dict.fromkeys(w for ws, _s in per.values() for w in ws))
    first_ing, first_hs = entries[0]
    path = _drop_path(a, first_ing, first_hs.witness(), sw)
    hosts = tuple(dict.fromkeys(h for ing, hs in entries for h in R.hosts_of(a, ing, hs, macs)))
    hs = union_of(hs for _i, hs in entries)
    extra: dict = {"terms": len(hs.terms)}
    if rule == whys[0]:  # no rule in the reason (a dead port): name the one the first header took
        shown = _rule_at(a, path, first_hs.witness())
        if shown:
            extra["rule_text"] = f"{sw}: {shown} (for {first_ing[0]}:{first_ing[1]}'s headers)"
    return R.drop_finding(view, a, sw, rule, whys, entries, path, hosts, describe_headerspace, extra)


def hsa_blackholes(view: NetworkView, analysis: Analysis | None = None) -> list[Finding]:
    """Header spaces that forwarding meant to deliver and that go nowhere: a rule whose outputs
    all send nothing (to a port the switch does not have or that is down, to its own in
    port), an output to a port without a live link, or a switch that is down; one finding per
    dropping rule (switch and rule), whichever hosts send into it.  A rule with no output
    action at all is the controller choosing to drop (an ACL deny, a filter): no blackhole.
    Headers for a host physically cut off from the ingress, or for the very host that sends
    them, do not count (the network could not or need not deliver them)."""
    a = _analysis(view, analysis)
    if not isinstance(a, Analysis):  # a network of OpenFlow 1.3 pipelines
        from netsleuth.invariants.headerspace.of13.checks import blackholes13
        return blackholes13(view, a)
    macs = R.mac_hosts(view)
    comp: dict[str, int] | None = None
    items = []
    for ing in a.ingresses:
        if not a.drops(ing):
            continue
        if comp is None:
            comp = components(view)
        items.append((ing, drop_items(a, ing, comp, macs)))
    return group_blackholes(view, a, items)


# --------------------------------------------------------------------------- registry adapters
def check_headerspace_loops(view: NetworkView, outcomes: object = None) -> list[Finding]:
    """Registry signature for :func:`hsa_loops`; ``outcomes`` may be an :class:`Analysis` of this view (shared)."""
    return hsa_loops(view, _analysis(view, outcomes))


def check_headerspace_blackholes(view: NetworkView, outcomes: object = None) -> list[Finding]:
    """Registry signature for :func:`hsa_blackholes`; ``outcomes`` as for :func:`check_headerspace_loops`."""
    return hsa_blackholes(view, _analysis(view, outcomes))


def check_headerspace_reachability(view: NetworkView, outcomes: object = None) -> list[Finding]:
    """Registry signature for :func:`hsa_reachability`; ``outcomes`` as for :func:`check_headerspace_loops`."""
    return hsa_reachability(view, _analysis(view, outcomes))


def check_all(view: NetworkView, **kw) -> dict[str, list[Finding]]:
    """The three checks on one shared analysis."""
    a = analyze(view, **kw)
    return {"loops": hsa_loops(view, a), "blackholes": hsa_blackholes(view, a),
            "reachability": hsa_reachability(view, a)}
