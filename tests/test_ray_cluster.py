"""Campaigns and minimization on a real multi-node Ray cluster that loses a node mid-run.

The cluster is Ray's own (``ray.cluster_utils.Cluster``): a head that runs
nothing and three worker nodes of one CPU and one ``controller`` slot each,
every node with its own temporary directory (TMPDIR) where its jobs write.
Only the driver -- this test process -- has the campaign's OUT.  One node is
removed after about a third of a 40-run campaign, and again in the middle
of a minimization: the runs it was running must run again elsewhere, the
buckets must be the process pool's, and the MCS the serial executor's.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from netsleuth.campaign.runner import run_campaign
from netsleuth.campaign.spec import CampaignSpec
from netsleuth.errors import EnvironmentSetupError
from netsleuth.jobs.minimize import MinimizeOptions, run_minimize
from netsleuth.minimize.errors import WorkerLostError
from netsleuth.minimize.executors import make_executor
from netsleuth.trace.io import read_trace

ray = pytest.importorskip("ray")
cluster_utils = pytest.importorskip("ray.cluster_utils")

pytestmark = [pytest.mark.real, pytest.mark.slow]

RATES = {"host_migration": 0.1, "link_failure": 0.02, "traffic": 0.5, "switch_failure": 0.0}


def spec(executor: str, jobs: int | None) -> CampaignSpec:
    """40 short runs: simple_switch floods into a loop on the ring, blackholes after host moves on the line."""
    return CampaignSpec(controllers=["osken:os_ken.app.simple_switch"], topologies=["linear,3", "ring,4"],
                        rate_sets={"moves": dict(RATES)}, seeds=list(range(1, 21)), steps=20,
                        checks="loops,blackholes,dataplane-loops", executor=executor, jobs=jobs,
                        minimize_budget=240)


class ThreeNodes:
    """A head with no CPU and worker nodes of one CPU and one controller slot, each with its own TMPDIR."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.cluster = cluster_utils.Cluster(initialize_head=True,
                                             head_node_args={"num_cpus": 0, "include_dashboard": False})
        self.nodes: list[Any] = []
        self.dirs: list[Path] = []   # the live nodes' directories, in the order of ``nodes``
        self.made = 0
        self.fill()
        ray.init(address=self.cluster.address, include_dashboard=False, logging_level="warning")

    def fill(self, n: int = 3) -> None:
        while len(self.nodes) < n:
            d = self.root / f"node{self.made}"
            d.mkdir()
            self.made += 1
            self.dirs.append(d)
            self.nodes.append(self.cluster.add_node(num_cpus=1, resources={"controller": 1},
                                                    env_vars={"TMPDIR": str(d)}))
        self.cluster.wait_for_nodes()

    def remove_one(self) -> None:
        self.dirs.pop(0)  # a lost machine: what its jobs left on its disk is gone with it
        self.cluster.remove_node(self.nodes.pop(0))

    def close(self) -> None:
        ray.shutdown()
        self.cluster.shutdown()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Any:
    c = ThreeNodes(tmp_path_factory.mktemp("nodes"))
    yield c
    c.close()


@pytest.fixture(scope="module")
def campaign(cluster: ThreeNodes, tmp_path_factory) -> dict[str, Any]:
    """The 40 runs on the cluster, a node removed after 13 of them, every bucket minimized there."""
    driver = tmp_path_factory.mktemp("driver")
    removed: list[int] = []

    def progress(status: Any) -> None:
        if status.done >= 13 and not removed:
            removed.append(status.done)
            cluster.remove_one()

    t0 = time.monotonic()
    data = run_campaign(spec("ray", None), driver / "out", progress)
    return {"data": data, "out": driver / "out", "removed_after": removed, "seconds": time.monotonic() - t0}


@pytest.mark.cluster
def test_a_campaign_that_loses_a_node_finishes_every_run_with_the_pools_buckets(
        cluster: ThreeNodes, campaign: dict[str, Any], tmp_path: Path) -> None:
    d, out = campaign["data"], campaign["out"]
    print(f"campaign on the cluster: {campaign['seconds']:.1f} s, node removed after {campaign['removed_after']}")
    assert campaign["removed_after"] == [13]
    assert d["completed"] and d["recorded"] == d["planned"] == 40 and d["failed"] == 0, d["failures"]
    assert d["workers_lost"] >= 1  # the removed node was running a job, which ran again on another
    assert len(d["jobs_per_node"]) == 3 and sum(d["jobs_per_node"].values()) == 40
    # campaign.json names the node that went, with the jobs it had done and the one it lost
    lost = {name: n for name, n in d["nodes"].items() if n["jobs_lost"]}
    assert sum(n["jobs_lost"] for n in lost.values()) == d["workers_lost"]
    assert all(n["error"].startswith("lost a worker while running a task") for n in lost.values()), lost
    assert all(n["jobs_done"] >= 1 for n in lost.values())  # it was removed after its first jobs

    # Every run's files are in the driver's OUT; the live nodes kept nothing in their own directories.
    runs = sorted(p.name for p in (out / "runs").iterdir())
    assert len(runs) == 40 and all((out / "runs" / r / "trace.jsonl").exists() for r in runs)
    assert [p for d_ in cluster.dirs for p in d_.glob("netsleuth-*")] == []

    t0 = time.monotonic()
    local = run_campaign(spec("local", 2), tmp_path / "local")
    print(f"the same campaign on the local pool: {time.monotonic() - t0:.1f} s")
    assert sorted(b["id"] for b in d["buckets"]) == sorted(b["id"] for b in local["buckets"])
    assert len(d["buckets"]) >= 2

    for b in d["buckets"]:
        m = b["minimized"]
        assert m["stop_reason"] != "error", m
        assert m["confirmed"] is True, m
        assert (out / m["mcs"]).exists() and m["inputs_after"] <= m["inputs_before"]


