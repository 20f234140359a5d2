"""Warm starts: an os-ken controller forked from a server that imported os-ken once is the process a
cold start makes (command line, environment, working directory, process group, exit status, death with
netsleuth), reports a broken app alike, and a lost server only makes starts cold; Faucet, started warm,
does what it does cold.  Also the local pool's
workers, forked from multiprocessing's fork server: they see their pool's creator's environment."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest
from test_campaign import all_gone

from netsleuth.controllers import warm
from netsleuth.controllers.external import AppImportError, ControllerProcess
from netsleuth.minimize.executors import LocalPoolExecutor
from netsleuth.model.topo_builders import parse_topo
from netsleuth.trace.controller_spec import parse_all

pytestmark = pytest.mark.real

SWITCH = "osken:os_ken.app.simple_switch_13"


def _hello(host: str, port: int) -> bytes:
    """The first OpenFlow header the controller sends on a new connection (its HELLO)."""
    with socket.create_connection((host, port), timeout=10) as s:
        data = b""
        while len(data) < 8:
            chunk = s.recv(8 - len(data))
            assert chunk, "the controller closed the connection before its HELLO"
            data += chunk
        return data


def _servers() -> set[int]:
    """This process's warm-start servers."""
    return {s.proc.pid for s in warm._starters.values() if s is not None}


PROBE_APP = """
import os
from os_ken.base import app_manager


class Probe(app_manager.OSKenApp):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        print("probe", os.environ.get("NETSLEUTH_TEST_PROBE"), os.getcwd(), flush=True)
"""


def test_a_warm_start_is_the_process_a_cold_start_makes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "probe.py").write_text(PROBE_APP)
    monkeypatch.setenv("NETSLEUTH_TEST_PROBE", "warm-42")
    monkeypatch.chdir(tmp_path)
    ctl = ControllerProcess(parse_all(f"{SWITCH},{tmp_path / 'probe.py'}")[0], tmp_path / "c0.log")
    host, port = ctl.start()
    try:
        assert isinstance(ctl.proc, warm.WarmProcess)
        pid = ctl.pid
        assert pid is not None and os.getpgid(pid) == ctl.proc.pid   # in its guard's group, as cold
        # forked from the server that made os-ken's patching call already, a child of this process's server
        patched = psutil.Process(ctl.proc.pid).ppid()
        assert patched not in _servers() and psutil.Process(patched).ppid() in _servers()
        cmdline = " ".join(psutil.Process(pid).cmdline())
        assert "osken_main.py" in cmdline and f"--ofp-tcp-listen-port {port}" in cmdline, cmdline
        version, kind = _hello(host, port)[:2]
        assert kind == 0 and version >= 4   # OFPT_HELLO offering 1.3 or later
    finally:
        ctl.stop()
    assert ctl.exit_code() == -signal.SIGTERM
    assert not psutil.pid_exists(ctl.proc.pid)
    log = (tmp_path / "c0.log").read_text()
    assert "instantiating app os_ken.app.simple_switch_13" in log
    assert f"probe warm-42 {tmp_path}" in log   # this start's environment and directory, not the server's
    assert "EventletDeprecationWarning" not in log   # the server's own start-up stays out of the controller's log


def _faucet_run(tmp_path: Path, setting: str, monkeypatch: pytest.MonkeyPatch) -> tuple[str, list[str]]:
    """One faucet:auto start on linear,2 (warm or cold): the process's command line, and what Faucet
    logged (its own log, timestamps cut; the temporary folder's name made the same)."""
    monkeypatch.setenv("NETSLEUTH_WARM_START", setting)
    out = tmp_path / setting
    ctl = ControllerProcess(parse_all("faucet:auto")[0], out / "c0.log", topology=parse_topo("linear,2"))
    host, port = ctl.start()
    try:
        assert isinstance(ctl.proc, warm.WarmProcess) == (setting == "1")
        assert ctl.pid is not None and os.getpgid(ctl.pid) == ctl.proc.pid
        cmdline = " ".join(psutil.Process(ctl.pid).cmdline())
        assert _hello(host, port)[:2] == bytes([4, 0])   # Faucet speaks OpenFlow 1.3 only
    finally:
        ctl.stop()
    assert ctl.exit_code() == -signal.SIGTERM
    logged = (out / "faucet.log").read_text().replace(str(out), "OUT").splitlines()
    return cmdline, [line[16:] for line in logged]


