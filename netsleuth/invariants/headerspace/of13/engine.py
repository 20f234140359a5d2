"""Header Space Analysis through OpenFlow 1.3 pipelines (``model.of13.Pipeline13``).

The 1.0 engine (:mod:`netsleuth.invariants.headerspace.engine`) rewrites header
sets in place and undoes rewrites with preimages.  A 1.3 pipeline also
pushes and pops VLAN tags and MPLS labels, copies fields between tags,
hides the IP header under a label stack and carries metadata between
tables, so this engine keeps two things per branch instead:

* ``orig``: the set of *injected* headers the branch stands for
  (:class:`~netsleuth.invariants.headerspace.of13.space.HS13` over ``model.of13.headerbits``);
* ``sym``: what the packet's current header is in terms of the injected
  one: every field is either a constant (set_field, a pushed tag, a label)
  or "the injected header's field F" (untouched, or moved by a push/pop).

A rule's match then translates into a wildcard over the injected header
(constants are decided at once, moved fields test their source bits), so
classification, lazy differences and emptiness work on injected headers
directly and no preimage is needed.  Conditions the model applies to a
rewrite (set_field on an IPv4 field only for IPv4 frames, pop_vlan only
with a tag, pop_mpls re-reading the payload as the given ethertype) split
the branch the same way.  Metadata and tunnel_id start at 0 at every switch
and only ever take constant values, so they are constants of the branch.

Semantics follow ``Pipeline13.process`` hop by hop (the property test in
``tests/test_headerspace13.py`` checks them frame by frame):

* tables from 0; a table with no matching entry drops the packet and
  discards its action set; apply-actions act at once, then the entry's
  clear/write and write-metadata (``Instructions.next_action_set`` and
  ``next_metadata``, what the pipeline runs), goto-table; the action set
  runs in the spec's order (``ActionSet.ordered``) when no goto is left;
* groups: the buckets ``GroupTable.candidates`` names (ALL every bucket on
  its own copy, INDIRECT its bucket, FAST_FAILOVER the first live one);
  SELECT *any* of its candidates -- the hash is not known in advance, so
  each bucket is a possible path, and a result that needs every choice
  (reachability) takes all of them into account;
* outputs go where ``Pipeline13.output_ports`` sends them (a plain output
  to the in port sends nothing, FLOOD/ALL over the pipeline's ports);
  CONTROLLER: handled by the controller; LOCAL/NORMAL: dropped (nothing in
  the model handles them);
* between switches: live links (the view), loops when a (switch, in_port)
  repeats, drops at down switches and ports without a live link.

Two kinds of "sent nowhere" are told apart, as on 1.0.  A blackhole
(``Reach13.drops``): forwarding meant to send the packet somewhere and it
went nowhere -- an output to a port the switch does not have or to its own
in port, a group with no live bucket or whose buckets send nothing, and
the network-level drops above.  A drop on purpose (``Reach13.filtered``):
no output or group action ran at all -- an entry whose instructions are
empty or clear the action set (an ACL deny, a filter of some ethertype),
or a table miss with no table-miss entry.  The latter is what the spec
(5.4) makes a table do since 1.3 unless the controller installs a
table-miss entry, and what Open vSwitch does: the controller chose it, as
it chooses a drop rule (1.0 sent misses to the controller instead).

Not modelled (typed error :class:`Unsupported13`): TTL actions (their
effect depends on the TTL's value), PBB push/pop, set_field of IPv6 ND
fields, pop_mpls to ARP/PBB of a payload that is something else.  Meters
are ignored (a rate cannot be exceeded by a header set).

The symbolic header and its rewrites are in ``symbolic.py``, one switch's
pipeline in ``switch13.py``; this module walks the network and holds the
analysis the checks read.  A full analysis walks every ingress at once, in
waves of hops run switch by switch (:func:`explore_all13`), and files each
ingress's events in the order of its own walk (:func:`explore13`).
"""

from __future__ import annotations

import itertools
import weakref
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from dataclasses import dataclass, field
from functools import lru_cache, partial
from operator import itemgetter
from typing import Any

from os_ken.ofproto import ofproto_v1_3 as ofp

from netsleuth.gcpause import gc_paused
from netsleuth.invariants.headerspace.ingress import ingress_points
from netsleuth.invariants.headerspace.of13.road import Road, copies, road_hop, road_wave
from netsleuth.invariants.headerspace.of13.space import HS13, union13
from netsleuth.invariants.headerspace.of13.switch13 import Compiled13, _Switch13, signature13
from netsleuth.invariants.headerspace.of13.symbolic import IDENTITY, Sym, Unsupported13
from netsleuth.invariants.view import NetworkView
from netsleuth.model.of13.flowtable import FlowEntry13
from netsleuth.model.of13.pipeline import Pipeline13

