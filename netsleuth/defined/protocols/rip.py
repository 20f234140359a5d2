"""RIP with route timers, and the Quagga 0.96.5 timer-refresh variant.

Distance vector with split horizon; every router sends its table to each
neighbour every ``period`` seconds (and once at start). A learned route
expires ``timeout`` seconds after its last refresh from its next hop and is
then removed. No triggered updates: a changed route goes out with the next
periodic update, which keeps the case study's timing explicit.

``correct``  an announcement refreshes a route's timer only when it comes
             from the route's next hop (destination *and* next hop match);
``quagga``   as Quagga 0.96.5 did, an announcement matching only the
             destination refreshes the timer, so a backup router's periodic
             announcements keep a dead primary's route alive: a black hole
             if the backup announces before the primary's route times out.
"""

from __future__ import annotations

from typing import Any

from netsleuth.defined.node import Context, Node

VARIANTS = ("quagga", "correct")
INFINITY = 16


class RIPRouter(Node):
    def __init__(self, name: str, variant: str = "quagga", attached: dict[str, int] | None = None,
                 period: float = 2.0, timeout: float = 6.0) -> None:
        super().__init__(name)
        if variant not in VARIANTS:
            raise ValueError(f"RIP variant must be one of {VARIANTS}")
        self.variant = variant
        self.period = period
        self.timeout = timeout
        self.table: dict[str, dict] = {p: {"metric": m, "next_hop": None} for p, m in sorted((attached or {}).items())}
        self.crashed = False

    def on_start(self, ctx: Context) -> None:
        self._announce(ctx)
        ctx.set_timer("update", self.period)

    def _announce(self, ctx: Context) -> None:
        for nb in ctx.neighbors:
            routes = {p: r["metric"] for p, r in sorted(self.table.items()) if r["next_hop"] != nb}
            ctx.send(nb, {"type": "response", "routes": routes})

    def on_timer(self, ctx: Context, name: str, data: Any) -> None:
        if self.crashed:
            return
        if name == "update":
            self._announce(ctx)
            ctx.set_timer("update", self.period)
        elif name.startswith("expire:"):
            pfx = name.split(":", 1)[1]
            r = self.table.get(pfx)
            if r is not None and r["next_hop"] is not None:
                del self.table[pfx]

    def on_message(self, ctx: Context, src: str, payload: Any) -> None:
        if self.crashed or payload.get("type") != "response":
            return
        for pfx, m in sorted(payload["routes"].items()):
            new = min(int(m) + 1, INFINITY)
            cur = self.table.get(pfx)
            if cur is None:
                if new < INFINITY:
                    self.table[pfx] = {"metric": new, "next_hop": src}
                    ctx.set_timer(f"expire:{pfx}", self.timeout)
            elif cur["next_hop"] is None:
                continue  # directly attached
            elif cur["next_hop"] == src:
                if new >= INFINITY:
                    del self.table[pfx]
                    ctx.cancel_timer(f"expire:{pfx}")
                else:
                    cur["metric"] = new
                    ctx.set_timer(f"expire:{pfx}", self.timeout)
            elif new < cur["metric"]:
                self.table[pfx] = {"metric": new, "next_hop": src}
                ctx.set_timer(f"expire:{pfx}", self.timeout)
            elif self.variant == "quagga":
                # The bug: the destination matched, so the timer of the route via
                # cur["next_hop"] is refreshed although src is not that next hop.
                ctx.set_timer(f"expire:{pfx}", self.timeout)

    def on_external(self, ctx: Context, event: dict) -> None:
        kind = event.get("type")
        if kind == "crash":
            self.crashed = True
            ctx.cancel_timer("update")
        elif kind == "attach":
            self.table[event["prefix"]] = {"metric": int(event.get("metric", 1)), "next_hop": None}

    def routes(self) -> dict:
        return {p: [r["metric"], r["next_hop"]] for p, r in sorted(self.table.items())}

    def state(self) -> dict:
        return {"variant": self.variant, "crashed": self.crashed, "table": self.routes()}
