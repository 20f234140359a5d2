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
is what all three checks read.  The engines are in ``batch.py`` and
``general.py``; this module holds the analysis that runs and reads them.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from netsleuth.invariants.forwarding import why_sends_nothing
from netsleuth.invariants.headerspace.batch import _DOWN, TAG_SHIFT, _Batch, _batch
from netsleuth.invariants.headerspace.compiled import (
    interner,
)
from netsleuth.invariants.headerspace.general import DEFAULT_BUDGET, HsaNet, Port, Reach, _explore
from netsleuth.invariants.headerspace.ingress import ingress_points
from netsleuth.invariants.headerspace.space import HeaderSpace
from netsleuth.invariants.headerspace.terms import make_term, term_empty
from netsleuth.invariants.view import NetworkView


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
    held: dict = field(default_factory=dict)   # reachability's index of ``reaches``, per ingress

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
            trace: dict[Port, list[Any]] | None = None, net: HsaNet | None = None,
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
