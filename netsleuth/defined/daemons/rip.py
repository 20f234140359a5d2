"""The RIP timeout case on the virtual clock: how long a route through a crashed neighbour survives.

r1 learns r3's stub prefix through r2; at virtual second ``fail_at`` r2's
daemons are killed. The clock then advances one virtual second at a time
(every daemon poked until the network is idle) until r1's daemon withdraws
the route. RIP says that happens ``timeout`` (180) seconds after the last
update r1 heard from r2, which the relay saw go by. The run records r1's
table each time it changes -- the *history* two runs must agree on.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from netsleuth.defined.daemons.net import LiveNet, LiveNetError
from netsleuth.defined.daemons.spec import rip_net


@dataclass
class RipOutcome:
    learned_at: float | None
    last_update_at: float | None      # virtual second r1 last heard r2
    withdrawn_at: float | None
    wall_seconds: float
    history: list[tuple[float, list]] = field(default_factory=list)

    @property
    def held_for(self) -> float | None:
        """Virtual seconds between r2's last update and the withdrawal."""
        if self.withdrawn_at is None or self.last_update_at is None:
            return None
        return self.withdrawn_at - self.last_update_at

    def to_json(self) -> dict:
        return {"learned_at": self.learned_at, "last_update_at": self.last_update_at,
                "withdrawn_at": self.withdrawn_at, "held_for": self.held_for,
                "wall_seconds": round(self.wall_seconds, 3), "history": self.history}


def _view(routes: dict[str, list[dict]], prefix: str) -> list:
    """What the history compares: the prefix's usable routes without times (next hop, metric)."""
    return sorted([str(r.get("via", "")), r.get("metric")] for r in routes.get(prefix, []) if r.get("best"))


def rip_run(daemon: str, fail_at: float = 45.0, step: float = 1.0, horizon: float = 400.0,
            seed: int = 0) -> RipOutcome:
    net = rip_net()
    prefix, observer, victim = net.params["prefix"], net.params["observer"], net.params["fails"]
    key = f"{victim}>{observer}"
    t0 = time.monotonic()
    out = RipOutcome(None, None, None, 0.0)
    with LiveNet(net, daemon, hold=False, clocked=True, seed=seed) as n:
        assert n.reader is not None
        n.settle()
        heard = n.stats()["rip"].get(key, 0)
        last_view: list | None = None
        start = t = n.clock.now if n.clock else 0.0    # after the daemons' boot (see LiveNet._boot)
        while t <= horizon:
            if t > start:
                n.advance(t)
            got = n.stats()["rip"].get(key, 0)
            if got != heard and victim not in n.dead:
                out.last_update_at, heard = t, got
            view = _view(n.reader.routes(observer), prefix)
            if view != last_view:
                out.history.append((t, view))
                last_view = view
            if view and out.learned_at is None:
                out.learned_at = t
            if t >= fail_at and victim not in n.dead:
                if out.learned_at is None:
                    raise LiveNetError(f"{observer} never learnt {prefix} by virtual second {t:.0f}",
                                       "see the routers' logs in the run directory")
                n.crash(victim)
            elif victim in n.dead and not view:
                out.withdrawn_at = t
                break
            t += step
    out.wall_seconds = time.monotonic() - t0
    return out
