"""Nothing outlives `netsleuth defined step --daemon`: no daemon, relay, namespace or veth.

netsleuth is stopped mid-run -- its network up, three UPDATEs held at the
relay -- by Ctrl-C (SIGINT), SIGTERM, or SIGKILL (which runs no clean-up
in netsleuth at all: the guard does it). Before the signal the test notes
every process of the run's process group (the guard's) and every network
namespace those processes are in; afterwards none of those processes may
exist and no process may be in any of those namespaces (an unnamed
namespace with no process in it is gone, and its veths with it), and the
run directory must be gone, and so must FRR's scratch directories under
/var/tmp/frr.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.real, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]


def _procs() -> dict[int, tuple[int, str, str]]:
    """pid -> (process group, net namespace, command line) for every process we can read."""
    out = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            pgrp = int(stat.rsplit(")", 1)[1].split()[2])
            ns = os.readlink(d / "ns" / "net")
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        out[int(d.name)] = (pgrp, ns, cmd)
    return out


def _read_until(p: subprocess.Popen, pattern: str, timeout: float) -> list[str]:
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    assert p.stdout is not None
    fd = p.stdout.fileno()
    os.set_blocking(fd, False)
    buf = ""
    while time.monotonic() < deadline:
        try:
            chunk = os.read(fd, 65536).decode(errors="replace")
        except BlockingIOError:
            chunk = ""
        if chunk:
            buf += chunk
            lines = buf.splitlines()
            if any(re.search(pattern, ln) for ln in lines):
                return lines
        elif p.poll() is not None:
            break
        time.sleep(0.05)
    raise AssertionError(f"no line matching {pattern!r} in time: {buf[-2000:]}")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGKILL],
                         ids=["ctrl-c", "sigterm", "sighup", "sigkill"])
@pytest.mark.parametrize("daemon", ["bird", "frr"])
def test_nothing_remains_after_netsleuth_is_stopped_mid_run(daemon, sig):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.Popen([sys.executable, "-m", "netsleuth.cli", "defined", "step", "--daemon", daemon,
                          "--scenario", "med"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, env=env, cwd=ROOT, start_new_session=True,
                         # as from a terminal: a suite started in the background (``make test &``) hands
                         # its children SIGINT ignored, which netsleuth rightly respects
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert p.stdin is not None
        p.stdin.write(b"held\n")
        p.stdin.flush()
        lines = _read_until(p, r"group 0: 3 message", 90)
        rundir = next(ln.split()[2] for ln in lines if ln.startswith("run directory"))
        procs = _procs()
        guard = [pid for pid, (_, _, cmd) in procs.items() if "guard.py" in cmd and rundir not in cmd
                 and procs[pid][0] == pid and _parent(pid) == p.pid]
        assert len(guard) == 1, "the guard should be netsleuth's child, leading its own group"
        group = {pid for pid, (pg, _, _) in procs.items() if pg == guard[0]}
        namespaces = {procs[pid][1] for pid in group} - {os.readlink("/proc/self/ns/net")}
        daemons = [cmd for pid, (_, _, cmd) in procs.items() if pid in group and rundir in cmd]
        assert len(namespaces) == 5 and len(daemons) >= 4, (namespaces, daemons)   # relay + 4 routers
        scratch = [Path("/var/tmp/frr") / f"{f.stem}.{f.read_text().strip()}" for f in Path(rundir).glob("*/*.pid")]
        if daemon == "frr":   # FRR's per-daemon scratch directories, which only a clean exit removes
            assert scratch and all(d.is_dir() for d in scratch), scratch
        os.kill(p.pid, sig)
        code = p.wait(timeout=30)
        assert code == {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 129, signal.SIGKILL: -9}[sig]
        deadline = time.monotonic() + 10
        while True:
            now = _procs()
            left = [pid for pid in group if pid in now and now[pid][0] == guard[0]]
            in_ns = [pid for pid, (_, ns, _) in now.items() if ns in namespaces]
            kept = [d for d in scratch if d.exists()]
            if not left and not in_ns and not Path(rundir).exists() and not kept:
                break
            assert time.monotonic() < deadline, (left, in_ns, Path(rundir).exists(), kept)
            time.sleep(0.1)
        named = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        assert "netsleuth" not in named
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except OSError:
        return -1


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
def test_nothing_remains_after_fuzz_on_daemons_is_stopped_mid_run(sig, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.Popen([sys.executable, "-m", "netsleuth.cli", "defined", "fuzz", "--daemon", "bird", "--topo",
                          "ring,4", "--steps", "40", "--seed", "0", "--out", str(tmp_path / "f")],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=ROOT,
                         start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while True:   # ready: netsleuth's guard leads a group with the four routers' BIRDs in it
            procs = _procs()
            guard = [pid for pid, (pg, _, cmd) in procs.items() if "guard.py" in cmd and pg == pid
                     and _parent(pid) == p.pid]
            group = {pid for pid, (pg, _, _) in procs.items() if guard and pg == guard[0]}
            if sum("bird -f" in procs[pid][2] for pid in group) == 4:
                break
            assert p.poll() is None and time.monotonic() < deadline, "fuzz did not start its routers"
            time.sleep(0.05)
        namespaces = {procs[pid][1] for pid in group} - {os.readlink("/proc/self/ns/net")}
        assert len(namespaces) == 5
        conf = next(w for pid in group for w in procs[pid][2].split() if w.endswith("bird.conf"))
        rundir = Path(conf).parents[1]
        assert rundir.is_dir()
        os.kill(p.pid, sig)
        assert p.wait(timeout=30) == (143 if sig == signal.SIGTERM else -9)
        deadline = time.monotonic() + 10
        while True:
            now = _procs()
            left = [pid for pid in group if pid in now and now[pid][0] == guard[0]]
            in_ns = [pid for pid, (_, ns, _) in now.items() if ns in namespaces]
            if not left and not in_ns and not rundir.exists():
                break
            assert time.monotonic() < deadline, (left, in_ns, rundir.exists())
            time.sleep(0.1)
        if sig == signal.SIGTERM:
            assert json.loads((tmp_path / "f" / "result.json").read_text())["interrupted"] is True
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
