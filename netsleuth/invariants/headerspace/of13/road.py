"""The short road of the 1.3 exploration: a whole hop (switch, tables, where its copies go) in one pass.

Past the first switch almost every hop of a controller's network has headers that go whole
from table to table through entries that only output and go to a table (or write
metadata); :meth:`~netsleuth.invariants.headerspace.of13.switch13._Switch13._chain` already
runs those without the general machinery, but a hop still paid for a switch object, a
branch, per-action dispatch and the per-port classification of its copies every time.

:func:`road_hop` runs such a hop with what does not depend on its headers worked out once:

* per instructions object, in_port and current-header mapping, the entry's *step*
  (:func:`_step`): the copies its outputs emit, why an output that emits nothing sent
  nothing, its write-metadata and goto, or ``None`` when the entry needs the general run
  (write-actions, any action but an output);
* per (switch, port), where a copy sent out of it goes in this view (:func:`copies`);
* per header set (a class keeps its object from hop to hop) and set of bits a table view
  tests, the distinct (value, mask) its terms show of those bits (:meth:`Road.keys_of`):
  all that ``_TableView.whole`` reads of them, so the big-int masking of every term is
  done once per class instead of at every table of every hop.  When that is one (value,
  mask) fixing every tested bit (past the first hop, nearly always), the key is the value
  on those bits shifted down to bit 0, and the view probes its per-mask indexes, shifted
  the same way, with ints as wide as the tested bits instead of the 1,061-bit header
  (``_TableView.fixed_best``: such headers are never split, so nothing else is checked);
* per view and instructions object, the entry's step (``_TableView.steps``), checked by identity.

What is left per hop is one best-candidate probe per table and the hop's own events and
pushed hops, made in :func:`~netsleuth.invariants.headerspace.of13.engine.hop13`'s order,
with the same objects and texts (``tests/test_headerspace13_road.py`` runs every hop both
ways).  Anything else -- a loop, a down switch, a split, a table miss, a copy that goes
nowhere -- returns None before anything is noted, and the caller runs the hop the general
way.

This is not yet the 1.0 engine's batch (every ingress's classes through a table at once,
as numpy arrays): a 1.3 hop's results are events per class with their own path and rules,
and the classes are header sets, not small keys, so the per-class work stays in Python.  A
full check runs the hops of every ingress in waves, switch by switch
(:func:`~netsleuth.invariants.headerspace.of13.engine.explore_all13`), so that the hops at
one switch read its views one after the other instead of from cold memory; the hops of a
wave into one port (:func:`road_wave`) are probed table by table together, a mask's dict
probes for all their keys in one ``map`` (``_TableView.fixed_best_many``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import repeat
from operator import contains, is_, itemgetter
from typing import Any

from os_ken.ofproto import ofproto_v1_3 as ofp

from netsleuth.invariants.headerspace.of13.space import HS13
from netsleuth.invariants.headerspace.of13.switch13 import Compiled13, Emission, _Switch13, _TableView
from netsleuth.invariants.headerspace.of13.symbolic import Sym
from netsleuth.model.of13.actions import Output
from netsleuth.model.of13.flowtable import FlowEntry13

# The engine's hop and event tuples (of13/engine.py's Hop13 and Event13), named here without importing
# the engine, which imports this module.
Hop13 = tuple[Any, ...]
Event13 = tuple[str, "str | None", Any]

# a step: (emitted copies, lost text or "", write-metadata (value, mask) or None, goto table or None)
Step = tuple[tuple[Emission, ...], str, Any, Any]
_CONTROLLER = ofp.OFPP_CONTROLLER
_MAX = ofp.OFPP_MAX


def _step(comp: Compiled13, entry: FlowEntry13, sym: Sym, in_port: int) -> Step | None:
    """What ``entry`` does on the short road for headers of mapping ``sym`` that came in on
    ``in_port`` (None: it needs the general run).  The same emissions, in the same order,
    and the same lost text as ``_Switch13._chain`` would give.  Kept per compiled pipeline by
    the instructions object (a controller's entries often share one; a MODIFY gives an entry
    new ones), in_port and mapping: what the step reads of the pipeline besides them (its
    ports) is part of its signature."""
    inst = entry.instructions
    steps: dict[Any, Any] = comp.steps
    key = (id(inst), in_port, id(sym))
    got = steps.get(key)
    if got is not None and got[0] is inst and got[1] is sym:
        return got[2]
    if len(steps) >= _STEPS:
        steps.clear()
    st = _make_step(comp, inst, sym, in_port)
    steps[key] = (inst, sym, st)   # holding both: their ids are not reused while the key is here
    return st


_STEPS = 4096   # steps a compiled pipeline keeps (then it forgets them all)


def _make_step(comp: Compiled13, inst: Any, sym: Sym, in_port: int) -> Step | None:
    if inst.write:
        return None
    emits: tuple[Emission, ...] = ()
    lost = ""
    pipe = comp.pipe
    for a in inst.apply or ():
        if type(a) is not Output:
            return None
        port = a.port
        sent = (port,) if port == _CONTROLLER else pipe.output_ports(port, in_port)
        if sent:
            emits += tuple(Emission(q, sym) for q in sent)
        else:
            lost = _Switch13._lost(port, in_port)
    return (emits, lost, inst.metadata, inst.goto)


class Road:
    """The short road for one analysis's network (see the module docstring)."""

    __slots__ = ("event", "_view", "_where", "_up", "_keys")

    def __init__(self, view: Any, event: type) -> None:
        # No reference back to the engine's net that owns the road: a cycle would leave every
        # analysis (its net, compiled tables and results) to the full garbage collections.
        self.event = event   # the engine's HsaEvent13 (the engine imports this module)
        self._view: Any = view
        self._where: dict[tuple[str, int], tuple[int, Any]] = {}
        self._up: dict[str, bool] = {}   # whether a switch is up in the view
        # per header set (by id, held): what its terms show of each set of bits a view tests
        self._keys: dict[int, tuple[HS13, dict[int, Any]]] = {}

    def renew(self, view: Any) -> None:
        """Read ``view`` from now on, forgetting what was read of the last one (the incremental
        engine's view changes from message to message: :meth:`Net13.renew`)."""
        self._view = view
        self._where.clear()
        self._up.clear()

    def switch_up(self, s: str) -> bool:
        """Whether switch ``s`` is up in the network's current view (read once per view)."""
        up = self._up.get(s)
        if up is None:
            up = self._up[s] = self._view.is_switch_up(s)
        return up

    def keys_of(self, orig: HS13) -> dict[int, Any]:
        """What ``orig``'s terms show of each set of bits (see :func:`road_hop`), by the number of
        those bits (``_TableView.bid``; and under -1, :func:`_agreed` of ``orig``)."""
        got = self._keys.get(id(orig))
        if got is None or got[0] is not orig:
            if len(self._keys) >= _KEYS:
                self._keys.clear()
            got = self._keys[id(orig)] = (orig, {-1: _agreed(orig)})
        return got[1]

    def keys_of_all(self, origs: Sequence[HS13]) -> list[dict[int, Any]]:
        """:meth:`keys_of` of each of ``origs`` (a wave's header sets, most of them met before: the
        ones remembered are found in one pass, with no call each)."""
        rkeys = self._keys
        return [got[1] if got is not None and got[0] is orig else self.keys_of(orig)
                for got, orig in zip(map(rkeys.get, map(id, origs)), origs, strict=True)]


