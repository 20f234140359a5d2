"""Header spaces as people read them in findings: hosts, ingress points, one witness header.

The header-space checks (:mod:`netsleuth.invariants.hsa_checks`) report
which hosts a violation concerns, where its headers entered, and one
concrete header from the set, so that a finding can be followed with the
concrete-packet tools; these helpers compute those parts.
"""

from __future__ import annotations

from collections.abc import Mapping

import networkx as nx

from netsleuth.invariants.hsa_engine import Analysis, Port
from netsleuth.invariants.hsa_space import HeaderSpace, unpack
from netsleuth.invariants.view import NetworkView
from netsleuth.model.addr import int_to_ip, int_to_mac


def mac_hosts(view: NetworkView) -> dict[int, str]:
    """Host name by MAC."""
    return {h.mac: h.name for h in view.topology.hosts}


def ingress_text(a: Analysis, ing: Port) -> str:
    """``s1:1 (from h1)``: an ingress port and the host behind it."""
    host = a.ingress_host.get(ing)
    return f"{ing[0]}:{ing[1]}" + (f" (from {host})" if host else "")


def dst_hosts(hs: HeaderSpace, macs: Mapping[int, str]) -> list[str]:
    """The hosts whose MAC ``hs`` fixes as dl_dst."""
    vals = hs.fixed_field("dl_dst")
    if not vals:
        return []
    return sorted({macs[v] for v in vals if v in macs})


def header_dict(header: int) -> dict:
    """A packed header as readable fields."""
    f = unpack(header)
    return {"dl_src": int_to_mac(f[1]), "dl_dst": int_to_mac(f[2]), "dl_vlan": f[3], "dl_vlan_pcp": f[4],
            "dl_type": f[5], "nw_tos": f[6], "nw_proto": f[7], "nw_src": int_to_ip(f[8]),
            "nw_dst": int_to_ip(f[9]), "tp_src": f[10], "tp_dst": f[11]}


def witness_dict(hs: HeaderSpace) -> dict | None:
    """One header of ``hs`` as readable fields (None when ``hs`` is empty)."""
    w = hs.witness()
    return None if w is None else header_dict(w)


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


def hosts_of(a: Analysis, ing: Port, hs: HeaderSpace, macs: Mapping[int, str]) -> tuple[str, ...]:
    """The sending host behind ``ing``, then the destinations ``hs`` names."""
    src = a.ingress_host.get(ing)
    return tuple(dict.fromkeys(([src] if src else []) + dst_hosts(hs, macs)))
