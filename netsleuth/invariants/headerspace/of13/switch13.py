"""One OpenFlow 1.3 switch in the header-space engine (see ``engine.py``): a pipeline compiled per
table (:class:`Compiled13`), a table's entries translated into wildcards over the injected header
(``classify._TableView``), and a branch run through tables, instructions, groups and action sets
(:class:`_Switch13`), ending in emissions or drops.

Most hops of a controller's network take the short road: past the first switch every term of
the headers fixes what the tables test, so each table sends all of them to one entry, and
the entries only output and go to the next table.  :meth:`_Switch13._chain` runs those hops
without the general machinery (branches per action, action sets); anything else (a split,
a rewrite, a group, write-actions) is run the general way from the start.
"""


from __future__ import annotations

import itertools
import weakref
from collections.abc import Iterable
from dataclasses import dataclass
from operator import attrgetter, itemgetter
from typing import Any, NamedTuple

from os_ken.ofproto import ofproto_v1_3 as ofp

from netsleuth.invariants.headerspace.of13.classify import _TableView
from netsleuth.invariants.headerspace.of13.space import HS13
from netsleuth.invariants.headerspace.of13.symbolic import (
    _UNSUPPORTED,
    IDENTITY,
    St,
    Sym,
    Unsupported13,
    _pop_mpls,
    _pop_vlan,
    _push_mpls,
    _push_vlan,
    _set_field,
)
from netsleuth.model.of13.actions import (
    Action,
    Group,
    Output,
    PopMpls,
    PopVlan,
    PushMpls,
    PushVlan,
    SetField,
    SetQueue,
)
from netsleuth.model.of13.actionset import ActionSet
from netsleuth.model.of13.flowtable import FlowEntry13
from netsleuth.model.of13.headerbits import SHIFT13
from netsleuth.model.of13.pipeline import MAX_GROUP_DEPTH, Pipeline13


# --------------------------------------------------------------------------- one switch
class Emission(NamedTuple):
    port: int          # a port, OFPP_CONTROLLER, or a special port
    sym: Sym


@dataclass(slots=True)
class Branch13:
    """One path through a switch for the headers ``st.orig``: what it sent, the rules it took
    ((table id, entry) in order), the SELECT choices it made, and why it ended."""

    st: St
    emits: tuple[Emission, ...] = ()
    rules: tuple[tuple[int, FlowEntry13], ...] = ()
    choices: tuple[tuple[int, int], ...] = ()
    end: str = ""
    lost: str = ""   # why the last output or group it ran sent nothing ("" : none did)


def _sent_nothing(bs: list[Branch13], before: int, why: str) -> list[Branch13]:
    """Mark the branches a group action added no copy to: forwarding aimed at the group."""
    for b in bs:
        if len(b.emits) == before and not b.lost:
            b.lost = why
    return bs


def _port_name(port: int) -> str:
    names = {ofp.OFPP_FLOOD: "FLOOD", ofp.OFPP_ALL: "ALL", ofp.OFPP_IN_PORT: "IN_PORT", ofp.OFPP_TABLE: "TABLE"}
    return names.get(port, f"port {port:#x}")


def _translate(entry: FlowEntry13, sym: Sym, in_port: int, md: int, tid: int,
               look: dict[str, tuple[bool, int]] | None = None) -> tuple[int, int] | None:
    """The injected headers ``entry`` matches given the current mapping, or None for none.
    ``look``: what each field reads under this mapping (see :func:`lookup13`), for a caller
    that translates many entries with one mapping."""
    if look is None:
        look = lookup13(sym, in_port, md, tid)
    v = m = 0
    for name, val, mask in entry.match.entries:
        got = look.get(name)
        if got is None:
            got = look[name] = _reads(sym, name)
        const, x = got
        if const:
            if x & mask != val:
                return None
        else:
            fv, fm = val << x, mask << x
            both = m & fm   # bits an earlier field read too (a mapping can make two fields one)
            if both and (v ^ fv) & both:
                return None
            v |= fv
            m |= fm
    return (v, m)


def translated_view(ranks: Iterable[int], entries: Any, sym: Sym, in_port: int, md: int, tid: int) -> _TableView:
    """The view of the entries ``entries[r]`` of ``ranks`` (ascending) given the mapping: those
    that match some injected header coming in on ``in_port`` (:func:`translated_entries`),
    indexed (:func:`indexed_view`)."""
    return indexed_view(_port_records(translated_entries(ranks, entries, sym, md, tid), in_port))


