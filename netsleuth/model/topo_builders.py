"""Named topology shapes and the spec parser: ``linear,4``, ``tree,depth=2,fanout=2``, ``fattree,4`` ...

``parse_topo`` accepts Mininet's ``--topo`` syntax (``single,3``,
``linear,k=4``, ``tree,depth=2,fanout=2``, ``torus,3,3``) plus ``mesh,N``
(a full mesh), ``ring,N``, ``fattree,K``, ``minimal``, STS's own
``sts-mesh,N`` and ``sts-fattree,PODS`` (its MeshTopology and FatTree with
its port, MAC and IP numbering, so imported STS traces name the same ports)
and topology files (``file:PATH``, ``*.json``, ``*.graphml``). Each builder reproduces its
original's numbering of switches, hosts and ports (Mininet's, STS's, or
Al-Fares et al.'s for the fat tree), so names in traces and papers agree.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from netsleuth.errors import UnknownTopologyError
from netsleuth.model.topology_graph import KNOWN_FORMS, Topology
from netsleuth.model.topology_io import load_topology_file

__all__ = ["parse_topo", "MAX_NODES"]

MAX_NODES = 2_000_000  # refuse specs that would exhaust memory instead of hanging
_FIX = f"use one of: {KNOWN_FORMS}"


def _err(problem: str, fix: str = _FIX) -> UnknownTopologyError:
    return UnknownTopologyError(problem, fix)


# --------------------------------------------------------------------------- shapes


def _single(t: Topology, k: int) -> None:
    # Mininet SingleSwitchTopo: s1, then h1..hk each linked (host, switch).
    s = t.add_switch()
    for _ in range(k):
        t.add_link(t.add_host(), s)


def _minimal(t: Topology) -> None:
    _single(t, 2)  # Mininet MinimalTopo: s1 with h1 and h2


def _linear(t: Topology, k: int, n: int = 1) -> None:
    # Mininet LinearTopo(k, n=1): si gets port 1 = hi, port 2 = s(i-1), port 3 = s(i+1).
    last: str | None = None
    for _ in range(k):
        s = t.add_switch()
        t.add_link(t.add_host(), s)
        if last is not None:
            t.add_link(s, last)
        last = s


def _tree(t: Topology, depth: int, fanout: int) -> None:
    # Mininet TreeTopo.addTree: create a switch, build each child subtree, then
    # link (parent, child); so switches and hosts are numbered depth-first and
    # a child switch's uplink is its port fanout+1.
    def add_tree(d: int) -> str:
        if d == 0:
            return t.add_host()
        node = t.add_switch()
        for _ in range(fanout):
            child = add_tree(d - 1)
            t.add_link(node, child)
        return node

    add_tree(depth)


def _torus(t: Topology, x: int, y: int, n: int = 1) -> None:
    # Mininet TorusTopo(x, y, n=1) with switches named s1..s(x*y) in Mininet's
    # creation order: Mininet's switch "s{i}x{j}" (1-based) is s{(i-1)*y + j}
    # here, with dpid (i-1)*y + j (Mininet uses i*256 + j); host h{same number}.
    sw: list[str] = []
    for _ in range(x * y):
        s = t.add_switch()
        t.add_link(t.add_host(), s)
        sw.append(s)
    for i in range(x):
        for j in range(y):
            t.add_link(sw[i * y + j], sw[i * y + (j + 1) % y])
            t.add_link(sw[i * y + j], sw[((i + 1) % x) * y + j])


def _mesh(t: Topology, k: int) -> None:
    # STS MeshTopology: every switch linked to every other, one host each.
    # si: port 1 = hi, then the other switches in ascending order.
    sw = []
    for _ in range(k):
        s = t.add_switch()
        t.add_link(t.add_host(), s)
        sw.append(s)
    for i in range(k):
        for j in range(i + 1, k):
            t.add_link(sw[i], sw[j])


def _sts_mesh(t: Topology, num_switches: int) -> None:
    # STS MeshTopology(num_switches=N): switch i (dpid i) has ports 1..N. The
    # host is wired to the *last* port N, with MAC 12:34:56:78:<i>:<N> and IP
    # 123.123.<i>.<N> (STS's default ip_format_str); host ids (hids) count
    # from 1 in switch order, so host i is h<i>. The switch-to-switch ports
    # are STS's FullyMeshedLinks: each switch keeps its free ports 1..N-1 in
    # ascending order, and for every pair i < j (in dpid order) both take
    # their *highest* free port -- so in a 3-mesh s1:2-s2:2, s1:1-s3:2, s2:1-s3:1.
    n = num_switches
    sw = [t.add_switch(f"s{i}", i) for i in range(1, n + 1)]
    for i, s in enumerate(sw, 1):
        h = t.add_host(f"h{i}", mac=f"12:34:56:78:{i:02x}:{n:02x}", ip=f"123.123.{i}.{n}")
        t.add_link(h, s, 0, n)
    free = [list(range(1, n)) for _ in sw]
    for i in range(n):
        for j in range(i + 1, n):
            t.add_link(sw[i], sw[j], free[i].pop(), free[j].pop())


def _sts_fattree(t: Topology, num_pods: int) -> None:
    # STS FatTree(num_pods=k), built bottom-up as STS does, so dpids follow its
    # creation order: edge switches first (dpid 1..), then each pod's
    # aggregation switches, then the cores; every switch is s<dpid> with
    # ports 1..k. Hosts (hid = creation order, h1..) sit on edge ports
    # 1..k/2 with STS's PortLand addresses: MAC 00:00:00:<pod>:<position>:<port>,
    # IP 123.<pod>.<position>.<port> (pod, position 0-based; port 1-based).
    # Edge e (position e in its pod) port k/2+1+a <-> the pod's aggregation
    # switch a, port e+1. Aggregation switches, pod by pod, take the cores
    # round robin on their ports k/2+1..k; a core's port is pod+1. STS keeps
    # Python 2's integer k/2, so an odd k gives fewer cores than aggregation
    # uplinks: a core port is then wired twice in STS; only its first link is
    # kept here (STS's choice depended on set order).
    k = num_pods
    half = k // 2
    hosts_per_pod = half * half
    edges: list[tuple[str, int, int]] = []  # (switch, pod, position)
    dpid = 0
    for i in range(hosts_per_pod * k):
        pod = i // hosts_per_pod if hosts_per_pod else 0
        if i % half == 0:
            dpid += 1
            edges.append((t.add_switch(f"s{dpid}", dpid), pod, (len(edges)) % half))
        edge, _, position = edges[-1]
        port = i % half + 1
        h = t.add_host(f"h{i + 1}", mac=f"00:00:00:{pod:02x}:{position:02x}:{port:02x}",
                       ip=f"123.{pod}.{position}.{port}")
        t.add_link(h, edge, 0, port)
    aggs: list[tuple[str, int]] = []
    for pod in range(k):
        pod_aggs = []
        for _ in range(half):
            dpid += 1
            pod_aggs.append(t.add_switch(f"s{dpid}", dpid))
        for e, (edge, _, _) in enumerate(edges[pod * half:(pod + 1) * half]):
            for a, agg in enumerate(pod_aggs):
                t.add_link(edge, agg, half + 1 + a, e + 1)
        aggs += [(agg, pod) for agg in pod_aggs]
    cores = []
    for _ in range(hosts_per_pod):
        dpid += 1
        cores.append(t.add_switch(f"s{dpid}", dpid))
    turn = 0
    for agg, pod in aggs:
        for port in range(half + 1, k + 1):
            core = cores[turn % len(cores)]
            turn += 1
            if t.neighbor(core, pod + 1) is None:
                t.add_link(agg, core, port, pod + 1)


def _ring(t: Topology, k: int) -> None:
    # linear,k closed by sk-s1: si port 1 = hi, 2 = s(i-1) (s1: s2), 3 = s(i+1) (s1: sk).
    _linear(t, k)
    t.add_link(f"s{k}", "s1")


def _fattree(t: Topology, k: int) -> None:
    # Al-Fares et al. k-ary fat tree. Switches in order: cores c1..c(k/2)^2,
    # then pod by pod its aggregation a.. and edge e.. switches (numbered
    # globally), dpid = creation number. Every switch uses ports 1..k:
    #   edge e: 1..k/2 = hosts, k/2+1..k = the pod's aggregation switches
    #   agg  a: 1..k/2 = the pod's edge switches, k/2+1..k = its cores
    #   core c: port p = pod p
    # Aggregation switch j of every pod links to cores j*k/2+1 .. (j+1)*k/2.
    half = k // 2
    cores = [t.add_switch(f"c{i + 1}") for i in range(half * half)]
    aggs: list[list[str]] = []
    edges: list[list[str]] = []
    for p in range(k):
        aggs.append([t.add_switch(f"a{p * half + j + 1}") for j in range(half)])
        edges.append([t.add_switch(f"e{p * half + j + 1}") for j in range(half)])
    for p in range(k):
        for e in edges[p]:
            for _ in range(half):
                t.add_link(t.add_host(), e)
    for p in range(k):
        for e in edges[p]:
            for a in aggs[p]:
                t.add_link(e, a)
    for p in range(k):
        for j, a in enumerate(aggs[p]):
            for c in range(half):
                t.add_link(a, cores[j * half + c])


@dataclass(frozen=True, slots=True)
class _Form:
    build: Callable[..., None]
    params: tuple[tuple[str, int | None, int], ...]  # (name, default or None = required, minimum)
    usage: str
    size: Callable[..., int]  # number of nodes, checked before building
    check: Callable[..., str | None] = lambda **_: None  # extra rule -> problem text


_FORMS: dict[str, _Form] = {
    "minimal": _Form(_minimal, (), "minimal", lambda: 3),
    "single": _Form(_single, (("k", 2, 1),), "single,N", lambda k: 1 + k),
    "linear": _Form(_linear, (("k", 2, 1), ("n", 1, 1)), "linear,N", lambda k, n: 2 * k,
                    lambda k, n: None if n == 1 else f"linear with n={n} hosts per switch is not supported"),
    "tree": _Form(_tree, (("depth", 1, 1), ("fanout", 2, 1)), "tree,depth=D,fanout=F",
                  lambda depth, fanout: depth + 1 if fanout == 1 else
                  (fanout ** (depth + 1) - 1) // (fanout - 1) if depth < 64 else MAX_NODES + 1),
    "torus": _Form(_torus, (("x", None, 3), ("y", None, 3), ("n", 1, 1)), "torus,X,Y",
                   lambda x, y, n: 2 * x * y,
                   lambda x, y, n: None if n == 1 else f"torus with n={n} hosts per switch is not supported"),
    "mesh": _Form(_mesh, (("k", 3, 1),), "mesh,N", lambda k: 2 * k),
    "sts-mesh": _Form(_sts_mesh, (("num_switches", 3, 1),), "sts-mesh,N", lambda num_switches: 2 * num_switches,
                      lambda num_switches: None if num_switches <= 255 else
                      f"STS writes the dpid and port into one MAC byte each: at most 255 switches, got {num_switches}"),
    "sts-fattree": _Form(_sts_fattree, (("num_pods", 4, 2),), "sts-fattree,PODS",
                         lambda num_pods: 5 * num_pods * num_pods // 4 + num_pods ** 3 // 4,
                         lambda num_pods: None if num_pods <= 255 else
                         f"STS writes the pod into one MAC byte: at most 255 pods, got {num_pods}"),
    "ring": _Form(_ring, (("k", 3, 3),), "ring,N", lambda k: 2 * k),
    "fattree": _Form(_fattree, (("k", 4, 2),), "fattree,K", lambda k: 5 * k * k // 4 + k ** 3 // 4,
                     lambda k: None if k % 2 == 0 else f"fattree needs an even K, got {k}"),
}


def _parse_int(form: str, param: str, text: str, usage: str) -> int:
    if not re.fullmatch(r"[+-]?\d+", text.strip()):
        raise _err(f"{form}: {param}={text!r} is not an integer", f"write e.g. {usage}; {_FIX}")
    return int(text)


def parse_topo(spec: str) -> Topology:
    """Build the topology a Mininet-style spec names (see :data:`KNOWN_FORMS`)."""
    if not isinstance(spec, str) or not spec.strip():
        raise _err(f"empty topology spec {spec!r}")
    text = spec.strip()
    if text.startswith("file:"):
        return load_topology_file(text[len("file:"):], spec=text)
    if text.lower().endswith((".json", ".graphml")):
        return load_topology_file(text, spec=text)
    parts = [p.strip() for p in text.split(",")]
    form_name = parts[0].lower()
    form = _FORMS.get(form_name)
    if form is None:
        raise _err(f"unknown topology {parts[0]!r}")
    names = [p for p, _, _ in form.params]
    values: dict[str, int] = {}
    positional = 0
    for part in parts[1:]:
        if "=" in part:
            key, _, val = part.partition("=")
            key = key.strip()
            if key not in names:
                expected = ", ".join(names) or "no arguments"
                raise _err(f"{form_name}: unknown argument {key!r} (takes {expected})", f"write e.g. {form.usage}")
        else:
            if positional >= len(names):
                raise _err(f"{form_name}: too many arguments in {text!r}", f"write e.g. {form.usage}")
            key, val = names[positional], part
            positional += 1
        if key in values:
            raise _err(f"{form_name}: argument {key!r} given twice in {text!r}", f"write e.g. {form.usage}")
        values[key] = _parse_int(form_name, key, val, form.usage)
    for pname, default, minimum in form.params:
        if pname not in values:
            if default is None:
                raise _err(f"{form_name}: missing argument {pname!r}", f"write e.g. {form.usage}")
            values[pname] = default
        if values[pname] < minimum:
            why = " (as Mininet requires)" if form_name == "torus" else ""
            raise _err(f"{form_name}: {pname}={values[pname]} is below the minimum {minimum}{why}",
                       f"write e.g. {form.usage} with {pname} >= {minimum}")
    problem = form.check(**values)
    if problem:
        raise _err(f"{form_name}: {problem}", f"write e.g. {form.usage}")
    size = form.size(**values)
    if size > MAX_NODES:
        raise _err(f"{text!r} would have {size} nodes, more than the limit {MAX_NODES}",
                   "choose smaller arguments")
    topo = Topology(form_name, text)
    form.build(topo, **values)
    return topo
