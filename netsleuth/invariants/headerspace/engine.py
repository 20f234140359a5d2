"""Header Space Analysis: where every header a host could send goes, through the flow tables.

``netsleuth.invariants.forwarding`` pushes the one packet each host pair
would send through the flow tables; this engine pushes *sets* of headers
(:class:`~netsleuth.invariants.headerspace.space.HeaderSpace`) instead, so a
violation is found for any header, sent or not (the checks that turn its
results into findings are in :mod:`netsleuth.invariants.headerspace.checks`).

Semantics are those of :func:`netsleuth.invariants.forwarding.trace_packet`
for each header in the set, which a property test checks header by header
against it:

* a header enters a switch on (switch, in_port); entering a (switch,
  in_port) already on its path is a loop (that copy stops there);
* at a switch that is down it is dropped;
* the best-ranked entry matching it (OpenFlow 1.0: exact entries first,
  then priority, ties in ``FlowTable.entries()`` order) acts on it; no entry:
  it is punted to the controller (table miss);
* the entry's actions, as :func:`netsleuth.model.switch.forward` applies
  them (FLOOD/ALL never to the in port, plain output to the in port sends
  nothing, unusable ports send nothing, set-field actions rewrite the copies
  that follow them): CONTROLLER punts; an entry with no output action at all
  is a drop rule, the controller's choice (``filtered``, not a blackhole);
  an entry whose outputs all send nothing drops; an output to a port without
  a live link drops; to a host delivers; to a switch continues.

Injection points are the host-facing ports with a live link (``ingress=
"all"`` adds every switch port with a live link).  The work is split in two
engines with the same semantics:

* a *batch* engine for the common shape of controller tables: at each
  (switch, in_port) all entries share one wildcard pattern (say in_port,
  dl_src, dl_dst as os-ken's simple_switch installs), so the headers split
  into disjoint classes keyed by that pattern's bits and each class moves as
  one small int (an interned key id plus the ingress number).  All ingresses
  advance together, one hop per round; the classes arriving at a (switch,
  in_port) are one numpy array, split by outcome in a few vectorized passes
  (no Python work per class); no set algebra is needed.  Each (switch, in_port) remembers on its compiled
  index which classes came in last time and how they split, so a check after
  no or few changes redoes only the cells whose input or table changed.
* the general engine (:func:`reachable`), a depth-first search over header
  spaces with lazy differences, set-field transfer functions and exact
  preimages back to the injected headers; it takes every class the batch
  engine cannot keep (a rule that floods, rewrites or mixes patterns, a
  class that revisits a port) and re-traces it from its ingress.

:func:`analyze` runs both from every ingress once, and its :class:`Analysis`
is what all three checks read.
"""

from __future__ import annotations

import gc
import sys
from collections import defaultdict
from collections.abc import Collection, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np  # the batch engine's classes travel as arrays (see _run_batch)

from netsleuth.invariants.forwarding import is_drop_rule, why_sends_nothing
from netsleuth.invariants.headerspace.compiled import (
    CTRL,
    F_DROP,
    F_NOTHING,
    F_PUNT,
    SPECIAL,
    CompiledSwitch,
    compiled,
    interner,
)
from netsleuth.invariants.headerspace.ingress import ingress_points
from netsleuth.invariants.headerspace.space import HeaderSpace, Rewrite, image, make_term, preimage, term_empty
from netsleuth.invariants.view import NetworkView
from netsleuth.model.flowtable import MISS_ACTIONS, SlotMap

Port = tuple[str, int]
DEFAULT_BUDGET = 200_000  # general-engine branches per ingress before giving up (Analysis.truncated)


