"""What a daemon says about itself, the same questions asked of BIRD or FRR.

:class:`Reader` keeps one control connection per router and answers: are
all BGP sessions up, how many UPDATEs has the router processed from a peer
(the "finished with the previous message" test), the router's own routing
table, and the best path to a prefix named by the path's label.
"""

from __future__ import annotations

import re
from pathlib import Path

from netsleuth.defined.daemons import config, control
from netsleuth.defined.daemons.spec import DaemonNet

# What a poke asks BIRD: any command makes its event loop turn once. This one is answered in one
# line ("... undefined"), where ``show status`` reads the clock once more (seven reads a turn instead
# of six, each a stat() through libfaketime) and formats three times in six lines: a poke costs BIRD
# 26 us instead of 32 us, and a run pokes tens of thousands of times.
BIRD_POKE = "show symbols netsleuth_poke"


class Reader:
    def __init__(self, net: DaemonNet, daemon: str, rundir: Path) -> None:
        self.net = net
        self.daemon = daemon
        self.rundir = rundir
        self._bird: dict[str, control.BirdControl] = {}
        self._frr: dict[tuple[str, str], control.FrrControl] = {}

    def bird(self, router: str) -> control.BirdControl:
        c = self._bird.get(router)
        if c is None:
            c = self._bird[router] = control.BirdControl(self.rundir / router / "bird.ctl")
        return c

    def frr(self, router: str, daemon: str = "bgpd") -> control.FrrControl:
        c = self._frr.get((router, daemon))
        if c is None:
            c = self._frr[(router, daemon)] = control.FrrControl(self.rundir / router / f"{daemon}.vty")
        return c

    def close(self) -> None:
        for b in self._bird.values():
            b.close()
        for f in self._frr.values():
            f.close()
        self._bird.clear()
        self._frr.clear()

    def forget(self, router: str) -> None:
        """Drop the connections to a router that is gone."""
        c = self._bird.pop(router, None)
        if c is not None:
            c.close()
        for key in [k for k in self._frr if k[0] == router]:
            self._frr.pop(key).close()

    def poke(self, router: str) -> None:
        """One cheap question to each of the router's daemons (it wakes their event loops)."""
        self.poke_all([router])

    def poke_all(self, routers: list[str]) -> None:
        """:meth:`poke` every router at once: all questions sent, then every answer read.

        Each daemon still runs its event loop once and answers before this returns; the
        daemons do so side by side instead of one after the other (a round of pokes costs
        the slowest daemon's answer, not the sum of all of them).
        """
        cmd = BIRD_POKE if self.daemon == "bird" else "show version"
        conns: list[control.BirdControl | control.FrrControl] = []
        for router in routers:
            if self.daemon == "bird":
                conns.append(self.bird(router))
            else:
                conns.extend(self.frr(router, dm) for dm in config.frr_daemons(self.net, self.net.router(router)))
        for c in conns:
            c.send(cmd)
        for c in conns:
            c.answered(cmd)

    def reachable(self, router: str) -> bool:
        """Every daemon of the router answers on its control socket (the file alone is not enough: a
        daemon binds it a moment before it listens)."""
        try:
            if self.daemon == "bird":
                self.bird(router)
            else:
                for dm in config.frr_daemons(self.net, self.net.router(router)):
                    self.frr(router, dm)
        except control.ControlError:
            return False
        return True

    def zebra_clients_ready(self, router: str) -> bool:
        """FRR: zebra lists every routing daemon of the router as its client (always true for BIRD)."""
        if self.daemon == "bird":
            return True
        dms = config.frr_daemons(self.net, self.net.router(router))
        if "zebra" not in dms:
            return True
        text = self.frr(router, "zebra").ask("show zebra client summary")
        names = {ln.split()[0] for ln in text.splitlines()[1:] if ln.strip()}
        return all(dm[:-1] in names for dm in dms if dm != "zebra")   # ripd -> rip, ospfd -> ospf

    def rip_ready(self, router: str) -> bool:
        """The router's RIP runs on every one of its links (FRR's ripd hears of them from zebra)."""
        ifs = [ln.ifname(router) for ln in self.net.links_of(router)]
        if self.daemon == "bird":
            lines = [t for _, t in self.bird(router).ask("show rip interfaces")]
            return all(any(t.split()[:1] == [i] and "Up" in t for t in lines) for i in ifs)
        text = self.frr(router, "ripd").ask("show ip rip status")
        # the active interfaces are listed between the "Interface Send Recv" header and "Routing for Networks"
        active = text.split("Key-chain", 1)[-1].split("Routing for Networks", 1)[0].split()
        return all(i in active for i in ifs)

    def igp_ready(self, router: str) -> bool:
        """The router's RIP or OSPF runs on every one of its links."""
        r = self.net.router(router)
        return (not r.rip or self.rip_ready(router)) and (not r.ospf or self.ospf_ready(router))

    def ospf_ready(self, router: str) -> bool:
        """BIRD: OSPF reports every link of the router as a point-to-point interface (state PtP)."""
        ifs = [ln.ifname(router) for ln in self.net.links_of(router)]
        if self.daemon != "bird":
            text = self.frr(router, "ospfd").ask("show ip ospf interface")
            return all(f"{i} is up" in text for i in ifs)
        lines = [t for _, t in self.bird(router).ask("show ospf interface")]
        up, cur = set(), ""
        for t in lines:
            w = t.split()
            if w[:1] == ["Interface"] and len(w) > 1:
                cur = w[1].strip('"')
            elif w[:1] == ["State:"] and "PtP" in t:
                up.add(cur)
        return all(i in up for i in ifs)

    # -- BGP -------------------------------------------------------------
    def sessions_up(self, router: str) -> bool:
        peers = [ln.peer(router) for ln in self.net.links_of(router) if self.net.router(ln.peer(router)).bgp]
        if not peers:
            return True
        if self.daemon == "bird":
            lines = self.bird(router).ask("show protocols")
            up = {t.split()[0] for _, t in lines if "Established" in t}
            return all(p in up for p in peers)
        d = self.frr(router).ask_json("show bgp ipv4 unicast summary")
        states = {k: v.get("state") for k, v in d.get("peers", {}).items()}
        return all(states.get(self.net.link_between(router, p).addr(p)) == "Established" for p in peers)

    def processed(self, router: str, peer: str) -> int:
        """A counter of what ``router`` has processed from ``peer``: it grows by one per route (BIRD) or
        per UPDATE (FRR) once the daemon has handled it, best path included."""
        if self.daemon == "bird":
            lines = self.bird(router).ask(f"show protocols all {peer}")
            n = 0
            for _, text in lines:
                t = text.strip()
                if t.startswith(("Import updates:", "Import withdraws:")):
                    n += int(t.split()[2])
            return n
        c = self.frr(router)
        addr = self.net.link_between(router, peer).addr(peer)
        stats = c.ask_json(f"show bgp neighbors {addr}").get(addr, {}).get("messageStats", {})
        n = int(stats.get("updatesRecv", 0))
        if _queued(c.ask("show work-queues")):
            return -1   # best-path work still queued: not finished yet
        return n

    # -- tables ----------------------------------------------------------
    def routes(self, router: str) -> dict[str, list[dict]]:
        """The router's own table, as the daemon reports it."""
        if self.daemon == "bird":
            return control.bird_routes(self.bird(router).ask("show route all"))
        r = self.net.router(router)
        if r.bgp:
            return control.frr_bgp_routes(self.frr(router).ask_json("show bgp ipv4 unicast"))
        if r.rip:   # ripd's own table: zebra applies its changes only after a work-queue delay
            return control.frr_rip_routes(self.frr(router, "ripd").ask("show ip rip"))
        return control.frr_zebra_routes(self.frr(router, "zebra").ask_json("show ip route"))

    def label(self, route: dict) -> str:
        """A route's name: its origin's label (p1, ...) by next hop, else the router it came from."""
        nh = route.get("next_hop") or ""
        if not nh:
            return str(route.get("from", "?"))
        try:
            owner = self.net.router(self.net.owner_of(nh))
        except Exception:  # noqa: BLE001 - an address outside the description: show it as is
            return nh or str(route.get("from", "?"))
        labels = [o.label for o in owner.origins if o.label]
        return labels[0] if len(labels) == 1 else owner.name

    def best(self, router: str, prefix: str) -> str:
        """The label of ``router``'s best route to ``prefix`` ("-" when it has none)."""
        for r in self.routes(router).get(prefix, []):
            if r.get("best"):
                return self.label(r)
        return "-"


_ITEMS = re.compile(r"^\s*[PW]?\s*(\d+)\s+\d+\s+\d+\s+\d+\s+\d+\s+\d+\s+\d+\s+\d+\s+process_queue", re.M)


def _queued(text: str) -> bool:
    """bgpd's ``show work-queues``: is best-path work (process_queue) still waiting?"""
    return any(int(m.group(1)) for m in _ITEMS.finditer(text))
