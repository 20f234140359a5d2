"""External events of a daemon network on the virtual clock, and the file that records them.

An event happens at a whole virtual second: a link fails (``link_down``)
or recovers (``link_up``), a router's daemons crash (``crash``) or start
again (``restart``). The record is JSON lines: a header naming the network
(``{"network": {...}}``: topology, daemon, seed, seeded misconfigurations)
and one event per line -- what :func:`netsleuth.defined.daemons.replay.run_events`
replays, ``fuzz`` writes and ``minimize`` shrinks.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path

from netsleuth.defined.daemons.spec import DaemonNet, ospf_net
from netsleuth.defined.topologies import parse_net
from netsleuth.errors import NetsleuthError
from netsleuth.model.components import components

KINDS = ("link_down", "link_up", "crash", "restart")


class EventsError(NetsleuthError):
    """An events file cannot be read or names what the network does not have."""


@dataclass(frozen=True, order=True)
class ExtEvent:
    t: int
    kind: str
    a: str
    b: str = ""

    def to_json(self) -> dict:
        d: dict = {"t": self.t, "type": self.kind, "a": self.a}
        if self.b:
            d["b"] = self.b
        return d

    @staticmethod
    def from_json(d: dict) -> ExtEvent:
        return ExtEvent(int(d["t"]), str(d["type"]), str(d["a"]), str(d.get("b", "")))

    def words(self) -> str:
        what = {"link_down": "link {a}-{b} fails", "link_up": "link {a}-{b} recovers",
                "crash": "{a} crashes", "restart": "{a} restarts"}[self.kind]
        return f"t={self.t} s: " + what.format(a=self.a, b=self.b)


@dataclass(frozen=True)
class NetSpec:
    """What a recorded run ran on: an OSPF network on ``topo``, with seeded static routes (misconfigurations)."""

    topo: str
    daemon: str = "bird"
    seed: int = 0
    statics: tuple[tuple[str, str], ...] = ()     # (router, destination router): a static route over their link
    extra: dict = field(default_factory=dict, compare=False)

    def build(self) -> DaemonNet:
        return ospf_net(parse_net(self.topo), statics=self.statics)

    def to_json(self) -> dict:
        return {"topo": self.topo, "daemon": self.daemon, "seed": self.seed,
                "statics": [list(s) for s in self.statics], **self.extra}

    @staticmethod
    def from_json(d: dict) -> NetSpec:
        return NetSpec(str(d["topo"]), str(d.get("daemon", "bird")), int(d.get("seed", 0)),
                       tuple((str(a), str(b)) for a, b in d.get("statics", [])),
                       {k: v for k, v in sorted(d.items()) if k not in ("topo", "daemon", "seed", "statics")})


def validate(net: DaemonNet, events: list[ExtEvent]) -> None:
    for e in events:
        if e.kind not in KINDS:
            raise EventsError(f"unknown event type {e.kind!r} at t={e.t}", f"use one of: {', '.join(KINDS)}")
        if e.kind.startswith("link"):
            net.link_between(e.a, e.b)
        else:
            net.router(e.a)


def write(path: Path, spec: NetSpec, events: list[ExtEvent]) -> None:
    lines = [json.dumps({"network": spec.to_json()}, sort_keys=True)]
    lines += [json.dumps(e.to_json(), sort_keys=True) for e in events]
    path.write_text("\n".join(lines) + "\n")


def read(path: Path) -> tuple[NetSpec, list[ExtEvent]]:
    try:
        rows = [json.loads(ln) for ln in Path(path).read_text().splitlines() if ln.strip()]
    except OSError as exc:
        raise EventsError(f"cannot read {path}: {exc.strerror}",
                          "pass events.jsonl from `defined run|fuzz --out DIR`") from None
    except json.JSONDecodeError as exc:
        raise EventsError(f"{path} is not JSON lines ({exc.msg}, line {exc.lineno})",
                          "pass events.jsonl from `defined run|fuzz --out DIR`") from None
    if not rows or "network" not in rows[0]:
        raise EventsError(f"{path} has no network header line", "pass events.jsonl from `defined run|fuzz --out DIR`")
    try:
        return NetSpec.from_json(rows[0]["network"]), sorted(ExtEvent.from_json(d) for d in rows[1:])
    except (KeyError, ValueError, TypeError) as exc:
        raise EventsError(f"{path} has a malformed event ({exc})", "each line: {\"t\": N, \"type\": ..., \"a\": ...}") \
            from None


def spare_links(net: DaemonNet) -> list[tuple[str, str]]:
    """Links whose loss leaves the network connected (not bridges), in the description's order."""
    pairs = [(ln.a, ln.b) for ln in net.links]
    routers = [r.name for r in net.routers]
    spare = []
    for a, b in pairs:   # a bridge: without it (and any link parallel to it) its two ends are apart
        comp = components(routers, [x for x in pairs if {*x} != {a, b}])
        if comp[a] == comp[b]:
            spare.append((a, b))
    return spare


def link_workload(net: DaemonNet, count: int, seed: int, start: int = 5, down_for: int = 8,
                  gap: int = 4) -> list[ExtEvent]:
    """``count`` failures of spare links, one at a time, each recovered ``down_for`` seconds later."""
    rng = random.Random(seed)
    spare = spare_links(net)
    if not spare:
        raise EventsError(f"{net.name} has no link whose loss keeps it connected", "pick a map with cycles")
    out, t = [], start
    for _ in range(count):
        a, b = spare[rng.randrange(len(spare))]
        out += [ExtEvent(t, "link_down", a, b), ExtEvent(t + down_for, "link_up", a, b)]
        t += down_for + gap
    return out


def fuzz_workload(net: DaemonNet, steps: int, rng: random.Random, start: int = 5,
                  rates: dict[str, float] | None = None) -> list[ExtEvent]:
    """A random sequence: links fail and recover, routers crash and restart, a few seconds apart.

    A link fails only while the rest keeps the network connected (a partition hides every
    pair it separates from the checks); a link that is down, or one whose loss would cut the
    network, recovers instead (the longest-failed one).
    """
    rates = rates if rates is not None else {"link": 0.8, "restart": 0.2}
    down: list[tuple[str, str]] = []
    links = [(ln.a, ln.b) for ln in net.links]
    routers = [r.name for r in net.routers]
    out, t = [], start
    for _ in range(steps):
        if rng.random() < rates.get("restart", 0.0):
            r = routers[rng.randrange(len(routers))]
            out += [ExtEvent(t, "crash", r), ExtEvent(t + 2, "restart", r)]
        else:
            a, b = links[rng.randrange(len(links))]
            if (a, b) not in down and set(components(routers, [x for x in links if x not in down and x != (a, b)]
                                                      ).values()) == {0}:
                out.append(ExtEvent(t, "link_down", a, b))
                down.append((a, b))
            elif down:
                a, b = (a, b) if (a, b) in down else down[0]
                out.append(ExtEvent(t, "link_up", a, b))
                down.remove((a, b))
        t += rng.randint(8, 16)
    return out