# --------------------------------------------------------------------------- results
@dataclass
class Reach:
    """Where the headers injected at ``ingress`` go.  Header spaces are in terms of the
    headers as injected (set-field actions are undone with exact preimages)."""

    ingress: Port
    delivered: dict[str, list[HeaderSpace]] = field(default_factory=dict)
    punted: dict[str, list[HeaderSpace]] = field(default_factory=dict)
    drops: list[tuple[str, str, HeaderSpace]] = field(default_factory=list)     # (switch, why, hs)
    loops: list[tuple[tuple[Port, ...], HeaderSpace]] = field(default_factory=list)  # (path, hs)
    drop_paths: list[tuple[Port, ...]] = field(default_factory=list)  # the path to each of drops
    filtered: dict[str, list[HeaderSpace]] = field(default_factory=dict)  # switch -> dropped by a drop rule
    truncated: bool = False
    branches: int = 0

    def delivered_to(self, host: str) -> HeaderSpace:
        return union_of(self.delivered.get(host, ()))

    def punted_at(self, switch: str) -> HeaderSpace:
        return union_of(self.punted.get(switch, ()))

    def dropped(self) -> HeaderSpace:
        return union_of(hs for _s, _w, hs in self.drops)

    def looping(self) -> HeaderSpace:
        return union_of(hs for _p, hs in self.loops)

    def merge(self, other: Reach) -> None:
        for h, lst in other.delivered.items():
            self.delivered.setdefault(h, []).extend(lst)
        for s, lst in other.punted.items():
            self.punted.setdefault(s, []).extend(lst)
        for s, lst in other.filtered.items():
            self.filtered.setdefault(s, []).extend(lst)
        self.drops.extend(other.drops)
        self.drop_paths.extend(other.drop_paths)
        self.drop_paths.extend([()] * (len(self.drops) - len(self.drop_paths)))
        self.loops.extend(other.loops)
        self.truncated |= other.truncated
        self.branches += other.branches


def union_of(spaces: Iterable[HeaderSpace]) -> HeaderSpace:
    """One header space holding every term of ``spaces`` (no simplification)."""
    return HeaderSpace.union(spaces)


class HsaNet:
    """What the engines need from a view, looked up once per check."""

    def __init__(self, view: NetworkView, cache: bool = True) -> None:
        self.view = view
        self.switches = view.switches
        self.cache = cache
        self._compiled: dict[str, CompiledSwitch] = {}
        self._up: dict[str, bool] = {}
        self._pre: dict = {}

    def forget(self, name: str) -> None:
        """Compile switch ``name`` again when next asked (its table changed)."""
        self._compiled.pop(name, None)

    def compiled(self, name: str) -> CompiledSwitch:
        cs = self._compiled.get(name)
        if cs is None:
            cs = self._compiled[name] = compiled(self.switches[name], cache=self.cache)
        return cs

    def up(self, name: str) -> bool:
        u = self._up.get(name)
        if u is None:
            u = self._up[name] = self.view.is_switch_up(name)
        return u

    def peer(self, node: str, port: int) -> Port | None:
        return self.view.peer(node, port)

    def pre(self, chain: tuple[Rewrite, ...], w: tuple[int, int]) -> HeaderSpace:
        """The headers that ``chain`` rewrites into the wildcard ``w`` (memoized)."""
        key = (chain, w)
        hs = self._pre.get(key)
        if hs is None:
            hs = self._pre[key] = preimage(HeaderSpace.wildcard(*w), chain).prune()
        return hs


# --------------------------------------------------------------------------- general engine
def reachable(view: NetworkView, src_switch: str, src_port: int,
              header_space: HeaderSpace | None = None, *, budget: int = DEFAULT_BUDGET,
              _net: HsaNet | None = None) -> Reach:
    """Push ``header_space`` (default: every header) in at ``src_switch:src_port`` and
    return where it goes: the part delivered to each host, punted at each switch, dropped
    (with where, why and the path) and looping (with the path that revisits a port), all
    as sets of the headers injected.  Uses the general engine only."""
    net = _net or HsaNet(view)
    hs = HeaderSpace.all() if header_space is None else header_space
    reach = Reach((src_switch, src_port))
    _explore(net, src_switch, src_port, hs, reach, budget)
    return reach