Port = tuple[str, int]
DEFAULT_BUDGET13 = 200_000  # hops per ingress before giving up (Analysis13.truncated)


def pipeline13_of(view: NetworkView, name: str) -> Pipeline13 | None:
    """The OpenFlow 1.3 pipeline of switch ``name`` in ``view``, or None for a 1.0 switch.

    The one place the engine reads a switch's forwarding state: ``view.pipeline(name)``
    (a 1.0 FlowTable or a Pipeline13, from ``Switch.pipeline``) where the view has it; a
    view built by hand may also hold the Pipeline13 itself in ``view.switches``."""
    sw = view.switches.get(name)
    if isinstance(sw, Pipeline13):
        return sw
    get = getattr(view, "pipeline", None)
    got = get(name) if get is not None and sw is not None else None
    return got if isinstance(got, Pipeline13) else None


def not_yet_negotiated13(view: NetworkView, name: str) -> Pipeline13 | None:
    """An empty 1.3 pipeline for a switch that has spoken no version since it booted, else None.

    A switch that recovers from a failure runs no OpenFlow version until a
    controller's HELLO reaches it; until then it holds nothing and forwards
    nothing, whichever version it will speak. In a network of 1.3 pipelines
    that is an empty 1.3 pipeline (every packet a table miss, dropped), not a
    1.0 switch the check cannot read. Only ``has_of13`` decides the version of
    the network; a switch like this one never makes it 1.3 on its own.
    """
    sw = view.switches.get(name)
    if sw is None or getattr(sw, "negotiated", 0) is not None or getattr(sw, "of13", None) is not None:
        return None
    table = getattr(view, "pipeline", lambda _n: None)(name)
    if table is None or len(table):
        return None
    empty = _EMPTY13.get(sw)
    if empty is None:  # kept while the switch lives: a compiled pipeline holds its pipeline weakly
        empty = _EMPTY13[sw] = Pipeline13(ports=sorted(sw.ports))
    return empty


_EMPTY13: weakref.WeakKeyDictionary[Any, Pipeline13] = weakref.WeakKeyDictionary()


def has_of13(view: NetworkView) -> bool:
    """Whether any switch of ``view`` runs an OpenFlow 1.3 pipeline."""
    return any(pipeline13_of(view, name) is not None for name in view.switches)


# --------------------------------------------------------------------------- network
@dataclass(slots=True)   # one per outcome of every hop: tens of thousands in a check
class HsaEvent13:
    """One outcome for the injected headers ``hs``: where (switch or host), the hops, the
    rules taken ("s1 table 0: rule ..."), and the SELECT choices it depends on."""

    hs: HS13
    where: str
    path: tuple[Port, ...]
    rules: tuple[tuple[str, int, FlowEntry13], ...]   # (switch, table id, entry), in order
    choices: tuple[tuple[int, int], ...] = ()
    why: str = ""
    sym: Sym | None = None    # deliveries: the header as it arrives, in terms of the injected one

    def rule_texts(self) -> tuple[str, ...]:
        return tuple(rule_text(*r) for r in self.rules)


@dataclass
class Reach13:
    ingress: Port
    delivered: dict[str, list[HsaEvent13]] = field(default_factory=dict)
    punted: dict[str, list[HsaEvent13]] = field(default_factory=dict)
    drops: list[HsaEvent13] = field(default_factory=list)
    loops: list[HsaEvent13] = field(default_factory=list)
    filtered: dict[str, list[HsaEvent13]] = field(default_factory=dict)  # switch -> dropped on purpose
    alts: dict[int, int] = field(default_factory=dict)   # SELECT node -> number of alternatives
    truncated: bool = False
    hops: int = 0
    memo: dict[Any, Any] = field(default_factory=dict)   # the checks' per-reach results (see of13.checks)


def rule_text(sw: str, table_id: int, entry: FlowEntry13) -> str:
    """``s1 table 1: rule <match> priority <p> actions=<instructions>``: how findings and drop
    reasons name a rule (by value: match and instructions are frozen)."""
    return _rule_text(sw, table_id, entry.match, entry.priority, entry.instructions)


@lru_cache(maxsize=1 << 13)   # the drops of every check name the same rules, check after check
def _rule_text(sw: str, table_id: int, match: Any, priority: int, inst: Any) -> str:
    return f"{sw} table {table_id}: rule {str(match) or 'catch-all'} priority {priority} actions={inst.render()}"


