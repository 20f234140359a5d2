"""Faucet as a controller under test: its config, its environment, its logs.

Faucet is a production OpenFlow 1.3 controller that lives in its own
environment (``.venv-faucet``, with the os-ken it was released against) and
is configured by one YAML file rather than by code. This module is the only
place that knows Faucet's conventions:

* ``generate_config`` turns a netsleuth topology into a Faucet config: one
  dp per switch (``dp_id`` = the switch's datapath id), every host port
  untagged on one VLAN, and every inter-switch link a Faucet *stack* link
  with one root, so that Faucet itself keeps forwarding loops out on rings
  and meshes (it elects the root and prunes the flooding tree from LLDP it
  sends over the stack ports).
* ``check_user_config`` validates a user's file up front with Faucet's own
  checker (``check_faucet_config``), because Faucet itself starts happily
  with a config it cannot load and only logs the complaint.
* ``FaucetLaunch`` gives the command line and environment that start Faucet
  on a given port, with its logs and config in the run's output directory
  and Prometheus on a free loopback port, and the last log lines for errors.
"""

from __future__ import annotations

import ast
import os
import re
import socket
import subprocess
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netsleuth.controllers import faucet_passed
from netsleuth.errors import ControllerError, EnvironmentSetupError
from netsleuth.invariants.policy.faucet import config_int
from netsleuth.model.topology import Topology
from netsleuth.trace.controller_spec import AUTO

VENV_NAME = ".venv-faucet"
VLAN_NAME = "netsleuth"
VLAN_VID = 100
HARDWARE = "Open vSwitch"
SETUP_FIX = "run `make setup` in the netsleuth checkout, or set NETSLEUTH_FAUCET_BIN to a venv's bin with faucet"
# Faucet's packaged os-ken settings: echo every 3 s and drop a switch after 5
# unanswered echoes, so a lost switch is noticed in seconds. Written into the
# run directory and passed explicitly so that a run never depends on whether
# some earlier install left an /etc/faucet/ryu.conf behind.
OSKEN_CONF = "[DEFAULT]\necho_request_interval=3\nmaximum_unreplied_echo_requests=5\n"
CHECK_TIMEOUT = 60.0
# Top-level keys by which a Faucet config pulls in other files (resolved relative to the config's folder).
INCLUDE_KEYS = frozenset({"include", "include-optional"})


# --------------------------------------------------------------------- environment


def find_faucet_bin() -> Path:
    """The ``bin`` directory of the Faucet environment (``.venv-faucet``), or a clear error."""
    env = os.environ.get("NETSLEUTH_FAUCET_BIN")
    if env:
        if not (Path(env) / "faucet").exists():
            raise EnvironmentSetupError(f"NETSLEUTH_FAUCET_BIN={env} has no faucet program",
                                        "point it at the bin directory of a venv with faucet, or unset it")
        return Path(env)
    roots = [Path.cwd(), *Path.cwd().parents, Path(__file__).resolve().parents[2]]
    for root in roots:
        candidate = root / VENV_NAME / "bin"
        if (candidate / "faucet").exists():
            return candidate
    raise EnvironmentSetupError(f"the Faucet environment ({VENV_NAME}) was not found", SETUP_FIX)


def _free_loopback_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --------------------------------------------------------------------- config generation


def _stack_root(topo: Topology) -> str | None:
    """The most central switch of the inter-switch graph (first in topology order on ties).

    A central root keeps the flooding tree Faucet builds from it shallow. None
    when no two switches are linked (then there is no stack at all).
    """
    adjacent: dict[str, list[str]] = {s.name: [] for s in topo.switches}
    for link in topo.links:
        if topo.is_switch(link.node1) and topo.is_switch(link.node2):
            adjacent[link.node1].append(link.node2)
            adjacent[link.node2].append(link.node1)
    stacked = [name for name, peers in adjacent.items() if peers]
    if not stacked:
        return None
    best: tuple[int, str] | None = None
    for name in stacked:
        dist = {name: 0}
        queue = deque([name])
        while queue:
            node = queue.popleft()
            for peer in adjacent[node]:
                if peer not in dist:
                    dist[peer] = dist[node] + 1
                    queue.append(peer)
        if len(dist) != len(stacked):
            missing = next(s for s in stacked if s not in dist)
            raise ControllerError(f"faucet:auto needs the linked switches to form one stack, but {name} "
                                  f"cannot reach {missing} in {topo.spec}",
                                  "use a connected topology, or write a Faucet config by hand and pass "
                                  "faucet:FILE.yaml")
        eccentricity = max(dist.values())
        if best is None or eccentricity < best[0]:
            best = (eccentricity, name)
    assert best is not None
    return best[1]