def _explore(net: HsaNet, s0: str, p0: int, hs: HeaderSpace, reach: Reach, budget: int,
             path0: tuple[Port, ...] = ()) -> None:
    stack: list[tuple[str, int, HeaderSpace, HeaderSpace, tuple[Rewrite, ...], tuple[Port, ...]]]
    stack = [(s0, p0, hs, hs, (), path0)]
    switches = net.switches
    n = 0
    while stack:
        s, p, cur, orig, chain, path = stack.pop()
        n += 1
        if n > budget:
            reach.truncated = True
            break
        here = (s, p)
        if here in path:
            reach.loops.append((path + (here,), orig))
            continue
        path = path + (here,)
        if not net.up(s):
            reach.drops.append((s, "switch is down", orig))
            reach.drop_paths.append(path)
            continue
        cs = net.compiled(s)
        pieces, cands = cs.classify(p, cur)
        for i, cpiece in pieces:
            if not chain:
                opiece = cpiece
            elif i is None:  # the injected headers whose rewritten form no entry matches
                opiece = orig
                for j in sorted(cands):
                    opiece = opiece - net.pre(chain, cs.wildcard(j))
                opiece = opiece.prune()
            else:
                opiece = orig & net.pre(chain, cs.wildcard(i))
                for w in cs.shadowers(i, p):
                    opiece = opiece - net.pre(chain, w)
                opiece = opiece.prune()
            if i is None:
                reach.punted.setdefault(s, []).append(opiece)
                continue
            ems = cs.emissions(i, p)
            if not ems:
                entry = cs.entry(i)
                if is_drop_rule(entry.actions):
                    reach.filtered.setdefault(s, []).append(opiece)
                    continue
                reach.drops.append((s, why_sends_nothing(entry, p), opiece))
                reach.drop_paths.append(path)
                continue
            for kind, q, rws in ems:
                if kind == CTRL:
                    reach.punted.setdefault(s, []).append(opiece)
                elif kind == SPECIAL:
                    reach.drops.append((s, f"output to special port {q:#x}", opiece))
                    reach.drop_paths.append(path)
                else:
                    peer = net.peer(s, q)
                    if peer is None:
                        reach.drops.append((s, f"port {q} has no live link", opiece))
                        reach.drop_paths.append(path)
                    elif peer[0] in switches:
                        nxt = image(cpiece, rws) if rws else cpiece
                        stack.append((peer[0], peer[1], nxt, opiece, chain + rws, path))
                    else:
                        reach.delivered.setdefault(peer[0], []).append(opiece)
    reach.branches += n


# --------------------------------------------------------------------------- batch engine
# A class is a small int: the interned id of the packed bits its ingress pattern T fixes
# (compiled.interner(T)), plus the ingress number above bit 32.  Its header space is
# the wildcard (key, T).  Classes of one pattern move together, one hop per round.
TAG_SHIFT = 32      # a class is (ingress number << TAG_SHIFT) | key id; the checks read classes too
_IDM = (1 << 32) - 1
_FAST_ROUNDS = 32   # classes still moving after this many hops go to the general engine
_F_MISS = -4        # no entry at all: table miss
_DOWN = -100        # drop code: the switch is down


@dataclass
class _Batch:
    """Results of the batch engine: per outcome, the classes (tagged ids) that end there."""

    masks: list[int] = field(default_factory=list)      # per ingress number: its pattern T
    delivered: dict[str, list[int]] = field(default_factory=dict)   # host -> classes
    punted: dict[str, list[int]] = field(default_factory=dict)      # switch -> classes
    filtered: dict[str, list[int]] = field(default_factory=dict)    # switch -> classes a drop rule drops
    drops: dict[tuple[str, int, int], list[int]] = field(default_factory=dict)  # (switch, in_port, code)
    general: list[int] = field(default_factory=list)    # classes handed to the general engine
    ids_at: dict[int, Collection[int]] = field(default_factory=dict)  # ingress number -> its port's key ids
    rounds: int = 0
    hops: int = 0

    def key(self, x: int) -> int:
        """The packed header bits of class ``x``."""
        return interner(self.masks[x >> TAG_SHIFT])[1][x & _IDM]


