"""Tests for netsleuth.model.topology: Mininet-compatible builders and lossless files."""

from __future__ import annotations

import json
from pathlib import Path

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netsleuth.errors import UnknownTopologyError
from netsleuth.model.addr import int_to_ip, ip_to_int
from netsleuth.model.topo_builders import parse_topo
from netsleuth.model.topology import (
    KNOWN_FORMS,
    HostSpec,
    Link,
    SwitchSpec,
    Topology,
)
from netsleuth.model.topology_io import load_topology_file, save_topology


def switch_graph(t: Topology) -> nx.MultiGraph:
    g = t.graph()
    return g.subgraph([n for n, k in g.nodes(data="kind") if k == "switch"]).copy()


def check_consistent(t: Topology) -> None:
    """Every link is visible from both ends; every host sits on exactly one switch port."""
    for lk in t.links:
        assert t.neighbor(lk.node1, lk.port1) == (lk.node2, lk.port2)
        assert t.neighbor(lk.node2, lk.port2) == (lk.node1, lk.port1)
    for h in t.hosts:
        sw, port = t.host_location(h.name)
        assert t.is_switch(sw) and t.neighbor(sw, port) == (h.name, 0)
        assert t.ports(h.name) == (0,)
    for s in t.switches:
        assert s.num_ports == max(t.ports(s.name), default=0)
    assert len({s.dpid for s in t.switches}) == len(t.switches)
    assert len({h.mac for h in t.hosts}) == len({h.ip for h in t.hosts}) == len(t.hosts)


# ----------------------------------------------------------------- counts


@pytest.mark.parametrize(
    "spec, switches, hosts, links",
    [
        ("minimal", 1, 2, 2),
        ("single,5", 1, 5, 5),
        ("single,k=1", 1, 1, 1),
        ("linear,4", 4, 4, 7),
        ("linear,k=10", 10, 10, 19),
        ("linear,1", 1, 1, 1),
        ("tree,depth=2,fanout=3", 1 + 3, 9, 3 + 9),
        ("tree,3,2", 1 + 2 + 4, 8, 6 + 8),
        ("tree,depth=1,fanout=4", 1, 4, 4),
        ("tree,depth=4,fanout=1", 4, 1, 4),
        ("torus,3,3", 9, 9, 9 + 18),
        ("torus,x=4,y=5", 20, 20, 20 + 40),
        ("mesh,1", 1, 1, 1),
        ("mesh,5", 5, 5, 5 + 10),
        ("ring,3", 3, 3, 6),
        ("ring,k=7", 7, 7, 14),
        ("fattree,2", 5, 2, 6),
        ("fattree,4", 20, 16, 48),
        ("fattree,6", 45, 54, 162),
    ],
)
def test_counts_match_formulas(spec: str, switches: int, hosts: int, links: int) -> None:
    t = parse_topo(spec)
    assert (len(t.switches), len(t.hosts), len(t.links)) == (switches, hosts, links)
    assert t.spec == spec and t.name == spec.split(",")[0]
    check_consistent(t)