def generate_config(topo: Topology) -> dict[str, Any]:
    """The Faucet config for ``topo`` as plain data (dicts in topology order)."""
    topo.validate()
    root = _stack_root(topo)
    interfaces: dict[str, dict[int, dict[str, Any]]] = {s.name: {} for s in topo.switches}
    for link in topo.links:
        ends = ((link.node1, link.port1, link.node2, link.port2), (link.node2, link.port2, link.node1, link.port1))
        for node, port, far, far_port in ends:
            if not topo.is_switch(node):
                continue
            if topo.is_switch(far):
                interfaces[node][port] = {"description": f"to {far} port {far_port}",
                                          "stack": {"dp": far, "port": far_port}}
            else:
                interfaces[node][port] = {"description": f"host {far}", "native_vlan": VLAN_NAME}
    dps: dict[str, Any] = {}
    for sw in topo.switches:
        if not interfaces[sw.name]:
            raise ControllerError(f"switch {sw.name} of {topo.spec} has no links, and Faucet needs at least one "
                                  "interface per dp", "link it to a host or a switch, or leave it out")
        dp: dict[str, Any] = {"dp_id": sw.dpid, "hardware": HARDWARE}
        if sw.name == root:
            dp["stack"] = {"priority": 1}
        dp["interfaces"] = dict(sorted(interfaces[sw.name].items()))
        dps[sw.name] = dp
    return {
        "vlans": {VLAN_NAME: {"vid": VLAN_VID, "description": f"every host of {topo.spec}"}},
        "dps": dps,
    }


def render_config(topo: Topology) -> str:
    """``generate_config`` as YAML, with a header saying where it came from and how to use it."""
    header = (f"# Faucet config for the netsleuth topology {topo.spec}, written by\n"
              f"# `netsleuth faucet-config --topo {topo.spec}`: one dp per switch, host ports\n"
              f"# untagged on VLAN {VLAN_VID}, inter-switch links as a Faucet stack. Edit it\n"
              f"# (VLANs, ACLs, routing) and run it with --controller faucet:THIS_FILE.\n")
    import yaml  # here: only configs (Faucet's) need YAML; importing it costs every command

    body = str(yaml.safe_dump(generate_config(topo), sort_keys=False, default_flow_style=False))
    return header + body


# --------------------------------------------------------------------- user configs


def check_yaml_file(path: Path) -> dict[str, Any]:
    """Read a user's Faucet config: it must exist and be a YAML mapping (one-line errors otherwise)."""
    if not path.is_file():
        raise ControllerError(f"Faucet config {path} does not exist",
                              "give an existing YAML file, e.g. from `netsleuth faucet-config --topo T "
                              "--out faucet.yaml`, or use faucet:auto")
    import yaml  # here: only configs (Faucet's) need YAML; importing it costs every command

    try:
        data = yaml.safe_load(path.read_text(errors="replace"))
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" at line {where.line + 1} column {where.column + 1}" if where is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ControllerError(f"Faucet config {path} is not valid YAML{at}: {problem}",
                              "fix the YAML syntax (indentation, colons, brackets)") from exc
    if not isinstance(data, dict):
        raise ControllerError(f"Faucet config {path} is not a YAML mapping",
                              "a Faucet config has top-level keys such as vlans: and dps:")
    return data


def faucet_complaint(output: str) -> str:
    """The message of the InvalidConfigError that ``check_faucet_config`` prints, on one line."""
    found = re.search(r"InvalidConfigError\((.*)\)\]?\s*$", output.strip(), re.S)
    if found:
        try:
            value = ast.literal_eval(found.group(1))
            if isinstance(value, str):
                return " ".join(value.split())
        except (ValueError, SyntaxError):
            pass
        return " ".join(found.group(1).split())
    lines = [line for line in output.splitlines() if line.strip()]
    return " ".join(lines[-1].split()) if lines else "no output"


def check_user_config(path: Path, faucet_bin: Path | None = None) -> None:
    """Run Faucet's own config checker on ``path``; its complaint becomes a one-line ControllerError."""
    proc = _run_checker([path], faucet_bin)
    if proc.returncode != 0:
        raise ControllerError(f"Faucet rejects its config {path}: {faucet_complaint(proc.stdout or proc.stderr)}",
                              "correct the config (see the Faucet configuration docs), or start from "
                              "`netsleuth faucet-config --topo T`")


