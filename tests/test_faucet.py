"""Faucet as a controller under test, checked against the real Faucet in .venv-faucet.

Faucet speaks only OpenFlow 1.3, so these tests stop short of a network run:
the generated configs must pass Faucet's own checker, the spec errors must be
one line with a fix, and a launched Faucet must listen where netsleuth says,
answer an OpenFlow 1.3 HELLO, log into the run directory, serve Prometheus on
loopback and leave no process behind when stopped.
"""

from __future__ import annotations

import socket
import subprocess
import urllib.request
from pathlib import Path

import psutil
import pytest
import yaml
from cli_process import cli
from os_ken.ofproto import ofproto_parser
from os_ken.ofproto import ofproto_v1_3 as ofp13
from os_ken.ofproto import ofproto_v1_3_parser as parser13

from netsleuth.controllers.external import ControllerProcess, port_listening
from netsleuth.controllers.faucet import (
    check_user_config,
    faucet_complaint,
    find_faucet_bin,
    generate_config,
    render_config,
)
from netsleuth.controllers.spec import parse_controller
from netsleuth.errors import ControllerError
from netsleuth.model.topo_builders import parse_topo
from netsleuth.model.topology import Topology

TOPOLOGIES = ["linear,3", "tree,depth=2,fanout=2", "ring,4", "mesh,4"]


def one_error_line(proc: subprocess.CompletedProcess) -> str:
    lines = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, proc.stderr
    assert " -- fix: " in lines[0]
    return lines[0]


# ----------------------------------------------------------------- generated configs


@pytest.mark.parametrize("spec", TOPOLOGIES)
@pytest.mark.real
def test_generated_config_is_accepted_by_faucet(tmp_path: Path, spec: str) -> None:
    topo = parse_topo(spec)
    proc = cli("faucet-config", "--topo", spec)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == render_config(topo)
    path = tmp_path / "faucet.yaml"
    path.write_text(proc.stdout)
    check_user_config(path)  # Faucet's own check_faucet_config; raises with its complaint otherwise

    config = yaml.safe_load(proc.stdout)
    dps = config["dps"]
    assert [(name, dp["dp_id"]) for name, dp in dps.items()] == [(s.name, s.dpid) for s in topo.switches]
    assert all(dp["hardware"] == "Open vSwitch" for dp in dps.values())
    roots = [name for name, dp in dps.items() if dp.get("stack", {}).get("priority") == 1]
    assert len(roots) == 1
    vlan = next(iter(config["vlans"]))
    for link in topo.links:
        a, b = (link.node1, link.port1), (link.node2, link.port2)
        if topo.is_switch(a[0]) and topo.is_switch(b[0]):
            assert dps[a[0]]["interfaces"][a[1]]["stack"] == {"dp": b[0], "port": b[1]}
            assert dps[b[0]]["interfaces"][b[1]]["stack"] == {"dp": a[0], "port": a[1]}
        else:
            (sw, port) = a if topo.is_switch(a[0]) else b
            assert dps[sw]["interfaces"][port]["native_vlan"] == vlan
    n_ports = sum(len(dp["interfaces"]) for dp in dps.values())
    assert n_ports == sum(len(topo.ports(s.name)) for s in topo.switches)


def test_stack_root_is_the_central_switch() -> None:
    assert generate_config(parse_topo("linear,5"))["dps"]["s3"]["stack"] == {"priority": 1}
    assert generate_config(parse_topo("tree,depth=2,fanout=2"))["dps"]["s1"]["stack"] == {"priority": 1}
    single = generate_config(parse_topo("single,3"))
    assert "stack" not in single["dps"]["s1"]  # one switch: no stack at all


def test_disconnected_switches_cannot_form_one_stack() -> None:
    topo = Topology("split")
    for _ in range(4):
        topo.add_switch()
    topo.add_link("s1", "s2")
    topo.add_link("s3", "s4")
    for sw in ("s1", "s3"):
        topo.add_link(topo.add_host(), sw)
    with pytest.raises(ControllerError, match="cannot reach") as err:
        generate_config(topo)
    assert "faucet:FILE.yaml" in err.value.fix


def test_switch_without_links_is_refused_before_faucet_would() -> None:
    topo = Topology("lonely")
    topo.add_switch()
    topo.add_switch()
    topo.add_link(topo.add_host(), "s1")
    with pytest.raises(ControllerError, match="switch s2 .* has no links"):
        generate_config(topo)