_KEYS = 1 << 17   # header sets a road remembers keys for (then it forgets them all)


def road_hop(net: Any, item: Hop13, noted: list[Any] | None = None) -> tuple[list[Event13], list[Hop13]] | None:
    """:func:`~netsleuth.invariants.headerspace.of13.engine.hop13` for a hop on the short road
    (its events and pushed hops, equal to hop13's), or None: run it the general way (nothing
    was noted then).  ``noted``: where the table lookups go (the incremental engine's)."""
    s, p, orig, sym, path, rules, choices = item
    here = (s, p)
    road = net.road
    if not road.switch_up(s) or here in path:
        return None
    view = net.view
    comp = net.compiled(s)
    views = comp._views
    t = md = tid = 0
    took: list[tuple[str, int, FlowEntry13]] = []
    seen: list[tuple[int, int]] | None = None if noted is None else []
    emits: tuple[Emission, ...] = ()
    got = road._keys.get(id(orig))   # Road.keys_of, inline: once per hop
    keys = got[1] if got is not None and got[0] is orig else road.keys_of(orig)
    skey = sym.key
    while True:
        tv: _TableView | None = views.get((t, skey, p, md, tid))   # Compiled13.view, inline
        if tv is None:
            tv = comp.view(t, sym, p, md, tid)
        if seen is not None:
            seen.append((t, md))
        r = _probe(tv, keys, orig)
        if r is None:
            return None   # a miss or a split
        entry = tv.entries[r]
        st = _entry_step(tv, comp, entry, sym, p)
        if st is None:
            return None
        took.append((s, t, entry))
        emits += st[0]   # (an output that sent nothing matters only to a hop that sends nothing)
        if st[2] is not None:
            md = entry.instructions.next_metadata(md)
        if st[3] is None:
            break
        t = st[3]
    if not emits:
        return None   # the general run tells why nothing was sent
    if seen is not None:
        noted.extend((tt, orig, sym, p, m, tid) for tt, m in seen)   # type: ignore[union-attr]
    return copies(road, view, s, orig, path + (here,), rules + tuple(took), choices, emits)