Record = tuple[int, FlowEntry13, int, int]   # (rank, entry, its wildcard's value and mask over injected headers)


def translated_entries(ranks: Iterable[int], entries: Any, sym: Sym, md: int,
                       tid: int) -> dict[Any, list[Record]]:
    """The entries ``entries[r]`` of ``ranks`` (ascending) as wildcards over the injected headers
    given the mapping and pipeline state (each as :func:`_translate` makes it), by the in_port
    they match: the in_port (None: any; a masked in_port, never given by a validated match:
    (value, mask)), their records in rank order.  An entry no injected header can match on any
    port is left out.  The in_port is all that tells the views of one table apart: one pass
    over a table's entries serves the views of all its ports."""
    # what each field reads under the mapping, filled as fields come (see lookup13): the offset of
    # the injected bits it reads, or its constant value (in_port and in_phy_port: the port the
    # entry is filed under)
    shifts: dict[str, int] = {}
    consts = {"metadata": md, "tunnel_id": tid}
    # under the identity every field reads its own bits, and fields do not overlap: no two
    # fields of a match can then read the same bits (what the test below is for)
    overlap = sym is not IDENTITY
    out: dict[Any, list[Record]] = {}
    for r in ranks:
        e = entries[r]
        v = m = 0
        port: Any = None
        for name, val, mask in e.match.entries:
            x = shifts.get(name)
            if x is None:
                if name in _PORT_FIELDS:   # in_port and in_phy_port read the port a header came in on
                    c: Any = val if mask == _PORT_FULL else (val, mask)
                    if port is not None and port != c:
                        break
                    port = c
                    continue
                c = consts.get(name)
                if c is None:
                    const, c = _reads(sym, name)
                    (consts if const else shifts)[name] = c
                    if not const:
                        x = c
                if x is None:
                    if c & mask != val:
                        break
                    continue
            if overlap:
                both = m & (mask << x)
                if both and (v ^ (val << x)) & both:
                    break
            v |= val << x
            m |= mask << x
        else:
            lst = out.get(port)
            if lst is None:
                out[port] = [(r, e, v, m)]
            else:
                lst.append((r, e, v, m))
    return out


_PORT_FIELDS = frozenset(("in_port", "in_phy_port"))
_PORT_FULL = (1 << 32) - 1


def _port_records(recs: dict[Any, list[Record]], in_port: int) -> list[Record]:
    """The records of :func:`translated_entries` that match headers coming in on ``in_port``, in rank order."""
    mine = recs.get(in_port, [])
    anyport = recs.get(None)
    if anyport:
        # (a table's catch-all, say, after the entries of its port: then in order as they are)
        ordered = not mine or mine[-1][0] < anyport[0][0]
        mine = mine + anyport
    else:
        ordered = True
    for key, lst in recs.items():
        if type(key) is tuple and in_port & key[1] == key[0]:
            mine = mine + lst   # (a new list: recs keeps its own)
            ordered = False
    if not ordered:
        mine.sort(key=_RANK)
    return mine


_RANK = itemgetter(0)


def indexed_view(recs: Iterable[Record]) -> _TableView:
    """A view of the entries of ``recs`` (rank order), indexed by mask and value in one loop (a view
    of a big table holds thousands)."""
    tv = _TableView()
    kept = tv.entries
    ws = tv.ws
    groups = tv.groups
    bits = 0
    last = -1
    by: dict[int, list[int]] = {}
    for r, e, v, m in recs:
        if m != last:   # (entries of one mask are often neighbours: their index is looked up once)
            bits |= m
            last = m
            by = groups.setdefault(m, {})
        kept[r] = e
        ws[r] = (v, last)
        lst = [r]
        have = by.setdefault(v, lst)   # (one hash of a header-wide int: values are mostly new)
        if have is not lst:
            have.append(r)
    tv.tested(bits)
    return tv


def lookup13(sym: Sym, in_port: int, md: int, tid: int) -> dict[str, tuple[bool, int]]:
    """What a match field reads under a current-header mapping and pipeline state, by name:
    (True, its value) for a constant, (False, the injected field's bit offset) for a field
    of the injected header (filled in as :func:`_translate` meets fields)."""
    return {"in_port": (True, in_port), "in_phy_port": (True, in_port), "metadata": (True, md),
            "tunnel_id": (True, tid)}


def _reads(sym: Sym, name: str) -> tuple[bool, int]:
    s = sym.view(name)
    return (True, s) if isinstance(s, int) else (False, SHIFT13[s])


