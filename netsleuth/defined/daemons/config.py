"""Per-router configuration files for BIRD 2 and FRR, generated from a :class:`DaemonNet`.

Pure text: ``configs(net, daemon, rundir)`` maps each router to its files
(name -> content). Every router gets its own directory under ``rundir`` for
its configuration, control socket, pid file and log, so routers never share
a system directory (``/run/bird``, ``/var/run/frr``) with each other or with a
daemon the host itself runs.

BGP is iBGP inside AS 65000: a router's announcements carry the AS path,
MED and next hop (its loopback) its :class:`~.spec.Origin` says, and the
receiver reaches each loopback through an "IGP" route whose metric is the
link's ``igp`` -- a static route with ``igp_metric`` in BIRD, a kernel route
with that metric in FRR (zebra's next-hop tracking reports it to bgpd).
Sessions come up in about a second, and the first router of each link
waits passively for the second to connect (no connection collisions to
resolve).
"""

from __future__ import annotations

from pathlib import Path

from netsleuth.defined.daemons.spec import DaemonNet, Router, RouterLink

DAEMONS = ("bird", "frr")
# FRR's connect-retry timer also runs while a TCP connection is being set up: when it expires first
# (a busy machine stalls the handshake past it) the speaker drops that connection and opens another,
# which the passive end may by then have accepted too -- two connections, one session lost, as the
# machine's load decides. The passive end listens before the speakers start (NamespaceHost), so a
# first attempt succeeds and the timer never has to retry: it is long, not fast.
FRR_CONNECT_RETRY = 10


def router_dir(rundir: Path, router: str) -> Path:
    return rundir / router


# --------------------------------------------------------------------- BIRD

def _bird_bgp(net: DaemonNet, r: Router) -> list[str]:
    out: list[str] = []
    if r.origins:
        out += ["protocol static announce {", "  ipv4;"]
        out += [f"  route {o.prefix} blackhole;" for o in r.origins]
        out += ["}"]
    for ln in net.links_of(r.name):
        peer = net.router(ln.peer(r.name))
        if not peer.bgp:
            continue
        out += [f"protocol bgp {peer.name} {{",
                f"  local {ln.addr(r.name)} as {r.asn};",
                f"  neighbor {ln.addr(peer.name)} as {peer.asn};",
                *(["  passive on;"] if ln.a == r.name else []),
                "  connect delay time 1;", "  connect retry time 2;", "  error wait time 1, 5;",
                f"  deterministic med {'on' if net.deterministic_med else 'off'};",
                "  ipv4 {", "    import all;", "    gateway recursive;", "    igp table master4;"]
        if r.origins:
            out += ["    export filter {", "      if proto != \"announce\" then reject;"]
            for o in r.origins:
                sets = [f"bgp_path.prepend({a});" for a in reversed(o.as_path)]
                if o.med is not None:
                    sets.append(f"bgp_med = {o.med};")
                sets.append(f"bgp_next_hop = {r.loopback};")
                out += [f"      if net = {o.prefix} then {{ {' '.join(sets)} accept; }}"]
            out += ["      reject;", "    };"]
        else:
            out += ["    export none;"]
        out += ["  };", "}"]
    return out


def _bird_rip(net: DaemonNet, r: Router) -> list[str]:
    out = []
    if r.rip_networks:
        out += ["protocol static stubs {", "  ipv4;"]
        out += [f"  route {p} blackhole;" for p in r.rip_networks]
        out += ["}"]
    ifs = ", ".join(f'"{ln.ifname(r.name)}"' for ln in net.links_of(r.name))
    out += ["protocol rip {", "  ipv4 { import all; export where source ~ [ RTS_STATIC, RTS_RIP ]; };",
            f"  interface {ifs} {{ update time 30; timeout time 180; garbage time 120; }};", "}"]
    return out


def _bird_ospf(net: DaemonNet, r: Router) -> list[str]:
    out = ["protocol ospf v2 {", "  ipv4 { import all; export none; };", "  area 0 {",
           '    interface "lo" { stub yes; };']
    for ln in net.links_of(r.name):
        out += [f'    interface "{ln.ifname(r.name)}" {{ type ptp; cost {ln.cost}; hello 1; dead 4; }};']
    return out + ["  };", "}"]


def bird_config(net: DaemonNet, r: Router) -> str:
    """bird.conf for router ``r``."""
    lines = [f"router id {r.loopback};", "log stderr all;", "protocol device { scan time 10; }",
             "protocol direct { ipv4; interface \"*\"; }",
             "protocol kernel { ipv4 { export all; }; scan time 10; }"]
    igp = [ln for ln in net.links_of(r.name) if ln.igp(r.name)]
    if igp:
        lines += ["protocol static igproutes {", "  ipv4;"]
        for ln in igp:
            peer = net.router(ln.peer(r.name))
            lines += [f"  route {peer.loopback}/32 via {ln.addr(peer.name)} {{ igp_metric = {ln.igp(r.name)}; }};"]
        lines += ["}"]
    if r.statics:   # BIRD prefers static routes (preference 200) to OSPF's (150)
        lines += ["protocol static seeded {", "  ipv4;", *(f"  route {p} via {gw};" for p, gw in r.statics), "}"]
    if r.bgp:
        lines += _bird_bgp(net, r)
    if r.rip:
        lines += _bird_rip(net, r)
    if r.ospf:
        lines += _bird_ospf(net, r)
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------- FRR

