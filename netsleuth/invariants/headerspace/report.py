"""Header spaces as people read them in findings: hosts, ingress points, one witness header.

The header-space checks (:mod:`netsleuth.invariants.headerspace.checks`, and
:mod:`netsleuth.invariants.headerspace.of13.checks` over 1.3 pipelines) report which
hosts a violation concerns, where its headers entered, and one concrete
header from the set, so that a finding can be followed with the
concrete-packet tools; these helpers compute those parts for either
layout (a :class:`~netsleuth.invariants.headerspace.space.HeaderSet` knows its
fields) and either analysis (both have ``ingress_host``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from netsleuth.invariants.forwarding import Finding, controller_ok
from netsleuth.invariants.headerspace.ingress import Port
from netsleuth.invariants.headerspace.space import HeaderSet, HeaderSpace
from netsleuth.invariants.view import NetworkView
from netsleuth.model.topology import HostSpec


class HasIngresses(Protocol):
    """An analysis (1.0 or 1.3): the host behind each ingress port."""

    ingress_host: dict[Port, str]


def mac_hosts(view: NetworkView) -> dict[int, str]:
    """Host name by MAC."""
    return {h.mac: h.name for h in view.topology.hosts}


def ingress_text(a: HasIngresses, ing: Port) -> str:
    """``s1:1 (from h1)``: an ingress port and the host behind it."""
    host = a.ingress_host.get(ing)
    return f"{ing[0]}:{ing[1]}" + (f" (from {host})" if host else "")


def dst_hosts(hs: HeaderSet, macs: Mapping[int, str]) -> list[str]:
    """The hosts whose MAC ``hs`` fixes as destination."""
    vals = hs.fixed_field(hs.DST)
    if not vals:
        return []
    return sorted({macs[v] for v in vals if v in macs})


def header_dict(header: int) -> dict:
    """A packed OpenFlow 1.0 header as readable fields."""
    return HeaderSpace().header_fields(header)


def witness_dict(hs: HeaderSet) -> dict | None:
    """One header of ``hs`` as readable fields (None when ``hs`` is empty)."""
    return hs.witness_fields()


def components(view: NetworkView) -> dict[str, int]:
    """Node -> number of its connected component over live links."""
    return view.live_components()


def host_location(view: NetworkView, host: str) -> Port:
    """Where ``host`` is plugged in now (the view knows about migrations; a bare topology does not)."""
    loc = getattr(view, "host_location", None)
    return loc(host) if loc is not None else view.topology.host_location(host)


def cycle_of(path: Sequence[Port]) -> tuple[str, ...]:
    """The switches of the cycle a looping path closes (its last hop repeats an earlier one)."""
    start = path.index(path[-1])
    return tuple(dict.fromkeys(s for s, _p in path[start:]))


def need_not_reach(a: HasIngresses, ing: Port, comp: Mapping[str, int], macs: Mapping[int, str]) -> set[int]:
    """The MACs of hosts that headers entering at ``ing`` need not reach: those physically cut
    off from the ingress (the network could not deliver to them) and the sender itself."""
    here = comp.get(ing[0])
    src = a.ingress_host.get(ing)
    return {mac for mac, h in macs.items() if comp.get(h) != here or h == src}


def hosts_by_component(view: NetworkView, comp: Mapping[str, int]) -> dict[int, list[HostSpec]]:
    """The hosts of each connected component (-1: hosts on no live link), in topology order."""
    members: dict[int, list[HostSpec]] = defaultdict(list)
    for h in view.topology.hosts:
        members[comp.get(h.name, -1)].append(h)
    return members


def controller_checker(view: NetworkView) -> Callable[[str], bool]:
    """``ok(switch)``: whether a live, connected controller handles what the switch punts
    (:func:`~netsleuth.invariants.forwarding.controller_ok`, asked once per switch)."""
    cache: dict[str, bool] = {}

    def ok(sw: str) -> bool:
        v = cache.get(sw)
        if v is None:
            v = cache[sw] = controller_ok(view, sw)
        return v

    return ok


def hosts_of(a: HasIngresses, ing: Port, hs: HeaderSet, macs: Mapping[int, str]) -> tuple[str, ...]:
    """The sending host behind ``ing``, then the destinations ``hs`` names."""
    src = a.ingress_host.get(ing)
    return tuple(dict.fromkeys(([src] if src else []) + dst_hosts(hs, macs)))


def canonical_cycle(path: Sequence[Port]) -> tuple[Port, ...]:
    """The cycle a looping path closes, as its (switch, in_port) hops starting at the smallest:
    every entry point and every rotation of one cycle gives the same tuple."""
    start = path.index(path[-1])
    hops = list(path[start:-1])
    if not hops:
        return ()
    i = hops.index(min(hops))
    return tuple(hops[i:] + hops[:i])


def hop_text(hops: Iterable[Port]) -> str:
    return " -> ".join(f"{s}:{p}" for s, p in hops)


def entered_text(a: HasIngresses, ings: Iterable[Port], limit: int = 4) -> str:
    """``s1:1 (h1), s2:1 (h2) and 3 more``: where a grouped violation's headers enter."""
    from netsleuth.invariants.violation_text import elide

    texts = []
    for ing in ings:
        host = a.ingress_host.get(ing)
        texts.append(f"{ing[0]}:{ing[1]}" + (f" ({host})" if host else ""))
    return elide(texts, limit)


