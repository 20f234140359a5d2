"""Header spaces as people read them in findings: hosts, ingress points, one witness header.

The header-space checks (:mod:`netsleuth.invariants.hsa_checks`, and
:mod:`netsleuth.invariants.hsa13_checks` over 1.3 pipelines) report which
hosts a violation concerns, where its headers entered, and one concrete
header from the set, so that a finding can be followed with the
concrete-packet tools; these helpers compute those parts for either
layout (a :class:`~netsleuth.invariants.hsa_space.HeaderSet` knows its
fields) and either analysis (both have ``ingress_host``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

import networkx as nx

from netsleuth.invariants.forwarding import controller_ok
from netsleuth.invariants.hsa_ingress import Port
from netsleuth.invariants.hsa_space import HeaderSet, HeaderSpace
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
    comp: dict[str, int] = {}
    for i, c in enumerate(nx.connected_components(view.live_graph())):
        for n in c:
            comp[n] = i
    return comp


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
