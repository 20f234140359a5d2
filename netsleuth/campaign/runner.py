"""``netsleuth campaign``: many fuzz jobs in parallel, their findings grouped into bugs, each bug minimized.

The jobs (campaign/spec.py) run on an executor from minimize/executors.py:
a local pool of worker processes (``--executor local --jobs N``) or Ray
actors (``--executor ray [--address ADDR]``, an existing cluster or a local
instance).  Each worker runs one job at a time, one controller per job, on
a port chosen free at the controller's start (and chosen again should
another job take it first, controllers/external.py).  At most one job per
worker is in flight, so a seconds budget stops the campaign within about
one job's length, and every job's record is committed to the store
(campaign/store.py) the moment it comes back.

Then the findings are grouped by bug signature (campaign/signature.py).
Each bucket's representative -- the run that reached the violation with
the fewest inputs -- is minimized with the same executor (minimize/api.py
through jobs/minimize.py), and the MCS is replayed once more from its
``mcs.jsonl`` to confirm it reproduces.  The report (campaign/report.py)
is written at the end, and also when the campaign is stopped: Ctrl-C,
SIGTERM and SIGHUP end the workers (their controllers die with them,
controllers/guard.py) and write what is known so far; a restart with the
same OUT picks up from the store.
"""

from __future__ import annotations

import concurrent.futures as cf
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netsleuth.campaign.handoff import HandoffExecutor, RayStarter
from netsleuth.campaign.localized import localize_bucket, mark_same_top
from netsleuth.campaign.report import write_reports
from netsleuth.campaign.spec import CampaignSpec, JobSpec
from netsleuth.campaign.store import CampaignStore
from netsleuth.campaign.worker import CampaignWorkerInit, job_payload, receive_trace, run_job
from netsleuth.controllers.external import share_warm_start
from netsleuth.errors import NetsleuthError
from netsleuth.jobs.minimize import MinimizeOptions, run_minimize
from netsleuth.jobs.replay import ReplayOptions, replay
from netsleuth.live.stop import stopped_by
from netsleuth.minimize.executors import Executor, LocalPoolExecutor, RayExecutor
from netsleuth.options import check_out_dir


@dataclass
class CampaignStatus:
    """What the live table shows; updated by the campaign as jobs start and end."""

    total: int = 0
    skipped: int = 0                 # done by an earlier run of the same campaign
    done: int = 0                    # ended in this run (finished or failed)
    failed: int = 0
    running: int = 0
    started: float = field(default_factory=time.monotonic)
    buckets: dict[str, dict[str, Any]] = field(default_factory=dict)   # signature id -> {"text", "count"}
    phase: str = "starting workers"
    workers: str = ""
    nodes: dict[str, int] = field(default_factory=dict)   # where the jobs of this run ended: node -> jobs
    lost: int = 0                    # workers (Ray actors) lost while running a job, which ran again elsewhere
    node_lost: dict[str, int] = field(default_factory=dict)    # node -> jobs lost there (run again elsewhere)
    node_errors: dict[str, str] = field(default_factory=dict)  # node -> why it could not run jobs, or lost one

    def per_minute(self) -> float:
        minutes = (time.monotonic() - self.started) / 60.0
        return self.done / minutes if minutes > 0 else 0.0


Progress = Callable[[CampaignStatus], None]


def run_campaign(spec: CampaignSpec, out: Path, progress: Progress | None = None) -> dict[str, Any]:
    """Run (or resume) the campaign into ``out``; the data of ``campaign.json``."""
    spec.check()
    check_out_dir(out)
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    store = CampaignStore(out)
    status = CampaignStatus()
    notify = progress or (lambda _s: None)
    t0 = time.monotonic()
    interrupted = False
    starter: RayStarter | None = None
    try:
        if spec.executor == "ray":  # now; or, handing off, in the background while the first jobs run
            starter = RayStarter(spec.address, spec.jobs, background=HANDOFF, preload=(run_job.__module__,))
        resumed = store.bind(spec.definition())
        jobs = spec.job_list()
        done = store.done_keys()
        todo = [j for j in jobs if j.key not in done]
        status.total, status.skipped = len(jobs), len(jobs) - len(todo)
        _count(status, store.jobs())
        try:
            if todo:
                _run_jobs(spec, out, store, todo, status, notify, t0, starter)
            if starter is not None and spec.minimize:
                starter.result()  # minimization runs on the same instance (started now if no job needed it)
        except KeyboardInterrupt:
            interrupted = True
        buckets = group_buckets(store.jobs())
        if not interrupted and spec.minimize:
            try:
                _minimize_buckets(spec, out, store, buckets, status, notify)
            except KeyboardInterrupt:
                interrupted = True
        for b in buckets:
            b["minimized"] = store.bucket(b["id"])
        mark_same_top(buckets)
        data = campaign_data(spec, out, store.jobs(), buckets, resumed=resumed, interrupted=interrupted,
                             seconds=time.monotonic() - t0, elapsed=store.elapsed() + time.monotonic() - t0)
        data["workers_lost"], data["jobs_per_node"] = status.lost, dict(sorted(status.nodes.items()))
        data["nodes"] = node_table(status)
        status.phase = "writing the report"
        notify(status)
        data["report"] = write_reports(out, data)
        return data
    finally:
        store.add_elapsed(time.monotonic() - t0)
        store.close()
        if starter is not None:
            starter.shutdown()


