"""One campaign job, as it runs in a worker process (a local pool's or a Ray actor's).

The worker runs ``fuzz(FuzzOptions(...))`` into the job's own directory and
answers with a plain-data record: how the job ended and, when it found a
persistent violation, the bug's signature (campaign/signature.py), computed
here beside the trace so the campaign process never reads every trace.

However the job ends, the worker survives it and the record says so: a
controller that cannot start or a bad option (fuzz's exit 2), a bug in
netsleuth (exit 3), a controller that died on its own during the run, or a
job past its time limit are all ``failed`` with the reason, and the
campaign goes on with the next job.  The time limit is enforced between
fuzz rounds: the progress callback fuzz calls every round raises
:class:`JobTimeout`, and the session's clean-up (trace flushed, result.json
written, controller stopped) runs as for any error.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import time
import traceback
from pathlib import Path
from typing import Any

from netsleuth.campaign.signature import job_bug
from netsleuth.controllers.environment import check_environments
from netsleuth.errors import NetsleuthError
from netsleuth.jobs.fuzz import FuzzOptions, fuzz
from netsleuth.jobs.shipping import pack_dir, scratch_dir, unpack_into
from netsleuth.minimize.ray_executor import node_label
from netsleuth.model.switch_io import SwitchLimits
from netsleuth.schedulers.fuzz import Rates
from netsleuth.trace.io import read_trace


class JobTimeout(Exception):
    """A job ran past the campaign's per-job time limit."""


