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

import base64
import os
import shutil
import signal
import socket
import threading
import time
import traceback
import zlib
from pathlib import Path
from typing import Any

from netsleuth.campaign.signature import job_bug
from netsleuth.errors import NetsleuthError
from netsleuth.jobs.fuzz import FuzzOptions, fuzz
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

    def __init__(self) -> None:
        self.campaign_pid = os.getpid()

    def __call__(self, worker_id: int) -> dict[str, Any]:
        if os.getpid() != self.campaign_pid:
            if os.getpid() != os.getpgrp():
                # Ctrl-C reaches the whole terminal process group; the campaign process alone decides
                # what stopping means (it ends the workers and writes the partial report).
                signal.signal(signal.SIGINT, signal.SIG_IGN)
            threading.Thread(target=_follow_parent, args=(os.getppid(),), name="follow-parent",
                             daemon=True).start()
        return {"worker": worker_id, "host": socket.gethostname(), "pid": os.getpid()}


def _follow_parent(parent: int, every: float = 0.5) -> None:
    """Die with the campaign: a pool worker whose campaign was killed (SIGKILL runs no clean-up) would
    otherwise finish its job into a directory a restarted campaign is about to run again, and then
    wait forever.  Dying is enough: the job's controller dies with it (controllers/guard.py)."""
    while os.getppid() == parent:
        time.sleep(every)
    os.kill(os.getpid(), signal.SIGKILL)


def run_job(state: dict[str, Any], payload: dict[str, Any]) -> dict[str, Any]:
    """Run one fuzz job; the record the campaign stores (never raises for a job's own failure)."""
    out = Path(payload["out"])
    record: dict[str, Any] = {k: payload[k] for k in ("key", "index", "controller", "topo", "rates_name", "seed")}
    record.update({"dir": payload["dir"], "host": state.get("host"), "worker": state.get("worker"),
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
        _add_bug(record, out / "trace.jsonl", ship=state.get("host") != payload.get("campaign_host"))
    return record


def _failed(record: dict[str, Any], t0: float, code: int | None, error: str) -> dict[str, Any]:
    record.update(status="failed", exit_code=code, error=error, seconds=round(time.monotonic() - t0, 3))
    return record


def _add_bug(record: dict[str, Any], trace_path: Path, ship: bool) -> None:
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
    if ship:  # a worker on another machine: its disk is not the campaign's
        record["trace_zb64"] = base64.b64encode(zlib.compress(trace_path.read_bytes())).decode()


def receive_trace(record: dict[str, Any], out_root: Path) -> None:
    """On the campaign's side: write a trace a worker on another machine sent along with its record."""
    blob = record.pop("trace_zb64", None)
    if blob is None:
        return
    path = out_root / record["dir"] / "trace.jsonl"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(zlib.decompress(base64.b64decode(blob)))


def job_payload(job: Any, spec: Any, out_root: Path) -> dict[str, Any]:
    """The plain data a worker needs for one job (it pickles to any worker, local or on a cluster)."""
    return {"key": job.key, "index": job.index, "controller": job.controller, "topo": job.topo,
            "rates_name": job.rates_name, "rates": dict(job.rates), "seed": job.seed,
            "steps": spec.steps, "checks": spec.checks, "persist": spec.persist,
            "round_seconds": spec.round_seconds, "timeout": spec.job_timeout,
            "check_every_flowmod": spec.check_every_flowmod, "buffer_packets": spec.buffer_packets,
            "table_size": spec.table_size, "warmup": spec.warmup,
            "dir": f"runs/{job.dirname}", "out": str(out_root / "runs" / job.dirname),
            "campaign_host": socket.gethostname()}


__all__ = ["run_job", "CampaignWorkerInit", "JobTimeout", "receive_trace", "job_payload"]