def test_faucet_starts_warm_as_the_program_its_launcher_execs(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Faucet's launcher only turns its arguments into os-ken manager's and execs it: a warm start runs
    that manager with the same arguments, in Faucet's environment, and Faucet does what it does cold."""
    warm_cmd, warm_log = _faucet_run(tmp_path, "1", monkeypatch)
    cold_cmd, cold_log = _faucet_run(tmp_path, "0", monkeypatch)
    assert ".venv-faucet/bin/python" in warm_cmd and "osken_main.py" in warm_cmd and "faucet.faucet" in warm_cmd
    assert "--ofp-tcp-listen-port=" in warm_cmd and "--config-file=" in warm_cmd
    assert "faucet.faucet" in cold_cmd   # osken-manager ... faucet.faucet, which the launcher exec'd
    assert any("Add new datapath DPID 2" in line for line in warm_log), warm_log
    assert warm_log == cold_log


def test_a_controller_under_coverage_starts_warm_and_measures_from_the_mark(tmp_path: Path) -> None:
    """covlaunch.py (coverage for fault localization) runs in the forked process in front of os-ken's
    launcher, as it does in front of a cold start, and starts measuring when netsleuth marks it."""
    ctl = ControllerProcess(parse_all(SWITCH)[0], tmp_path / "c0.log", coverage_dir=tmp_path / "cov")
    host, port = ctl.start()
    pid = ctl.pid
    try:
        assert isinstance(ctl.proc, warm.WarmProcess)
        assert pid is not None
        cmdline = " ".join(psutil.Process(pid).cmdline())
        assert "covlaunch.py" in cmdline and "osken_main.py" in cmdline, cmdline
        assert psutil.Process(ctl.proc.pid).ppid() in _servers()   # coverage starts before os-ken patches
        assert _hello(host, port)[1] == 0
        marked = ctl.mark_coverage()
        assert marked is not None
        deadline = time.monotonic() + 30
        while not marked.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert marked.exists(), "the controller did not start measuring on SIGUSR2"
    finally:
        ctl.stop()
    lines = json.loads((tmp_path / "cov" / "c0-1.json").read_text())
    assert lines["switched"] is True and lines["pid"] == pid   # written by the controller itself, as it stopped


def test_warm_and_cold_starts_report_an_app_that_cannot_load_alike(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    app = tmp_path / "needs_missing.py"
    app.write_text("import module_nobody_installed\n")
    errors = {}
    for setting in ("1", "0"):
        monkeypatch.setenv("NETSLEUTH_WARM_START", setting)
        ctl = ControllerProcess(parse_all(f"osken:{app}")[0], tmp_path / f"c{setting}.log")
        with pytest.raises(AppImportError) as info:
            ctl.start()
        errors[setting] = info.value.one_line()
    assert errors["1"] == errors["0"]
    assert "module_nobody_installed" in errors["1"]


def test_a_killed_netsleuth_takes_its_warm_controllers_and_the_server_down(tmp_path: Path) -> None:
    script = textwrap.dedent(f"""
        import sys, time
        from pathlib import Path
        from netsleuth.controllers import warm
        from netsleuth.controllers.external import ControllerProcess
        from netsleuth.trace.controller_spec import parse_all
        procs = [ControllerProcess(parse_all({SWITCH!r})[0], Path({str(tmp_path)!r}) / f"c{{i}}.log") for i in range(2)]
        for p in procs:
            p.start()
        servers = [s.proc.pid for s in warm._starters.values() if s is not None]
        print(*servers, *(p.proc.pid for p in procs), *(p.pid for p in procs), flush=True)
        time.sleep(600)
    """)
    env = {k: v for k, v in os.environ.items() if k != warm.SHARED_ENV}   # a server of its own, not this one's
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env)
    try:
        pids = [int(w) for w in proc.stdout.readline().split()]   # type: ignore[union-attr]
        assert len(pids) == 5, pids   # one server, two guards, two controllers
        assert all(psutil.pid_exists(pid) for pid in pids)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert all_gone(pids) == []


def test_a_lost_server_makes_the_next_start_cold(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a server of this test's own, forgotten afterwards: the process's other starts stay warm
    monkeypatch.setattr(warm, "_starters", {})
    monkeypatch.delenv(warm.SHARED_ENV, raising=False)
    spec = parse_all(SWITCH)[0]
    first = ControllerProcess(spec, tmp_path / "c1.log")
    first.start()
    starter = warm.starter_for(first.argv()[0], dict(os.environ, PYTHONUNBUFFERED="1",
                                                     SETUPTOOLS_USE_DISTUTILS="stdlib"))
    assert isinstance(first.proc, warm.WarmProcess) and starter is not None
    starter.proc.kill()
    starter.proc.wait()
    second = ControllerProcess(spec, tmp_path / "c2.log")
    try:
        host, port = second.start()
        assert isinstance(second.proc, subprocess.Popen)   # cold, under guard.py
        assert _hello(host, port)[1] == 0
        assert first.alive()   # a controller outlives the server that forked it
    finally:
        second.stop()
        first.stop()


SHARING = """
import sys
from pathlib import Path
import psutil
from netsleuth.controllers import warm
from netsleuth.controllers.external import ControllerProcess
from netsleuth.trace.controller_spec import parse_all
ctl = ControllerProcess(parse_all(sys.argv[1])[0], Path(sys.argv[2]))
host, port = ctl.start()
try:
    owns = [s.proc is not None for s in warm._starters.values() if s is not None]
    print(isinstance(ctl.proc, warm.WarmProcess), psutil.Process(ctl.proc.pid).ppid(), *owns, flush=True)
finally:
    ctl.stop()
print(ctl.exit_code())
"""


def test_a_netsleuth_process_started_by_one_with_a_server_shares_it(tmp_path: Path) -> None:
    first = ControllerProcess(parse_all(SWITCH)[0], tmp_path / "c1.log")
    first.start()
    try:
        assert isinstance(first.proc, warm.WarmProcess) and warm.SHARED_ENV in os.environ
        server = psutil.Process(first.proc.pid).ppid()   # the guard's parent
        out = subprocess.run([sys.executable, "-c", SHARING, SWITCH, str(tmp_path / "c2.log")],
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        (warm_start, guard_parent, owns), (code,) = (line.split() for line in out.stdout.splitlines())
        assert (warm_start, int(guard_parent), owns) == ("True", server, "False")   # this server, no other
        assert int(code) == -signal.SIGTERM
        assert "instantiating app os_ken.app.simple_switch_13" in (tmp_path / "c2.log").read_text()
        assert first.alive()   # the guest leaving ends nothing of the server's owner
    finally:
        first.stop()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user")
def test_another_user_cannot_ask_the_server_for_a_start(tmp_path: Path) -> None:
    first = ControllerProcess(parse_all(SWITCH)[0], tmp_path / "c1.log")
    first.start()
    try:
        address = next(iter(json.loads(os.environ[warm.SHARED_ENV]).values()))
        probe = ("import socket; s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)\n"
                 f"s.connect('\\0' + {address!r})\n"
                 "try:\n    s.send(b'{}'); print(s.recv(100) or 'closed')\n"
                 "except OSError:\n    print('closed')\n")   # reset or broken pipe: refused either way
        # the system interpreter: another user may not be able to reach the checkout's environment
        out = subprocess.run(["/usr/bin/python3", "-c", probe], capture_output=True, text=True, timeout=30,
                             preexec_fn=lambda: os.setuid(65534))
        assert out.stdout.strip() == "closed", (out.stdout, out.stderr)   # closed unanswered
        assert first.alive()
    finally:
        first.stop()


def _environment_value(state: object, name: str) -> str | None:
    return os.environ.get(name)


def _no_state(worker_id: int) -> None:
    return None


def test_pool_workers_see_their_creator_s_environment_not_the_fork_server_s(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NETSLEUTH_TEST_PROBE", "first")
    with LocalPoolExecutor(1) as pool:   # the fork server starts now, with this environment
        pool.start(_no_state)
        assert pool.submit(_environment_value, "NETSLEUTH_TEST_PROBE").result(timeout=60) == "first"
    monkeypatch.setenv("NETSLEUTH_TEST_PROBE", "second")
    with LocalPoolExecutor(1) as pool:
        pool.start(_no_state)
        assert pool.submit(_environment_value, "NETSLEUTH_TEST_PROBE").result(timeout=60) == "second"
