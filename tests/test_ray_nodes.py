"""A campaign on a two-node Ray cluster: its driver killed and restarted, and a node that comes late and broken.

The cluster is Ray's own (``ray.cluster_utils.Cluster``): a head that runs
nothing and two worker nodes of one CPU and one ``controller`` slot each.
The campaigns run in a separate driver process (``netsleuth campaign
--executor ray --address ...``), so that it can be killed with SIGKILL
while the jobs are out on the nodes.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from test_campaign import all_gone, buckets_of, start_campaign, stored_jobs, wait_for_jobs

from netsleuth.campaign.runner import run_campaign
from netsleuth.campaign.spec import CampaignSpec
from netsleuth.minimize import ray_executor

ray = pytest.importorskip("ray")
cluster_utils = pytest.importorskip("ray.cluster_utils")

pytestmark = [pytest.mark.real, pytest.mark.slow]

RATES = {"host_migration": 0.1, "link_failure": 0.02, "traffic": 0.5, "switch_failure": 0.0}
CAMPAIGN = ["--controller", "osken:os_ken.app.simple_switch", "--topo", "linear,3", "--topo", "ring,4",
            "--rate-set", "moves:host_migration=0.1,link_failure=0.02,traffic=0.5,switch_failure=0",
            "--steps", "20", "--check", "loops,blackholes,dataplane-loops", "--no-minimize"]


def spec(executor: str, seeds: int, jobs: int | None) -> CampaignSpec:
    """The campaign of CAMPAIGN, as run_campaign takes it."""
    return CampaignSpec(controllers=["osken:os_ken.app.simple_switch"], topologies=["linear,3", "ring,4"],
                        rate_sets={"moves": dict(RATES)}, seeds=list(range(1, seeds + 1)), steps=20,
                        checks="loops,blackholes,dataplane-loops", executor=executor, jobs=jobs, minimize=False)


@pytest.fixture(scope="module")
def cluster() -> Any:
    c = cluster_utils.Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
    for _ in range(2):
        c.add_node(num_cpus=1, resources={"controller": 1})
    c.wait_for_nodes()
    yield c
    if ray.is_initialized():
        ray.shutdown()
    c.shutdown()


def driver(cluster: Any, out: Path, seeds: str) -> subprocess.Popen:
    """``netsleuth campaign`` on the cluster, in a process of its own."""
    return subprocess.Popen([sys.executable, "-m", "netsleuth.cli", "campaign", *CAMPAIGN, "--seeds", seeds,
                             "--out", str(out), "--executor", "ray", "--address", cluster.address],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


@pytest.mark.cluster
def test_a_driver_killed_mid_run_resumes_on_the_cluster_with_the_same_buckets_and_nothing_run_twice(
        cluster: Any, tmp_path: Path) -> None:
    out = tmp_path / "killed"
    proc = driver(cluster, out, "1-3")
    deadline = time.monotonic() + 180
    while len(stored_jobs(out)) < 2:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline, "the campaign recorded too few jobs in time"
        time.sleep(0.1)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    before = stored_jobs(out)
    assert 2 <= len(before) < 6

    again = driver(cluster, out, "1-3")
    _, stderr = again.communicate(timeout=300)
    assert again.returncode == 1, stderr  # bugs were found
    after = stored_jobs(out)
    assert len(after) == 6
    assert {k: after[k] for k in before} == before  # recorded once, never run again
    d = json.loads((out / "campaign.json").read_text())
    assert d["resumed"] is True and d["completed"] and d["failed"] == 0, d["failures"]
    assert sum(n["jobs_done"] for n in d["nodes"].values()) == 6 - len(before)

    local = run_campaign(spec("local", 3, 2), tmp_path / "local")
    assert buckets_of(out) == {b["id"]: b["seeds"] for b in local["buckets"]} and local["buckets"]


def test_a_node_that_joins_late_without_the_controller_environment_is_named_in_campaign_json(
        cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Three workers on two slots: the third actor waits for a node, and the node that comes after the
    first job cannot build it.  The campaign goes on on the others and campaign.json says why that node
    ran nothing."""
    monkeypatch.setattr(ray_executor, "TOGETHER_TIMEOUT", 1.0)  # start the work without the pending actor
    ray.init(address=cluster.address, include_dashboard=False, logging_level="warning")
    added: list[Any] = []

    def progress(status: Any) -> None:
        if status.done >= 1 and not added:
            added.append(cluster.add_node(num_cpus=1, resources={"controller": 1},
                                          env_vars={"NETSLEUTH_CONTROLLER_PYTHON": "/nonexistent/bin/python"}))

    try:
        d = run_campaign(spec("ray", 5, 3), tmp_path / "out", progress)
    finally:
        ray.shutdown()
        for node in added:
            cluster.remove_node(node)
    assert added and d["completed"] and d["recorded"] == 10 and d["failed"] == 0, d["failures"]
    broken = {name: n for name, n in d["nodes"].items() if n["error"]}
    assert len(broken) == 1, d["nodes"]
    (n,) = broken.values()
    assert n["jobs_done"] == 0 and n["jobs_lost"] == 0
    assert "NETSLEUTH_CONTROLLER_PYTHON=/nonexistent/bin/python does not exist" in n["error"]
    assert " -- fix: " in n["error"]
    good = {name: n for name, n in d["nodes"].items() if not n["error"]}
    assert len(good) == 2 and sum(n["jobs_done"] for n in good.values()) == 10
    assert json.loads((tmp_path / "out" / "campaign.json").read_text())["nodes"] == d["nodes"]


def test_a_campaign_on_a_local_ray_instance_stopped_by_sigterm_writes_its_partial_report(tmp_path: Path) -> None:
    """``ray.init`` on the main thread sets its own SIGTERM handler (a bare exit): the campaign must keep
    its own, which ends the workers and writes the partial report, and exit 128 + SIGTERM."""
    out = tmp_path / "stopped"
    proc = start_campaign(tmp_path, out, "--executor", "ray", "--jobs", "2")
    tree = wait_for_jobs(proc, out, 1, timeout=180)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, stderr
    assert "stopped by SIGTERM" in stderr
    assert all_gone(tree) == []  # Ray's own processes and the actors' controllers included
    d = json.loads((out / "campaign.json").read_text())
    assert d["completed"] is False and d["stopped_by"] == "SIGTERM" and d["recorded"] >= 1