def road_wave(net: Any, s: str, p: int, group: Sequence[tuple[int, Hop13, Any]], nxt: dict[Any, list[Any]],
              other: Callable[[int, Hop13, Any, Any], None]) -> None:
    """:func:`road_hop` of each hop of a wave into ``s:p`` (``group``: (ingress number, hop, node)
    each, see :func:`~netsleuth.invariants.headerspace.of13.engine.explore_all13`), with what
    they share looked up once -- the switch, its state, the table views of each mapping and
    metadata, where each port leads -- and their tables walked together (:func:`_walk_wave`).

    A hop whose only result is one hop pushed to a switch (no event: most hops) files that hop
    into ``nxt``, by the (switch, port) it goes into, as (ingress number, hop, node); ``other``
    gets every other hop, in turn, with its result (None, or its events and pushed hops): the
    hops of a wave's tens of thousands that pass on make no lists and no call."""
    road = net.road
    if not road.switch_up(s):
        for n, item, node in group:
            other(n, item, node, None)
        return
    view = net.view
    step = ((s, p),)   # what each hop adds to its path
    where = road._where
    sends: dict[int, Any] = {}   # out port -> (switch, port, the next wave's hops there) or None
    for (n, item, node), walked in zip(group, _walk_wave(net, s, p, group), strict=True):
        if walked is None:
            other(n, item, node, None)
            continue
        _s, _p, orig, _sym, path, rules, choices = item
        took, emits = walked
        path = path + step
        rules = rules + took
        if len(emits) == 1:   # one copy (most hops): to a switch, one pushed hop and no event
            q, qsym = emits[0]
            to = sends.get(q, _UNSEEN)
            if to is _UNSEEN:
                lead = where.get((s, q))
                if lead is None:
                    lead = where[(s, q)] = port_leads(view, s, q)
                to = sends[q] = None if lead[0] else (*lead[1], nxt.setdefault(lead[1], []).append)
            if to is not None:
                s2, p2, put = to
                put((n, (s2, p2, orig, qsym, path, rules, choices), node))
                continue
        other(n, item, node, copies(road, view, s, orig, path, rules, choices, emits))


_UNSEEN = object()   # (road_wave: a port not looked up yet)
_SECOND, _THIRD, _FOURTH, _FIFTH = itemgetter(1), itemgetter(2), itemgetter(3), itemgetter(4)

Walked = tuple[tuple[tuple[str, int, FlowEntry13], ...], tuple[Emission, ...]]   # (rules taken, copies emitted)