@pytest.mark.parametrize("k", [2, 4, 8, 10])
def test_fattree_formulas_and_degree(k: int) -> None:
    t = parse_topo(f"fattree,{k}")
    assert len(t.switches) == 5 * k * k // 4
    assert len(t.hosts) == k**3 // 4
    assert len(t.links) == 3 * k**3 // 4
    for s in t.switches:
        assert t.ports(s.name) == tuple(range(1, k + 1)), s.name
        assert s.num_ports == k
    assert [s.dpid for s in t.switches] == list(range(1, 5 * k * k // 4 + 1))
    names = [s.name for s in t.switches]
    assert names[: (k // 2) ** 2] == [f"c{i}" for i in range(1, (k // 2) ** 2 + 1)]
    assert nx.is_connected(t.graph())
    # edge switches carry the hosts on ports 1..k/2
    for h in t.hosts:
        sw, port = t.host_location(h.name)
        assert sw.startswith("e") and 1 <= port <= k // 2
    # every core reaches pod p on port p through an aggregation switch
    for c in names[: (k // 2) ** 2]:
        for p in range(1, k + 1):
            agg, _ = t.neighbor(c, p)
            assert agg.startswith("a") and (int(agg[1:]) - 1) // (k // 2) == p - 1


def test_fattree_rejects_odd_k() -> None:
    with pytest.raises(UnknownTopologyError, match="even"):
        parse_topo("fattree,5")


def test_fattree_48_has_the_standard_counts() -> None:
    # How fast it builds is measured by bench/bootstrap.py, not asserted here.
    t = parse_topo("fattree,48")
    assert (len(t.switches), len(t.hosts), len(t.links)) == (2880, 27648, 82944)


# ----------------------------------------------------------------- Mininet numbering


def test_default_names_macs_ips() -> None:
    t = parse_topo("single,300")
    assert t.switches == (SwitchSpec("s1", 1, 300),)
    assert t.hosts[0] == HostSpec("h1", 1, ip_to_int("10.0.0.1"))
    assert t.hosts[9].mac == 10 and int_to_ip(t.hosts[9].ip) == "10.0.0.10"
    assert int_to_ip(t.host("h254").ip) == "10.0.0.254"
    assert int_to_ip(t.host("h300").ip) == "10.0.1.44"  # 0x0A000000 + 300
    assert [h.name for h in t.hosts] == [f"h{i}" for i in range(1, 301)]
    assert t.host_location("h7") == ("s1", 7)


def test_linear_ports_follow_mininet() -> None:
    t = parse_topo("linear,4")
    assert [s.name for s in t.switches] == ["s1", "s2", "s3", "s4"]
    assert [s.dpid for s in t.switches] == [1, 2, 3, 4]
    assert t.links[:3] == (Link("h1", 0, "s1", 1), Link("h2", 0, "s2", 1), Link("s2", 2, "s1", 2))
    assert t.neighbor("s2", 1) == ("h2", 0)
    assert t.neighbor("s2", 2) == ("s1", 2)
    assert t.neighbor("s2", 3) == ("s3", 2)
    assert t.neighbor("s2", 4) is None
    assert t.ports("s1") == (1, 2) and t.ports("s4") == (1, 2)
    assert t.neighbor("s4", 2) == ("s3", 3)


def test_tree_numbering_is_depth_first_like_mininet() -> None:
    t = parse_topo("tree,depth=3,fanout=2")
    # s1 root; s2 (s3: h1 h2, s4: h3 h4); s5 (s6: h5 h6, s7: h7 h8)
    assert t.neighbor("s1", 1) == ("s2", 3)
    assert t.neighbor("s1", 2) == ("s5", 3)
    assert t.neighbor("s2", 1) == ("s3", 3)
    assert t.neighbor("s2", 2) == ("s4", 3)
    assert t.neighbor("s5", 2) == ("s7", 3)
    assert t.host_location("h1") == ("s3", 1)
    assert t.host_location("h4") == ("s4", 2)
    assert t.host_location("h8") == ("s7", 2)
    assert t.ports("s1") == (1, 2)
    # Mininet's addTree links (parent, child) after building the child subtree
    assert t.links[0] == Link("s3", 1, "h1", 0)
    assert t.links[2] == Link("s2", 1, "s3", 3)
    assert parse_topo("tree,3,2").links == t.links


def test_single_and_minimal() -> None:
    assert parse_topo("minimal").links == parse_topo("single,2").links
    assert parse_topo("single").links == parse_topo("single,2").links  # Mininet default k=2


def test_torus_wraps_and_requires_3x3() -> None:
    t = parse_topo("torus,3,4")
    sg = switch_graph(t)
    assert all(d == 4 for _, d in sg.degree())
    assert all(s.num_ports == 5 for s in t.switches)
    # s1 (Mininet s1x1) wraps to s4 (s1x4) in y and to s9 (s3x1) in x
    assert set(sg.neighbors("s1")) == {"s2", "s4", "s5", "s9"}
    assert t.host_location("h6") == ("s6", 1)
    for bad in ("torus,2,3", "torus,3,2", "torus,3"):
        with pytest.raises(UnknownTopologyError):
            parse_topo(bad)


@pytest.mark.parametrize("k", [3, 4, 9])
def test_ring_is_one_cycle(k: int) -> None:
    t = parse_topo(f"ring,{k}")
    sg = nx.Graph(switch_graph(t))
    assert sg.number_of_edges() == k and all(d == 2 for _, d in sg.degree())
    assert nx.is_connected(sg) and len(nx.cycle_basis(sg)) == 1
    assert t.neighbor("s1", 2) == ("s2", 2) and t.neighbor("s1", 3) == (f"s{k}", 3)
    with pytest.raises(UnknownTopologyError, match="minimum 3"):
        parse_topo("ring,2")


@pytest.mark.parametrize("k", [2, 3, 6])
def test_mesh_is_complete(k: int) -> None:
    t = parse_topo(f"mesh,{k}")
    sg = nx.Graph(switch_graph(t))
    assert nx.is_isomorphic(sg, nx.complete_graph(k))
    assert switch_graph(t).number_of_edges() == k * (k - 1) // 2  # no parallel links
    if k > 2:
        assert len(nx.cycle_basis(sg)) == (k - 1) * (k - 2) // 2
    # port 1 = host, then the other switches in ascending order
    for i in range(1, k + 1):
        others = [j for j in range(1, k + 1) if j != i]
        assert [t.neighbor(f"s{i}", p)[0] for p in t.ports(f"s{i}")] == [f"h{i}"] + [f"s{j}" for j in others]


def test_specs_are_deterministic() -> None:
    for spec in ("tree,2,3", "torus,3,3", "fattree,4", "mesh,4"):
        assert parse_topo(spec) == parse_topo(spec)
        assert parse_topo(spec).to_json() == parse_topo(spec).to_json()


# ----------------------------------------------------------------- builder API


def test_builder_and_lookups() -> None:
    t = Topology("custom")
    s1, s2 = t.add_switch(), t.add_switch("core", dpid=0x10)
    h1 = t.add_host()
    t.add_host("db", mac="02:00:00:00:00:aa", ip="192.168.0.5")
    assert t.add_link(h1, s1) == Link("h1", 0, "s1", 1)
    assert t.add_link(s1, s2, port_b=7) == Link("s1", 2, "core", 7)
    t.add_link("core", "db")
    t.validate()
    assert t.switch("core") == SwitchSpec("core", 16, 7)
    assert t.switch_by_dpid(16).name == "core"
    assert t.host("db") == HostSpec("db", 0x0200000000AA, ip_to_int("192.168.0.5"))
    assert t.host_location("db") == ("core", 2)  # Mininet: len(ports) + 1
    assert t.ports("core") == (2, 7)
    assert "db" in t and "nope" not in t
    assert t.is_host("db") and not t.is_switch("db")
    g = t.graph()
    assert list(g.nodes) == ["s1", "core", "h1", "db"]
    assert g.nodes["core"] == {"kind": "switch", "dpid": 16}
    assert g.edges["s1", "core", 1] == {"node1": "s1", "port1": 2, "node2": "core", "port2": 7}
    check_consistent(t)


def test_builder_errors_name_the_culprit() -> None:
    t = Topology()
    t.add_switch()
    t.add_switch()
    t.add_host()
    t.add_host()
    t.add_link("h1", "s1")
    cases = [
        (lambda: t.add_switch("s1"), "already used"),
        (lambda: t.add_host("s2"), "already used by a switch"),
        (lambda: t.add_switch("bad name"), "invalid switch name"),
        (lambda: t.add_switch(dpid=1), "dpid 1 is already used by switch s1"),
        (lambda: t.add_switch(dpid=0), "dpid 0"),
        (lambda: t.add_host(mac=1), "already used by host h1"),
        (lambda: t.add_host(mac="01:00:00:00:00:05"), "not a unicast"),
        (lambda: t.add_host(ip="10.0.0.300"), "not valid"),
        (lambda: t.add_link("h1", "s2"), "host h1 is already attached to s1 port 1"),
        (lambda: t.add_link("h2", "h1"), "directly to host"),
        (lambda: t.add_link("s1", "s1"), "itself"),
        (lambda: t.add_link("s1", "s9"), "'s9' is not a switch or host"),
        (lambda: t.add_link("s1", "s2", port_a=1), "s1 port 1 is already linked to h1:0"),
        (lambda: t.add_link("s1", "s2", port_a=0), "outside 1..65280"),
        (lambda: t.switch("h1"), "not a switch"),
        (lambda: t.host("s1"), "not a host"),
        (lambda: t.host_location("h2"), "host h2 is not linked"),
        (lambda: t.validate(), "host h2 is not linked"),
    ]
    for action, message in cases:
        with pytest.raises(UnknownTopologyError) as info:
            action()
        assert message in info.value.problem, (message, info.value.problem)
        assert info.value.fix
    # failed calls left no trace
    assert len(t.links) == 1 and t.ports("s1") == (1,) and len(t.switches) == 2


# ----------------------------------------------------------------- files


ALL_SPECS = ["minimal", "single,3", "linear,5", "tree,2,3", "torus,3,3", "mesh,4", "ring,5", "fattree,4"]


@pytest.mark.parametrize("spec", ALL_SPECS)
def test_json_round_trip(spec: str, tmp_path: Path) -> None:
    t = parse_topo(spec)
    data = json.loads(json.dumps(t.to_json()))
    back = Topology.from_json(data)
    assert back == t and back.to_json() == t.to_json()
    assert back.switches == t.switches and back.hosts == t.hosts and back.links == t.links
    path = save_topology(t, tmp_path / "t.json")
    assert json.loads(path.read_text()) == t.to_json()
    loaded = parse_topo(str(path))
    assert loaded.spec == str(path)
    assert loaded.links == t.links and loaded.hosts == t.hosts and loaded.switches == t.switches
    assert parse_topo(f"file:{path}").spec == f"file:{path}"


@pytest.mark.parametrize("spec", ALL_SPECS)
def test_graphml_round_trip(spec: str, tmp_path: Path) -> None:
    t = parse_topo(spec)
    path = save_topology(t, tmp_path / "t.graphml")
    back = load_topology_file(path)
    assert back.switches == t.switches and back.hosts == t.hosts and back.links == t.links
    assert back.name == t.name
    # networkx reads our file...
    g = nx.read_graphml(path)
    assert g.number_of_nodes() == len(t.switches) + len(t.hosts)
    assert g.nodes["h1"]["kind"] == "host" and g.nodes["h1"]["mac"] == "00:00:00:00:00:01"
    # ...and we read what networkx writes (link order may differ; ports may not)
    nx_path = tmp_path / "nx.graphml"
    nx.write_graphml(t.graph(), nx_path)
    from_nx = parse_topo(str(nx_path))
    assert from_nx.switches == t.switches and from_nx.hosts == t.hosts

    def canon(links):
        return sorted(tuple(sorted([(lk.node1, lk.port1), (lk.node2, lk.port2)])) for lk in links)

    assert canon(from_nx.links) == canon(t.links)


def test_hand_written_files_fill_defaults(tmp_path: Path) -> None:
    path = tmp_path / "mine.json"
    path.write_text(json.dumps({
        "switches": ["s1", {"name": "s2", "dpid": 1}],
        "hosts": [{"name": "h1"}, {"name": "h2", "mac": 1, "ip": "10.0.0.9"}],
        "links": [["h1", "s1"], ["s1", 1, "s2", None], {"node1": "h2", "node2": "s2"}],
    }))
    t = parse_topo(f"file:{path}")
    assert [s.dpid for s in t.switches] == [2, 1]
    assert t.host("h1").mac == 2 and int_to_ip(t.host("h1").ip) == "10.0.0.1"
    # h1 was to get s1 port 1 automatically, but a later link names it explicitly
    assert t.neighbor("s1", 1) == ("s2", 1) and t.host_location("h1") == ("s1", 2)
    assert t.host_location("h2") == ("s2", 2)

    gml = tmp_path / "zoo.graphml"
    g = nx.MultiGraph()
    g.add_edge("a", "b")
    g.add_edge("b", "c")
    nx.write_graphml(g, gml)
    z = parse_topo(str(gml))  # no kind attr: all switches, ports in file order
    assert [s.name for s in z.switches] == ["a", "b", "c"] and z.ports("b") == (1, 2)


def test_file_errors(tmp_path: Path) -> None:
    with pytest.raises(UnknownTopologyError, match="does not exist") as info:
        parse_topo(str(tmp_path / "missing.json"))
    assert "linear,N" in info.value.fix
    bad = tmp_path / "bad.json"
    for text, message in [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "must be an object"),
        ('{"format": "other"}', "format"),
        ('{"switches": [{"dpid": 1}]}', "malformed"),
        ('{"switches": ["s1"], "hosts": ["h1"], "links": []}', "host h1 is not linked"),
        ('{"switches": ["s1"], "links": [["s1", "s9"]]}', "'s9' is not a switch or host"),
        ('{"switches": ["s1"], "linkz": []}', "unknown keys"),
    ]:
        bad.write_text(text)
        with pytest.raises(UnknownTopologyError) as info:
            parse_topo(f"file:{bad}")
        assert message in info.value.problem and str(bad) in info.value.problem, info.value.problem
        assert info.value.fix
    gml = tmp_path / "bad.graphml"
    for text, message in [
        ("<graphml", "not valid GraphML XML"),
        ("<foo/>", "not GraphML"),
        ('<graphml xmlns="http://graphml.graphdrawing.org/xmlns"/>', "no <graph>"),
    ]:
        gml.write_text(text)
        with pytest.raises(UnknownTopologyError, match=message):
            parse_topo(str(gml))


# ----------------------------------------------------------------- spec errors


@pytest.mark.parametrize(
    "spec, message",
    [
        ("bogus,3", "unknown topology 'bogus'"),
        ("", "empty"),
        ("linear,x", "not an integer"),
        ("linear,2.5", "not an integer"),
        ("linear,0", "below the minimum"),
        ("linear,3,2", "not supported"),
        ("linear,k=3,k=4", "given twice"),
        ("linear,3,k=4", "given twice"),
        ("linear,q=3", "unknown argument 'q'"),
        ("single,3,4", "too many arguments"),
        ("minimal,1", "too many arguments"),
        ("tree,depth=0", "below the minimum"),
        ("tree,depth=30,fanout=10", "more than the limit"),
        ("torus,x=3", "missing argument 'y'"),
    ],
)
def test_spec_errors_carry_the_fix(spec: str, message: str) -> None:
    with pytest.raises(UnknownTopologyError) as info:
        parse_topo(spec)
    assert message in info.value.problem, info.value.problem
    assert info.value.fix


def test_unknown_topology_lists_known_forms() -> None:
    with pytest.raises(UnknownTopologyError) as info:
        parse_topo("jellyfish,4")
    assert KNOWN_FORMS in info.value.fix
    for form in ("single,N", "linear,N", "tree,depth=D,fanout=F", "torus,X,Y", "mesh,N", "ring,N", "fattree,K"):
        assert form in info.value.one_line()


def test_keyword_and_positional_forms_agree() -> None:
    assert parse_topo("linear,4").links == parse_topo("linear,k=4").links == parse_topo("LINEAR, 4").links
    assert parse_topo("tree,2,3").links == parse_topo("tree,fanout=3,depth=2").links
    assert parse_topo("torus,3,4").links == parse_topo("torus,y=4,x=3").links


# ----------------------------------------------------------------- properties


@st.composite
def random_topologies(draw: st.DrawFn) -> Topology:
    t = Topology("random")
    n_sw = draw(st.integers(1, 6))
    for _ in range(n_sw):
        t.add_switch()
    for _ in range(draw(st.integers(0, 8))):
        h = t.add_host()
        t.add_link(h, f"s{draw(st.integers(1, n_sw))}")
    for _ in range(draw(st.integers(0, 10))):
        a, b = draw(st.integers(1, n_sw)), draw(st.integers(1, n_sw))
        if a != b:
            t.add_link(f"s{a}", f"s{b}")
    return t


@settings(max_examples=60, deadline=None)
@given(random_topologies())
def test_random_topologies_round_trip(t: Topology) -> None:
    check_consistent(t)
    assert Topology.from_json(json.loads(json.dumps(t.to_json()))) == t
    back = Topology.from_json(t.to_json())
    assert list(back.graph().edges(keys=True, data=True)) == list(t.graph().edges(keys=True, data=True))