def _batch(net: HsaNet, ingresses: list[Port], tags: dict[Port, int], n_tags: int | None = None,
           trace: dict[Port, list[list[int]]] | None = None) -> tuple[_Batch, list[Port]]:
    """Run the batch engine from every ingress whose port has a single-pattern index.

    ``n_tags``: how many ingress numbers there are (``ingresses`` may be some of them);
    ``trace``: when given, gets, per (switch, in_port), the lists of classes that came in
    there (what an incremental check needs to know which ingresses a flow_mod can touch).
    Returns its results and the ingresses it could not take (for the general engine).

    A run with the same inputs as the last one (see :func:`_batch_inputs`) returns the last
    one's results, which nobody changes: a check of an unchanged network costs a look at
    each switch instead of a step per class."""
    inputs = holder = None
    if trace is None:
        inputs = _batch_inputs(net, ingresses, tags, n_tags)
        # kept on a compiled switch of this network, so it goes when the network goes
        holder = next((cs for cs in inputs[4] if cs is not None), None)
        last = getattr(holder, "last_batch", None)
        if last is not None and _same_inputs(last[0], inputs):
            return last[1], list(last[2])
    out = _Batch(masks=[0] * (len(ingresses) if n_tags is None else n_tags))
    rest: list[Port] = []
    by_mask: dict[int, dict[Port, np.ndarray]] = {}
    acc = _Acc()
    with gc_paused():  # see gc_paused: compiling and pushing classes make no cycles
        for ing in ingresses:
            s, p = ing
            pi = net.compiled(s).port(p) if net.up(s) else None
            if pi is None or pi.ids is None:
                rest.append(ing)
                continue
            tag = tags[ing]
            mask = pi.fast_mask
            out.masks[tag] = mask  # type: ignore[assignment]  # fast_mask is set with ids
            out.ids_at[tag] = pi.key_ids()
            if pi.ids:
                xs = pi.memo.get(("ingress", tag))
                if xs is None:
                    xs = pi.memo[("ingress", tag)] = pi.arrays()[0].astype(np.int64) | (tag << TAG_SHIFT)
                by_mask.setdefault(mask, {})[ing] = xs  # type: ignore[arg-type]  # fast_mask is set with ids
        for mask, frontier in by_mask.items():
            _run_batch(net, out, acc, mask, frontier, trace)
        acc.into(out)
    if holder is not None:
        holder.last_batch = (inputs, out, list(rest))
    return out, rest


class _Acc:
    """Where the batch engine's classes end, as chunks (numpy arrays) while it runs; turned
    into the plain lists of ints of :class:`_Batch` (what the checks read) once at the end."""

    def __init__(self) -> None:
        self.delivered: dict[str, list[np.ndarray]] = {}
        self.punted: dict[str, list[np.ndarray]] = {}
        self.filtered: dict[str, list[np.ndarray]] = {}
        self.drops: dict[tuple[str, int, int], list[np.ndarray]] = {}
        self.general: list[np.ndarray] = []

    def into(self, out: _Batch) -> None:
        for name in ("delivered", "punted", "filtered", "drops"):
            dst = getattr(out, name)
            for where, chunks in getattr(self, name).items():
                dst[where] = _flat(chunks)
        out.general = _flat(self.general)


def _flat(chunks: list[np.ndarray]) -> list[int]:
    if not chunks:
        return []
    if len(chunks) == 1:
        return chunks[0].tolist()
    return np.concatenate(chunks).tolist()


def _batch_inputs(net: HsaNet, ingresses: list[Port], tags: dict[Port, int], n_tags: int | None) -> tuple:
    """Everything the batch engine reads: the ingresses and their numbers, each switch's
    compiled form (reused, hence the same object, exactly while its table and ports are
    unchanged; None when the switch is down) and the live links."""
    names = tuple(net.switches)
    return (list(ingresses), dict(tags), n_tags, names,
            tuple(net.compiled(n) if net.up(n) else None for n in names),
            getattr(net.view, "_peers", None) or net.view.link_up)


def _same_inputs(a: tuple, b: tuple) -> bool:
    return (a[3] == b[3] and all(x is y for x, y in zip(a[4], b[4], strict=True)) and a[2] == b[2]
            and a[0] == b[0] and a[1] == b[1] and a[5] == b[5])


@contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cyclic collector off for a while.  The batch engine makes millions of lists
    and ints and no cycles, yet each full collection scans every tracked object made so far:
    at FatTree K=16 that was a third of a cold check.  The collector is back on (if it was)
    afterwards, and runs as usual then."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _run_batch(net: HsaNet, out: _Batch, acc: _Acc, mask: int, frontier: dict[Port, np.ndarray],
               trace: dict[Port, list[list[int]]] | None = None) -> None:
    """Advance all classes of pattern ``mask`` one hop per round until they end.

    Classes travel as int64 arrays, a cell's arrivals in one array, so a cell's split is a
    few numpy passes (see :func:`_split`) instead of a dictionary probe per class.  Each
    (switch, in_port) remembers, on its compiled port index, the classes that came in last
    time and how they split; when the same classes come in again (the usual case between
    two checks) the split is reused and only the (view-dependent) destinations of its parts
    are looked up again.  Arrays are never changed after they are built."""
    switches = net.switches
    keys = interner(mask)[1]
    # code by key id for the port being split: filled with a port's codes, read, reset
    scratch = np.full(len(keys), _F_MISS, dtype=np.int32)
    delivered, punted, drops, general = acc.delivered, acc.punted, acc.drops, acc.general
    targets: dict[tuple[str, int], tuple[int, object]] = {}
    rounds = 0
    while frontier:
        rounds += 1
        if rounds > _FAST_ROUNDS:
            # Still moving: (almost surely) a loop.  The general engine re-traces these from
            # their ingress and reports the loop with its path.
            general.extend(frontier.values())
            break
        _record(trace, frontier)
        nxt: dict[Port, list[np.ndarray]] = {}
        for cell, xs in frontier.items():
            if not len(xs):
                continue
            out.hops += len(xs)
            s, p = cell
            if not net.up(s):
                drops.setdefault((s, p, _DOWN), []).append(xs)
                continue
            pi = net.compiled(s).port(p)
            ids = pi.ids
            fm = pi.fast_mask
            # mixed patterns here, or finer than the classes (fast_mask is set whenever ids is)
            if ids is None or fm & ~mask:  # type: ignore[operator]
                general.append(xs)
                continue
            memo = pi.memo.get((mask, rounds))  # a cell may be visited in several rounds
            if memo is not None and _same(memo[0], xs):
                parts = memo[1]
            else:
                parts = _split(pi, xs, mask, keys, scratch)
                pi.memo[(mask, rounds)] = (xs, parts)
            for code, lst in parts:
                if code >= 0:
                    t = targets.get((s, code))
                    if t is None:
                        peer = net.peer(s, code)
                        if peer is None:
                            t = (2, None)
                        elif peer[0] in switches:
                            t = (0, peer)
                        else:
                            t = (1, peer[0])
                        targets[(s, code)] = t
                    kind, where = t
                    if kind == 0:
                        cur = nxt.get(where)  # type: ignore[call-overload]  # kind 0: a (switch, port)
                        if cur is None:
                            nxt[where] = [lst]  # type: ignore[index]  # kind 0: a (switch, port)
                        else:
                            cur.append(lst)
                    elif kind == 1:
                        cur = delivered.get(where)  # type: ignore[call-overload]  # kind 1: a host name
                        if cur is None:
                            delivered[where] = [lst]  # type: ignore[index]  # kind 1: a host name
                        else:
                            cur.append(lst)
                    else:
                        drops.setdefault((s, p, code), []).append(lst)
                elif code == _F_MISS or code == F_PUNT:
                    cur = punted.get(s)
                    if cur is None:
                        punted[s] = [lst]
                    else:
                        cur.append(lst)
                elif code == F_NOTHING or code == F_DROP:  # outputs that go nowhere / a drop rule's
                    lost = drops.setdefault((s, p, code), []) if code == F_NOTHING else acc.filtered.setdefault(s, [])
                    lost.append(lst)
                else:
                    general.append(lst)
        frontier = {cell: ch[0] if len(ch) == 1 else np.concatenate(ch) for cell, ch in nxt.items()}
    out.rounds = max(out.rounds, rounds)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two class arrays are equal (numpy's own comparison costs microseconds of
    call overhead: small arrays, the incremental check's usual case, compare as lists)."""
    if a is b:
        return True
    if len(a) != len(b):
        return False
    if len(a) < 256:
        return a.tolist() == b.tolist()
    return bool(np.array_equal(a, b))


# A cell's split is vectorized when its classes are at least this share of its port's
# entries (it then costs a pass over the port's entries too); fewer classes (the
# incremental check's few ingresses) are looked up one by one.
_VECTOR_MIN = 32
_VECTOR_RATIO = 16


def _split(pi, xs: np.ndarray, mask: int, keys: list[int], scratch: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """Classes ``xs`` (of pattern ``mask``) arriving at port index ``pi``, by fast code
    (parts in ascending code order, each keeping the classes' order)."""
    fm = pi.fast_mask
    n = len(xs)
    ids = pi.ids
    if fm != mask:
        got = None
    elif n >= _VECTOR_MIN and n * _VECTOR_RATIO >= len(ids):
        # many classes: scatter the port's codes by key id, gather the classes'
        kids, codes = pi.arrays()
        scratch[kids] = codes
        got = scratch[xs & _IDM]
        scratch[kids] = _F_MISS
    elif pi.act is not None and isinstance(ids, SlotMap) and len(ids) >= SlotMap.COMPACT_MIN:
        # a few classes at a big port: binary search in the table's sorted key ids
        kids, codes = pi.arrays()
        q = (xs & _IDM).astype(np.int32)
        pos = np.minimum(np.searchsorted(kids, q), len(kids) - 1)
        got = np.where(kids[pos] == q, codes[pos], _F_MISS)
    else:
        got = None
    if got is None:
        return [(c, np.array(lst, dtype=np.int64)) for c, lst in sorted(_split_each(pi, xs.tolist(), mask, keys))]
    lo, hi = int(got.min()), int(got.max())
    if lo == hi:
        return [(lo, xs)]
    order = np.argsort(got, kind="stable")
    got = got[order]
    cuts = (np.flatnonzero(got[1:] != got[:-1]) + 1).tolist()
    ys = xs[order]
    return [(int(got[a]), ys[a:b]) for a, b in zip([0, *cuts], [*cuts, n], strict=True)]


def _split_each(pi, xs: list[int], mask: int, keys: list[int]) -> list[tuple[int, list[int]]]:
    """:func:`_split` one class at a time (few classes, or classes finer than the port)."""
    ids, fm, act = pi.ids, pi.fast_mask, pi.act
    get = ids.get
    if fm == mask and act is not None:  # ids: key id -> the table's slot (see PortIndex)
        cba = pi.code_by_act
        by_act: dict[int, list[int]] = {a: [] for a in cba}
        by_act[MISS_ACTIONS] = []  # slot 0's action-list id: no entry
        idm = _IDM
        for x in xs:
            by_act[act[get(x & idm, 0)]].append(x)
        out: dict[int, list[int]] = {}
        for a, lst in by_act.items():
            if lst:
                c = cba.get(a, _F_MISS)
                cur = out.get(c)
                if cur is None:
                    out[c] = lst
                else:
                    cur.extend(lst)
        return list(out.items())
    local: dict[int, list[int]] = {c: [] for c in pi.codes()}
    local[_F_MISS] = []
    if fm == mask:
        for x in xs:
            local[get(x & _IDM, _F_MISS)].append(x)
    else:  # the classes fix more bits than this port's pattern: project them
        kc = pi.key_code().get
        for x in xs:
            local[kc(keys[x & _IDM] & fm, _F_MISS)].append(x)
    return [(c, lst) for c, lst in local.items() if lst]


def _record(trace: dict[Port, list[list[int]]] | None, frontier: dict[Port, np.ndarray]) -> None:
    """Note the classes coming in at each cell of this round (the lists are never changed)."""
    if trace is None:
        return
    for cell, xs in frontier.items():
        seen = trace.get(cell)
        if seen is None:
            trace[cell] = [xs.tolist()]
        else:
            seen.append(xs.tolist())


# --------------------------------------------------------------------------- analysis
@dataclass
class Analysis:
    """Everything the three checks need, computed once per view (see :func:`analyze`)."""

    view: NetworkView
    ingresses: list[Port]
    ingress_host: dict[Port, str]
    reaches: dict[Port, Reach]        # general-engine results per ingress
    batch: _Batch
    tags: dict[Port, int]
    net: HsaNet
    truncated: list[Port] = field(default_factory=list)
    _by_tag: dict | None = None
    _reach_cache: dict = field(default_factory=dict)

    def _tagged(self, kind: str) -> dict[int, dict]:
        """Batch results of one kind ("delivered", "punted", "drops") bucketed by ingress
        number, built on first use."""
        if self._by_tag is None:
            self._by_tag = {}
        by = self._by_tag.get(kind)
        if by is None:
            by = self._by_tag[kind] = {}
            for where, xs in getattr(self.batch, kind).items():
                for x in xs:
                    d = by.get(x >> TAG_SHIFT)
                    if d is None:
                        d = by[x >> TAG_SHIFT] = {}
                    lst = d.get(where)
                    if lst is None:
                        d[where] = [x]
                    else:
                        lst.append(x)
        return by

    def reach(self, ingress: Port) -> Reach:
        """All results for one ingress, batch classes turned into header spaces."""
        r = self._reach_cache.get(ingress)
        if r is not None:
            return r
        r = self._reach_cache[ingress] = Reach(ingress)
        g = self.reaches.get(ingress)
        if g is not None:
            r.merge(g)
        tag = self.tags.get(ingress)
        if tag is None or tag not in self.batch.ids_at:
            return r
        miss = self.ingress_miss(tag)
        if miss.terms:
            r.punted.setdefault(ingress[0], []).append(miss)
        # Sorted, here and in drops(): the batch engine's lists follow its traversal, and an
        # incremental check that re-traces a few classes must list them the same way.
        for host, xs in sorted(self._tagged("delivered").get(tag, {}).items()):
            r.delivered.setdefault(host, []).append(self._hs(sorted(xs)))
        for sw, xs in sorted(self._tagged("punted").get(tag, {}).items()):
            r.punted.setdefault(sw, []).append(self._hs(sorted(xs)))
        for sw, xs in sorted(self._tagged("filtered").get(tag, {}).items()):
            r.filtered.setdefault(sw, []).append(self._hs(sorted(xs)))
        for (sw, p, code), xs in sorted(self._tagged("drops").get(tag, {}).items()):
            for why, group in self._drop_reasons(sw, p, code, sorted(xs)):
                r.drops.append((sw, why, self._hs(group)))
                r.drop_paths.append(())
        return r

    def ingress_miss(self, tag: int) -> HeaderSpace:
        """Headers no entry of a batch ingress port matches: punted at its switch."""
        fm = self.batch.masks[tag]
        keys = interner(fm)[1]
        t = make_term(0, 0, [(keys[j], fm) for j in self.batch.ids_at[tag]])
        if t is None or (t[2] and term_empty(t)):
            return HeaderSpace()
        return HeaderSpace((t,))

    def drops(self, ingress: Port) -> list[tuple[str, str, HeaderSpace]]:
        """(switch, why, header space) dropped for headers injected at ``ingress``."""
        out = list(self.reaches[ingress].drops) if ingress in self.reaches else []
        if self.batch.drops:
            for (sw, p, code), xs in sorted(self._tagged("drops").get(self.tags[ingress], {}).items()):
                for why, group in self._drop_reasons(sw, p, code, sorted(xs)):
                    out.append((sw, why, self._hs(group)))
        return out

    def loops(self, ingress: Port) -> list[tuple[tuple[Port, ...], HeaderSpace]]:
        r = self.reaches.get(ingress)
        return list(r.loops) if r is not None else []

    def _hs(self, xs: list[int]) -> HeaderSpace:
        masks = self.batch.masks
        key = self.batch.key
        return HeaderSpace((key(x), masks[x >> TAG_SHIFT], ()) for x in xs)

    def _drop_reasons(self, sw: str, p: int, code: int, xs: list[int]) -> list[tuple[str, list[int]]]:
        if code == _DOWN:
            return [("switch is down", xs)]
        if code >= 0:
            return [(f"port {code} has no live link", xs)]
        cs = self.net.compiled(sw)
        fm = cs.port(p).fast_mask
        by: dict[str, list[int]] = {}
        key = self.batch.key
        for x in xs:
            # fast_mask is set with ids
            by.setdefault(why_sends_nothing(cs.hit_entry(p, key(x) & fm), p), []).append(x)  # type: ignore[operator]
        return list(by.items())


def _has_of13(view: NetworkView) -> bool:
    """Whether some switch runs an OpenFlow 1.3 pipeline; free when no 1.3 pipeline exists
    in this process (the 1.3 model is then not even imported)."""
    mod = sys.modules.get("netsleuth.model.of13.pipeline")
    if mod is None:
        return False
    p13 = mod.Pipeline13
    get = getattr(view, "pipeline", None)  # NetworkView.pipeline(switch): FlowTable | Pipeline13
    for name, sw in view.switches.items():
        if isinstance(sw, p13) or (get is not None and isinstance(get(name), p13)):
            return True
    return False


def analyze(view: NetworkView, *, ingress: str = "hosts", batch: bool = True, cache: bool = True,
            budget: int = DEFAULT_BUDGET, only: Collection[Port] | None = None,
            trace: dict[Port, list[list[int]]] | None = None, net: HsaNet | None = None,
            points: dict[Port, str | None] | None = None) -> Analysis:
    """Push every header in at every ingress point, once for all three checks.

    ``batch=False`` uses only the general engine (slower; the tests compare both);
    ``cache=False`` recompiles every switch instead of reusing unchanged ones.
    ``only``: analyse just these ingresses (the others' results are left out of the
    :class:`Analysis`, whose ``ingresses`` and ``tags`` then hold these alone; ingress
    numbers stay those of the whole network, so results of several calls can be
    combined); ``trace``: see :func:`_batch` (batch engine only).  ``net`` and ``points``:
    the switches compiled and the ingress points of an earlier analysis of the same network,
    when the caller knows that only the flow tables it dropped from ``net`` changed since.

    A network of OpenFlow 1.3 pipelines is analysed by the 1.3 engine instead
    (:func:`netsleuth.invariants.headerspace.of13.engine.analyze13`, a wider header layout
    that 1.0 networks never pay for); its checks accept either result."""
    if _has_of13(view):
        from netsleuth.invariants.headerspace.of13.engine import analyze13
        return analyze13(view, ingress=ingress, budget=budget, cache=cache)  # type: ignore[return-value]
    if net is None:
        net = HsaNet(view, cache=cache)
    else:
        net.view, net.switches = view, view.switches
    if points is None:
        points = ingress_points(view, ingress)
    ingresses = list(points)
    tags = {ing: n for n, ing in enumerate(ingresses)}
    run = ingresses if only is None else [ing for ing in ingresses if ing in only]
    if batch:
        b, rest = _batch(net, run, tags, len(ingresses), trace)
    else:
        b, rest = _Batch(masks=[0] * len(ingresses)), list(run)
    reaches: dict[Port, Reach] = {}
    truncated: list[Port] = []
    for ing in rest:
        r = reaches[ing] = Reach(ing)
        _explore(net, ing[0], ing[1], HeaderSpace.all(), r, budget)
        if r.truncated:
            truncated.append(ing)
    # Classes the batch engine gave up on: re-trace each from its ingress, generally.
    if b.general:
        by_tag: dict[int, list[int]] = defaultdict(list)
        for x in b.general:
            by_tag[x >> TAG_SHIFT].append(x)
        for tag, xs in sorted(by_tag.items()):
            ing = ingresses[tag]
            r = reaches.setdefault(ing, Reach(ing))
            m = b.masks[tag]
            hs = HeaderSpace((b.key(x), m, ()) for x in sorted(set(xs)))  # in class order, as re-traced
            _explore(net, ing[0], ing[1], hs, r, budget)
            if r.truncated and ing not in truncated:
                truncated.append(ing)
    if only is not None:
        tags = {ing: tags[ing] for ing in run}
    return Analysis(view, run, {k: v for k, v in points.items() if v is not None}, reaches, b, tags,
                    net, truncated)