def _count(status: CampaignStatus, records: list[dict[str, Any]]) -> None:
    status.buckets.clear()
    for r in records:
        sig = r.get("signature")
        if r["status"] == "finished" and sig:
            b = status.buckets.setdefault(sig["id"], {"text": sig["text"], "count": 0})
            b["count"] += 1


# --------------------------------------------------------------------------- running the jobs
HANDOFF = True  # a process pool runs the first jobs while a local Ray starts (campaign/handoff.py); False: they wait


def _executor(spec: CampaignSpec, starter: RayStarter | None) -> Executor:
    """The local pool; or Ray, with a pool running the first jobs while a local instance starts
    (campaign/handoff.py, the default); or, on a cluster, Ray once connected."""
    if starter is None:
        return LocalPoolExecutor(spec.jobs)
    if starter.background and not starter.done():
        return HandoffExecutor(starter, spec.jobs)
    starter.result()
    return RayExecutor(None, spec.jobs)  # Ray is initialized by now: the actors go to its cluster


HARD_GRACE = 120.0  # seconds past --job-timeout after which a worker that has not answered is ended


def _run_jobs(spec: CampaignSpec, out: Path, store: CampaignStore, todo: list[JobSpec],
              status: CampaignStatus, notify: Progress, t0: float, starter: RayStarter | None) -> None:
    """Keep every worker busy with one job; record each job as it ends.

    The time limit is the worker's to enforce, between fuzz rounds (campaign/worker.py).  A worker
    stuck where no round ends (it has not answered ``HARD_GRACE`` seconds after the limit) is ended
    with the rest of the pool, its job recorded as failed, and the others' jobs start again on a
    new pool."""
    ex = _executor(spec, starter)
    deadline = None if spec.budget_seconds is None else t0 + max(0.0, spec.budget_seconds - store.elapsed())
    pending: dict[cf.Future[Any], tuple[JobSpec, float]] = {}
    queue = list(todo)
    clean = False
    if todo and not isinstance(ex, RayExecutor):  # the pool's workers join this process's warm-start server
        share_warm_start(spec.controllers)
    try:
        ex.start(CampaignWorkerInit(spec.controllers if spec.executor == 'ray' else None))
        status.workers, status.phase = ex.describe(), "fuzzing"
        while queue or pending:
            while queue and len(pending) < ex.workers and (deadline is None or time.monotonic() < deadline):
                job = queue.pop(0)
                pending[ex.submit(run_job, job_payload(job, spec, out))] = (job, time.monotonic())
            if deadline is not None and time.monotonic() >= deadline:
                queue.clear()  # the budget is spent: no new job starts
            status.running, status.workers = len(pending), ex.describe()
            notify(status)
            if not pending:
                break
            finished, _ = cf.wait(list(pending), timeout=0.5, return_when=cf.FIRST_COMPLETED)
            for fut in finished:
                _store_record(_record_of(fut, pending.pop(fut)[0]), out, store, status)
            now = time.monotonic()
            stuck = [f for f, (_job, since) in pending.items() if now - since > spec.job_timeout + HARD_GRACE]
            if stuck:
                for f in stuck:
                    job = pending.pop(f)[0]
                    _store_record(_failed_record(job, f"the worker did not return {spec.job_timeout + HARD_GRACE:g} "
                                                      "s after the job started; it was ended"), out, store, status)
                queue[:0] = [job for job, _since in pending.values()]  # their workers end with the stuck one
                pending.clear()
                _collect_nodes(status, ex)
                _terminate(ex)
                ex = _executor(spec, starter)
                ex.start(CampaignWorkerInit(spec.controllers if spec.executor == 'ray' else None))
        status.running = 0
        clean = True
    finally:
        _collect_nodes(status, ex)
        if clean:
            ex.close()
        else:
            _terminate(ex)