class Net13:
    """What the engine needs from a view, looked up once per analysis."""

    def __init__(self, view: NetworkView, cache: MutableMapping[Pipeline13, Compiled13] | None = None) -> None:
        self.view = view
        self._comp: dict[str, Compiled13] = {}
        self._kept = cache is not None   # compiled pipelines outlive the analysis: signed, to be checked
        self._cache = cache if cache is not None else {}
        self.node_ids = itertools.count()
        self.road = Road(view, HsaEvent13)

    def renew(self, view: NetworkView) -> None:
        """Read ``view`` from now on (the incremental engine's network, message after message)."""
        self.view = view
        self.road.renew(view)

    def compiled(self, name: str) -> Compiled13:
        c = self._comp.get(name)
        if c is None:
            pipe = pipeline13_of(self.view, name) or not_yet_negotiated13(self.view, name)
            if pipe is None:
                raise Unsupported13(f"switch {name} has an OpenFlow 1.0 table in a network of 1.3 pipelines",
                                    "check networks whose switches all speak one OpenFlow version")
            c = self._cache.get(pipe)
            if c is None or c.signature != signature13(pipe):
                c = self._cache[pipe] = Compiled13(pipe, signed=self._kept)
            self._comp[name] = c
        return c


def _file(reach: Reach13, events: Any) -> None:
    """A hop's events into ``reach`` (``Reach13.add_event`` of each, in one call)."""
    for cat, key, ev in events:
        if key is None:
            (reach.loops if cat == "loops" else reach.drops).append(ev)
        else:
            getattr(reach, cat).setdefault(key, []).append(ev)


def explore13(net: Net13, s0: str, p0: int, hs: HS13 | None = None, budget: int = DEFAULT_BUDGET13) -> Reach13:
    """Push ``hs`` (default: every header a host can send) in at ``s0:p0`` through the network."""
    reach = Reach13((s0, p0))
    start = HS13.injected() if hs is None else hs
    stack: list[Hop13] = [(s0, p0, start, IDENTITY, (), (), ())]
    hops = 0
    while stack:
        item = stack.pop()
        hops += 1
        if hops > budget:
            reach.truncated = True
            break
        got = road_hop(net, item)
        events, pushes = hop13(net, item, reach.alts) if got is None else got
        _file(reach, events)
        stack.extend(pushes)
    reach.hops = hops
    return reach


def explore_all13(net: Net13, ingresses: list[Port], budget: int = DEFAULT_BUDGET13) -> dict[Port, Reach13]:
    """:func:`explore13` of every ingress, the same reaches, with the hops run switch by switch.

    Walking one ingress after the other sends each hop to another switch than the last, so
    every hop reads its tables' views, their indexes and its entries from cold memory; here
    the hops of every ingress are run in waves (the first hops, then every hop they push, and
    so on), each wave switch by switch, so the hops at one switch read the same views one
    after the other.  Each hop keeps its events and the hops it pushed, and an ingress's reach
    is then filed in explore13's order (a hop's own events, then the subtrees of the hops it
    pushed, the last pushed first), so it is the very reach explore13 returns.

    A hop's results depend on its input and the view alone, except for the numbers of SELECT
    groups' choice points (taken from one counter in the order hops run): a network with a
    SELECT group is walked ingress by ingress, as is an ingress past ``budget`` hops (explore13
    cuts it short in its own order), and everything when some hop cannot be analysed (the
    error explore13 meets first)."""
    if _has_select(net.view):
        return {ing: explore13(net, ing[0], ing[1], budget=budget) for ing in ingresses}
    try:
        roots, counts = _waves(net, ingresses, budget)
    except Unsupported13:
        return {ing: explore13(net, ing[0], ing[1], budget=budget) for ing in ingresses}
    reaches: dict[Port, Reach13] = {}
    for n, ing in enumerate(ingresses):
        if counts[n] > budget:
            reaches[ing] = explore13(net, ing[0], ing[1], budget=budget)
            continue
        reach = reaches[ing] = Reach13(ing)
        stack = [roots[n]]
        events: list[Event13] = []
        while stack:   # explore13's order
            own, kids = stack.pop()
            if own:
                events += own
            stack.extend(kids)
        _file(reach, events)   # (in one call: most of the hops' events are one delivery each)
        reach.hops = counts[n]
    return reaches