def _walk_wave(net: Any, s: str, p: int, group: Sequence[tuple[int, Hop13, Any]]) -> list[Walked | None]:
    """The tables of each hop of ``group`` (all into ``s:p``) on the short road: (the rules taken,
    the copies emitted), or None (a loop, a miss, a split, an entry for the general run, nothing
    sent).  The hops of one current-header mapping (a wave's hops mostly share one) are walked
    together (:func:`_walk_many`), from the keys of their header sets (:meth:`Road.keys_of`)."""
    road = net.road
    comp = net.compiled(s)
    here = (s, p)
    if not group:
        return []
    # the usual wave: every hop of one mapping object and none a loop, walked together as they come
    # (those two questions asked of every hop by map, with no Python loop)
    items = list(map(_SECOND, group))
    sym: Any = items[0][3]
    if False not in map(is_, map(_FOURTH, items), repeat(sym)) and True not in map(contains, map(_FIFTH, items),
                                                                                   repeat(here)):
        origs: list[HS13] = list(map(_THIRD, items))
        return _walk_many(comp, road.keys_of_all(origs), origs, sym, s, p)
    out: list[Walked | None] = [None] * len(group)
    # per mapping (by the id of its object: every hop, and so its mapping, is held meanwhile):
    # the mapping, and its hops' places, keys and header sets
    by_sym: dict[int, tuple[Sym, list[int], list[dict[int, Any]], list[HS13]]] = {}
    last: Any = None
    live = [(j, x[1]) for j, x in enumerate(group) if here not in x[1][4]]   # (not a loop)
    for (j, item), keys in zip(live, road.keys_of_all([item[2] for _j, item in live]), strict=True):
        orig = item[2]
        if item[3] is not last:   # (the hops of a batch mostly share one)
            last = item[3]
            b = by_sym.get(id(last))
            if b is None:
                b = by_sym[id(last)] = (last, [], [], [])
            places, keyss, origs = b[1], b[2], b[3]
        places.append(j)
        keyss.append(keys)
        origs.append(orig)
    for sym, places, keyss, origs in by_sym.values():
        for j, walked in zip(places, _walk_many(comp, keyss, origs, sym, s, p), strict=True):
            out[j] = walked
    return out


def _walk_many(comp: Compiled13, keyss: list[dict[int, Any]], origs: list[HS13], sym: Sym, s: str,
               p: int) -> list[Walked | None]:
    """The tables of hops into ``s:p`` of one mapping ``sym``, header sets ``origs`` (their keys
    ``keyss``), walked table by table: the hops at one table (and metadata) are probed together
    (:func:`_ranks`), each then takes its entry's step (:func:`_entry_step`, worked out once per
    instructions object there, with the list of hops its next table gets) to its next table."""
    n = len(origs)
    took: list[tuple[tuple[str, int, FlowEntry13], ...]] = [()] * n
    emits: list[tuple[Emission, ...]] = [()] * n
    out: list[Walked | None] = [None] * n
    todo: list[tuple[int, int, list[int]]] = [(0, 0, list(range(n)))]   # (table, metadata, hops there)
    while todo:
        t, md, idx = todo.pop()
        tv = comp.view(t, sym, p, md, 0)
        entries = tv.entries
        nxt: dict[tuple[int, int], list[int]] = {}
        ranks = _ranks(tv, idx, keyss, origs)
        r0 = ranks[0] if ranks else None
        if r0 is not None and ranks.count(r0) == len(ranks):
            # every hop takes one entry (a table 0's catch-all that goes to the forwarding table, most
            # of all): its step once, for them all, as the loop below takes it for each
            _take_all(tv, comp, entries[r0], sym, s, t, p, md, nxt, idx, took, emits, out)
            todo.extend((t2, m2, ks) for (t2, m2), ks in nxt.items())
            continue
        # per instructions object (by id: the view's entries hold them): (copies emitted, the hops of
        # its next table or None for none), or None for a step the general run takes
        how: dict[int, tuple[tuple[Emission, ...], list[int] | None] | None] = {}
        for k, r in zip(idx, ranks, strict=True):
            if r is None:
                continue   # a miss or a split: the general run
            entry = entries[r]
            inst = entry.instructions
            got: Any = how.get(id(inst), _UNSEEN)
            if got is _UNSEEN:
                got = how[id(inst)] = _how(tv, comp, entry, sym, p, md, nxt)
            if got is None:
                continue
            took[k] += ((s, t, entry),)
            if got[0]:
                emits[k] += got[0]   # (an output that sent nothing matters only to a hop that sends nothing)
            if got[1] is not None:
                got[1].append(k)
            elif emits[k]:
                out[k] = (took[k], emits[k])
        todo.extend((t2, m2, ks) for (t2, m2), ks in nxt.items())
    return out


