"""Users' own Ryu apps, unmodified, through ``--controller ryu:APP`` and ``check ryu:APP``.

The sample app is Ryu 4.34's own ``simple_switch.py``, taken from Ryu's
release on PyPI by the test (not a copy in this repository), and run
byte-for-byte as released: os-ken, Ryu's maintained fork, runs it under
Ryu's module names.  The apps in ``tests/data/ryu_apps/`` are written
against Ryu's API the way users write them (``from ryu...``, a helper
module beside the app, an app config file, a file read from the app's
folder).  Everything runs against the real os-ken 1.4.1 controller in
``.venv-controller``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from cli_process import cli

from netsleuth.controllers.spec import UntrustedControllerError, check_trace_spec, parse_controller
from netsleuth.errors import ControllerError
from netsleuth.jobs.run import RunOptions, run
from netsleuth.model.topology import parse_topo
from netsleuth.trace.io import read_trace

pytestmark = pytest.mark.real

APPS = Path(__file__).parent / "data" / "ryu_apps"


@pytest.fixture(scope="module")
def ryu_release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A user's folder holding Ryu 4.34's sample apps, extracted from the sdist pip downloads.

    pip prepares an sdist's metadata even for ``download``, and Ryu 4.34's
    setup.py needs a setuptools older than 60 (it patches
    ``easy_install.get_script_args``): the build constraint pins that for
    the metadata step only.
    """
    base = tmp_path_factory.mktemp("ryu-release")
    constraint = base / "build-constraint.txt"
    constraint.write_text("setuptools<60\n")
    proc = subprocess.run([sys.executable, "-m", "pip", "download", "ryu==4.34", "--no-deps", "--no-binary", "ryu",
                           "--build-constraint", str(constraint), "-d", str(base)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    folder = base / "my_controllers"
    folder.mkdir()
    with tarfile.open(base / "ryu-4.34.tar.gz") as tar:
        for name in ("simple_switch.py", "simple_switch_13.py"):
            member = tar.getmember(f"ryu-4.34/ryu/app/{name}")
            (folder / name).write_bytes(tar.extractfile(member).read())
    return folder


def controller_log(out: Path) -> str:
    return "".join(p.read_text(errors="replace") for p in sorted(out.glob("controller*.log")))


# ----------------------------------------------------------------------------- Ryu's own sample app
def test_ryu_simple_switch_unmodified_pingall_linear3(ryu_release: Path, tmp_path: Path) -> None:
    app = ryu_release / "simple_switch.py"
    assert "from ryu.base import app_manager" in app.read_text()
    assert "class SimpleSwitch(app_manager.RyuApp)" in app.read_text()
    result = run(RunOptions(controller=f"ryu:{app}", topo="linear,3", out=tmp_path, pingall=True))
    d = json.loads((tmp_path / "result.json").read_text())
    assert d["pingall"]["ok"] == 6 and d["pingall"]["failed"] == 0
    assert d["violations"] == [] and result.exit_code == 0
    assert [(c["alive"], c["logged_errors"]) for c in d["controllers"]] == [(True, [])]
    flow_mods = [e for e in read_trace(tmp_path / "trace.jsonl").events
                 if e.kind == "of_to_switch" and e.msg["type"] == "FLOW_MOD"]
    assert flow_mods  # the learning switch really ran: it installs a flow per learned pair


def test_ryu_simple_switch_13_unmodified_pingall_linear3(ryu_release: Path, tmp_path: Path) -> None:
    app = ryu_release / "simple_switch_13.py"
    assert "OFP_VERSIONS = [ofproto_v1_3.OFP_VERSION]" in app.read_text()
    result = run(RunOptions(controller=f"ryu:{app}", topo="linear,3", out=tmp_path, pingall=True))
    d = json.loads((tmp_path / "result.json").read_text())
    assert d["pingall"]["ok"] == 6 and d["pingall"]["failed"] == 0
    assert d["violations"] == [] and result.exit_code == 0
    trace = read_trace(tmp_path / "trace.jsonl")
    assert set(trace.header.openflow.values()) == {"1.3"}  # negotiated 1.3 with every switch
    assert any(e.kind == "of_to_switch" and e.msg["type"] == "FLOW_MOD" and e.msg.get("version") == 4
               for e in trace.events)


def test_ryu_app_from_its_own_folder_by_relative_path(ryu_release: Path, tmp_path: Path) -> None:
    proc = cli("run", "--controller", "ryu:simple_switch.py", "--topo", "linear,2", "--pingall",
               "--out", str(tmp_path / "out"), cwd=ryu_release)
    assert proc.returncode == 0, proc.stderr
    d = json.loads((tmp_path / "out" / "result.json").read_text())
    assert d["pingall"]["ok"] == 2


def test_check_finds_the_migration_blackhole_in_ryu_simple_switch(ryu_release: Path, capsys) -> None:
    from netsleuth.cli import main

    app = ryu_release / "simple_switch.py"
    assert main(["check", f"ryu:{app}", "--scenario", "mobile", "--strategy", "pkt-seq", "--stop-at-first",
                 "--json"]) == 1
    d = json.loads(capsys.readouterr().out)
    assert d["app"] == f"app:ryu:{app}"
    (v,) = d["violations"]
    assert v["property"] == "NoBlackHolesMobile" and "from h1 to h2" in v["message"]


def test_check_explores_ryu_simple_switch_13_in_openflow_13(ryu_release: Path, capsys) -> None:
    """Ryu's own OpenFlow 1.3 sample app, checked on 1.3 switches: the same migration blackhole."""
    from netsleuth.cli import main

    app = ryu_release / "simple_switch_13.py"
    assert main(["check", f"ryu:{app}", "--scenario", "mobile", "--strategy", "pkt-seq", "--stop-at-first",
                 "--json"]) == 1
    d = json.loads(capsys.readouterr().out)
    assert d["app"] == f"app:ryu:{app}"
    (v,) = d["violations"]
    assert v["property"] == "NoBlackHolesMobile" and "from h1 to h2" in v["message"]
    from netsleuth.nice.osken_host import load_osken_app

    assert load_osken_app(f"ryu:{app}").openflow_version == 4


# ----------------------------------------------------------------------------- ryu.topology over LLDP
def _discovered_links(log: str) -> set[tuple[int, int, int, int]]:
    lines = [ln for ln in log.splitlines() if ln.startswith("topology: 4 switches")]
    assert lines, log[-2000:]
    best = max(lines, key=lambda ln: int(re.search(r"(\d+) links", ln).group(1)))
    return {tuple(int(x) for x in re.split("[:-]", w)) for w in best.split(": ", 2)[2].split()}


def _ring_links() -> set[tuple[int, int, int, int]]:
    links = set()
    for ln in parse_topo("ring,4").links:
        if ln.node1.startswith("s") and ln.node2.startswith("s"):
            a, b = int(ln.node1[1:]), int(ln.node2[1:])
            links |= {(a, ln.port1, b, ln.port2), (b, ln.port2, a, ln.port1)}
    return links


def test_topology_app_learns_ring4_from_lldp_and_routes_on_shortest_paths(tmp_path: Path) -> None:
    spec = f"ryu:{APPS / 'shortest_path.py'} --observe-links"
    result = run(RunOptions(controller=spec, topo="ring,4", out=tmp_path, pingall=True))
    d = json.loads((tmp_path / "result.json").read_text())
    assert d["pingall"]["ok"] == 12 and d["pingall"]["failed"] == 0, d["pingall"]
    assert d["violations"] == [] and result.exit_code == 0
    assert [(c["alive"], c["logged_errors"]) for c in d["controllers"]] == [(True, [])]
    # the app's view, built from LLDP packet-outs carried across the links: exactly the ring's links
    assert _discovered_links(controller_log(tmp_path)) == _ring_links()
    events = read_trace(tmp_path / "trace.jsonl").events
    # the LLDP frames crossed the links: they arrived at switches, on ports facing other switches
    lldp_at = {(e.node, e.port) for e in events
               if e.kind == "packet" and e.fp == ("LLDP",) and e.node.startswith("s")}
    assert lldp_at == {(f"s{b}", bp) for _a, _ap, b, bp in _ring_links()}
    # shortest paths: every IPv4 packet crosses at most 1 + (ring distance) switches
    visited: dict[int, set[str]] = {}
    ends: dict[int, tuple[int, int]] = {}
    for e in events:
        if e.kind == "packet" and e.packet.get("eth_type") == "0x0800":
            ends[e.pid] = (int(e.packet["l3"]["src"].rsplit(".", 1)[1]), int(e.packet["l3"]["dst"].rsplit(".", 1)[1]))
            if e.node.startswith("s"):
                visited.setdefault(e.pid, set()).add(e.node)
    assert len(visited) >= 24  # 12 echo requests and 12 replies at least
    longest = 0
    for pid, switches in visited.items():
        src, dst = ends[pid]
        hops = min(abs(src - dst), 4 - abs(src - dst))  # host hK hangs off switch sK
        assert len(switches) <= 1 + hops, (pid, src, dst, sorted(switches))
        longest = max(longest, len(switches))
    assert longest == 3  # opposite corners of the ring are two links apart, and were routed so


def test_topology_app_without_observe_links_sees_no_links(tmp_path: Path) -> None:
    run(RunOptions(controller=f"ryu:{APPS / 'shortest_path.py'}", topo="ring,4", out=tmp_path))
    assert _discovered_links(controller_log(tmp_path)) == set()


# ----------------------------------------------------------------------------- what else apps rely on
def test_config_file_own_folder_file_dpset_hub_spawn_and_ofctl(tmp_path: Path) -> None:
    spec = f"ryu:{APPS / 'flood_hub.py'} --config-file {APPS / 'flood_hub.conf'}"
    result = run(RunOptions(controller=spec, topo="linear,3", out=tmp_path, pingall=True))
    d = json.loads((tmp_path / "result.json").read_text())
    assert d["pingall"]["ok"] == 6 and result.exit_code == 0
    log = controller_log(tmp_path)
    assert "flood_hub banner: hello from the app's own folder" in log  # banner.txt beside the app
    assert "flood_hub thread: 3 switches joined" in log                  # hub.spawn + dpset.EventDP
    prios = {e.msg["body"]["OFPFlowMod"]["priority"] for e in read_trace(tmp_path / "trace.jsonl").events
             if e.kind == "of_to_switch" and e.msg["type"] == "FLOW_MOD"}
    assert 1234 in prios  # the option from flood_hub.conf, installed through ofctl_v1_0


# ----------------------------------------------------------------------------- a part of Ryu os-ken lacks
MISSING_APP = """\
from ryu.base import app_manager
from ryu.contrib import something_missing


class NeedsMissing(app_manager.RyuApp):
    pass
"""


def test_app_importing_what_os_ken_lacks_is_exit_2_naming_the_module(tmp_path: Path) -> None:
    app = tmp_path / "needs_missing.py"
    app.write_text(MISSING_APP)
    proc = cli("run", "--controller", f"ryu:{app}", "--topo", "linear,2", "--out", str(tmp_path / "out"))
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("error: ")]
    assert len(lines) == 1 and " -- fix: " in lines[0]
    assert "app needs_missing.py imports ryu.contrib.something_missing, which os-ken 1.4.1" in lines[0]
    assert "Traceback" not in proc.stderr
    # the model checker says the same, also as exit 2
    proc = cli("check", f"ryu:{app}", "--scenario", "mobile")
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: app needs_missing.py imports ryu.contrib.something_missing"), proc.stderr


def test_plain_import_of_a_missing_ryu_module(tmp_path: Path) -> None:
    app = tmp_path / "plain.py"
    app.write_text(MISSING_APP.replace("from ryu.contrib import something_missing", "import ryu.lib.no_such_lib"))
    proc = cli("run", "--controller", f"ryu:{app}", "--topo", "linear,2", "--out", str(tmp_path / "out"))
    assert proc.returncode == 2
    assert "imports ryu.lib.no_such_lib, which os-ken" in proc.stderr


def test_ryu_app_given_to_osken_says_to_use_ryu(ryu_release: Path, tmp_path: Path) -> None:
    proc = cli("run", "--controller", f"osken:{ryu_release / 'simple_switch.py'}", "--topo", "linear,2",
               "--out", str(tmp_path / "out"))
    assert proc.returncode == 2
    assert "it is a Ryu app" in proc.stderr and "ryu:APP" in proc.stderr


# ----------------------------------------------------------------------------- the spec itself
def test_spec_forms(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "a.py").write_text("")
    (tmp_path / "b.py").write_text("")
    (tmp_path / "x.conf").write_text("")
    monkeypatch.chdir(tmp_path)
    s = parse_controller("ryu:a.py,b.py,pkg.mod --observe-links --config-file x.conf")
    assert s.kind == "ryu" and s.apps == (str(tmp_path / "a.py"), str(tmp_path / "b.py"), "pkg.mod")
    assert s.options == ("--observe-links", f"--config-file={tmp_path / 'x.conf'}")
    assert parse_controller("osken:./a.py").apps == (str(tmp_path / "a.py"),)
    for bad, says in [("ryu:missing.py", "does not exist"), ("ryu:--observe-links", "names no Ryu app"),
                      ("ryu:a.py --ofp-tcp-listen-port 9", "netsleuth chooses itself"),
                      ("ryu:a.py --config-file", "has no value"), ("ryu:a.py --config-file nope.conf", "no such"),
                      ("ryu:'a.py", "cannot be split")]:
        with pytest.raises(ControllerError) as e:
            parse_controller(bad)
        assert says in e.value.problem and e.value.fix


def test_trace_headers_may_name_modules_and_plain_flags_only() -> None:
    assert check_trace_spec("ryu:ryu.app.simple_switch --observe-links", "t").apps == ("ryu.app.simple_switch",)
    for header in ("ryu:/tmp/evil.py", "ryu:evil.py", "ryu:mod --config-file=/tmp/x", "app:ryu:/tmp/evil.py",
                   "osken:evil.py"):
        with pytest.raises(UntrustedControllerError):
            check_trace_spec(header, "t")
    trusted = check_trace_spec(f"ryu:{APPS / 'shortest_path.py'} --config-file=/etc/hostname", "t", trust=True)
    assert trusted is not None and trusted.options == ("--config-file=/etc/hostname",)


def test_check_refuses_an_option_os_ken_does_not_know(capsys) -> None:
    from netsleuth.cli import main

    assert main(["check", f"ryu:{APPS / 'shortest_path.py'} --no-such-option", "--scenario", "pings"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: os-ken does not accept the options --no-such-option -- fix: ")


def test_run_refuses_an_option_os_ken_does_not_know(tmp_path: Path) -> None:
    proc = cli("run", "--controller", f"ryu:{APPS / 'shortest_path.py'} --no-such-option", "--topo", "linear,2",
               "--out", str(tmp_path / "out"))
    assert proc.returncode == 2
    assert [ln for ln in proc.stderr.splitlines() if ln.startswith("error: ")] == [
        "error: os-ken does not accept the options --no-such-option -- fix: use ryu-manager options os-ken 1.4.1 "
        "knows (e.g. --config-file FILE, --observe-links)"]


def test_ryu_module_names_and_a_rest_app_served_on_loopback_only(ryu_release: Path, tmp_path: Path) -> None:
    # ryu.app.ofctl_rest by Ryu's module name, beside an app file; its REST API must not face the network
    spec = f"ryu:ryu.app.ofctl_rest,{ryu_release / 'simple_switch.py'}"
    result = run(RunOptions(controller=spec, topo="linear,2", out=tmp_path, pingall=True))
    assert result.data["pingall"]["ok"] == 2
    log = controller_log(tmp_path)
    assert re.search(r"wsgi starting up on http://127\.0\.0\.1:\d+", log), log[-2000:]


def test_import_errors_name_the_module_the_way_the_app_wrote_it() -> None:
    from netsleuth.controllers.external import import_error_for

    e = import_error_for("ryu", "networkx", "/home/me/ctl/te.py", "No module named 'networkx'")
    assert e.problem.startswith("app te.py imports networkx, which the controller environment does not have")
    assert ".venv-controller" in e.fix
    e = import_error_for("ryu", "os_ken.lib", "/home/me/ctl/te.py",
                         "cannot import name 'old_helper' from 'os_ken.lib' (/x/os_ken/lib/__init__.py)")
    assert e.problem.startswith("app te.py imports ryu.lib.old_helper, which os-ken 1.4.1")
    e = import_error_for("osken", "os_ken.lib.gone", "mypkg.app", "No module named 'os_ken.lib.gone'")
    assert e.problem.startswith("app mypkg.app imports os_ken.lib.gone, which os-ken 1.4.1")
    e = import_error_for("ryu", "ctl_helpers", "/home/me/ctl/ctl.py", "No module named 'ctl_helpers'")
    assert "imports ctl_helpers" in e.problem and "beside the app" in e.fix