def group_details(view: NetworkView, a: HasIngresses, hs: HeaderSet, entries: Sequence[tuple[Port, HeaderSet]],
                  describe: Callable[[HeaderSet], str], summary: str | None = None) -> dict:
    """The parts every grouped finding shows: its header class in words, where it enters, one
    example header (a packet of a real host when the set holds one), and the exact header space
    per entry point for ``result.json`` and ``--verbose``.  ``summary``: the class in words when
    the caller has them (else summed up from ``hs``, which costs more than the rest together)."""
    from netsleuth.invariants.violation_text import example_header, example_text, summarize

    hosts, by_name, macs = _hosts_of(view.topology.hosts)
    senders = [by_name[n] for n in dict.fromkeys(a.ingress_host.get(i) for i, _hs in entries) if n in by_name]
    named = set(dst_hosts(hs, macs))  # when the set names its destinations, try only those
    others = [h for h in view.topology.hosts if h.name in named] or list(view.topology.hosts)
    ex = example_header(hs, senders, others)
    d: dict = {"summary": summarize(hs, hosts) if summary is None else summary,
               "entered_text": entered_text(a, [i for i, _hs in entries]),
               "header_spaces": [{"at": f"{i[0]}:{i[1]}", "header_space": describe(h)} for i, h in entries]}
    if ex is not None:
        f = hs.header_fields(ex)
        d["example_text"] = example_text(hs, ex, hosts, f)
        d["example_src"] = hosts.by_mac.get(_field(hs, ex, hs.DST[:-3] + "src"))
        d["example_dst"] = hosts.by_mac.get(_field(hs, ex, hs.DST))
    return d


def _hosts_of(hosts: tuple[HostSpec, ...]) -> tuple[Any, dict[str, HostSpec], dict[int, str]]:
    """``violation_text.Hosts`` of ``hosts``, the hosts by name and host names by MAC (read only),
    for the last tuple of hosts asked about: a check's tens of findings ask of the same
    topology's tuple, which a topology keeps until its hosts change (and a host is frozen)."""
    last = _HOSTS_OF.get("last")
    if last is None or last[0] is not hosts:
        from netsleuth.invariants.violation_text import Hosts

        last = _HOSTS_OF["last"] = (hosts, Hosts(hosts), {h.name: h for h in hosts}, {h.mac: h.name for h in hosts})
    return last[1], last[2], last[3]


_HOSTS_OF: dict[str, tuple[tuple[HostSpec, ...], Any, dict[str, HostSpec], dict[int, str]]] = {}


def _field(hs: HeaderSet, header: int, name: str) -> int:
    """Field ``name`` of a packed header of ``hs``'s layout, as an int (the MACs of an example
    header: what its readable fields show as text, without parsing it back)."""
    return (header >> hs.SHIFTS[name]) & hs.FULLS[name]


