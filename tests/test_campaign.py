"""`netsleuth campaign` against the real simple_switch: buckets, minimization, resuming, stopping, Ray.

One small campaign (simple_switch on linear,3 and ring,4 with host moves,
link failures and traffic; seeds 7-8, 40 short rounds) serves every test:
it must find the migration blackhole and the flooding loop as two buckets,
whatever runs it (the process pool, Ray, a run killed with SIGKILL and
restarted) and however often.  Its first run, with minimization and
localization, is a module fixture that the other tests compare with.
"""

from __future__ import annotations

import json
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from netsleuth.campaign.spec import CampaignSpec, CampaignSpecError, load_campaign_file, parse_seeds
from netsleuth.cli import main

pytestmark = [pytest.mark.real, pytest.mark.slow]

NETSLEUTH = [sys.executable, "-m", "netsleuth.cli"]
CAMPAIGN = """
controllers = ["osken:os_ken.app.simple_switch"]
topologies = ["linear,3", "ring,4"]
seeds = "7-8"
steps = 40
checks = "loops,blackholes,dataplane-loops"

[rates.moves]
host_migration = 0.1
link_failure = 0.02
traffic = 0.5
switch_failure = 0
"""


def campaign_file(tmp: Path) -> Path:
    path = tmp / "campaign.toml"
    path.write_text(CAMPAIGN)
    return path


def buckets_of(out: Path) -> dict[str, list[int]]:
    """Signature id -> seeds, from campaign.json."""
    d = json.loads((out / "campaign.json").read_text())
    return {b["id"]: b["seeds"] for b in d["buckets"]}


def stored_jobs(out: Path) -> dict[str, tuple[str, float]]:
    """Job key -> (status, when it was recorded), read straight from the store."""
    path = out / "campaign.sqlite"
    if not path.exists():
        return {}
    db = sqlite3.connect(path)
    try:
        return {k: (s, t) for k, s, t in db.execute("SELECT key, status, finished_at FROM jobs")}
    except sqlite3.OperationalError:  # the campaign has not created its tables yet
        return {}
    finally:
        db.close()


def all_gone(pids: list[int], grace: float = 10.0) -> list[str]:
    """The processes of ``pids`` still alive after ``grace`` seconds (zombies count as gone)."""
    deadline = time.monotonic() + grace
    while True:
        alive = []
        for pid in pids:
            try:
                p = psutil.Process(pid)
                if p.status() != psutil.STATUS_ZOMBIE:
                    alive.append(f"{pid}: {' '.join(p.cmdline())}")
            except psutil.NoSuchProcess:
                pass
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.2)


