"""The experiments of the NICE paper as ready-made model configurations.

``pings``   Table 1: h1 - s1 - s2 - h2, h1 sends N layer-2 pings without
            waiting for answers, h2 answers each; no properties (NICE's
            benchmark model checks none), plain DFS.
``direct``  the same network checked for StrictDirectPaths (BUG-II).
``mobile``  h2 moves from s2:1 to a spare port s2:3 after answering its first
            ping while h1 keeps pinging (BUG-I, NoBlackHolesMobile).
``loop``    a triangle of switches (``ring,3``), h1 pings h2 once
            (BUG-III, NoForwardingLoops).
"""

from __future__ import annotations

from netsleuth.model.topo_builders import parse_topo
from netsleuth.nice.errors import ScenarioError
from netsleuth.nice.names import SCENARIOS
from netsleuth.nice.system import Config


def parse_hosts(spec: str) -> tuple[tuple[str, str, int], ...]:
    """``h1>h2:3,h3>h1:1``: who pings whom how many times."""
    out = []
    for part in spec.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            pair, _, n = part.partition(":")
            src, _, dst = pair.partition(">")
            count = int(n) if n else 1
            if not src or not dst or count < 0:
                raise ValueError
        except ValueError:
            raise ScenarioError(f"bad --hosts item {part!r}",
                                "write SRC>DST:N items separated by commas, e.g. h1>h2:3") from None
        out.append((src.strip(), dst.strip(), count))
    return tuple(out)


def build_config(app_spec: str, *, scenario: str | None = None, topo: str | None = None,
                 hosts: str | None = None, pings: int | None = None, properties: tuple[str, ...] | None = None,
                 faults: tuple[str, ...] = (), miss_send_len: int = 128) -> Config:
    """A :class:`Config` for a scenario (defaults) with explicit options overriding it."""
    if scenario is not None and scenario not in SCENARIOS:
        raise ScenarioError(f"unknown scenario {scenario!r}", f"use one of {', '.join(SCENARIOS)}")
    sc = scenario or "pings"
    topo_spec = topo or ("ring,3" if sc == "loop" else "linear,2")
    topology = parse_topo(topo_spec)
    names = [h.name for h in topology.hosts]
    if len(names) < 2:
        raise ScenarioError(f"topology {topo_spec!r} has fewer than two hosts", "pick a topology with hosts")
    n = pings if pings is not None else {"pings": 2, "direct": 2, "mobile": 3, "loop": 1}[sc]
    traffic = parse_hosts(hosts) if hosts else ((names[0], names[1], n),)
    for src, dst, _ in traffic:
        for h in (src, dst):
            if h not in names:
                raise ScenarioError(f"--hosts names {h!r}, which is not a host of {topo_spec}",
                                    f"use hosts {', '.join(names)}")
    default_props = {"pings": (), "direct": ("StrictDirectPaths",), "mobile": ("NoBlackHolesMobile",),
                     "loop": ("NoForwardingLoops",)}[sc]
    moves: tuple = ()
    spare = 0
    if sc == "mobile":
        mover = traffic[0][1]
        sw_name, _ = topology.host_location(mover)
        top = max(topology.ports(sw_name))
        moves = ((mover, sw_name, top + 1),)
        spare = 1
    return Config(topology=topology, app_spec=app_spec, pings=traffic, moves=moves, move_after=1,
                  spare_ports=spare, miss_send_len=miss_send_len, faults=tuple(faults),
                  properties=tuple(properties) if properties is not None else default_props)