def loop_finding(view: NetworkView, a: HasIngresses, cycle: tuple[Port, ...],
                 entries: Sequence[tuple[Port, HeaderSet]], path: Sequence[Port], hosts: tuple[str, ...],
                 describe: Callable[[HeaderSet], str], extra: dict | None = None) -> Finding:
    """One loop violation per distinct cycle: its identity is the cycle's hops (``group``), so the
    persistence tracker and the minimizer's oracle see the same loop whichever host enters it."""
    hs = type(entries[0][1]).union(h for _i, h in entries).prune()
    d = group_details(view, a, hs, entries, describe)
    switches = tuple(dict.fromkeys(s for s, _p in cycle))
    ring = " -> ".join([*switches, switches[0]])
    d.update({"ingress": f"{entries[0][0][0]}:{entries[0][0][1]}", "header_space": describe(hs),
              "path": [f"{s}:{p}" for s, p in path], "cycle": [f"{s}:{p}" for s, p in cycle],
              "cycle_text": hop_text([*cycle, cycle[0]]), "group": ["loop", *(f"{s}:{p}" for s, p in cycle)],
              "witness": witness_dict(entries[0][1])}, **(extra or {}))
    n = len(entries)
    message = f"{d['summary']} loops {ring} (entered at {n} port{'s' if n > 1 else ''})"
    return Finding("loops", message, hosts=hosts, switches=switches, details=d)


def drop_finding(view: NetworkView, a: HasIngresses, sw: str, rule: str, whys: Sequence[str],
                 entries: Sequence[tuple[Port, HeaderSet]], path: Sequence[str], hosts: tuple[str, ...],
                 describe: Callable[[HeaderSet], str], extra: dict | None = None) -> Finding:
    """One blackhole per dropping rule: its identity is (switch, rule) (``group``), whichever
    hosts' headers fall into it."""
    hs = type(entries[0][1]).union(h for _i, h in entries).prune()
    d = group_details(view, a, hs, entries, describe)
    from netsleuth.invariants.violation_text import elide

    cause = elide([short_cause(w) for w in whys], 2, sep="; ")
    d.update({"ingress": f"{entries[0][0][0]}:{entries[0][0][1]}", "header_space": describe(hs), "where": sw,
              "why": list(whys), "path": list(path), "rule_text": f"{sw}: {rule}" if rule not in whys else "",
              "cause_text": cause,
              "group": ["blackhole", sw, rule], "witness": witness_dict(entries[0][1])}, **(extra or {}))
    message = f"{d['summary']} dropped at {sw}: {cause}"
    return Finding("blackholes", message, hosts=hosts, switches=(sw,), details=d)


def short_cause(why: str) -> str:
    """A drop reason without the rule it names (shown on its own line): what happens to the packets."""
    import re

    m = re.match(r"rule \S+ priority \d+ (.*)$", why)
    if m is None:
        m = re.match(r"(?:s\d+ )?table \d+: rule .*? (has no .*|outputs .*|forwards .*)$", why)
    return (m.group(1) if m else why).strip()


SPACE = "_space"   # a per-pair finding's header set, read (never kept) by group_unreachable
_DROPPED = __import__("re").compile(r"they are dropped at (?P<sw>\S+)(?P<sel> for some choice of a SELECT group)? "
                                    r"\((?P<why>.*)\)$")


def same_objects(a: Sequence, b: Sequence) -> bool:
    """Whether two sequences hold the very same objects in the same order (identity, not
    equality: cheap, and what a memo of results built from those objects needs)."""
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def memo_hit(old: Mapping, key: object, items: Sequence) -> Finding | None:
    """The finding a group memo (``key`` -> (items, finding)) held for ``key`` when it was
    built from the very same items, else None."""
    hit = old.get(key)
    return hit[1] if hit is not None and same_objects(hit[0], items) else None