def _waves(net: Net13, ingresses: list[Port], budget: int) -> tuple[list[list[Any]], list[int]]:
    """Every hop of every ingress, wave by wave and switch by switch (see :func:`explore_all13`):
    per ingress, its first hop as [events, hops it pushed] (each the same), and its hop count
    (counting stops past ``budget``).  A hop with no event that pushes one hop has no node of
    its own: the hop it pushes fills its node (filed in its place, explore13's order is the same)."""
    roots: list[list[Any]] = []
    counts = [0] * len(ingresses)
    alts: dict[int, int] = {}   # (no SELECT group: stays empty)
    wave: dict[Port, list[tuple[int, Hop13, list[Any]]]] = {}
    for n, (s0, p0) in enumerate(ingresses):
        node: list[Any] = [(), ()]
        roots.append(node)
        wave.setdefault((s0, p0), []).append((n, (s0, p0, HS13.injected(), IDENTITY, (), (), ()), node))
    over: set[int] = set()   # ingresses past the budget (walked again on their own)
    while wave:
        nxt: dict[Port, list[tuple[int, Hop13, list[Any]]]] = {}
        other = partial(_wave_node, net, alts, nxt)   # (a C call: no frame of its own per hop)

        # each ingress's hops in this wave counted at once (a hop of an ingress past the budget is not run)
        for n, c in Counter(map(_FIRST, itertools.chain.from_iterable(wave.values()))).items():
            c = counts[n] = counts[n] + c
            if c > budget:
                over.add(n)
        for (s, p), group in wave.items():
            if over:
                group = [x for x in group if x[0] not in over]
            road_wave(net, s, p, group, nxt, other)
        wave = nxt
    return roots, counts


_FIRST = itemgetter(0)


def _wave_node(net: Net13, alts: dict[int, int], nxt: dict[Port, list[Any]], n: int, item: Hop13, node: list[Any],
               got: tuple[list[Event13], list[Hop13]] | None) -> None:
    """File a hop of :func:`_waves` that ends in events or pushes other than one hop (``got``: its
    result on the short road, None: run it the general way): its events in ``node``, and the hops
    it pushes, each with a node of its own, into the next wave ``nxt`` (a hop with no event that
    pushes one hop fills ``node`` with that hop's, as in :func:`_waves`)."""
    events, pushes = hop13(net, item, alts) if got is None else got
    if not pushes:   # (a delivery, most of these: no kids to make)
        node[0] = events
        node[1] = ()
        return
    if not events and len(pushes) == 1:
        kids: list[list[Any]] = [node]
    else:
        kids = [[(), ()] for _ in pushes]
        node[0] = events
        node[1] = kids
    for q, kid in zip(pushes, kids, strict=True):
        nxt.setdefault((q[0], q[1]), []).append((n, q, kid))


def _has_select(view: NetworkView) -> bool:
    """Whether some 1.3 pipeline of ``view`` has a SELECT group."""
    for name in view.switches:
        pipe = pipeline13_of(view, name)
        if pipe is not None and any(g.type == _SELECT for g in pipe.groups.groups.values()):
            return True
    return False


_SELECT = ofp.OFPGT_SELECT


# one hop's input: (switch, in_port, injected headers, current header, path so far, rules, SELECT choices)
Hop13 = tuple[str, int, HS13, Sym, tuple[Port, ...], tuple[tuple[str, int, FlowEntry13], ...],
              tuple[tuple[int, int], ...]]
# what a hop yields, in order: (kind, switch or host or None, event); kinds as Reach13's fields
Event13 = tuple[str, str | None, HsaEvent13]


def add_event(reach: Reach13, cat: str, key: str | None, ev: HsaEvent13) -> None:
    """File one event of :func:`hop13` into ``reach`` (in the order the hops yield them)."""
    if key is None:
        (reach.loops if cat == "loops" else reach.drops).append(ev)
    else:
        getattr(reach, cat).setdefault(key, []).append(ev)