def start_campaign(tmp: Path, out: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([*NETSLEUTH, "campaign", str(campaign_file(tmp)), "--out", str(out), "--no-minimize",
                             *extra], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def wait_for_jobs(proc: subprocess.Popen, out: Path, n: int, timeout: float = 120.0) -> list[int]:
    """Wait until the store holds ``n`` jobs; then the campaign's process tree (pids)."""
    deadline = time.monotonic() + timeout
    while len(stored_jobs(out)) < n:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline, "the campaign recorded too few jobs in time"
        time.sleep(0.1)
    return [proc.pid, *(c.pid for c in psutil.Process(proc.pid).children(recursive=True))]


@pytest.fixture(scope="module")
def first(tmp_path_factory) -> Path:
    """The campaign run once, uninterrupted, on the process pool, with every bucket minimized and localized."""
    tmp = tmp_path_factory.mktemp("campaign")
    out = tmp / "out"
    code = main(["campaign", str(campaign_file(tmp)), "--out", str(out), "--jobs", "2", "--minimize-budget", "240"])
    assert code == 1  # bugs were found
    return out


def test_finds_the_migration_blackhole_and_the_flooding_loop_as_two_minimized_buckets(first: Path) -> None:
    d = json.loads((first / "campaign.json").read_text())
    assert d["completed"] and d["recorded"] == d["planned"] == 4 and d["failed"] == 0
    by_invariant = {b["signature"]["invariant"]: b for b in d["buckets"]}
    assert sorted(by_invariant) == ["blackholes", "dataplane-loops"], [b["signature"]["text"] for b in d["buckets"]]

    hole = by_invariant["blackholes"]
    assert hole["signature"]["parts"]["cause"] == "the rule outputs to a port a host left"
    assert hole["signature"]["parts"]["inputs"] == "host_migration"
    assert hole["configurations"] == ["osken:os_ken.app.simple_switch linear,3 rates=moves"]
    loop = by_invariant["dataplane-loops"]
    assert "flooding" in loop["signature"]["parts"]["forwarding"]
    assert loop["configurations"] == ["osken:os_ken.app.simple_switch ring,4 rates=moves"]
    for b in (hole, loop):
        assert b["count"] == 2 and b["seeds"] == [7, 8] and b["first_seed"] == 7
        m = b["minimized"]
        assert m["inputs_after"] <= 4 and m["inputs_after"] <= m["inputs_before"], m
        assert m["confirmed"] is True, m  # the MCS, replayed from mcs.jsonl, reproduces
        assert (first / m["mcs"]).exists() and (first / m["diagram"]).exists()
    kinds = [w.split(": ", 1)[1] for w in hole["minimized"]["mcs_in_words"]]
    assert any(" moves from " in k for k in kinds) and any(" sends to " in k for k in kinds)
    assert len(loop["minimized"]["mcs_in_words"]) == 1 and " sends to " in loop["minimized"]["mcs_in_words"][0]

    page = (first / "report.html").read_text()
    for b in (hole, loop):
        assert b["signature"]["text"].split(":")[0] in page
        assert f'href="{b["minimized"]["diagram"]}"' in page and f'href="{b["minimized"]["mcs"]}"' in page
        assert f'href="{b["representative"]["dir"]}/trace.jsonl"' in page


def test_each_minimized_bucket_names_its_top_lines(first: Path) -> None:
    """campaign --localize (the default): each bucket's MCS localized, its top lines in campaign.json, the
    summary and the report; buckets with the same first block marked as one bug."""
    from rich.console import Console

    from netsleuth.campaign.cli import print_summary

    d = json.loads((first / "campaign.json").read_text())
    page = (first / "report.html").read_text()
    console = Console(record=True, width=200)
    print_summary(d, console, str(first))
    summary = console.export_text()
    blocks = {}
    for i, b in enumerate(d["buckets"], 1):
        loc = b["minimized"]["localize"]
        assert (first / loc["json"]).is_file() and loc["added_replays"] >= 2, loc  # the MCS and MCS minus one
        assert loc["separable"], loc
        top = loc["top"]
        assert 1 <= len(top) <= 5 and [t["rank"] for t in top] == sorted(t["rank"] for t in top)
        for t in top:
            assert t["file"].endswith("simple_switch.py") and t["line"] > 0 and t["function"], t
            assert f"{t['file']}:{t['line']}  {t['score']}  {t['function']}" in summary
            assert f"<code>{t['file']}:{t['line']}</code>" in page
        assert loc["first_block"] and all(x.startswith("/") for x in loc["first_block"])
        same = next((j for j, other in blocks.items() if other == loc["first_block"]), None)
        assert b.get("same_top_lines_as") == same, (b.get("same_top_lines_as"), same)
        assert (f"same top lines as bucket {same}" in summary) == (same is not None)
        blocks.setdefault(i, loc["first_block"])
    # per handler call, the packet-in call that sent the blackhole's rule fails: its first block has the learned
    # output port the rule was made with.  The loop names no rule, so its failing call is the last to send to
    # one of its switches, a flood or an install as timing has it: its top line is in the packet-in handler.
    by_invariant = {b["signature"]["invariant"]: b["minimized"]["localize"] for b in d["buckets"]}
    assert {loc["spectrum"] for loc in by_invariant.values()} == {"handler calls"}
    hole = {t["source"] for t in by_invariant["blackholes"]["top"] if t["block"] == 1}
    assert "out_port = self.mac_to_port[dpid][dst]" in hole, by_invariant["blackholes"]["top"]
    loop = by_invariant["dataplane-loops"]["top"][0]
    assert (loop["rank"], loop["function"]) == (1, "SimpleSwitch._packet_in_handler"), loop


def test_a_resumed_campaign_localizes_the_buckets_minimized_without_localization(first: Path,
                                                                                 tmp_path: Path) -> None:
    """The first campaign's OUT, copied, with its buckets' localizations taken out of the store as if it had
    run with --no-localize: --no-localize keeps them unlocalized, a run with localization on localizes them
    without minimizing again."""
    out = tmp_path / "copy"
    shutil.copytree(first, out)
    db = sqlite3.connect(out / "campaign.sqlite")
    for sig, record in db.execute("SELECT signature, record FROM buckets").fetchall():
        kept = {k: v for k, v in json.loads(record).items() if k != "localize"}
        db.execute("UPDATE buckets SET record = ? WHERE signature = ?", (json.dumps(kept), sig))
    db.commit()
    db.close()
    args = ["campaign", str(campaign_file(tmp_path)), "--out", str(out), "--jobs", "2"]
    assert main([*args, "--no-localize"]) == 1
    d = json.loads((out / "campaign.json").read_text())
    assert all("localize" not in b["minimized"] for b in d["buckets"])
    minimized = {b["id"]: b["minimized"]["seconds"] for b in d["buckets"]}
    assert main(args) == 1
    d = json.loads((out / "campaign.json").read_text())
    for b in d["buckets"]:
        assert b["minimized"]["seconds"] == minimized[b["id"]]   # the minimization of the first run, kept
        loc = b["minimized"]["localize"]
        assert loc["separable"] and loc["top"] and (out / loc["json"]).is_file(), loc


def test_run_twice_gives_the_same_buckets_and_a_broken_controller_only_fails_its_jobs(first: Path,
                                                                                       tmp_path: Path) -> None:
    out = tmp_path / "again"
    broken = f'cmd:{sys.executable} -c "import sys; sys.exit(3)" {{port}}'
    code = main(["campaign", str(campaign_file(tmp_path)), "--controller", "osken:os_ken.app.simple_switch",
                 "--controller", broken, "--out", str(out), "--jobs", "2", "--no-minimize"])
    assert code == 1
    assert buckets_of(out) == buckets_of(first)
    d = json.loads((out / "campaign.json").read_text())
    assert d["completed"] and d["recorded"] == 8 and d["failed"] == 4
    assert all("exited with code 3 while starting" in f["error"] for f in d["failures"])


def test_killed_with_sigkill_and_restarted_redoes_nothing_and_ends_with_the_same_buckets(first: Path,
                                                                                          tmp_path: Path) -> None:
    out = tmp_path / "killed"
    proc = start_campaign(tmp_path, out, "--jobs", "1")
    tree = wait_for_jobs(proc, out, 2)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    # the pool worker and its controller die with the campaign
    assert all_gone(tree) == [], "\n".join(all_gone(tree, 0.1))
    before = stored_jobs(out)
    assert 2 <= len(before) < 4

    assert main(["campaign", str(campaign_file(tmp_path)), "--out", str(out), "--jobs", "2", "--no-minimize"]) == 1
    after = stored_jobs(out)
    assert len(after) == 4
    assert {k: after[k] for k in before} == before  # recorded once, never run again
    assert buckets_of(out) == buckets_of(first)
    assert json.loads((out / "campaign.json").read_text())["resumed"] is True


def test_sigterm_writes_the_partial_report_and_ends_workers_and_controllers(tmp_path: Path) -> None:
    out = tmp_path / "stopped"
    proc = start_campaign(tmp_path, out, "--jobs", "2")
    tree = wait_for_jobs(proc, out, 1)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, stderr
    assert "stopped by SIGTERM" in stderr
    assert all_gone(tree) == []
    d = json.loads((out / "campaign.json").read_text())
    assert d["completed"] is False and d["stopped_by"] == "SIGTERM" and d["recorded"] >= 1
    assert "stopped by SIGTERM (partial)" in (out / "report.html").read_text()


def test_on_a_local_ray_cluster_gives_the_buckets_of_the_process_pool(first: Path, tmp_path: Path) -> None:
    ray = pytest.importorskip("ray")
    # A new instance of its own: without address="local", ray.init joins a cluster another test process
    # of the suite may have running on this machine (and then refuses num_cpus).
    ray.init(address="local", num_cpus=2, resources={"controller": 2}, include_dashboard=False,
             logging_level="warning")
    try:
        out = tmp_path / "ray"
        code = main(["campaign", str(campaign_file(tmp_path)), "--out", str(out), "--executor", "ray",
                     "--no-minimize"])
    finally:
        ray.shutdown()
    assert code == 1
    d = json.loads((out / "campaign.json").read_text())
    assert d["executor"] == "ray" and d["recorded"] == 4 and d["failed"] == 0
    assert buckets_of(out) == buckets_of(first)


# --------------------------------------------------------------------------- the campaign file and flags
def test_switch_limits_and_warmup_reach_every_job_and_old_definitions_stay(tmp_path: Path) -> None:
    from netsleuth.campaign.worker import job_payload

    spec = load_campaign_file(campaign_file(tmp_path))
    plain = spec.definition()
    assert not {"buffer_packets", "table_size", "warmup"} & set(plain)  # a campaign from before resumes as it was
    path = tmp_path / "lb.toml"
    path.write_text('table_size = 25\nbuffer_packets = 16\nwarmup = "auto"\n' + campaign_file(tmp_path).read_text())
    lb = load_campaign_file(path)
    lb.check()
    assert lb.definition() == dict(plain, table_size=25, buffer_packets=16, warmup="auto")
    payload = job_payload(lb.job_list()[0], lb, tmp_path)
    assert (payload["table_size"], payload["buffer_packets"], payload["warmup"]) == (25, 16, "auto")


def test_seeds_forms() -> None:
    assert parse_seeds("1-5") == [1, 2, 3, 4, 5]
    assert parse_seeds("7") == [7]
    assert parse_seeds([3, 1]) == [3, 1]
    assert parse_seeds({"start": 10, "count": 3}) == [10, 11, 12]
    for bad in ("5-1", "x", [1, "2"], {"start": 1}, True):
        with pytest.raises(CampaignSpecError):
            parse_seeds(bad)


def test_job_list_is_seed_major_and_stable(tmp_path: Path) -> None:
    spec = load_campaign_file(campaign_file(tmp_path))
    jobs = spec.job_list()
    assert [(j.seed, j.topo) for j in jobs] == [(7, "linear,3"), (7, "ring,4"), (8, "linear,3"), (8, "ring,4")]
    assert jobs[0].rates["host_migration"] == 0.1 and jobs[0].rates["link_recovery"] == 0.09  # over fuzz's defaults
    again = load_campaign_file(campaign_file(tmp_path))
    again.budget_runs = 3
    assert [j.key for j in again.job_list()] == [j.key for j in jobs[:3]]
    assert CampaignSpec(controllers=["osken:x"], topologies=["ring,4"]).definition() != spec.definition()


@pytest.mark.parametrize("text, flags, problem", [
    ("seeds = 3\nbogus = 1\n", [], "unknown field(s) bogus"),
    ('controllers = ["osken:os_ken.app.simple_switch"]\n', [], "names no topology"),
    ("steps = 'many'\n", [], "steps must be an integer"),
    ("[rates.x]\nwarp = 0.5\n", [], "unknown rate 'warp'"),
    ("[rates.x]\ntraffic = 2\n", [], "traffic"),
    ("this is = not toml =\n", [], "not valid TOML"),
    ("", ["--topo", "moebius,3"], "moebius"),
    ("table_size = -1\n", [], "table_size must be at least 0"),
    ("buffer_packets = 'lots'\n", [], "buffer_packets must be an integer"),
    ('warmup = "soon"\n', [], "'soon'"),
    ("", ["--warmup", "auto:x"], "'auto:x'"),
])
def test_bad_campaign_input_is_one_line_and_exit_2(tmp_path: Path, capsys, text: str, flags: list[str],
                                                   problem: str) -> None:
    path = tmp_path / "c.toml"
    path.write_text(text)
    args = ["campaign", str(path), "--out", str(tmp_path / "o")]
    if "controllers" not in text and "--controller" not in flags:
        args += ["--controller", "osken:os_ken.app.simple_switch"]
    if "topo" not in text and "--topo" not in flags and "no topology" not in problem:
        args += ["--topo", "linear,3"]
    assert main([*args, *flags]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and " -- fix: " in lines[0] and problem in lines[0]
    assert not (tmp_path / "o").exists()  # refused before anything started


def test_another_campaign_in_the_same_out_is_refused(tmp_path: Path, capsys) -> None:
    from netsleuth.campaign.store import CampaignStore

    out = tmp_path / "o"
    out.mkdir()
    store = CampaignStore(out)
    store.bind({"controllers": ["osken:other"]})
    store.close()
    code = main(["campaign", str(campaign_file(tmp_path)), "--out", str(out)])
    assert code == 2
    assert "holds another campaign" in capsys.readouterr().err


def test_a_controller_whose_port_is_taken_moves_to_a_free_one(tmp_path: Path) -> None:
    """Parallel jobs pick ports independently; one taken between the choice and the bind must not clash."""
    import socket

    from netsleuth.controllers.external import ControllerProcess
    from netsleuth.controllers.spec import parse_controller

    squatter = socket.socket()
    squatter.bind(("127.0.0.1", 0))
    squatter.listen()
    taken = squatter.getsockname()[1]
    c = ControllerProcess(parse_controller("osken:os_ken.app.simple_switch"), tmp_path / "c.log")
    c.port = taken  # as if free_port() had handed out a port another job then bound
    try:
        host, port = c.start()
        assert port != taken and c.port == port
        with socket.create_connection((host, port), timeout=5):
            pass  # our controller answers there
    finally:
        c.stop()
        squatter.close()


def test_a_job_past_its_time_limit_fails_and_the_campaign_goes_on(tmp_path: Path) -> None:
    out = tmp_path / "slow"
    code = main(["campaign", "--controller", "osken:os_ken.app.simple_switch", "--topo", "linear,3",
                 "--rate-set", "quiet:traffic=0.3,switch_failure=0,link_failure=0", "--seeds", "1",
                 "--steps", "100000", "--job-timeout", "6", "--jobs", "1", "--check", "loops,blackholes",
                 "--out", str(out)])
    assert code == 0  # no bucket: nothing but failures
    d = json.loads((out / "campaign.json").read_text())
    assert d["completed"] and d["recorded"] == 1 and d["failed"] == 1 and d["buckets"] == []
    for f in d["failures"]:
        assert f["error"].startswith("timeout: the job ran past its time limit of 6 s"), f
        result = json.loads((out / f["dir"] / "result.json").read_text())
        assert result["completed"] is False and result["steps"] < 100000  # stopped between rounds, cleanly