def group_unreachable(view: NetworkView, a: HasIngresses, pairs: Sequence[Finding],
                      describe: Callable[[HeaderSet], str], memo: dict | None = None) -> list[Finding]:
    """Unreachable host pairs grouped by cause: one finding per reason and place (the rule that
    drops them, the loop, the controller that is not connected), naming every pair it cuts off.
    Its identity (``group``) is the cause, so pairs coming and going do not make it flicker.
    ``memo`` (kept by the caller between calls): a group made of the very same pair findings
    as last time gets last time's finding back instead of a new one."""
    by_cause: dict[tuple[str, tuple[str, ...]], list[Finding]] = {}
    for f in sorted(pairs, key=lambda f: f.hosts):  # the same order whichever engine found them
        by_cause.setdefault((str(f.details.get("cause", f.message)), f.switches), []).append(f)
    old = dict(memo) if memo is not None else {}
    if memo is not None:
        memo.clear()
    out = []
    for key, fs in by_cause.items():
        g = memo_hit(old, key, fs)
        if g is None:
            g = _unreachable_group(view, a, key, fs, describe)
        if memo is not None:
            memo[key] = (fs, g)
        out.append(g)
    return out


def _unreachable_group(view: NetworkView, a: HasIngresses, key: tuple[str, tuple[str, ...]], fs: list[Finding],
                       describe: Callable[[HeaderSet], str]) -> Finding:
    from netsleuth.invariants.violation_text import elide

    cause, where = key
    spaces = [f.details[SPACE] for f in fs if SPACE in f.details]
    entries = [(_port(f.details["ingress"]), f.details[SPACE]) for f in fs if SPACE in f.details]
    summary = "all their traffic" if all(f.details.get("all") for f in fs) else None   # (else summed up)
    d: dict = group_details(view, a, type(spaces[0]).union(spaces).prune(), entries, describe, summary) \
        if spaces else {}
    if summary is not None:
        d["summary"] = summary   # (group_details set it too, when there are spaces)
    by_src: dict[str, list[str]] = {}
    for f in fs:
        by_src.setdefault(f.hosts[0], []).append(f.hosts[1])
    pairs_text = elide([f"{s} {_ARROW} {elide(ds, 4)}" for s, ds in by_src.items()], 3, sep="; ")
    short, extra = _short_unreached(cause)
    d.update({k: v for k, v in fs[0].details.items() if k != SPACE and k not in d})
    d.update({"header_space": " | ".join(dict.fromkeys(str(f.details.get("header_space")) for f in fs)),
              "pairs": [{"hosts": list(f.hosts), "ingress": f.details.get("ingress"),
                         "header_space": f.details.get("header_space"), "witness": f.details.get("witness")}
                        for f in fs],
              "pairs_text": pairs_text, "cause_text": short,
              "group": ["unreachable", cause, *where]}, **extra)
    d.pop("all", None)
    d.pop("entered_text", None)
    if len(by_src) == 1:
        (src, ds), = by_src.items()
        who = f"{src} cannot reach {elide(ds, 4)}"
    else:
        who = f"{len(fs)} host pairs cannot reach each other"
    message = f"{who}: {d.get('summary', 'their traffic')}: {short}"
    return Finding("reachability", message, hosts=tuple(dict.fromkeys(h for f in fs for h in f.hosts)),
                   switches=where, details=d)


_ARROW = "→"


def _port(text: str) -> Port:
    sw, _, p = text.rpartition(":")
    return (sw, int(p))


def _short_unreached(cause: str) -> tuple[str, dict]:
    """A reachability cause in a few words, the rule it names on a line of its own."""
    m = _DROPPED.match(cause)
    if m is None:
        return cause.removeprefix("they ").removeprefix("are "), {}
    why = m.group("why")
    rule = why.split(" priority ")[0] + " priority " + why.split(" priority ")[1].split()[0] \
        if why.startswith("rule ") and " priority " in why else ""
    extra: dict = {"dropped_at": m.group("sw"), "why": [why]}
    if rule:
        extra["rule_text"] = f"{m.group('sw')}: {rule}"
    return f"dropped at {m.group('sw')}{m.group('sel') or ''}: {short_cause(why)}", extra