class Compiled13:
    """A pipeline's tables seen through current-header mappings, cached per mapping.

    Valid while the tables are unchanged (``signature``: the entries and their
    instruction objects, which a MODIFY replaces; None when ``signed`` is false, for a
    pipeline compiled for one analysis only, which nothing has to check it against)."""

    def __init__(self, pipe: Pipeline13, signed: bool = True) -> None:
        self._pipe = weakref.ref(pipe)   # the cache is keyed weakly on the pipeline
        self.signature = signature13(pipe) if signed else None
        # per (table, mapping, metadata, tunnel_id): the table's records by in_port (translated_entries)
        self._recs: dict[tuple[Any, ...], dict[Any, list[Record]]] = {}
        self._views: dict[tuple[Any, ...], _TableView] = {}
        # (port, in_port, id(sym)) -> (sym, what an output there emits): ports are part of the signature
        self.emissions: dict[tuple[int, int, int], tuple[Sym, tuple[Emission, ...]]] = {}
        self.steps: dict[Any, Any] = {}   # what instructions do on the short road (of13/road.py)

    @property
    def pipe(self) -> Pipeline13:
        p = self._pipe()
        assert p is not None, "a compiled pipeline outlived its pipeline"
        return p

    def view(self, t: int, sym: Sym, in_port: int, md: int, tid: int) -> _TableView:
        key = (t, sym.key, in_port, md, tid)
        tv = self._views.get(key)
        if tv is None:
            tv = self._views[key] = self._build(t, sym, in_port, md, tid)
        return tv

    def _build(self, t: int, sym: Sym, in_port: int, md: int, tid: int) -> _TableView:
        """A new view of table ``t`` (entries by rank: here their index in the table), from the
        table's entries translated once for every port (:func:`translated_entries`)."""
        key = (t, sym.key, md, tid)
        recs = self._recs.get(key)
        if recs is None:
            entries = self.pipe.tables.entries(t)
            recs = self._recs[key] = translated_entries(range(len(entries)), entries, sym, md, tid)
        return indexed_view(_port_records(recs, in_port))


def _outputs_only(inst: Any) -> bool:
    """Whether instructions only apply outputs: no write-metadata, write- or clear-actions (the
    next action set is then the one before, a goto aside)."""
    if inst.metadata is not None or inst.write or inst.clear:
        return False
    for a in inst.apply or ():
        if type(a) is not Output:
            return False
    return True


_INSTRUCTIONS = attrgetter("instructions")
_UNSEEN = object()   # (_Switch13._tables: instructions not looked at yet)


def signature13(pipe: Pipeline13) -> tuple[Any, ...]:
    """Identity of everything the analysis reads from a pipeline (entries, their
    instructions, groups, port states)."""
    entries = list(pipe.tables)   # (by ids in two tuples: equal exactly when every (entry, instructions) is)
    flows = (tuple(map(id, entries)), tuple(map(id, map(_INSTRUCTIONS, entries))))
    groups = tuple((gid, g.type, g.buckets) for gid, g in sorted(pipe.groups.groups.items()))
    ports = tuple(sorted(pipe.ports.items()))
    return (flows, groups, ports)