def _collect_nodes(status: CampaignStatus, ex: Executor) -> None:
    """Add what a Ray executor knows of its nodes (workers lost, errors) to the campaign's status."""
    pool = ex.ray if isinstance(ex, HandoffExecutor) else ex
    status.lost += getattr(pool, "lost", 0)
    for node, n in getattr(pool, "node_lost", {}).items():
        status.node_lost[node] = status.node_lost.get(node, 0) + n
    status.node_errors.update(getattr(pool, "node_errors", {}))


def node_table(status: CampaignStatus) -> dict[str, dict[str, Any]]:
    """Per node of this run: the jobs that ended there, the jobs lost with a worker, and its last error
    (a node that joined late without the controllers' environment, or that lost a worker)."""
    names = sorted(set(status.nodes) | set(status.node_lost) | set(status.node_errors))
    return {n: {"jobs_done": status.nodes.get(n, 0), "jobs_lost": status.node_lost.get(n, 0),
                "error": status.node_errors.get(n)} for n in names}


def _store_record(record: dict[str, Any], out: Path, store: CampaignStore, status: CampaignStatus) -> None:
    if record["status"] == "interrupted":
        raise KeyboardInterrupt  # a worker saw the stop before we did: the job is not done
    receive_trace(record, out)
    store.record_job(record)
    if record.get("node"):
        status.nodes[record["node"]] = status.nodes.get(record["node"], 0) + 1
    status.done += 1
    status.failed += record["status"] == "failed"
    if record.get("signature"):
        _count(status, store.jobs())


def _failed_record(job: JobSpec, error: str) -> dict[str, Any]:
    return {"key": job.key, "index": job.index, "controller": job.controller, "topo": job.topo,
            "rates_name": job.rates_name, "seed": job.seed, "dir": f"runs/{job.dirname}",
            "status": "failed", "exit_code": 3, "signature": None, "error": error}


def _record_of(fut: cf.Future[Any], job: JobSpec) -> dict[str, Any]:
    """The worker's record, or a failed one when the worker itself broke (it died, Ray lost it)."""
    try:
        record: dict[str, Any] = fut.result()
        return record
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - a lost worker is the job's failure, not the campaign's
        return _failed_record(job, f"the worker running it failed: {type(exc).__name__}: {exc}")


def _terminate(ex: Executor) -> None:
    """End the workers now, running jobs and all: their controllers' guards take the controllers down."""
    if isinstance(ex, HandoffExecutor):
        _terminate(ex.local)
        ex.join_start()
        _terminate(ex.ray)
        return
    if isinstance(ex, LocalPoolExecutor):
        pool = ex._pool  # noqa: SLF001 - the executor has no kill switch of its own; the pool is ours
        processes = list((getattr(pool, "_processes", None) or {}).values()) if pool is not None else []
        for p in processes:
            try:
                os.kill(p.pid, signal.SIGTERM)
            except (ProcessLookupError, TypeError):
                pass
        deadline = time.monotonic() + 5.0
        for p in processes:
            p.join(max(0.0, deadline - time.monotonic()))
            if p.is_alive():
                p.kill()
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        ex._pool = None  # noqa: SLF001
        return
    if isinstance(ex, RayExecutor) and ex._ray is not None:  # noqa: SLF001
        for actor in ex._actors:  # noqa: SLF001
            try:
                ex._ray.kill(actor)  # noqa: SLF001
            except Exception:  # noqa: BLE001 - already gone
                pass
        ex._actors = []  # noqa: SLF001
    ex.close()


