"""Loops, blackholes and reachability kept up to date flow_mod by flow_mod (OpenFlow 1.0).

A full check (:func:`~netsleuth.invariants.hsa_engine.analyze` and the three
checks of :mod:`~netsleuth.invariants.hsa_checks`) pushes every header in at
every ingress.  After one flow_mod most of that work is the same as before:
a flow_mod changes what its switch does only for the headers its match
accepts (an add, a modify or a delete of entries, strict or not, touches
only entries inside that match, so the table's answer can change only for
those headers).  So the results that can change are those of the ingresses
that sent some header class through that switch with a key the match
overlaps (Delta-net's and APKeep's idea: re-check the header classes a rule
overlaps, not the network), plus the ingresses on that switch whose own
classes the flow_mod may add or remove.

:class:`IncrementalHSA` keeps, per ingress, the findings of the three checks,
and per (switch, in_port) the classes of the batch engine that came in there
(per pattern, key id -> ingress numbers).  :meth:`IncrementalHSA.flow_mod`
re-analyses only the ingresses found that way (with ``analyze(only=...)``,
ingress numbers unchanged) and replaces their findings.  Ingresses the batch
engine does not take (the general engine traced them) are re-analysed after
every flow_mod, and anything but a flow_mod (links, switches, controllers,
ports) makes :meth:`IncrementalHSA.check` start over with a full check; the
property test checks that the findings equal a full check's after every
flow_mod.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from netsleuth.invariants import hsa_checks as H
from netsleuth.invariants.forwarding import Finding
from netsleuth.invariants.hsa_compile import port_state
from netsleuth.invariants.hsa_engine import _IDM, TAG_SHIFT, Analysis, HsaNet, Port, analyze
from netsleuth.invariants.hsa_ingress import ingress_points
from netsleuth.invariants.hsa_space import interner, match_wildcard
from netsleuth.invariants.view import NetworkView
from netsleuth.model.match import Match

KINDS = ("loops", "blackholes", "reachability")


class _SteadyView(NetworkView):
    """A view whose links, switches and controllers stay as they are while flow tables
    change (what :meth:`IncrementalHSA.flow_mod` is told): the checks' graph of live links
    is built once, not once per flow_mod."""

    def live_graph(self) -> Any:
        g = self.__dict__.get("_live_graph")
        if g is None:
            g = super().live_graph()
            object.__setattr__(self, "_live_graph", g)
        return g


def _steady(view: NetworkView) -> _SteadyView:
    return _SteadyView(**{f.name: getattr(view, f.name) for f in dataclasses.fields(view) if f.init})
# (switch, in_port) -> class pattern -> key id -> ingress numbers whose classes of that key came in
CellIndex = dict[Port, dict[int, dict[int, list[int]]]]


class IncrementalHSA:
    """The three header-space checks of one network, updated per flow_mod.

    Use :meth:`check` for a view (a full check the first time, whenever something
    other than flow tables changed, and when a table changed without :meth:`flow_mod`
    hearing of it: ``FlowTable.version`` tells) and :meth:`flow_mod` after each flow_mod
    the network applied (its switch and match); both return the findings of every
    ingress, in the order a full check lists ingresses."""

    def __init__(self) -> None:
        self.view: NetworkView | None = None
        self._state: tuple | None = None
        self._ingresses: list[Port] = []
        self._tag: dict[Port, int] = {}
        self._findings: dict[Port, dict[str, list[Finding]]] = {}
        self._other: dict[str, list[Finding]] = {k: [] for k in KINDS}  # findings of no ingress
        self._cells: CellIndex = {}
        self._cells_of: dict[str, list[Port]] = {}
        self._visited: dict[int, list[tuple[Port, int, int]]] = {}  # tag -> (cell, mask, key id)
        self._masks: list[int] = []
        self._general: set[Port] = set()     # ingresses (partly) traced by the general engine
        self._net: HsaNet | None = None
        self._steady: _SteadyView | None = None
        self._versions: dict[str, object] = {}
        self._points: dict[Port, str | None] = {}
        self.full_checks = 0
        self.partial_checks = 0
        self.reanalysed = 0

    # ------------------------------------------------------------------ public
    def check(self, view: NetworkView) -> dict[str, list[Finding]]:
        """The findings for ``view``: a full check unless only flow tables changed since the
        last call and every flow_mod was reported through :meth:`flow_mod`."""
        if self.view is None or self._state_of(view) != self._state or self._versions_of(view) != self._versions:
            self._full(view)
        else:
            self.view = view
        return self.findings()

    def flow_mod(self, view: NetworkView, switch: str, match: Match) -> dict[str, list[Finding]]:
        """The findings after a flow_mod with ``match`` was applied to ``switch``'s table.

        Only flow tables may have changed since the last call (every flow_mod reported
        here); :meth:`check` is the call that notices anything else."""
        steady = self._steady
        if self.view is None or steady is None or view.switches.get(switch) is not steady.switches.get(switch):
            self._full(view)
            return self.findings()
        self.view = view
        if self._net is not None:
            self._net.forget(switch)
        versions = self._versions_of(view)
        if any(v != self._versions.get(n) for n, v in versions.items() if n != switch):
            self._full(view)  # another table changed behind our back: start over
            return self.findings()
        self._versions = versions
        dirty = self.affected(switch, match)
        if dirty:
            self._partial(steady, dirty)
        return self.findings()

    def findings(self) -> dict[str, list[Finding]]:
        out: dict[str, list[Finding]] = {k: [] for k in KINDS}
        for ing in self._ingresses:
            got = self._findings.get(ing)
            if got:
                for k in KINDS:
                    out[k].extend(got[k])
        for k in KINDS:
            out[k].extend(self._other[k])
        return out

    def affected(self, switch: str, match: Match) -> list[Port]:
        """The ingresses whose results a flow_mod with ``match`` on ``switch`` can change."""
        ip, v, m = match_wildcard(match)
        tags: set[int] = set()
        for cell in self._cells_of.get(switch, ()):
            if ip is not None and cell[1] != ip:
                continue
            for mask, by_key in self._cells[cell].items():
                keys = interner(mask)[1]
                if not (mask & ~m):  # the match fixes every bit of the classes: one key
                    j = interner(mask)[0].get(v & mask)
                    if j is not None:
                        tags.update(by_key.get(j, ()))
                    continue
                cm = mask & m
                cv = v & cm
                for j, ts in by_key.items():
                    if keys[j] & cm == cv:
                        tags.update(ts)
        out = {self._ingresses[t] for t in tags}
        out.update(ing for ing in self._ingresses if ing[0] == switch and (ip is None or ing[1] == ip))
        out.update(self._general)
        return [ing for ing in self._ingresses if ing in out]

    # ------------------------------------------------------------------ internals
    @staticmethod
    def _state_of(view: NetworkView) -> tuple:
        """Everything but the flow tables that the results depend on."""
        return (id(view.topology), tuple(sorted(view.link_up.items())),
                tuple(sorted(view.controllers_alive.items())), tuple(sorted(view.connected_dpids)),
                tuple(sorted((n, view.is_switch_up(n)) for n in view.switches)),
                tuple(sorted((k, tuple(v)) for k, v in view.controllers_of.items())),
                tuple(sorted(view.host_at.items())), view.isolation,
                tuple((n, id(sw), id(sw.table), port_state(sw)) for n, sw in sorted(view.switches.items())))

    @staticmethod
    def _versions_of(view: NetworkView) -> dict[str, object]:
        """Each switch's flow-table change counter (``FlowTable.version``)."""
        return {n: getattr(sw.table, "version", id(sw.table)) for n, sw in view.switches.items()}

    def _full(self, view: NetworkView) -> None:
        self.full_checks += 1
        self.view = view
        self._versions = self._versions_of(view)
        self._steady = _steady(view)
        self._state = self._state_of(view)
        self._cells, self._cells_of, self._visited = {}, {}, {}
        self._findings = {}
        trace: dict[Port, list[list[int]]] = {}
        self._net = HsaNet(view)
        self._points = ingress_points(view)
        a = analyze(view, trace=trace, net=self._net, points=self._points)
        self._ingresses = list(a.ingresses)
        self._tag = dict(a.tags)
        self._masks = list(a.batch.masks)
        self._index(a, trace, ())
        found = self._run_checks(view, a)
        self._other = {k: [] for k in KINDS}
        for kind, lst in found.items():
            for f in lst:
                ing = self._ingress_of(f)
                if ing is None:
                    self._other[kind].append(f)
                else:
                    self._findings.setdefault(ing, {k: [] for k in KINDS})[kind].append(f)

    def _partial(self, view: NetworkView, dirty: list[Port]) -> None:
        self.partial_checks += 1
        self.reanalysed += len(dirty)
        trace: dict[Port, list[list[int]]] = {}
        a = analyze(view, only=set(dirty), trace=trace, net=self._net, points=self._points)
        for ing in dirty:
            self._findings.pop(ing, None)
        self._index(a, trace, [self._tag[ing] for ing in dirty])
        for kind, lst in self._run_checks(view, a).items():
            for f in lst:
                where = self._ingress_of(f)
                if where is None:  # a finding with no ingress cannot come from a partial check
                    raise RuntimeError(f"a {kind} finding names no ingress: {f.message}")
                self._findings.setdefault(where, {k: [] for k in KINDS})[kind].append(f)

    @staticmethod
    def _run_checks(view: NetworkView, a: Analysis) -> dict[str, list[Finding]]:
        return {"loops": H.hsa_loops(view, a), "blackholes": H.hsa_blackholes(view, a),
                "reachability": H.hsa_reachability(view, a)}

    def _ingress_of(self, f: Finding) -> Port | None:
        text = (f.details or {}).get("ingress")
        if not isinstance(text, str) or ":" not in text:
            return None
        sw, _, port = text.rpartition(":")
        ing = (sw, int(port))
        return ing if ing in self._tag else None

    def _index(self, a: Analysis, trace: dict[Port, list[list[int]]], redo: Iterable[int]) -> None:
        """Forget where the classes of ingress numbers ``redo`` went; record ``trace``."""
        cells = self._cells
        for t in redo:
            for cell, mask, j in self._visited.pop(t, ()):
                lst = cells[cell][mask][j]
                lst.remove(t)
                if not lst:
                    del cells[cell][mask][j]
        masks = a.batch.masks
        for t, mask in enumerate(masks):
            if mask:
                self._masks[t] = mask
        visited = self._visited
        cells_of = self._cells_of
        for cell, lists in trace.items():
            by_mask = cells.get(cell)
            if by_mask is None:
                by_mask = cells[cell] = {}
                cells_of.setdefault(cell[0], []).append(cell)
            for xs in lists:
                for x in xs:
                    t = x >> TAG_SHIFT
                    mask = masks[t]
                    j = x & _IDM
                    by_key = by_mask.get(mask)
                    if by_key is None:
                        by_key = by_mask[mask] = {}
                    ts = by_key.get(j)
                    if ts is None:
                        by_key[j] = [t]
                    elif t not in ts:
                        ts.append(t)
                    else:
                        continue
                    v = visited.get(t)
                    if v is None:
                        visited[t] = [(cell, mask, j)]
                    else:
                        v.append((cell, mask, j))
        ran = set(a.ingresses)
        self._general -= ran
        self._general.update(ing for ing in a.ingresses if ing in a.reaches)
