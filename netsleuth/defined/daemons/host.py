"""The edge: namespaces, veths, daemons and the relay for one :class:`~.spec.DaemonNet`.

Namespaces are *unnamed*: each is created by a holder process
(``unshare --net sleep``) and lives exactly as long as some process is in
it, so nothing is mounted under ``/run/netns`` and nothing can be left
behind once the processes are gone -- the kernel removes a namespace's
veths with it. Every long-lived process (holders, daemons, the relay) joins
one process group led by netsleuth's controller guard
(:mod:`netsleuth.controllers.guard`), whose program is a small shell that
deletes the run directory when it is told to stop. If netsleuth dies in any
way, even SIGKILL, the guard reads end-of-file on its pipe and takes the
whole group down: daemons, relay and namespaces with them.

Each router's daemons read their configuration from, and write their
sockets, pid files and logs to, the router's own directory under the run
directory (FRR's daemons run as user ``frr``, which owns that directory).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import site
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from netsleuth.defined.daemons import config, control
from netsleuth.defined.daemons.spec import DaemonNet, RouterLink
from netsleuth.errors import NetsleuthError

FRR_DIR = Path("/usr/lib/frr")
FAKETIME_DIRS = (Path("/usr/lib/x86_64-linux-gnu/faketime"), Path("/usr/lib/aarch64-linux-gnu/faketime"))
GUARD = Path(__file__).resolve().parents[2] / "controllers" / "guard.py"
# FRR's daemons keep a scratch directory /var/tmp/frr/<daemon>.<pid> that only a clean exit removes; the pid is
# the one in the daemon's pid file (libfaketime may fake it), so the clean-up reads it from there.
FRR_TMP = Path("/var/tmp/frr")
CLEANUP_SH = ('clean() { for f in "$NETSLEUTH_RUNDIR"/*/*.pid; do [ -f "$f" ] || continue; '
              'b=$(basename "$f" .pid); rm -rf "/var/tmp/frr/$b.$(cat "$f")"; done; rm -rf "$NETSLEUTH_RUNDIR"; }; '
              'trap \'clean; exit 0\' TERM INT HUP; while :; do sleep 3600 & wait $!; done')
OFFLOADS = ["tx", "off", "tso", "off", "gso", "off", "gro", "off"]
# What a namespace's holder runs in it before it becomes ``sleep``. No IPv6: the kernel's own chatter on a
# new link (router solicitations, MLD reports) would cross the relay in real time and keep the network from
# looking idle ("default" covers the veths made later). Then the loopback goes up.
NS_SETUP = ("for f in all default; do echo 1 > /proc/sys/net/ipv6/conf/$f/disable_ipv6; done 2>/dev/null; "
            "ip link set lo up && exec sleep infinity")
# The Ip counters of /proc/net/snmp that end a packet's IP input (see NamespaceHost.ip_delivered).
IP_DONE = ("InDelivers", "InUnknownProtos", "InDiscards", "InHdrErrors", "InAddrErrors")
# Where IP_DONE's counters stand in /proc/net/snmp's Ip lines, by the header line that names them (read
# after every delivery: the names are looked up once per kernel, not once per read).
_IP_DONE_AT: dict[str, tuple[int, ...]] = {}
# A line of /proc/net/raw or /proc/net/udp of a routing daemon's socket (OSPF's protocol 89, RIP's port 520,
# in the local address's "port" field): "sl local_address rem_address st tx_queue:rx_queue ...", rx_queue taken.
ROUTING_SOCKET = re.compile(r"^ *\d+: [0-9A-F]+:(?:0059|0208) [0-9A-F]+:[0-9A-F]+ [0-9A-F]+ [0-9A-F]+:([0-9A-F]+)",
                            re.M)
# A directory to keep each run directory in (daemons' logs and configuration, the relay's log) once the
# run ends: the run directory itself is temporary and goes with the run.
KEEP_ENV = "NETSLEUTH_KEEP_RUNDIR"


class DaemonEnvError(NetsleuthError):
    """The machine cannot run the daemon network (a package missing, no namespaces)."""


def faketime_lib(threaded: bool = True) -> Path | None:
    """libfaketime for a multi-threaded program (``libfaketimeMT``) or for a single-threaded one.

    The MT build blocks every signal and takes a lock around each clock read (two system calls
    more per read); a program with one thread needs neither."""
    name = "libfaketimeMT.so.1" if threaded else "libfaketime.so.1"
    for d in FAKETIME_DIRS:
        if (d / name).exists():
            return d / name
    return None


def check_environment(daemon: str, clock: bool = False) -> None:
    """Raise :class:`DaemonEnvError` naming what is missing, before anything is created."""
    need = {"bird": [("bird", "bird2")], "frr": [(str(FRR_DIR / "bgpd"), "frr")]}[daemon]
    need += [("ip", "iproute2"), ("ethtool", "ethtool"), ("nsenter", "util-linux"), ("unshare", "util-linux")]
    for binary, pkg in need:
        if shutil.which(binary) is None:
            raise DaemonEnvError(f"{binary} is not installed", f"apt-get install {pkg} (or make debs)")
    if clock and (faketime_lib() is None or faketime_lib(threaded=False) is None):
        raise DaemonEnvError("libfaketime is not installed", "apt-get install libfaketime (or make debs)")
    if os.geteuid() != 0:
        raise DaemonEnvError("network namespaces need root", "run as root (or in a container with CAP_SYS_ADMIN)")
    if not _NETNS_OK:
        r = subprocess.run(["unshare", "--net", "true"], capture_output=True, text=True)
        if r.returncode != 0:
            raise DaemonEnvError(f"cannot create a network namespace: {r.stderr.strip() or r.returncode}",
                                 "run as root on a kernel that allows network namespaces (docker: --privileged)")
        _NETNS_OK.append(True)


# Whether this process has made a network namespace once (check_environment tries only until it has: a
# namespace made and dropped costs a process and the kernel's clean-up of a namespace, for every network)
_NETNS_OK: list[bool] = []


class Namespace:
    """One unnamed network namespace, held open by a process in the guard's group."""

    def __init__(self, name: str, proc: subprocess.Popen) -> None:
        self.name = name
        self.proc = proc
        self.path = f"/proc/{proc.pid}/ns/net"

    def argv(self, *cmd: str) -> list[str]:
        return ["nsenter", f"--net={self.path}", "--", *cmd]

    def run(self, *cmd: str, stdin: str | None = None) -> None:
        r = subprocess.run(self.argv(*cmd), input=stdin, capture_output=True, text=True)
        if r.returncode != 0:
            raise DaemonEnvError(f"in namespace {self.name}: {' '.join(cmd[:3])} failed: {r.stderr.strip()}",
                                 "check that iproute2 and ethtool work here (ip link add type veth)")

    def configure(self, ip_batch: list[str], offload_off: list[str]) -> None:
        """``ip -batch`` these commands, then turn the offloads off on these interfaces: one process in the
        namespace for all of it (a process entering the namespace per interface cost more than the work)."""
        script = " && ".join(["ip -batch -", *(shlex.join(["ethtool", "-K", i, *OFFLOADS]) for i in offload_off)])
        self.run("sh", "-c", f"set -e; {script}", stdin="\n".join(ip_batch) + "\n")