# --------------------------------------------------------------------------- buckets
def group_buckets(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Finished jobs with a bug, grouped by signature; in order of each bucket's first job."""
    by_id: dict[str, list[dict[str, Any]]] = {}
    for r in records:  # records come in job order
        sig = r.get("signature")
        if r["status"] == "finished" and sig:
            by_id.setdefault(sig["id"], []).append(r)
    buckets = []
    for sig_id, members in by_id.items():
        first = members[0]
        rep = min(members, key=lambda r: (r.get("inputs_to_violation", 0), r["index"]))
        buckets.append({
            "id": sig_id, "signature": first["signature"], "count": len(members),
            "first_seed": first["seed"], "first_job": first["key"],
            "seeds": sorted({r["seed"] for r in members}),
            "configurations": sorted({f"{r['controller']} {r['topo']} rates={r['rates_name']}" for r in members}),
            "jobs": [r["key"] for r in members],
            "representative": {"key": rep["key"], "seed": rep["seed"], "dir": rep["dir"], "controller":
                               rep["controller"], "topo": rep["topo"], "rates_name": rep["rates_name"],
                               "violation_index": rep.get("violation_index", 0), "message": rep.get("message"),
                               "violation": rep.get("violation"),
                               "inputs_to_violation": rep.get("inputs_to_violation")},
        })
    return buckets


def _minimize_buckets(spec: CampaignSpec, out: Path, store: CampaignStore, buckets: list[dict[str, Any]],
                      status: CampaignStatus, notify: Progress) -> None:
    for i, b in enumerate(buckets, 1):
        record = store.bucket(b["id"])
        if record is None:
            status.phase = f"minimizing bucket {i} of {len(buckets)}"
            notify(status)
            record = minimize_bucket(spec, out, b)
            if record.get("stop_reason") == "interrupted":
                raise KeyboardInterrupt
            store.record_bucket(b["id"], record)
        if spec.localize and "localize" not in record and record.get("mcs") and not record.get("error"):
            # minimized now, or by an earlier run of this campaign that did not localize
            status.phase = f"localizing bucket {i} of {len(buckets)}"
            notify(status)
            record["localize"] = localize_bucket(out, b["id"], b["representative"]["controller"])
            store.record_bucket(b["id"], record)


def minimize_bucket(spec: CampaignSpec, out: Path, bucket: dict[str, Any]) -> dict[str, Any]:
    """Minimize the bucket's representative with the campaign's executor, then replay the MCS to confirm."""
    rep = bucket["representative"]
    where = out / "buckets" / bucket["id"]
    executor = "ray" if spec.executor == "ray" else "local"
    opts = MinimizeOptions(trace=out / rep["dir"] / "trace.jsonl", out=where / "minimize",
                           controller=[rep["controller"]], executor=executor, jobs=spec.jobs,
                           budget=spec.minimize_budget, violation=rep["violation_index"])
    record: dict[str, Any] = {"dir": f"buckets/{bucket['id']}"}
    try:
        d = run_minimize(opts)
    except NetsleuthError as exc:
        record.update(error=exc.one_line(), stop_reason="error")
        return record
    record.update({k: d.get(k) for k in ("inputs_before", "inputs_after", "one_minimal", "stop_reason",
                                         "replays", "seconds", "reproduction_rate", "mcs_in_words")})
    record["stop_reason"] = d.get("stop_reason")
    record["mcs"] = f"buckets/{bucket['id']}/minimize/mcs.jsonl"
    if d.get("stop_reason") == "interrupted":
        return record
    try:
        confirm = replay(ReplayOptions(trace=where / "minimize" / "mcs.jsonl", out=where / "confirm",
                                       controller=[rep["controller"]], violation=rep["violation_index"]))
        record["confirmed"] = bool(confirm.get("reproduced"))
        record["confirm_trace"] = f"buckets/{bucket['id']}/confirm/trace.jsonl"
    except NetsleuthError as exc:
        record.update(confirmed=False, confirm_error=exc.one_line())
    return record


def campaign_data(spec: CampaignSpec, out: Path, records: list[dict[str, Any]], buckets: list[dict[str, Any]],
                  *, resumed: bool, interrupted: bool, seconds: float, elapsed: float) -> dict[str, Any]:
    """What campaign.json holds (and report.html shows)."""
    finished = [r for r in records if r["status"] == "finished"]
    failed = [r for r in records if r["status"] == "failed"]
    data: dict[str, Any] = {
        "command": "campaign", "out": str(out), "definition": spec.definition(),
        "executor": spec.executor + (f"@{spec.address}" if spec.address else ""), "jobs": spec.jobs,
        "planned": len(spec.job_list()), "recorded": len(records), "finished": len(finished),
        "failed": len(failed), "with_bug": sum(1 for r in finished if r.get("signature")),
        "resumed": resumed, "completed": not interrupted, "seconds": round(seconds, 3),
        "elapsed_all_runs": round(elapsed, 3), "buckets": buckets,
        "failures": [{k: r.get(k) for k in ("key", "seed", "controller", "topo", "rates_name", "error", "dir")}
                     for r in failed],
    }
    if interrupted:
        data["stopped_by"] = stopped_by()
    return data


__all__ = ["run_campaign", "CampaignStatus", "group_buckets", "minimize_bucket", "campaign_data"]