class _Deadline:
    """fuzz's progress callbacks, used as a clock: past the deadline the next callback raises."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def _check(self) -> None:
        if time.monotonic() > self.end:
            raise JobTimeout(f"the job ran past its time limit of {self.seconds:g} s")

    def phase(self, name: str, total: int | None) -> None:
        self._check()

    def advance(self, completed: int) -> None:
        self._check()

    def note(self, text: str) -> None:
        pass


class CampaignWorkerInit:
    """Picklable start-up of a campaign worker (run once per worker process).

    A serial campaign runs its jobs in the campaign's own process: there the start-up changes
    nothing, or Ctrl-C would stop reaching the campaign (and, ignored signals being inherited,
    every process it starts afterwards)."""

    def __init__(self, controllers: list[str] | None = None) -> None:
        self.campaign_pid = os.getpid()
        self.controllers = list(controllers or [])

    def __call__(self, worker_id: int) -> dict[str, Any]:
        if os.getpid() != self.campaign_pid:
            if os.getpid() != os.getpgrp():
                # Ctrl-C reaches the whole terminal process group; the campaign process alone decides
                # what stopping means (it ends the workers and writes the partial report).
                signal.signal(signal.SIGINT, signal.SIG_IGN)
        if self.controllers:  # fail on this node now, naming the missing piece, rather than job after job
            check_environments(self.controllers)
        return {"worker": worker_id, "host": socket.gethostname(), "pid": os.getpid(), "node": node_label()}


def run_job(state: dict[str, Any], payload: dict[str, Any]) -> dict[str, Any]:
    """Run one fuzz job; the record the campaign stores (never raises for a job's own failure).

    A shipped job (a Ray actor's) runs in a scratch directory of its node and its files travel back
    packed in the record (campaign/shipping.py): the campaign's OUT is never touched from a node."""
    if payload.get("ship"):
        return _run_shipped(state, payload)
    out = Path(payload["out"])
    record: dict[str, Any] = {k: payload[k] for k in ("key", "index", "controller", "topo", "rates_name", "seed")}
    record.update({"dir": payload["dir"], "host": state.get("host"), "worker": state.get("worker"),
                   "node": state.get("node"),
                   "signature": None})
    t0 = time.monotonic()
    timeout = float(payload["timeout"])
    if out.exists():  # left by a run of this job that was killed before it was recorded
        shutil.rmtree(out)
    opts = FuzzOptions(controller=payload["controller"], topo=payload["topo"], out=out, steps=payload["steps"],
                       seed=payload["seed"], rates=Rates(dict(payload["rates"])), checks=payload["checks"],
                       persist=payload["persist"], round_seconds=payload["round_seconds"],
                       handshake_timeout=min(60.0, timeout), record_packets=True,
                       check_every_flowmod=bool(payload.get("check_every_flowmod", False)),
                       limits=SwitchLimits(payload.get("buffer_packets", 0), payload.get("table_size", 0)),
                       warmup=payload.get("warmup", "0"))
    try:
        result = fuzz(opts, _Deadline(timeout))
    except JobTimeout as exc:
        return _failed(record, t0, None, f"timeout: {exc}")
    except NetsleuthError as exc:
        return _failed(record, t0, exc.exit_code, exc.one_line())
    except KeyboardInterrupt:
        record.update(status="interrupted", seconds=round(time.monotonic() - t0, 3))
        return record
    except Exception as exc:  # noqa: BLE001 - netsleuth's own bug: recorded, the campaign goes on
        text = "".join(traceback.format_exception(exc))
        (out / "netsleuth-error.log").write_text(text)
        return _failed(record, t0, 3, f"internal error: {type(exc).__name__}: {exc}")
    data = result.data
    record.update(status="finished", exit_code=result.exit_code, seconds=round(time.monotonic() - t0, 3),
                  steps=data.get("steps"), inputs=data.get("inputs", {}),
                  persistent=sum(1 for v in data.get("violations", []) if v.get("persistent")))
    died = [c for c in data.get("controllers", []) if not c["alive"]
            and not data.get("inputs", {}).get("controller_crash")]
    if died:
        c = died[0]
        return _failed(record, t0, 2, f"controller {c['name']} ({c['spec']}) exited with code {c['exit_code']} "
                                      f"during the run; see {c['log']}")
    if result.exit_code == 1:
        _add_bug(record, out / "trace.jsonl")
    return record


def _failed(record: dict[str, Any], t0: float, code: int | None, error: str) -> dict[str, Any]:
    record.update(status="failed", exit_code=code, error=error, seconds=round(time.monotonic() - t0, 3))
    return record


def _add_bug(record: dict[str, Any], trace_path: Path) -> None:
    trace = read_trace(trace_path)
    bug = job_bug(trace.header, trace.events)
    if bug is None:
        return
    persistent = [e for e in trace.events if getattr(e, "persistent", False) and e.kind == "violation"]
    at = persistent[bug.violation_index].seq
    v: Any = persistent[bug.violation_index]
    record.update(signature=bug.signature.to_json(), violation_index=bug.violation_index, message=bug.message,
                  violation={"invariant": v.invariant, "message": v.message, "details": v.details},
                  also=[s.to_json() for s in bug.others],
                  inputs_to_violation=sum(1 for e in trace.events if e.is_input and e.seq < at))


def _run_shipped(state: dict[str, Any], payload: dict[str, Any]) -> dict[str, Any]:
    """Run the job in a scratch directory of this node; its files go back packed in the record."""
    scratch = scratch_dir("netsleuth-job-")
    try:
        local = scratch / "run"
        record = run_job(state, {**payload, "ship": False, "out": str(local)})
        record["files_tgz"] = pack_dir(local)
        if record.get("error"):  # paths of this node's scratch mean nothing to the campaign
            record["error"] = record["error"].replace(str(local), payload["dir"])
        return record
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def receive_trace(record: dict[str, Any], out_root: Path) -> None:
    """On the campaign's side: write the files of a job that ran on a cluster node under OUT."""
    blob = record.pop("files_tgz", None)
    if blob is None:
        return
    unpack_into(blob, out_root / record["dir"])


def job_payload(job: Any, spec: Any, out_root: Path) -> dict[str, Any]:
    """The plain data a worker needs for one job (it pickles to any worker, local or on a cluster)."""
    payload = {"key": job.key, "index": job.index, "controller": job.controller, "topo": job.topo,
            "rates_name": job.rates_name, "rates": dict(job.rates), "seed": job.seed,
            "steps": spec.steps, "checks": spec.checks, "persist": spec.persist,
            "round_seconds": spec.round_seconds, "timeout": spec.job_timeout,
            "check_every_flowmod": spec.check_every_flowmod, "buffer_packets": spec.buffer_packets,
            "table_size": spec.table_size, "warmup": spec.warmup,
            "dir": f"runs/{job.dirname}", "out": str(out_root / "runs" / job.dirname),
            "campaign_host": socket.gethostname(), "ship": False}
    if getattr(spec, "executor", "local") == "ray":  # a cluster node: no path of the campaign's goes there
        payload.update(ship=True, out="")
    return payload


__all__ = ["run_job", "CampaignWorkerInit", "JobTimeout", "receive_trace", "job_payload"]
