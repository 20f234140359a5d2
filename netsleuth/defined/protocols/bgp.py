"""A path-vector BGP speaker with the MED rule, and the XORP 0.4 variant.

Only what the case study needs: per-prefix paths with AS path, MED,
neighbouring AS and IGP distance; iBGP full mesh over the node's links.
Paths learned from external peers (external events) are advertised to every
iBGP neighbour individually (as with ADD-PATH), so a router can hold several
paths for one prefix; paths learned over iBGP are not re-advertised.

Decision process (the three rules the paper names): shortest AS path, then
MED *only among paths from the same neighbouring AS*, then lowest IGP
distance (then lowest path id). Because MED compares only within a group the
pairwise "better than" relation is not transitive, so:

``correct``  re-runs the whole process over all paths on every change;
``xorp``     like XORP 0.4, compares each new path only with the current
             best -- the outcome depends on the order paths arrive in.
"""

from __future__ import annotations

from typing import Any

from netsleuth.defined.node import Context, Node

VARIANTS = ("xorp", "correct")


def better(a: dict, b: dict) -> bool:
    """Pairwise: is path ``a`` preferred to ``b``?"""
    if len(a["as_path"]) != len(b["as_path"]):
        return len(a["as_path"]) < len(b["as_path"])
    if a["as_path"][0] == b["as_path"][0] and a["med"] != b["med"]:
        return a["med"] < b["med"]
    if a["igp"] != b["igp"]:
        return a["igp"] < b["igp"]
    return a["id"] < b["id"]


def full_best(paths: list[dict]) -> dict | None:
    """The MED-correct best path over all candidates."""
    if not paths:
        return None
    shortest = min(len(p["as_path"]) for p in paths)
    cands = [p for p in paths if len(p["as_path"]) == shortest]
    cands = [p for p in cands
             if not any(q["as_path"][0] == p["as_path"][0] and q["med"] < p["med"] for q in cands)]
    return min(cands, key=lambda p: (p["igp"], p["id"]))


class BGPSpeaker(Node):
    def __init__(self, name: str, variant: str = "xorp") -> None:
        super().__init__(name)
        if variant not in VARIANTS:
            raise ValueError(f"BGP variant must be one of {VARIANTS}")
        self.variant = variant
        self.paths: dict[str, dict[str, dict]] = {}   # prefix -> path id -> path
        self.best: dict[str, str] = {}                # prefix -> path id
        self.external: dict[str, dict[str, dict]] = {}

    # ------------------------------------------------------------- decision
    def _learn(self, path: dict) -> None:
        pfx = path["prefix"]
        self.paths.setdefault(pfx, {})[path["id"]] = path
        if self.variant == "correct":
            self._recompute(pfx)
            return
        cur = self.best.get(pfx)
        if cur is None or cur == path["id"] or better(path, self.paths[pfx][cur]):
            self.best[pfx] = path["id"]

    def _forget(self, pfx: str, pid: str) -> None:
        self.paths.get(pfx, {}).pop(pid, None)
        if self.variant == "correct" or self.best.get(pfx) == pid:
            self._recompute(pfx)

    def _recompute(self, pfx: str) -> None:
        paths = [self.paths[pfx][k] for k in sorted(self.paths.get(pfx, {}))]
        if self.variant == "correct":
            b = full_best(paths)
        else:  # XORP folds pairwise over its table
            b = None
            for p in paths:
                if b is None or better(p, b):
                    b = p
        if b is None:
            self.best.pop(pfx, None)
        else:
            self.best[pfx] = b["id"]

    # ------------------------------------------------------------- handlers
    def on_external(self, ctx: Context, event: dict) -> None:
        kind = event.get("type")
        if kind == "announce":
            path = dict(event["path"])
            self.external.setdefault(path["prefix"], {})[path["id"]] = path
            self._learn(path)
            for nb in ctx.neighbors:
                ctx.send(nb, {"type": "update", "path": path})
        elif kind == "withdraw":
            pfx, pid = event["prefix"], event["id"]
            self.external.get(pfx, {}).pop(pid, None)
            self._forget(pfx, pid)
            for nb in ctx.neighbors:
                ctx.send(nb, {"type": "withdraw", "prefix": pfx, "id": pid})

    def on_message(self, ctx: Context, src: str, payload: Any) -> None:
        if payload["type"] == "update":
            self._learn(payload["path"])
        elif payload["type"] == "withdraw":
            self._forget(payload["prefix"], payload["id"])

    # ----------------------------------------------------------------- views
    def routes(self) -> dict:
        return dict(sorted(self.best.items()))

    def correct_best(self) -> dict:
        return {pfx: (full_best(list(ps.values())) or {}).get("id") for pfx, ps in sorted(self.paths.items())}

    def state(self) -> dict:
        return {"variant": self.variant, "best": self.routes(),
                "paths": {p: sorted(v) for p, v in sorted(self.paths.items())},
                "correct_best": self.correct_best()}