def hop13(net: Net13, item: Hop13, alts: dict[int, int],
          switch: Callable[[Compiled13, Any, dict[int, int]], _Switch13] | None = None,
          ) -> tuple[list[Event13], list[Hop13]]:
    """One hop of :func:`explore13`: the events it ends in and the hops it pushes (in order).
    ``switch``: the class that runs the pipeline (the incremental engine's notes what it reads)."""
    s, p, orig, sym, path, rules, choices = item
    view = net.view
    events: list[Event13] = []
    pushes: list[Hop13] = []
    here = (s, p)
    if here in path:
        events.append(("loops", None, HsaEvent13(orig, s, path + (here,), rules, choices)))
        return events, pushes
    path = path + (here,)
    if not view.is_switch_up(s):
        events.append(("drops", None, HsaEvent13(orig, s, path, rules, choices, "switch is down")))
        return events, pushes
    sw = (switch or _Switch13)(net.compiled(s), net.node_ids, alts)
    road = net.road
    for br in sw.run(orig, sym, p):
        r2 = rules + tuple([(s, t, e) for t, e in br.rules])
        ch = choices + br.choices
        o = br.st.orig
        if not br.emits:
            rule = rule_text(s, *br.rules[-1]) if br.rules else s
            if br.lost:  # forwarding meant to send them somewhere: a blackhole
                events.append(("drops", None, HsaEvent13(o, s, path, r2, ch, f"{rule} {br.lost}")))
            else:       # no output at all: the controller's choice (see Reach13.filtered)
                why = f"{s} {br.end}" if not br.rules or "no rule" in br.end else f"{rule} has no output (drop)"
                events.append(("filtered", s, HsaEvent13(o, s, path, r2, ch, why)))
            continue
        got = copies(road, view, s, o, path, r2, ch, br.emits)
        events += got[0]
        pushes += got[1]
    return events, pushes


def must_hold(events: Iterable[HsaEvent13], alts: Mapping[int, int]) -> HS13:
    """The injected headers for which some event of ``events`` happens whatever every SELECT
    group chooses.  Choices are independent, so: events needing no choice, plus, for each
    first choice point, the headers that some event holds for under *every* alternative."""
    direct: list[HS13] = []
    nested: dict[int, dict[int, list[HsaEvent13]]] = defaultdict(lambda: defaultdict(list))
    for e in events:
        if not e.choices:
            direct.append(e.hs)
        else:
            node, n = e.choices[0]
            nested[node][n].append(HsaEvent13(e.hs, e.where, e.path, e.rules, e.choices[1:], e.why))
    out = union13(direct)
    for node, by_alt in sorted(nested.items()):
        if len(by_alt) < alts.get(node, 0):
            continue  # some alternative has no such event at all
        inter: HS13 | None = None
        for n in range(alts[node]):
            got = must_hold(by_alt[n], alts)
            inter = got if inter is None else (inter & got).prune()
            if not inter.terms:
                break
        if inter is not None and inter.terms:
            out = out | inter
    return out


@dataclass
class Analysis13:
    """Results of every ingress of a network of 1.3 pipelines (what the three checks read)."""

    view: NetworkView
    ingresses: list[Port]
    ingress_host: dict[Port, str]
    reaches: dict[Port, Reach13]
    truncated: list[Port] = field(default_factory=list)


_COMPILED13: weakref.WeakKeyDictionary[Pipeline13, Compiled13] = weakref.WeakKeyDictionary()


def forget13() -> None:
    """Forget compiled pipelines and the last results (benchmarks: the next check runs cold)."""
    _COMPILED13.clear()
    _LAST.clear()


def analyze13(view: NetworkView, *, ingress: str = "hosts", budget: int = DEFAULT_BUDGET13,
              cache: bool = True) -> Analysis13:
    """Every header a host can send, pushed in at every ingress point once for all three checks."""
    net = Net13(view, _COMPILED13 if cache else None)
    points = ingress_points(view, ingress)
    # millions of small objects and no cycle among them (see gc_paused); the state key too: a cold
    # one signs every pipeline with tuples as long as its tables
    with gc_paused():
        key = _state_key(view, net, ingress, budget) if cache else None
        if key is not None and _LAST and _LAST[0] == key:
            reaches = _LAST[1]  # nothing the results depend on changed since the last analysis
        else:
            reaches = explore_all13(net, list(points), budget)
            if key is not None:
                _LAST[:] = [key, reaches]
    truncated = [ing for ing, r in reaches.items() if r.truncated]
    return Analysis13(view, list(points), {k: v for k, v in points.items() if v is not None}, reaches, truncated)


_LAST: list[Any] = []   # [state key, reaches] of the last analysis (a check repeated on unchanged tables)


def _state_key(view: NetworkView, net: Net13, ingress: str, budget: int) -> tuple[Any, ...] | None:
    """Everything the reaches depend on: each pipeline (identity and signature), live links and
    switches, the ingress choice.  None when some switch has no 1.3 pipeline."""
    pipes = []
    for name in sorted(view.switches):
        c = net.compiled(name)
        pipes.append((name, id(c.pipe), c.signature))
    links = tuple(sorted(view.link_up.items()))
    up = tuple(sorted((n, view.is_switch_up(n)) for n in view.switches))
    return (tuple(pipes), links, up, ingress, budget)