class _Switch13:
    """Runs branches through one pipeline (``Pipeline13.process`` over header sets)."""

    def __init__(self, comp: Compiled13, node_ids: itertools.count[int], alts: dict[int, int]) -> None:
        self.comp = comp
        self.node_ids = node_ids
        self.alts = alts

    @property
    def pipe(self) -> Pipeline13:
        return self.comp.pipe

    def run(self, orig: HS13, sym: Sym, in_port: int) -> list[Branch13]:
        got = self._chain(orig, sym, in_port)
        if got is not None:
            return got
        out: list[Branch13] = []
        self._tables(Branch13(St(orig, sym)), in_port, 0, ActionSet(), out)
        return out

    def _chain(self, orig: HS13, sym: Sym, in_port: int) -> list[Branch13] | None:
        """:meth:`run` for headers that go whole from table to table, each entry only outputting
        (to ports or CONTROLLER), writing metadata and going to a table: the one branch the
        general run would give; None when some step needs the general run (nothing is noted)."""
        comp = self.comp
        t = md = tid = 0
        rules: list[tuple[int, FlowEntry13]] = []
        seen: list[tuple[int, int]] = []
        emits: tuple[Emission, ...] = ()
        lost = ""
        while True:
            tv = comp.view(t, sym, in_port, md, tid)
            seen.append((t, md))
            r = tv.whole(orig)
            if r is None:
                end = f"table {t}: no rule matches and there is no table-miss entry (drop)"
                break
            if r < 0:
                return None
            entry = tv.entries[r]
            inst = entry.instructions
            if inst.write:
                return None
            rules.append((t, entry))
            for a in inst.apply or ():
                if type(a) is not Output:
                    return None
                port = a.port
                ems = self._emissions(port, sym, in_port)
                if ems:
                    emits += ems
                else:
                    lost = self._lost(port, in_port)
            if inst.metadata is not None:
                md = inst.next_metadata(md)
            if inst.goto is None:
                end = f"table {t}: rule has no output (drop)"
                break
            t = inst.goto
        self._noted([(tt, orig, sym, in_port, m, tid) for tt, m in seen])
        return [Branch13(St(orig, sym, md, tid), emits, tuple(rules), (), end, lost)]

    def _noted(self, lookups: list[tuple[int, HS13, Sym, int, int, int]]) -> None:
        """The table lookups a :meth:`_chain` made (for a subclass that records them)."""

    def _tables(self, br: Branch13, in_port: int, table_id: int, aset: ActionSet, out: list[Branch13]) -> None:
        st = br.st
        tv = self.comp.view(table_id, st.sym, in_port, st.metadata, st.tunnel_id)
        no_output = f"table {table_id}: rule has no output (drop)"
        last = not aset   # (with the entry's instructions: whether the short way below applies)
        # per instructions object (by id: the view's entries hold them), on the short way below: what
        # its outputs make of br's emissions and lost text (None: not the short way).  The first
        # hop's hundred and more pieces go to a few output ports: worked out once for each.
        short: dict[int, tuple[tuple[Emission, ...], str] | None] = {}
        for i, piece in tv.classify(st.orig):
            if i is None:
                out.append(Branch13(st.with_orig(piece), br.emits, br.rules, br.choices,
                                    f"table {table_id}: no rule matches and there is no table-miss entry (drop)",
                                    br.lost))
                continue
            entry = tv.entries[i]
            inst = entry.instructions
            if last:
                got: Any = short.get(id(inst), _UNSEEN)
                if got is _UNSEEN:
                    got = short[id(inst)] = (self._outs(br, inst.apply or (), st.sym, in_port)
                                             if inst.goto is None and _outputs_only(inst) else None)
                if got is not None:
                    # the last table with nothing in the action set, and only outputs: the one branch
                    # the general run below gives (the first hop's hundred and more pieces, each its own)
                    out.append(Branch13(st.with_orig(piece), got[0], br.rules + ((table_id, entry),), br.choices,
                                        no_output, got[1]))
                    continue
            b = Branch13(st.with_orig(piece), br.emits, br.rules + ((table_id, entry),), br.choices, lost=br.lost)
            bs = [b]
            if inst.apply:
                bs = self._execute(list(inst.apply), bs, in_port, 0)
            a2 = inst.next_action_set(aset)
            for b2 in bs:
                if inst.metadata is not None:
                    s2 = b2.st
                    b2.st = St(s2.orig, s2.sym, inst.next_metadata(s2.metadata), s2.tunnel_id)
                if inst.goto is not None:
                    self._tables(b2, in_port, inst.goto, a2, out)
                    continue
                for b3 in self._execute(a2.ordered(), [b2], in_port, 0):
                    b3.end = no_output
                    out.append(b3)

    def _outs(self, b: Branch13, outputs: Iterable[Any], sym: Sym, in_port: int) -> tuple[tuple[Emission, ...], str]:
        """The emissions and lost text of a branch that continues ``b`` with the outputs ``outputs``
        under mapping ``sym`` (what :meth:`_output` makes of them, one by one)."""
        emits = b.emits
        lost = b.lost
        for a in outputs:
            ems = self._emissions(a.port, sym, in_port)
            if ems:
                emits += ems
            else:
                lost = self._lost(a.port, in_port)
        return emits, lost

    def _execute(self, actions: list[Action], bs: list[Branch13], in_port: int, depth: int) -> list[Branch13]:
        for a in actions:
            nxt: list[Branch13] = []
            for b in bs:
                nxt.extend(self._action(a, b, in_port, depth))
            bs = nxt
        return bs

    def _action(self, a: Action, b: Branch13, in_port: int, depth: int) -> list[Branch13]:
        t = type(a)
        if t is Output:
            assert isinstance(a, Output)
            return [self._output(a.port, b, in_port)]
        if t is Group:
            assert isinstance(a, Group)
            return self._group(a.group_id, b, in_port, depth)
        if t is SetQueue:
            return [b]
        if t in _UNSUPPORTED:
            raise Unsupported13(f"action {t.__name__} (its effect depends on TTL values or PBB headers)",
                                "check this network with concrete packets (trace-packet) instead")
        if t is SetField:
            assert isinstance(a, SetField)
            sts = _set_field(b.st, a.field, a.value)
        elif t is PushVlan:
            sts = _push_vlan(b.st)
        elif t is PopVlan:
            sts = _pop_vlan(b.st)
        elif t is PushMpls:
            assert isinstance(a, PushMpls)
            sts = _push_mpls(b.st, a.ethertype)
        elif t is PopMpls:
            assert isinstance(a, PopMpls)
            sts = _pop_mpls(b.st, a.ethertype)
        else:
            return [b]
        return [Branch13(s, b.emits, b.rules, b.choices, lost=b.lost) for s in sts]

    def _output(self, port: int, b: Branch13, in_port: int) -> Branch13:
        ems = self._emissions(port, b.st.sym, in_port)
        if not ems:
            return Branch13(b.st, b.emits, b.rules, b.choices, lost=self._lost(port, in_port))
        return Branch13(b.st, b.emits + ems, b.rules, b.choices, lost=b.lost)

    def _emissions(self, port: int, sym: Sym, in_port: int) -> tuple[Emission, ...]:
        """What an output to ``port`` emits (cached per compiled pipeline)."""
        key = (port, in_port, id(sym))
        got = self.comp.emissions.get(key)
        if got is None or got[0] is not sym:
            if len(self.comp.emissions) >= 4096:   # many mappings (rewrites): start over
                self.comp.emissions.clear()
            sent = (port,) if port == ofp.OFPP_CONTROLLER else self.pipe.output_ports(port, in_port)
            got = self.comp.emissions[key] = (sym, tuple(Emission(p, sym) for p in sent))
        return got[1]

    @staticmethod
    def _lost(port: int, in_port: int) -> str:
        """Why an output to ``port`` that emits nothing sent nothing."""
        return (f"outputs to its own in port {in_port}, which sends nothing (it takes OFPP_IN_PORT)"
                if port == in_port else f"outputs to port {port}, which the switch does not have"
                if port <= ofp.OFPP_MAX else f"outputs to {_port_name(port)}, which reaches no port")

    def _group(self, group_id: int, b: Branch13, in_port: int, depth: int) -> list[Branch13]:
        groups = self.pipe.groups
        g = groups.groups.get(group_id)
        if g is None or depth >= MAX_GROUP_DEPTH:
            why = f"group {group_id} does not exist" if g is None else f"group {group_id} nests too deep"
            return [Branch13(b.st, b.emits, b.rules, b.choices, lost=why)]
        idx = groups.candidates(g, self.pipe.port_live)
        if g.type == ofp.OFPGT_SELECT:
            chosen = idx
            if not chosen:
                return [Branch13(b.st, b.emits, b.rules, b.choices, lost=f"group {group_id} has no live bucket")]
            node = next(self.node_ids)
            self.alts[node] = len(chosen)
            out = []
            for n, i in enumerate(chosen):
                alt = Branch13(b.st, b.emits, b.rules, b.choices + ((node, n),), lost=b.lost)
                out.extend(self._bucket(g.buckets[i].actions, alt, in_port, depth))
            return _sent_nothing(out, len(b.emits), f"group {group_id}'s bucket sends nothing")
        if not idx:
            why = f"group {group_id} has no live bucket" if g.buckets else f"group {group_id} has no buckets"
            return [Branch13(b.st, b.emits, b.rules, b.choices, lost=why)]
        bs = [b]
        for i in idx:
            nxt: list[Branch13] = []
            for cur in bs:
                nxt.extend(self._bucket(g.buckets[i].actions, cur, in_port, depth))
            bs = nxt
        return _sent_nothing(bs, len(b.emits), f"group {group_id}'s buckets send nothing")

    def _bucket(self, actions: tuple[Action, ...], b: Branch13, in_port: int, depth: int) -> list[Branch13]:
        """Run a bucket on a copy: the copy's rewrites stay in the bucket, its outputs and any
        split of the headers come back to the caller's branch."""
        done = self._execute(ActionSet.of(actions).ordered(), [b], in_port, depth + 1)
        st = b.st
        return [Branch13(st.with_orig(d.st.orig), d.emits, d.rules, d.choices, lost=d.lost)
                for d in done]