@pytest.mark.real
def test_faucet_config_out_writes_the_file(tmp_path: Path) -> None:
    out = tmp_path / "sub" / "f.yaml"
    proc = cli("faucet-config", "--topo", "ring,4", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert out.read_text() == render_config(parse_topo("ring,4"))
    assert f"faucet:{out}" in proc.stderr
    proc = cli("faucet-config", "--topo", "hypercube,3")
    assert proc.returncode == 2
    assert "unknown topology" in one_error_line(proc)


# ----------------------------------------------------------------- spec errors


def test_spec_parser_forms_and_errors(tmp_path: Path) -> None:
    assert parse_controller("faucet:auto").config == "auto"
    good = tmp_path / "f.yaml"
    good.write_text(render_config(parse_topo("linear,2")))
    spec = parse_controller(f"faucet:{good}")
    assert (spec.kind, spec.config) == ("faucet", str(good.resolve()))

    with pytest.raises(ControllerError, match="not understood"):
        parse_controller("faucet:")
    with pytest.raises(ControllerError, match="does not exist") as err:
        parse_controller(f"faucet:{tmp_path / 'missing.yaml'}")
    assert "faucet-config" in err.value.fix
    broken = tmp_path / "broken.yaml"
    broken.write_text("dps:\n  s1: {dp_id: 1\n  interfaces: [\n")
    with pytest.raises(ControllerError, match=r"is not valid YAML at line \d+ column \d+"):
        parse_controller(f"faucet:{broken}")
    listed = tmp_path / "list.yaml"
    listed.write_text("- a\n- b\n")
    with pytest.raises(ControllerError, match="not a YAML mapping"):
        parse_controller(f"faucet:{listed}")


@pytest.mark.real
def test_cli_reports_a_missing_config_in_one_line(tmp_path: Path) -> None:
    proc = cli("run", "--controller", f"faucet:{tmp_path / 'nope.yaml'}", "--topo", "linear,2",
               "--out", str(tmp_path / "out"))
    assert proc.returncode == 2
    assert "does not exist" in one_error_line(proc)


@pytest.mark.real
def test_config_faucet_rejects_gives_exit_2_with_its_complaint(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    config = generate_config(parse_topo("linear,2"))
    config["dps"]["s1"]["interfaces"][1]["natve_vlan"] = "netsleuth"  # a typo Faucet must refuse
    bad.write_text(yaml.safe_dump(config, sort_keys=False))
    proc = cli("run", "--controller", f"faucet:{bad}", "--topo", "linear,2", "--out", str(tmp_path / "out"))
    assert proc.returncode == 2
    line = one_error_line(proc)
    assert "Faucet rejects its config" in line and "natve_vlan" in line and "fields unknown" in line
    assert not faucet_still_running_for(tmp_path / "out")


@pytest.mark.real
def test_config_without_a_dp_for_every_switch(tmp_path: Path) -> None:
    small = tmp_path / "two.yaml"
    small.write_text(render_config(parse_topo("linear,2")))
    proc = cli("run", "--controller", f"faucet:{small}", "--topo", "linear,3", "--out", str(tmp_path / "out"))
    assert proc.returncode == 2
    assert "has no dp for switch s3 (dp_id 3)" in one_error_line(proc)


@pytest.mark.real
def test_faucet_complaint_reads_the_checkers_output(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("vlans:\n  v: {vid: 100}\ndps:\n  s1:\n    dp_id: 1\n    interfaces:\n"
                   "      1: {native_vlan: v}\n      2: {stack: {dp: s9, port: 1}}\n")
    proc = subprocess.run([str(find_faucet_bin() / "check_faucet_config"), str(bad)], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode != 0
    assert faucet_complaint(proc.stdout) == "stack DP s9 not defined"


def faucet_still_running_for(out: Path) -> bool:
    """Whether a process still runs with its Faucet config under ``out`` (it must not)."""
    for p in psutil.process_iter(["environ"]):
        env = p.info.get("environ") or {}
        if str(out) in env.get("FAUCET_CONFIG", ""):
            return True
    return False


# ----------------------------------------------------------------- real Faucet


def _hello_exchange(host: str, port: int) -> tuple[int, int]:
    """Send an OpenFlow 1.3 HELLO built by os-ken; return (version, type) of the first message back."""

    class Datapath:  # what os-ken's message classes need to serialize
        ofproto = ofp13
        ofproto_parser = parser13

    hello = parser13.OFPHello(Datapath())
    hello.serialize()
    with socket.create_connection((host, port), timeout=10) as s:
        s.sendall(bytes(hello.buf))
        data = b""
        while len(data) < ofp13.OFP_HEADER_SIZE:
            chunk = s.recv(4096)
            assert chunk, "Faucet closed the connection without a HELLO"
            data += chunk
    version, msg_type, _length, _xid = ofproto_parser.header(data)
    return version, msg_type


def _metrics(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        return resp.read().decode()


@pytest.mark.parametrize("how", ["auto", "file"])
@pytest.mark.real
def test_real_faucet_starts_answers_hello_and_stops_clean(tmp_path: Path, how: str) -> None:
    topo = parse_topo("ring,4")
    out = tmp_path / "out"
    if how == "auto":
        spec = parse_controller("faucet:auto")
    else:
        user = tmp_path / "mine.yaml"
        assert cli("faucet-config", "--topo", topo.spec, "--out", str(user)).returncode == 0
        spec = parse_controller(f"faucet:{user}")
    ctl = ControllerProcess(spec, out / "controller.log", topology=topo)
    host, port = ctl.start(timeout=60)
    try:
        assert port_listening(port) and ctl.alive()
        assert _hello_exchange(host, port) == (ofp13.OFP_VERSION, ofp13.OFPT_HELLO)

        assert ctl.faucet is not None
        config_path = out / "faucet.yaml"  # faucet:FILE runs on a copy in the run directory
        assert yaml.safe_load(config_path.read_text()) == generate_config(topo)
        prom = ctl.faucet.prometheus_port
        listeners = [c for c in psutil.net_connections(kind="tcp")
                     if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == prom]
        assert listeners and all(c.laddr.ip == "127.0.0.1" for c in listeners)
        metrics = _metrics(prom)
        for sw in topo.switches:
            assert f'dp_id="{hex(sw.dpid)}",dp_name="{sw.name}"' in metrics
        assert 'faucet_config_load_error 0.0' in metrics

        log = (out / "faucet.log").read_text()
        assert f"configuration {config_path.resolve()}" in log
        assert "Add new datapath DPID 4" in log
        assert (out / "faucet_exception.log").exists()
        tail = ctl.log_tail()
        assert "== faucet.log" in tail and "DPID" in tail
        procs = [psutil.Process(ctl.proc.pid)]
        procs += procs[0].children(recursive=True)
    finally:
        ctl.stop()
    assert not ctl.alive()
    gone, alive = psutil.wait_procs(procs, timeout=10)
    assert not alive, f"left behind: {alive}"
    assert not port_listening(port) and not port_listening(prom)
    assert not faucet_still_running_for(out)


@pytest.mark.real
def test_faucet_environment_is_the_pinned_release() -> None:
    makefile = (Path(__file__).resolve().parents[1] / "Makefile").read_text()
    proc = subprocess.run([str(find_faucet_bin() / "faucet"), "--version"], capture_output=True, text=True,
                          timeout=60)
    version = proc.stdout.strip().split()[-1]
    assert f"'faucet=={version}'" in makefile


# ----------------------------------------------------------------- real Faucet on real Open vSwitch


def _metric_values(text: str, name: str) -> list[tuple[str, float]]:
    """(labels, value) of every sample of one Prometheus metric."""
    found = []
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            labels, _, value = line.rpartition(" ")
            found.append((labels[len(name):], float(value)))
    return found


@pytest.mark.parametrize("spec", ["ring,4", "mesh,4"])
@pytest.mark.real
def test_generated_stack_forwards_loop_free_on_open_vswitch(tmp_path: Path, spec: str) -> None:
    """Real OVS bridges (OpenFlow 1.3) wired as the topology, real Faucet with faucet:auto.

    Faucet must bring every stack link up from its own LLDP, elect the root
    netsleuth chose, and flood a broadcast to every other host exactly once
    (a ring or mesh floods forever without loop prevention); the reply then
    goes to its one destination only. This is what faucet:auto promises,
    checked on a switch that is not netsleuth's.
    """
    import re
    import time

    from netsleuth.model.packet import arp_reply, arp_request
    from netsleuth.oracles.ovs import OvsSandbox, find_binaries

    topo = parse_topo(spec)
    config = generate_config(topo)
    root = next(name for name, dp in config["dps"].items() if "stack" in dp)
    ctl = ControllerProcess(parse_controller("faucet:auto"), tmp_path / "out" / "controller.log", topology=topo)
    host, port = ctl.start(timeout=60)
    try:
        with OvsSandbox(tmp_path, ports=1) as ovs:
            assert ovs.dir is not None
            bins = find_binaries()

            def vsctl(*args: str) -> None:
                subprocess.run([bins["ovs-vsctl"], f"--db=unix:{ovs.dir / 'db.sock'}", "--timeout=20", *args],
                               check=True, capture_output=True, text=True, timeout=60)

            cmd: list[str] = []
            for sw in topo.switches:
                cmd += ["--", "add-br", sw.name, "--", "set", "bridge", sw.name, "datapath_type=dummy",
                        "fail_mode=secure", "protocols=OpenFlow13", f"other-config:datapath-id={sw.dpid:016x}"]
            for link in topo.links:
                for node, p, far, far_p in ((link.node1, link.port1, link.node2, link.port2),
                                            (link.node2, link.port2, link.node1, link.port1)):
                    if not topo.is_switch(node):
                        continue
                    iface = f"{node}-eth{p}"
                    cmd += ["--", "add-port", node, iface, "--", "set", "interface", iface, f"ofport_request={p}"]
                    if topo.is_switch(far):
                        cmd += ["type=patch", f"options:peer={far}-eth{far_p}"]
                    else:
                        cmd += ["type=dummy"]
            for sw in topo.switches:
                cmd += ["--", "set-controller", sw.name, f"tcp:{host}:{port}"]
            vsctl(*cmd)

            prom = ctl.faucet.prometheus_port  # type: ignore[union-attr]
            n_stack_ports = 2 * sum(1 for lk in topo.links if topo.is_switch(lk.node1) and topo.is_switch(lk.node2))
            # Faucet re-elects its root every 10 s (FAUCET_STACK_ROOT_STATE_UPDATE_TIME).
            want_root = [("", float(topo.switch(root).dpid))]
            deadline = time.monotonic() + 60
            while True:
                text = _metrics(prom)
                states = _metric_values(text, "port_stack_state")
                up = [labels for labels, value in states if value == 3.0]  # Faucet's STACK_STATE_UP
                elected = _metric_values(text, "faucet_stack_root_dpid")
                if (len(up) == n_stack_ports and elected == want_root) or time.monotonic() > deadline:
                    break
                time.sleep(0.5)
            assert len(up) == n_stack_ports, (states, ctl.log_tail())
            assert elected == want_root
            cabling_errors = _metric_values(text, "stack_cabling_errors_total")
            assert len(cabling_errors) == len(topo.switches) and not any(v for _, v in cabling_errors)

            def tx_counts() -> dict[str, int]:
                counts = {}
                for h in topo.hosts:
                    sw, p = topo.host_location(h.name)
                    out = subprocess.run([bins["ovs-ofctl"], "-O", "OpenFlow13", "dump-ports",
                                          f"unix:{ovs.dir / (sw + '.mgmt')}", str(p)],
                                         check=True, capture_output=True, text=True, timeout=60).stdout
                    counts[h.name] = int(re.search(r"tx pkts=(\d+)", out).group(1))  # type: ignore[union-attr]
                return counts

            def send(host_name: str, packet_bytes: bytes) -> dict[str, int]:
                before = tx_counts()
                sw, p = topo.host_location(host_name)
                ovs.appctl("netdev-dummy/receive", f"{sw}-eth{p}", packet_bytes.hex())
                time.sleep(2.0)  # let floods and Faucet's learning settle
                after = tx_counts()
                return {h: after[h] - before[h] for h in after}

            h1, h3 = topo.host("h1"), topo.host("h3")
            flood = send("h1", arp_request(h1.mac, h1.ip, h3.ip).to_bytes())
            assert flood == {h.name: (0 if h.name == "h1" else 1) for h in topo.hosts}, flood
            reply = send("h3", arp_reply(h3.mac, h3.ip, h1.mac, h1.ip).to_bytes())
            assert reply == {h.name: (1 if h.name == "h1" else 0) for h in topo.hosts}, reply
    finally:
        ctl.stop()
    assert not (tmp_path / "out" / "faucet_exception.log").read_text().strip()