def _take_all(tv: _TableView, comp: Compiled13, entry: FlowEntry13, sym: Sym, s: str, t: int, p: int, md: int,
              nxt: dict[tuple[int, int], list[int]], idx: list[int], took: list[Any], emits: list[Any],
              out: list[Walked | None]) -> None:
    """:func:`_walk_many`'s step of the hops ``idx`` at table ``t`` (view ``tv``, metadata ``md``)
    when every one of them takes ``entry``: the same rules, copies, next tables and results, in the
    same order, as the step of each in turn, with the step worked out once."""
    got = _how(tv, comp, entry, sym, p, md, nxt)
    if got is None:
        return   # the general run
    rule = ((s, t, entry),)
    for k in idx:
        took[k] += rule
    em, there = got
    if em:
        for k in idx:
            emits[k] += em   # (an output that sent nothing matters only to a hop that sends nothing)
    if there is not None:
        there.extend(idx)
        return
    for k in idx:
        if emits[k]:
            out[k] = (took[k], emits[k])


def _how(tv: _TableView, comp: Compiled13, entry: FlowEntry13, sym: Sym, p: int, md: int,
         nxt: dict[tuple[int, int], list[int]]) -> tuple[tuple[Emission, ...], list[int] | None] | None:
    """What taking ``entry`` (in view ``tv``, at metadata ``md``) does to a hop of :func:`_walk_many`:
    (the copies it emits, the list in ``nxt`` of the hops of its next table and metadata, None
    when it goes to no table); None when its step needs the general run."""
    st = _entry_step(tv, comp, entry, sym, p)
    if st is None:
        return None
    if st[3] is None:
        return st[0], None
    return st[0], nxt.setdefault((st[3], md if st[2] is None else entry.instructions.next_metadata(md)), [])


def _ranks(tv: _TableView, idx: list[int], keyss: list[dict[int, Any]], origs: list[HS13]) -> list[int | None]:
    """:func:`_probe` of the header sets ``origs[k]`` for ``k`` in ``idx`` in view ``tv``: the rank
    of the entry that takes each whole, None for a miss or a split.  Keys that fix every bit
    the view tests (past the first hop, all of them) are probed together
    (``_TableView.fixed_best_many``)."""
    bid = tv.bid
    kss: list[Any] = list(map(dict.get, map(keyss.__getitem__, idx), repeat(bid)))
    if None in kss:
        for j, k in enumerate(idx):
            if kss[j] is None:
                kss[j] = keyss[k][bid] = _keys(origs[k], tv.bits, tv.low, keyss[k])
    if tuple not in set(map(type, kss)):
        return tv.fixed_best_many(kss)
    return [_probe(tv, keyss[k], origs[k]) for k in idx]


def _probe(tv: _TableView, keys: dict[int, Any], orig: HS13) -> int | None:
    """The rank of the entry that takes every header of ``orig`` in view ``tv``; None for a miss
    or a split (``tv.whole(orig)``, from the distinct (value & bits, mask & bits) of orig's terms:
    all it reads of them, worked out once per header set and bits in ``keys`` -- a class of
    headers keeps its object from hop to hop, and a network's tables mostly test the same bits)."""
    ks = keys.get(tv.bid)
    if ks is None:
        ks = keys[tv.bid] = _keys(orig, tv.bits, tv.low, keys)
    if isinstance(ks, int):   # one key, fixing every tested bit: the best candidate takes it whole
        return tv.fixed_best(ks)
    r = tv.whole_keys(ks)
    return None if r is None or r < 0 else r