def _frr_bgp(net: DaemonNet, r: Router) -> list[str]:
    peers = [(ln, net.router(ln.peer(r.name))) for ln in net.links_of(r.name)]
    peers = [(ln, p) for ln, p in peers if p.bgp]
    # route-map changes wait for a delay timer (5 s by default) before they apply: the speakers would
    # announce seconds after their sessions come up
    out = ["bgp route-map delay-timer 0", f"router bgp {r.asn}", f" bgp router-id {r.loopback}",
           " no bgp ebgp-requires-policy",
           " no bgp network import-check", " no bgp default ipv4-unicast", " coalesce-time 0",
           f" {'' if net.deterministic_med else 'no '}bgp deterministic-med"]
    for ln, p in peers:
        a = ln.addr(p.name)
        out += [f" neighbor {a} remote-as {p.asn}", f" neighbor {a} update-source {ln.addr(r.name)}",
                f" neighbor {a} timers connect {FRR_CONNECT_RETRY}"]
        if ln.a == r.name:
            out += [f" neighbor {a} passive"]
    out += [" address-family ipv4 unicast"]
    for o in r.origins:
        out += [f"  network {o.prefix}"]
    for ln, p in peers:
        a = ln.addr(p.name)
        out += [f"  neighbor {a} activate"]
        if r.origins:
            out += [f"  neighbor {a} route-map OUT out"]
    out += [" exit-address-family", "exit"]
    for i, o in enumerate(r.origins, 1):
        out += [f"ip prefix-list O{i} seq 5 permit {o.prefix}", f"route-map OUT permit {i * 10}",
                f" match ip address prefix-list O{i}"]
        if o.as_path:
            out += [f" set as-path prepend {' '.join(str(a) for a in o.as_path)}"]
        if o.med is not None:
            out += [f" set metric {o.med}"]
        out += [f" set ip next-hop {r.loopback}", "exit"]
    if r.origins:
        out += ["route-map OUT deny 1000", "exit"]
    return out


def _frr_rip(net: DaemonNet, r: Router) -> list[str]:
    out = ["router rip", " version 2", " timers basic 30 180 120"]
    out += [f" network {ln.ifname(r.name)}" for ln in net.links_of(r.name)]
    out += [f" route {p}" for p in r.rip_networks]   # ripd's own static RIP routes: no staticd needed
    return out + ["exit"]


def _frr_ospf(net: DaemonNet, r: Router) -> list[str]:
    out: list[str] = []
    for ln in net.links_of(r.name):
        out += [f"interface {ln.ifname(r.name)}", " ip ospf network point-to-point", f" ip ospf cost {ln.cost}",
                " ip ospf hello-interval 1", " ip ospf dead-interval 4", "exit"]
    out += ["router ospf", f" ospf router-id {r.loopback}", f" network {r.loopback}/32 area 0"]
    out += [f" network 10.0.{ln.index}.0/30 area 0" for ln in net.links_of(r.name)]
    return out + ["exit"]


def frr_configs(net: DaemonNet, r: Router) -> dict[str, str]:
    """The FRR files of router ``r``: zebra.conf, and bgpd.conf / ripd.conf / staticd.conf as it runs them."""
    files = {"zebra.conf": f"hostname {r.name}\nlog stdout debugging\n"}
    if r.bgp:
        files["bgpd.conf"] = "\n".join([f"hostname {r.name}", "log stdout informational", *_frr_bgp(net, r)]) + "\n"
    if r.rip:
        files["ripd.conf"] = "\n".join([f"hostname {r.name}", "log stdout informational", *_frr_rip(net, r)]) + "\n"
    if r.ospf:
        files["ospfd.conf"] = "\n".join([f"hostname {r.name}", "log stdout informational",
                                          *_frr_ospf(net, r)]) + "\n"
    return files


def kernel_routes(net: DaemonNet, r: Router, daemon: str) -> list[list[str]]:
    """`ip route` argument lists installed before the daemons start (FRR's IGP metrics)."""
    if daemon != "frr":
        return []
    out = []
    for ln in net.links_of(r.name):
        m = ln.igp(r.name)
        if m:
            peer = net.router(ln.peer(r.name))
            out.append(["route", "add", f"{peer.loopback}/32", "via", ln.addr(peer.name), "metric", str(m)])
    return out


def frr_daemons(net: DaemonNet, r: Router) -> list[str]:
    """Which FRR daemons router ``r`` runs, zebra first (the others connect to it).

    A BGP speaker with no IGP route to resolve and no RIP runs bgpd alone
    (``bgpd -Z``): one process less to start per run.
    """
    zebra = r.rip or r.ospf or any(ln.igp(r.name) for ln in net.links_of(r.name))
    out = ["zebra"] if zebra else []
    if r.bgp:
        out.append("bgpd")
    if r.rip:
        out.append("ripd")
    if r.ospf:
        out.append("ospfd")
    return out


def configs(net: DaemonNet, daemon: str) -> dict[str, dict[str, str]]:
    """router -> {file name: content} for ``daemon`` ("bird" or "frr")."""
    if daemon == "bird":
        return {r.name: {"bird.conf": bird_config(net, r)} for r in net.routers}
    return {r.name: frr_configs(net, r) for r in net.routers}


def link_ends(net: DaemonNet) -> list[tuple[RouterLink, str]]:
    """Every (link, router) end, in the description's order."""
    return [(ln, end) for ln in net.links for end in (ln.a, ln.b)]