@pytest.mark.cluster
def test_minimize_on_the_cluster_that_loses_a_node_gives_the_serial_mcs(
        cluster: ThreeNodes, campaign: dict[str, Any], tmp_path: Path) -> None:
    cluster.fill()  # three nodes again
    # the smallest representative that still leaves something to remove (a few rounds of delta debugging)
    reps = [b["representative"] for b in campaign["data"]["buckets"]]
    rep = min((r for r in reps if (r["inputs_to_violation"] or 0) >= 3), key=lambda r: r["inputs_to_violation"])
    trace = campaign["out"] / rep["dir"] / "trace.jsonl"

    def opts(executor: str, where: str) -> MinimizeOptions:
        return MinimizeOptions(trace=trace, out=tmp_path / where, controller=[rep["controller"]], executor=executor,
                               violation=rep["violation_index"], budget=300)

    t0 = time.monotonic()
    serial = run_minimize(opts("serial", "serial"))
    t1 = time.monotonic()
    removed: list[int] = []

    def progress(p: Any) -> None:
        if p.replays >= 2 and not removed:
            removed.append(p.replays)
            cluster.remove_one()

    on_ray = run_minimize(opts("ray", "ray"), progress)
    print(f"minimize: serial {t1 - t0:.1f} s, on the cluster {time.monotonic() - t1:.1f} s "
          f"({serial['inputs_before']} -> {serial['inputs_after']} inputs)")
    assert removed, "the minimization ended before a node could be removed"
    assert serial["stop_reason"] == on_ray["stop_reason"] == "done"

    def mcs(where: str) -> list[str]:
        return [e.id for e in read_trace(tmp_path / where / "mcs.jsonl").events if e.is_input]

    assert mcs("ray") == mcs("serial") and mcs("serial")
    # The replays ran on the nodes and came back to the driver's OUT.
    assert json.loads((tmp_path / "ray" / "result.json").read_text())["executor"].startswith("ray")
    assert list((tmp_path / "ray" / "replays").glob("w*/replay-*/trace.jsonl"))


def test_a_node_without_the_controller_environment_is_named_before_any_job(
        cluster: ThreeNodes, tmp_path: Path) -> None:
    cluster.fill()
    bad = cluster.cluster.add_node(num_cpus=1, resources={"controller": 1},
                                   env_vars={"NETSLEUTH_CONTROLLER_PYTHON": "/nonexistent/bin/python"})
    cluster.cluster.wait_for_nodes()
    try:
        with pytest.raises(EnvironmentSetupError) as info:
            run_campaign(spec("ray", None), tmp_path / "out")
    finally:
        cluster.cluster.remove_node(bad)
    assert info.value.problem.startswith("Ray node ")
    assert "NETSLEUTH_CONTROLLER_PYTHON=/nonexistent/bin/python does not exist" in info.value.problem
    assert not (tmp_path / "out" / "runs").exists() or not any((tmp_path / "out" / "runs").iterdir())


def test_a_task_whose_actor_dies_runs_again_elsewhere_and_only_a_bounded_number_of_times(
        cluster: ThreeNodes, tmp_path: Path) -> None:
    """The executor itself: an actor process that dies mid-task (os._exit, as an OOM kill would) costs the
    task one attempt on another actor; a task that kills every actor it runs on fails with WorkerLostError."""
    cluster.fill()
    marker = tmp_path / "died-once"

    def die_once(_state: Any, payload: str) -> str:
        import os
        from pathlib import Path as P

        if not P(payload).exists():
            P(payload).write_text("x")
            os._exit(1)
        return "ran"

    def always_die(_state: Any, _payload: Any) -> None:
        import os

        os._exit(1)

    ex = make_executor("ray", 3)
    ex.start(lambda worker_id: None)
    try:
        assert ex.submit(die_once, str(marker)).result(timeout=120) == "ran"
        assert ex.lost == 1
        with pytest.raises(WorkerLostError) as info:
            ex.submit(always_die, None).result(timeout=120)
        assert ex.lost == 1 + 3 and "3 times" in info.value.problem
        assert ex.submit(die_once, str(marker)).result(timeout=120) == "ran"  # replacements took their place
    finally:
        ex.close()