class NamespaceHost:
    """Brings a DaemonNet up and down; ``with NamespaceHost(...) as h:`` tears everything down on exit."""

    def __init__(self, net: DaemonNet, daemon: str, rundir: Path | None = None,
                 env: dict[str, dict[str, str]] | None = None, hold: bool = True, hold_datagrams: bool = False) -> None:
        if daemon not in config.DAEMONS:
            raise DaemonEnvError(f"unknown daemon {daemon!r}", "use --daemon bird or --daemon frr")
        self.net = net
        self.daemon = daemon
        self.rundir = Path(rundir) if rundir else Path(tempfile.mkdtemp(prefix="netsleuth-daemons-"))
        self.env = env or {}
        self.hold = hold
        self.hold_datagrams = hold_datagrams
        self.scratch: list[Path] = []   # FRR's /var/tmp/frr directories of the daemons started here
        self.procs: list[subprocess.Popen] = []
        self.daemons: dict[str, list[subprocess.Popen]] = {}
        self.ns: dict[str, Namespace] = {}
        self.guard: subprocess.Popen | None = None
        self._guard_w: int | None = None
        self.relay_ctl: socket.socket | None = None
        self.relay_proc: subprocess.Popen | None = None
        self._procfd: dict[tuple[int, str], int] = {}   # (namespace holder's pid, file) -> its open /proc/PID/net/file

    # -- life cycle ----------------------------------------------------
    def __enter__(self) -> NamespaceHost:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        self.rundir.mkdir(parents=True, exist_ok=True)
        self._start_guard()
        self.ns.update(self._namespaces(["relay", *(r.name for r in self.net.routers)]))
        self._wire()
        self._write_configs()
        self._start_relay()
        for r in self.net.routers:
            self.start_router(r.name)
            self._wait_listening(r.name)

    def _start_guard(self) -> None:
        r, w = os.pipe()
        env = dict(os.environ, NETSLEUTH_RUNDIR=str(self.rundir))
        # -S: the guard imports the standard library only, and Python's site set-up (the venv's .pth files)
        # was half of its start's CPU
        self.guard = subprocess.Popen([sys.executable, "-S", str(GUARD), str(r), "--", "sh", "-c", CLEANUP_SH],
                                      pass_fds=(r,), process_group=0, env=env, stdin=subprocess.DEVNULL,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(r)
        self._guard_w = w
        os.set_inheritable(w, False)

    def _spawn(self, argv: list[str], log: Path | None = None, env: dict[str, str] | None = None,
               pass_fds: tuple[int, ...] = ()) -> subprocess.Popen:
        assert self.guard is not None
        out = open(log, "ab") if log else subprocess.DEVNULL
        try:
            p = subprocess.Popen(argv, process_group=self.guard.pid, stdin=subprocess.DEVNULL, stdout=out,
                                 stderr=subprocess.STDOUT, env=env, pass_fds=pass_fds)
        finally:
            if log:
                out.close()  # type: ignore[union-attr]
        self.procs.append(p)
        return p

    def _namespaces(self, names: list[str]) -> dict[str, Namespace]:
        """One namespace per name, all made at once: each holder sets its namespace up, then becomes ``sleep``.

        The holder's shell does the set-up in the namespace it just entered (no process
        entering it afterwards), and the namespaces come up side by side: the wait is
        that of the slowest, not the sum. A holder that runs ``sleep`` has done its part.
        """
        procs = {name: self._spawn(["unshare", "--net", "--", "sh", "-c", NS_SETUP]) for name in names}
        waiting = dict(procs)
        deadline = time.monotonic() + 10
        while waiting:
            for name, p in list(waiting.items()):
                if _comm(p.pid) == "sleep":
                    del waiting[name]
                elif p.poll() is not None or time.monotonic() > deadline:
                    raise DaemonEnvError(f"cannot create the namespace of {name}",
                                         "run as root on a kernel that allows network namespaces, with iproute2")
            if waiting:
                time.sleep(0.002)
        return {name: Namespace(name, p) for name, p in procs.items()}

    def relay_if(self, index: int, router: str) -> str:
        return f"l{index}-{router}"[:15]

    def _wire(self) -> None:
        relay = self.ns["relay"]
        batch: list[str] = []
        for ln, end in config.link_ends(self.net):
            rif = self.relay_if(ln.index, end)
            batch.append(f"link add {rif} type veth peer name {ln.ifname(end)} netns {self.ns[end].proc.pid}")
            batch.append(f"link set {rif} up")
        relay.configure(batch, [self.relay_if(ln.index, end) for ln, end in config.link_ends(self.net)])
        for r in self.net.routers:
            cmds = [f"addr add {r.loopback}/32 dev lo"]
            for ln in self.net.links_of(r.name):
                # fixed MACs and permanent neighbour entries: no ARP, nothing timing-dependent on the links
                peer = ln.peer(r.name)
                cmds += [f"link set {ln.ifname(r.name)} address {_mac(ln, r.name)}",
                         f"addr add {ln.addr(r.name)}/30 dev {ln.ifname(r.name)}", f"link set {ln.ifname(r.name)} up",
                         f"neigh replace {ln.addr(peer)} lladdr {_mac(ln, peer)} dev {ln.ifname(r.name)} nud permanent"]
            cmds += [" ".join(c) for c in config.kernel_routes(self.net, r, self.daemon)]
            self.ns[r.name].configure(cmds, [ln.ifname(r.name) for ln in self.net.links_of(r.name)])

    def _write_configs(self) -> None:
        for router, files in config.configs(self.net, self.daemon).items():
            d = config.router_dir(self.rundir, router)
            d.mkdir(parents=True, exist_ok=True)
            for name, text in files.items():
                (d / name).write_text(text)
            if self.daemon == "frr":
                shutil.chown(d, "frr", "frr")
                for f in d.iterdir():
                    shutil.chown(f, "frr", "frr")
        if self.daemon == "frr":
            shutil.chown(self.rundir, "frr", "frr")

    def _start_relay(self) -> None:
        a, b = socket.socketpair()
        # -S: no site set-up (the venv's .pth files, a third of the relay's start); its path is netsleuth's
        # and the site directories' (os-ken, for an UPDATE bgpupdate does not read), then the caller's
        path = [str(Path(__file__).resolve().parents[3]), *site.getsitepackages(), os.environ.get("PYTHONPATH", "")]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(path))
        argv = self.ns["relay"].argv(sys.executable, "-S", "-m", "netsleuth.defined.daemons.relay", str(b.fileno()))
        self.relay_proc = self._spawn(argv,
                                      log=self.rundir / "relay.log", env=env, pass_fds=(b.fileno(),))
        b.close()
        self.relay_ctl = a
        # The relay carries frames from the moment the daemons start: set it up and wait for it first.
        ends = {self.relay_if(ln.index, e): (self.relay_if(ln.index, ln.peer(e)), ln.peer(e))
                for ln, e in config.link_ends(self.net)}
        owner = {ln.addr(e): e for ln, e in config.link_ends(self.net)}
        setup = {"ends": ends, "owner": owner, "hold": self.hold, "hold_datagrams": self.hold_datagrams}
        a.sendall((json.dumps(setup) + "\n").encode())
        a.settimeout(10.0)
        line = b""
        try:
            while not line.endswith(b"\n"):
                chunk = a.recv(1)
                if not chunk:
                    break
                line += chunk
        except TimeoutError:
            pass
        a.settimeout(None)
        if b"ready" not in line:
            tail = (self.rundir / "relay.log").read_text(errors="replace")[-1500:]
            raise DaemonEnvError("the relay did not start", "see its log (below)", tail)

    def daemon_env(self, router: str) -> dict[str, str]:
        """A router's daemons get a small fixed environment, plus the clock's variables if there is one."""
        env = {"PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"), "LANG": "C", "TZ": "UTC"}
        env.update(self.env.get(router, {}))
        return env

    def _proc_text(self, name: str, file: str) -> str:
        """Namespace ``name``'s ``/proc/net/<file>``, read through its holder's ``/proc/PID/net``
        (that namespace's view: no process is started). A proc file read from offset 0 is generated afresh,
        so one open file serves every read."""
        pid = self.ns[name].proc.pid
        fd = self._procfd.get((pid, file))
        if fd is None:
            fd = self._procfd[(pid, file)] = os.open(f"/proc/{pid}/net/{file}", os.O_RDONLY)
        return os.pread(fd, 1 << 16, 0).decode()

    def ip_delivered(self, name: str) -> int:
        """IP packets namespace ``name``'s kernel has finished taking in: handed to a socket or dropped.

        ``InDelivers`` counts a packet once the raw sockets that want it (OSPF) and UDP (RIP) have
        queued it, where the daemon reads it (in a turn of its event loop of its choosing); ``InUnknownProtos`` one
        no socket wanted, the others one that was dropped. (``InReceives`` is counted on entry to IP
        input, before the socket has the packet: a busy machine can run a poke in between.) -1 when
        the namespace is gone."""
        try:
            head, values, _ = self._proc_text(name, "snmp").split("\n", 2)
        except (KeyError, OSError, ValueError):
            return -1
        at = _IP_DONE_AT.get(head)
        if at is None:
            names = head.split()
            at = _IP_DONE_AT[head] = tuple(names.index(k) for k in IP_DONE)
        words = values.split()
        return sum(int(words[i]) for i in at)

    def routing_queued(self, name: str) -> int:
        """Bytes waiting in namespace ``name``'s OSPF (raw, protocol 89) and RIP (UDP port 520) sockets.

        Zero once the daemon has read everything the relay delivered to it. -1 when the namespace is gone.
        Only the tables of the protocols the router runs are read (no other socket can hold their messages).
        """
        r = self.net.router(name)
        try:
            texts = [self._proc_text(name, f) for f, on in (("raw", r.ospf), ("udp", r.rip)) if on]
        except (KeyError, OSError):
            return -1
        # (one scan of each file's text for the routing sockets' lines: a read per delivery and per poke round)
        return sum(int(q, 16) for text in texts for q in ROUTING_SOCKET.findall(text))

    def log_tail(self, name: str, chars: int = 1500) -> str:
        """The end of each of a router's daemon logs (for an error's details)."""
        d = config.router_dir(self.rundir, name)
        return "\n".join(f"{f.name}: ...{f.read_text(errors='replace')[-chars:]}" for f in sorted(d.glob("*.log")))

    def kill_router(self, name: str) -> None:
        """Crash a router: SIGKILL its daemons (its namespace and links stay)."""
        for p in self.daemons.get(name, []):
            if p.poll() is None:
                p.kill()
                p.wait()

    def start_router(self, name: str) -> None:
        d = config.router_dir(self.rundir, name)
        ns = self.ns[name]
        procs: list[subprocess.Popen] = []
        if self.daemon == "bird":
            procs.append(self._spawn(ns.argv("bird", "-f", "-c", str(d / "bird.conf"), "-s", str(d / "bird.ctl"),
                                             "-P", str(d / "bird.pid")), log=d / "bird.log", env=self.daemon_env(name)))
        else:
            dms = config.frr_daemons(self.net, self.net.router(name))
            for dm in dms:
                argv = [str(FRR_DIR / dm), "-f", str(d / f"{dm}.conf"), "-i", str(d / f"{dm}.pid"),
                        "--vty_socket", str(d), "-u", "frr", "-g", "frr", "-P", "0", "--log", "stdout"]
                argv += ["-z", str(d / "zserv.api")] if "zebra" in dms else ["-Z"]
                env = self.daemon_env(name)
                p = self._spawn(ns.argv(*argv), log=d / f"{dm}.log", env=env)
                procs.append(p)
                # its scratch directory is named by the pid it sees: the real one, or libfaketime's
                self.scratch += [FRR_TMP / f"{dm}.{p.pid}"] + \
                    ([FRR_TMP / f"{dm}.{env['FAKETIME_FAKEPID']}"] if "FAKETIME_FAKEPID" in env else [])
                if dm == "zebra":
                    _wait_path(d / "zserv.api", 5.0, f"{name}'s zebra", d / "zebra.log")
        self.daemons[name] = procs

    def _wait_listening(self, name: str) -> None:
        """FRR: a router that waits passively for BGP connections answers on bgpd's vty (it has read its
        configuration, neighbours included) before the next router starts, so a speaker's first
        connection is accepted and its connect-retry timer never has to run (see config.FRR_CONNECT_RETRY)."""
        if self.daemon != "frr" or not any(ln.a == name and self.net.router(ln.b).bgp
                                           for ln in self.net.links_of(name)):
            return
        vty = config.router_dir(self.rundir, name) / "bgpd.vty"
        deadline = time.monotonic() + 10.0
        while True:
            try:
                c = control.FrrControl(vty)
            except control.ControlError:
                if time.monotonic() > deadline:
                    raise DaemonEnvError(f"{name}'s bgpd did not start", "see its log", self.log_tail(name)) from None
                time.sleep(0.01)
                continue
            try:
                c.ask("show version")
            finally:
                c.close()
            return

    def close(self) -> None:
        """Stop every process and let the namespaces (and their veths) go; idempotent.

        Daemons get SIGKILL: a clean exit would only undo their state in namespaces that go
        with them (FRR frees every command graph and route on SIGTERM, some tenth of its CPU
        in a short run); FRR's scratch directories are removed here (:meth:`_frr_scratch`).
        The relay exits by itself once its control stream closes, after closing its packet
        sockets side by side (killed, it would close them one at a time, ~10 ms each, see
        relay.close_all). Everything else gets SIGKILL.
        """
        for fd in self._procfd.values():
            os.close(fd)
        self._procfd.clear()
        daemons = [p for ps in self.daemons.values() for p in ps if p.poll() is None]
        for p in daemons:
            p.kill()
        if self.relay_ctl is not None:
            self.relay_ctl.close()
            self.relay_ctl = None
            if self.relay_proc is not None and self.relay_proc.poll() is None:
                daemons.append(self.relay_proc)
        deadline = time.monotonic() + 1.0
        for p in daemons:
            try:
                p.wait(timeout=max(0.01, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        for p in reversed(self.procs):
            if p.poll() is None:
                try:
                    os.kill(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for p in self.procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self.procs.clear()
        self._keep()
        if self._guard_w is not None:
            os.close(self._guard_w)
            self._guard_w = None
        if self.guard is not None:
            try:
                self.guard.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.guard.kill()
            self.guard = None
        self._frr_scratch()
        shutil.rmtree(self.rundir, ignore_errors=True)

    def _keep(self) -> None:
        """Copy the run directory under ``$NETSLEUTH_KEEP_RUNDIR`` (when set) before it is deleted."""
        keep = os.environ.get(KEEP_ENV)
        if not keep or not self.rundir.is_dir():
            return
        dest = Path(keep) / self.rundir.name
        with contextlib.suppress(OSError):
            shutil.copytree(self.rundir, dest, ignore=shutil.ignore_patterns("*.api", "*.vty", "*.ctl", "*.sock"),
                            dirs_exist_ok=True)

    def _frr_scratch(self) -> None:
        for d in self.scratch:
            shutil.rmtree(d, ignore_errors=True)
        for f in sorted(self.rundir.glob("*/*.pid")):
            try:
                pid = f.read_text().strip()
            except OSError:
                continue
            if pid.isdigit():
                shutil.rmtree(FRR_TMP / f"{f.stem}.{pid}", ignore_errors=True)


def _mac(ln: RouterLink, router: str) -> str:
    """A locally administered MAC per link end: 02:00:00:00:<link>:<1|2>."""
    return f"02:00:00:{ln.index >> 8:02x}:{ln.index & 0xFF:02x}:{1 if router == ln.a else 2:02x}"


def _comm(pid: int) -> str:
    """The name of the program process ``pid`` runs ("" once it is gone)."""
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def _wait_path(p: Path, timeout: float, what: str, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while not p.exists():
        if time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-800:] if log.exists() else ""
            raise DaemonEnvError(f"{what} did not start", "see its log", tail)
        time.sleep(0.01)
