"""`minimize --executor ray` on a cluster: the trace goes to the nodes, every replay's files come back.

A node of a cluster shares no filesystem with the driver, so the oracle
factory sent to each actor carries the trace itself (compressed bytes), not
its path.  On the node the actor writes the trace and its replays into a
scratch directory; after each replay the replay's directory, its row of
``replays.jsonl`` and PEEK's counts travel back inside the verdict, and the
executor's landing hook, on the driver, writes them under
``OUT/replays/wN/`` exactly where a local run would have.  A replacement
actor (after a lost node) has a new worker id, so its directories never
collide with the lost one's.
"""

from __future__ import annotations

import json
import shutil
import zlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from netsleuth.controllers.environment import check_environments
from netsleuth.jobs.shipping import pack_dir, scratch_dir, unpack_into
from netsleuth.minimize.executors import Executor, make_executor
from netsleuth.minimize.oracle import ReplayVerdict
from netsleuth.minimize.ray_executor import RayActorPool
from netsleuth.trace import schema as ts


@dataclass(frozen=True)
class ShippedOracleFactory:
    """Picklable: the real oracle's settings plus the trace's bytes; builds it in a scratch directory."""

    base: Any            # a jobs.minimize.ReplayOracleFactory (its paths are the driver's, unused on the node)
    trace_z: bytes
    controllers: tuple[str, ...]

    def __call__(self, worker_id: int) -> ShippedOracle:
        check_environments(self.controllers)
        scratch = scratch_dir("netsleuth-replays-")
        (scratch / "trace.jsonl").write_bytes(zlib.decompress(self.trace_z))
        local = replace(self.base, trace=str(scratch / "trace.jsonl"), out=str(scratch / "replays"))
        return ShippedOracle(local(worker_id), scratch, worker_id)


class ShippedOracle:
    """The replay oracle on a node: each verdict carries the replay's files, which leave the node."""

    def __init__(self, inner: Any, scratch: Path, worker_id: int) -> None:
        self.inner = inner
        self.scratch = scratch
        self.worker_id = worker_id

    def reproduces(self, candidate: tuple[ts.InputEvent, ...]) -> ReplayVerdict:
        verdict = self.inner.reproduces(candidate)
        details = dict(verdict.details)
        local = Path(details["dir"])
        wdir = local.parent
        rows = (wdir / "replays.jsonl").read_text().splitlines() if (wdir / "replays.jsonl").exists() else []
        details["shipped"] = {"dir": f"w{self.worker_id}/{local.name}", "files": pack_dir(local),
                              "row": rows[-1] if rows else None,
                              "peek": details.get("peek")}
        shutil.rmtree(local, ignore_errors=True)
        (wdir / "replays.jsonl").unlink(missing_ok=True)
        return ReplayVerdict(verdict.reproduced, details)

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()
        shutil.rmtree(self.scratch, ignore_errors=True)


class Landing:
    """On the driver: write what a shipped verdict carries under ``replays`` (OUT/replays)."""

    def __init__(self, replays: Path) -> None:
        self.replays = replays

    def __call__(self, result: Any) -> Any:
        details = getattr(result, "details", None)
        if not isinstance(details, dict) or "shipped" not in details:
            return result
        shipped = details.pop("shipped")
        target = self.replays / shipped["dir"]
        unpack_into(shipped["files"], target)
        details["dir"] = str(target)
        if shipped["row"]:
            with open(target.parent / "replays.jsonl", "a") as f:
                f.write(shipped["row"] + "\n")
        if shipped["peek"] is not None:
            (target.parent / "peek.json").write_text(json.dumps(shipped["peek"], sort_keys=True) + "\n")
        return result


def ray_setup(factory: Any, executor: str | Executor | None, jobs: int | None, trace: Path,
              out: Path, controllers: list[str]) -> tuple[Any, str | Executor | None]:
    """For a Ray executor: the shipping factory and an executor that lands results under ``out``;
    any other executor is returned unchanged, with the factory."""
    if not isinstance(executor, str) or not executor.strip().startswith("ray"):
        return factory, executor
    ex = make_executor(executor, jobs)
    assert isinstance(ex, RayActorPool)
    ex.land = Landing(out / "replays")
    shipped = ShippedOracleFactory(factory, zlib.compress(Path(trace).read_bytes()), tuple(controllers))
    return shipped, ex


__all__ = ["ShippedOracleFactory", "ShippedOracle", "Landing", "ray_setup"]