def check_user_configs(paths: Sequence[Path], faucet_bin: Path | None = None) -> None:
    """:func:`check_user_config` on each of ``paths``, in one run of the checker when they all pass.

    The checker takes several files and stops at the first it rejects
    without naming it; it spends most of its time importing Faucet, so one
    run for many files is much faster. Only when that run fails are the
    files checked one by one, so the error names the first rejected file.
    """
    if paths and _run_checker(list(paths), faucet_bin).returncode == 0:
        return
    for path in paths:
        check_user_config(path, faucet_bin)


def _run_checker(paths: list[Path], faucet_bin: Path | None) -> subprocess.CompletedProcess:
    """Faucet's checker on ``paths``, unless it passed these very bytes before (:mod:`.faucet_passed`)."""
    faucet_bin = faucet_bin or find_faucet_bin()
    checker = faucet_bin / "check_faucet_config"
    if not checker.exists():
        raise EnvironmentSetupError(f"{checker} is missing", SETUP_FIX)
    key = faucet_passed.passed_before(paths, faucet_bin)
    if key is None:
        return subprocess.CompletedProcess([str(checker), *map(str, paths)], 0, "", "")
    where = paths[0] if len(paths) == 1 else f"{len(paths)} files ({paths[0]}, ...)"
    try:
        proc = subprocess.run([str(checker), *map(str, paths)], capture_output=True, text=True,
                              timeout=CHECK_TIMEOUT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        raise ControllerError(f"Faucet's config checker did not finish within {CHECK_TIMEOUT:.0f}s on {where}",
                              "check the machine is not overloaded and the file is a Faucet config") from exc
    if proc.returncode == 0:
        faucet_passed.remember(key)
    return proc


def check_covers_topology(config: dict[str, Any], path: Path, topo: Topology) -> None:
    """Every switch of the topology needs a dp in the config, or Faucet turns it away."""
    dps = config.get("dps")
    known = ({config_int(dp.get("dp_id")) for dp in dps.values() if isinstance(dp, dict)}
             if isinstance(dps, dict) else set())
    for sw in topo.switches:
        if sw.dpid not in known:
            raise ControllerError(f"Faucet config {path} has no dp for switch {sw.name} (dp_id {sw.dpid})",
                                  f"add a dp with dp_id: {sw.dpid}, or start from "
                                  f"`netsleuth faucet-config --topo {topo.spec}`")


# --------------------------------------------------------------------- launch


@dataclass
class FaucetLaunch:
    """How one Faucet process of a run is started: files in ``out_dir``, named after ``stem``.

    ``config`` is ``"auto"`` (generate from ``topology``) or a path to the
    user's YAML file. ``prepare`` writes or checks the config once and returns
    the environment for each (re)start; Prometheus gets a fresh free port.
    """

    config: str
    out_dir: Path
    topology: Topology | None = None
    stem: str = "faucet"
    faucet_bin: Path | None = None
    prometheus_port: int = 0
    _config_path: Path | None = field(default=None, init=False, repr=False)
    _editable: bool = field(default=False, init=False, repr=False)

    @property
    def log_path(self) -> Path:
        return self.out_dir / f"{self.stem}.log"

    @property
    def exception_log_path(self) -> Path:
        return self.out_dir / f"{self.stem}_exception.log"

    @property
    def config_path(self) -> Path:
        """The YAML file Faucet reads (the generated one in ``out_dir``, or the user's)."""
        if self.config == AUTO:
            return self.out_dir / f"{self.stem}.yaml"
        return Path(self.config).resolve()

    def _bin(self) -> Path:
        if self.faucet_bin is None:
            self.faucet_bin = find_faucet_bin()
        return self.faucet_bin

    def argv(self, host: str, port: int) -> list[str]:
        return [str(self._bin() / "faucet"), "--ryu-ofp-tcp-listen-port", str(port), "--ryu-ofp-listen-host", host,
                "--ryu-config-file", str(self._osken_conf)]

    def manager_argv(self, host: str, port: int) -> list[str]:
        """The os-ken manager's arguments that Faucet's launcher (:meth:`argv`) turns its own into before it
        execs ``osken-manager``: each ``--ryu-X V`` as ``--X=V`` (the config file only once it exists),
        then the Faucet app.  A warm start (controllers/warm.py) runs the manager with these directly."""
        conf = [f"--config-file={self._osken_conf}"] if self._osken_conf.is_file() else []
        return [*conf, f"--ofp-listen-host={host}", f"--ofp-tcp-listen-port={port}", "faucet.faucet"]

    @property
    def _osken_conf(self) -> Path:
        return self.out_dir / f"{self.stem}-osken.conf"

    def prepare(self) -> dict[str, str]:
        """Write (auto) or check (user file) the config on first use; the environment for Faucet."""
        self.out_dir.mkdir(parents=True, exist_ok=True)
        if self._config_path is None:
            path = self.config_path
            if ":" in str(path):
                raise ControllerError(f"Faucet config path {path} contains ':'",
                                      "Faucet reads FAUCET_CONFIG as a ':'-separated list; move or rename the file")
            if self.config == AUTO:
                if self.topology is None:
                    raise ControllerError("faucet:auto needs the topology of the run",
                                          "pass faucet:FILE.yaml instead")
                path.write_text(render_config(self.topology))
                self._editable = True
            else:
                data = check_yaml_file(path)
                if self.topology is not None:
                    check_covers_topology(data, path, self.topology)
                check_user_config(path, self._bin())
                kept = self.out_dir / f"{self.stem}.yaml"
                if not INCLUDE_KEYS & set(data):
                    # Faucet runs on a copy in the run directory: a config change rewrites that copy,
                    # never the user's file, and the directory keeps the file Faucet really read.
                    kept.write_text(path.read_text(errors="replace"))
                    path, self._editable = kept, True
                elif kept.resolve() != path:
                    # A config that includes other files keeps its place, where its includes resolve;
                    # the run's OUT still keeps a copy of what Faucet ran.
                    kept.write_text(path.read_text(errors="replace"))
            self._osken_conf.write_text(OSKEN_CONF)
            self._config_path = path
        self.prometheus_port = _free_loopback_port()
        return {
            # faucet execs osken-manager from PATH: its own environment's comes first.
            "PATH": f"{self._bin()}{os.pathsep}{os.environ.get('PATH', '')}",
            "FAUCET_CONFIG": str(self._config_path),
            "FAUCET_LOG": str(self.log_path),
            "FAUCET_EXCEPTION_LOG": str(self.exception_log_path),
            "FAUCET_PROMETHEUS_ADDR": "127.0.0.1",
            "FAUCET_PROMETHEUS_PORT": str(self.prometheus_port),
        }

    @property
    def editable(self) -> bool:
        """Whether config changes may rewrite the file Faucet reads: the generated one, or the copy of
        the user's in the run directory (never the user's own file)."""
        return self._editable

    def read_config(self) -> str:
        """The text of the file Faucet reads now."""
        return self.config_path_in_use.read_text(errors="replace")

    @property
    def config_path_in_use(self) -> Path:
        """The file Faucet was started on (after ``prepare``)."""
        if self._config_path is None:
            raise ControllerError("Faucet has not been prepared yet", "start the controller first")
        return self._config_path

    def write_config(self, text: str) -> Path:
        """Replace the file Faucet reads with ``text``, atomically (a reload never sees half a file)."""
        if not self.editable:
            raise ControllerError(f"Faucet runs on {self.config_path_in_use}, which includes other files, so "
                                  "netsleuth does not rewrite it", "inline the included files, or leave "
                                  "config_change out of the rates")
        path = self.config_path_in_use
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
        return path

    def exception_text(self) -> str:
        """Faucet's exception log: where its handlers' tracebacks go (empty when there were none)."""
        try:
            return self.exception_log_path.read_text(errors="replace")
        except OSError:
            return ""

    def log_tail(self, lines: int = 15) -> str:
        """The last lines of Faucet's exception log (if any) and its main log."""
        parts = []
        for path in (self.exception_log_path, self.log_path):
            try:
                text = path.read_text(errors="replace")
            except OSError:
                continue
            tail = text.splitlines()[-lines:]
            if tail:
                parts.append(f"== {path.name}\n" + "\n".join(tail))
        return "\n".join(parts)


def config_record(config: str, topology: Topology, stem: str = "faucet") -> dict[str, str]:
    """What a trace header keeps of a Faucet config (``extra["faucet_config"]``), so that its
    invariants can be checked later from the trace alone: where it came from (``auto`` or the
    user's path), the file kept in the run's OUT, and its text."""
    text = render_config(topology) if config == AUTO else Path(config).read_text(errors="replace")
    return {"source": config, "file": f"{stem}.yaml", "text": text}


def launch_for(config: str, log_path: Path, topology: Topology | None) -> FaucetLaunch:
    """The FaucetLaunch of a controller whose own output goes to ``log_path`` (controller.log -> faucet.log)."""
    stem = log_path.stem.replace("controller", "faucet", 1) if "controller" in log_path.stem else "faucet"
    return FaucetLaunch(config=config, out_dir=log_path.parent, topology=topology, stem=stem)


__all__ = ["AUTO", "FaucetLaunch", "check_user_config", "check_user_configs", "check_yaml_file", "config_record",
           "faucet_complaint", "find_faucet_bin", "generate_config", "launch_for", "render_config"]
