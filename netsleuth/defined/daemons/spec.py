"""A daemon network as pure data: routers, links and the routing intent.

Nothing here touches the system. :mod:`.config` turns a :class:`DaemonNet`
into configuration files for BIRD or FRR and :mod:`.host` brings it up, so
one description runs on either daemon and the scenarios compare them.

Addresses are fixed by position: link ``i`` (1-based, in the order given) is
``10.0.i.0/30`` with the first router ``.1`` and the second ``.2``; router
``k`` (1-based) has the loopback ``10.255.0.k/32``, also its router id.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from netsleuth.defined.topologies import Net
from netsleuth.errors import NetsleuthError


class DaemonSpecError(NetsleuthError):
    """A daemon network description is inconsistent (unknown router, bad name)."""


MAX_NAME = 6  # interface names are "<router>-<peer>" and must fit IFNAMSIZ (15) with room


@dataclass(frozen=True)
class Origin:
    """A prefix a router announces in BGP with the attributes it sets on it."""

    prefix: str
    as_path: tuple[int, ...] = ()
    med: int | None = None
    label: str = ""          # the name scenarios use for the path (p1, p2, ...)


@dataclass(frozen=True)
class RouterLink:
    a: str
    b: str
    index: int               # 1-based: the link's /30 is 10.0.index.0/30
    igp_a: int = 0           # IGP metric a uses to reach b's loopback (0: no IGP route)
    igp_b: int = 0
    delay_us: int = 1000     # the link's mean delay: the DEFINED estimated-delay tag
    cost: int = 1            # OSPF cost, both directions

    def addr(self, router: str) -> str:
        return f"10.0.{self.index}.{1 if router == self.a else 2}"

    def peer(self, router: str) -> str:
        return self.b if router == self.a else self.a

    def ifname(self, router: str) -> str:
        """The router-side interface name of this link at ``router``."""
        return f"{router}-{self.peer(router)}"[:15]

    def igp(self, router: str) -> int:
        return self.igp_a if router == self.a else self.igp_b


@dataclass(frozen=True)
class Router:
    name: str
    index: int                               # 1-based: loopback 10.255.0.index
    asn: int = 65000
    bgp: bool = False
    rip: bool = False
    ospf: bool = False
    origins: tuple[Origin, ...] = ()
    rip_networks: tuple[str, ...] = ()      # stub prefixes announced in RIP
    statics: tuple[tuple[str, str], ...] = ()  # (prefix, gateway): static routes, preferred over OSPF's

    @property
    def loopback(self) -> str:
        return f"10.255.0.{self.index}"


@dataclass(frozen=True)
class DaemonNet:
    """Routers and links; ``deterministic_med`` is the BGP option both daemons have."""

    name: str
    routers: tuple[Router, ...]
    links: tuple[RouterLink, ...]
    deterministic_med: bool = False
    params: dict = field(default_factory=dict, hash=False, compare=False)

    def __post_init__(self) -> None:
        names = [r.name for r in self.routers]
        if len(set(names)) != len(names):
            raise DaemonSpecError(f"router names repeat in {self.name}", "give every router its own name")
        for n in names:
            if not n.isalnum() or len(n) > MAX_NAME:
                raise DaemonSpecError(f"router name {n!r} is not 1-{MAX_NAME} letters/digits",
                                      "use short names such as r1, s2")
        for ln in self.links:
            for end in (ln.a, ln.b):
                if end not in names:
                    raise DaemonSpecError(f"link {ln.a}-{ln.b} names unknown router {end!r}",
                                          "declare the router before linking it")

    # Lookups by name, built once per (frozen) network: a run asks them several times per delivered
    # message (its link, its receiver's protocols), a scan of the routers or links each time.
    @cached_property
    def _by_name(self) -> dict[str, Router]:
        return {r.name: r for r in self.routers}

    @cached_property
    def _by_ends(self) -> dict[frozenset[str], RouterLink]:
        out: dict[frozenset[str], RouterLink] = {}
        for ln in self.links:
            out.setdefault(frozenset((ln.a, ln.b)), ln)   # the first link of a pair, as a scan finds it
        return out

    @cached_property
    def _links_by_router(self) -> dict[str, tuple[RouterLink, ...]]:
        return {r.name: tuple(ln for ln in self.links if r.name in (ln.a, ln.b)) for r in self.routers}

    def router(self, name: str) -> Router:
        r = self._by_name.get(name)
        if r is None:
            raise DaemonSpecError(f"no router {name!r} in {self.name}",
                                  f"name one of: {', '.join(r.name for r in self.routers)}")
        return r

    def links_of(self, name: str) -> list[RouterLink]:
        return list(self._links_by_router.get(name, ()))

    def link_between(self, a: str, b: str) -> RouterLink:
        ln = self._by_ends.get(frozenset((a, b)))
        if ln is None:
            raise DaemonSpecError(f"no link between {a} and {b}", "link them in the description")
        return ln

    def owner_of(self, addr: str) -> str:
        """The router with interface address ``addr`` (link or loopback)."""
        for r in self.routers:
            if r.loopback == addr:
                return r.name
        for ln in self.links:
            for end in (ln.a, ln.b):
                if ln.addr(end) == addr:
                    return end
        raise DaemonSpecError(f"no router has address {addr}", "use an address of the description")


PREFIX = "203.0.113.0/24"


def med_net(deterministic_med: bool = False) -> DaemonNet:
    """The DEFINED paper's MED case: r3 (AS 65000) learns one prefix over iBGP from s1, s2, s3.

    p1: AS 65001, MED 10, IGP 10 (from s1); p2: AS 65001, MED 5, IGP 30 (s2);
    p3: AS 65002, MED 20, IGP 20 (s3). Compared pairwise the three beat each
    other in a cycle (p2 > p1 by MED, p1 > p3 and p3 > p2 by IGP metric), so
    without deterministic MED the best path depends on the order the three
    UPDATEs reach r3; with it, every order gives p3.
    """
    s = [Router(f"s{i}", i, bgp=True, origins=(Origin(PREFIX, (asn,), med, f"p{i}"),))
         for i, asn, med in ((1, 65001, 10), (2, 65001, 5), (3, 65002, 20))]
    r3 = Router("r3", 4, bgp=True)
    links = tuple(RouterLink("r3", f"s{i}", i, igp_a=igp) for i, igp in ((1, 10), (2, 30), (3, 20)))
    return DaemonNet("med", (r3, *s), links, deterministic_med=deterministic_med,
                     params={"prefix": PREFIX, "observer": "r3"})


STUB = "192.0.2.0/24"


def rip_net() -> DaemonNet:
    """RIP on a line r1 - r2 - r3 with r3 announcing a stub prefix; r1 reaches it through r2.

    When r2 crashes, r1 keeps the route until RIP's timeout (180 s after the
    last update from r2) and then withdraws it: the case where a daemon's own
    timers decide the outcome, run on the virtual clock.
    """
    routers = (Router("r1", 1, rip=True), Router("r2", 2, rip=True), Router("r3", 3, rip=True, rip_networks=(STUB,)))
    links = (RouterLink("r1", "r2", 1), RouterLink("r2", "r3", 2))
    return DaemonNet("rip", routers, links, params={"prefix": STUB, "observer": "r1", "fails": "r2"})


def ospf_net(net: Net, statics: tuple[tuple[str, str], ...] = ()) -> DaemonNet:
    """OSPF on every router and link of a DEFINED network (a Topology Zoo map, a BRITE graph, ``ring,N``...).

    Routers keep the network's node names (at most six characters: ``n01``, ``s1``, ...); a link's
    cost is its delay in units of 100 us (at least 1), so shortest paths are the fastest ones.
    ``statics`` seeds misconfigurations: ``(r, d)`` gives router ``r`` a static route to ``d``'s
    loopback over their link, which the daemon prefers to OSPF's -- harmless while that link is
    up, a blackhole once it fails (the router's interface stays up; only the far end is gone).
    """
    if len(net.links) > 255:
        raise DaemonSpecError(f"{net.spec} has {len(net.links)} links; addressing goes to 255",
                              "pick a smaller map")
    links = tuple(RouterLink(a, b, i, delay_us=us, cost=max(1, us // 100)) for i, (a, b, us) in enumerate(net.links, 1))
    index = {n: i for i, n in enumerate(net.nodes, 1)}
    routes: dict[str, list[tuple[str, str]]] = {}
    for r, d in statics:
        ln = next((x for x in links if {x.a, x.b} == {r, d}), None)
        if ln is None or r not in index or d not in index:
            raise DaemonSpecError(f"no link {r}-{d} for a static route", "name two neighbouring routers: R:D")
        routes.setdefault(r, []).append((f"10.255.0.{index[d]}/32", ln.addr(d)))
    routers = tuple(Router(n, i, ospf=True, statics=tuple(routes.get(n, ()))) for i, n in enumerate(net.nodes, 1))
    return DaemonNet(f"ospf:{net.spec}", routers, links, params={"observer": net.nodes[0]})