def _entry_step(tv: _TableView, comp: Compiled13, entry: FlowEntry13, sym: Sym, p: int) -> Step | None:
    """:func:`_step` of ``entry`` in view ``tv`` (of in_port ``p``), kept in the view: the step
    depends on the instructions and mapping only (a controller's entries often share one
    instructions object: one per output port, say)."""
    inst = entry.instructions
    got = tv.steps.get(id(inst))
    if got is not None and got[0] is inst and got[1] is sym:
        return got[2]
    st = _step(comp, entry, sym, p)
    if len(tv.steps) >= _STEPS:
        tv.steps.clear()
    tv.steps[id(inst)] = (inst, sym, st)   # holding both: their ids are not reused while the key is here
    return st


def copies(road: Road, view: Any, s: str, orig: HS13, path: tuple[Any, ...], rules: tuple[Any, ...],
            choices: tuple[Any, ...], emits: tuple[Emission, ...]) -> tuple[list[Event13], list[Hop13]]:
    """The events and pushed hops of a hop's copies ``emits`` out of switch ``s``, in emission order
    (where each goes: :func:`port_leads` of the view, kept in the road per (switch, port))."""
    events: list[Event13] = []
    pushes: list[Hop13] = []
    where = road._where
    event = road.event
    for em in emits:
        q = em.port
        got = where.get((s, q))
        if got is None:
            got = where[(s, q)] = port_leads(view, s, q)
        kind, x = got
        if kind == 0:
            pushes.append((x[0], x[1], orig, em.sym, path, rules, choices))
        elif kind == 1:
            events.append(("delivered", x, event(orig, x, path, rules, choices, "", em.sym)))
        elif kind == 2:
            events.append(("punted", s, event(orig, s, path, rules, choices)))
        else:
            events.append(("drops", None, event(orig, s, path, rules, choices, x)))
    return events, pushes


def _keys(orig: HS13, bits: int, low: int, keys: dict[int, Any]) -> int | tuple[tuple[int, int], ...]:
    """What a table view testing ``bits`` reads of ``orig``'s terms: the distinct (value & bits,
    mask & bits), or, when that is one that fixes every bit, its value on them shifted down by
    :func:`~netsleuth.invariants.headerspace.of13.classify.low_bit` (an int: what
    :meth:`~netsleuth.invariants.headerspace.of13.classify._TableView.fixed_best` reads;
    ``low``: ``low_bit(bits)``, which the view keeps).  ``keys``: ``orig``'s keys, which hold
    under -1 the bits all of its terms fix to one value (:func:`_agreed`, worked out once)."""
    agreed = keys[-1]
    if agreed is not None and not bits & agreed[0]:
        return (agreed[1] >> low) & (bits >> low)
    return tuple(dict.fromkeys([(v & bits, m & bits) for v, m, _d in orig.terms]))


def _agreed(orig: HS13) -> tuple[int, int] | None:
    """The bits every term of ``orig`` fixes, each to one value for them all, as (their
    complement, a value holding them); None for no term.  A class of headers is a few terms
    (the injected headers' tag shapes) that differ in the tag bits alone: what a table testing
    other bits reads of them is then one key, found from this with no look at each term."""
    terms = orig.terms
    if not terms:
        return None
    v0, fixed, _d = terms[0]
    differ = 0
    for v, m, _d in terms[1:]:
        fixed &= m
        differ |= v ^ v0
    return ~(fixed & ~differ), v0


def port_leads(view: Any, s: str, q: int) -> tuple[int, Any]:
    """Where a copy out of ``s:q`` goes in ``view``: (0, (switch, port)) to a switch, (1, host) to a
    host, (2, None) to the controller, (3, why) nowhere (a blackhole)."""
    if q == _CONTROLLER:
        return 2, None
    if q > _MAX:
        return 3, f"output to special port {q:#x}"
    peer = view.peer(s, q)
    if peer is None:
        return 3, f"port {q} has no live link"
    if peer[0] in view.switches:
        return 0, peer
    return 1, peer[0]
