"""Faucet running networks: pingall over its stack, and its config's VLANs and ACLs held against its tables.

Every test starts the real Faucet (.venv-faucet) on a netsleuth network. The
``isolation`` and ``acl`` invariants read the Faucet config of the run (kept in
the trace header) and decide, by header-space analysis over the 1.3
pipelines Faucet installed, whether the tables do what the config says.
Each invariant is also shown failing: a run of a config that differs from
the intended one (a port misassigned to another VLAN, an ACL rule changed
from deny to allow), checked with ``--faucet-policy INTENDED.yaml``.

Every run uses the default checks, header-space ``blackholes`` and
``reachability`` included: Faucet's pipeline drops some header classes on
purpose (eth_type 0x9000, tagged frames on untagged ports), and such
deliberate drops must not be reported as blackholes.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from netsleuth.cli import main
from netsleuth.controllers.faucet import check_user_config
from netsleuth.invariants.headerspace.of13.engine import Net13, explore13
from netsleuth.invariants.headerspace.of13.space import HS13
from netsleuth.invariants.policy.faucet import FaucetPolicy
from netsleuth.invariants.view import NetworkView
from netsleuth.jobs.run import RunOptions, run
from netsleuth.live.ready import faucet_stack_up
from netsleuth.model.of13.frame import Frame
from netsleuth.model.of13.headerbits import ALL_BITS13, pack13
from netsleuth.model.packet import Packet, icmp_echo, tcp_syn
from netsleuth.trace.io import read_trace
from netsleuth.world.rebuild import rebuild

pytestmark = [pytest.mark.real, pytest.mark.slow]

DATA = Path(__file__).parent / "data" / "faucet"
WARMUP = 15.0   # the bound: the warm-up ends once Faucet's stack is up (LLDP crossed, its flows in)
# A ping Faucet forwards is answered in about 10 ms here (its flood and learned rules are in the tables
# by then); 1 s halves the wait on the pairs a config keeps apart, which must time out (two VLANs: 8 of 12
# pairs). Where every pair must answer, the timeout costs nothing unless a ping fails, and a machine busy
# with other tests has answered the first ping of a pair (Faucet learning both hosts) in over a second.
PING_TIMEOUT = 1.0
PING_TIMEOUT_ALL_ANSWER = 5.0


def cli(*args: str) -> subprocess.CompletedProcess:
    """``netsleuth ARGS`` run in this process (what ``python -m netsleuth.cli`` runs, without its ~2 s start)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return subprocess.CompletedProcess(list(args), code, out.getvalue(), err.getvalue())


def faucet_run(out: Path, config: str, topo: str, ping_timeout: float = PING_TIMEOUT) -> dict:
    result = run(RunOptions(controller=f"faucet:{config}", topo=topo, out=out, pingall=True, warmup=WARMUP,
                            warmup_ready=faucet_stack_up(), ping_timeout=ping_timeout))
    return result.data


def rebuilt_view(trace: Path) -> NetworkView:
    t = read_trace(trace)
    return rebuild(t.header, t.events, None).world.view()


def delivered(view: NetworkView, src: str, packet: Packet) -> set[str]:
    """The hosts the tables deliver ``packet`` to when ``src`` sends it (a one-header reachability query)."""
    h = pack13(Frame.from_packet(packet))
    reach = explore13(Net13(view), *view.host_location(src), hs=HS13.wildcard(h, ALL_BITS13))
    return {host for host, events in reach.delivered.items() if events}


@pytest.mark.parametrize("name", sorted(p.name for p in DATA.glob("*.yaml")))
def test_the_configs_here_are_faucet_configs(name: str) -> None:
    check_user_config(DATA / name)   # Faucet's own checker: raises with its complaint otherwise


@pytest.mark.parametrize("topo", ["tree,depth=2,fanout=2", "ring,4"])
def test_pingall_over_the_stack(tmp_path: Path, topo: str) -> None:
    d = faucet_run(tmp_path, "auto", topo, ping_timeout=PING_TIMEOUT_ALL_ANSWER)
    assert d["pingall"]["ok"] == d["pingall"]["pairs"] == 12, d["pingall"]
    assert d["violations"] == [], d["violations"]
    header = read_trace(tmp_path / "trace.jsonl").header
    assert header.extra["faucet_config"]["source"] == "auto"
    assert header.extra["faucet_config"]["text"] == (tmp_path / "faucet.yaml").read_text()


# --------------------------------------------------------------------------- VLAN isolation
@pytest.fixture(scope="module")
def two_vlans(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("two_vlans")
    return out, faucet_run(out, str(DATA / "two_vlans.yaml"), "tree,depth=2,fanout=2")


def test_two_vlans_ping_inside_and_not_across(two_vlans: tuple[Path, dict]) -> None:
    _out, d = two_vlans
    office, guest = {"h1", "h3"}, {"h2", "h4"}
    failed = set(d["pingall"]["failed_pairs"])
    across = {f"{a}->{b}" for a in office | guest for b in office | guest
              if a != b and ((a in office) != (b in office))}
    assert failed == across, d["pingall"]
    assert set(d["pingall"]["failed_on_purpose"]) == across   # different VLANs: on purpose, no exit 1
    assert d["pingall"]["ok"] == 4
    assert d["violations"] == [], d["violations"]


def test_isolation_is_checked_from_the_trace_alone(two_vlans: tuple[Path, dict], tmp_path: Path) -> None:
    out, _d = two_vlans
    alone = tmp_path / "trace.jsonl"
    shutil.copy(out / "trace.jsonl", alone)   # no config file beside it: the header carries the config
    proc = cli("invariants", str(alone), "--check", "isolation,acl", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["violations"] == []
    policy = rebuilt_view(alone).faucet
    assert isinstance(policy, FaucetPolicy)
    assert policy.vlans == {"office": 100, "guest": 200} and policy.stack_root == "s1"
    assert (out / "faucet.yaml").read_text() == (DATA / "two_vlans.yaml").read_text()
    reduced = tmp_path / "reduced.jsonl"   # a reduced trace keeps the config too
    proc = cli("reduce", str(alone), "--end", "--out", str(reduced))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert isinstance(rebuilt_view(reduced).faucet, FaucetPolicy)


def test_a_misassigned_port_leaks_between_vlans(tmp_path: Path) -> None:
    d = faucet_run(tmp_path, str(DATA / "two_vlans_misassigned.yaml"), "tree,depth=2,fanout=2")
    assert "h1->h2" not in d["pingall"]["failed_pairs"], d["pingall"]   # h2 now answers in office
    assert d["violations"] == []   # the run's own config says h2 is in office: nothing to report
    proc = cli("invariants", str(tmp_path / "trace.jsonl"), "--check", "isolation",
               "--faucet-policy", str(DATA / "two_vlans.yaml"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "h1 (vlan office) reaches h2 (vlan guest) over s2:1 -> s2:2" in proc.stdout, proc.stdout
    assert "h3 (vlan office) reaches h2 (vlan guest) over s3:1 -> s1:2 -> s2:3 -> s2:2" in proc.stdout
    assert "h4" not in proc.stdout   # h4 stays in guest with nobody from office beside it
    proc = cli("invariants", str(tmp_path / "trace.jsonl"), "--check", "isolation",
               "--faucet-policy", str(DATA / "two_vlans_routed.yaml"))
    assert proc.returncode == 0, proc.stdout   # a router joining the VLANs lets them reach each other


# --------------------------------------------------------------------------- ACLs
H1 = (0x01, 0x0A000001)
H2 = (0x02, 0x0A000002)
H3 = (0x03, 0x0A000003)


def tcp(src: tuple[int, int], dst: tuple[int, int], port: int) -> Packet:
    return tcp_syn(src[0], dst[0], src[1], dst[1], 40000, port)


def test_an_acl_blocks_exactly_what_it_denies(tmp_path: Path) -> None:
    d = faucet_run(tmp_path, str(DATA / "acl_block_ssh.yaml"), "linear,3")
    assert d["pingall"]["ok"] == 6, d["pingall"]            # ICMP still goes everywhere
    assert d["violations"] == [], d["violations"]          # acl: the tables do what block-ssh says
    view = rebuilt_view(tmp_path / "trace.jsonl")
    assert delivered(view, "h1", tcp(H1, H2, 22)) == set()            # denied
    assert delivered(view, "h1", tcp(H1, H2, 80)) == {"h2"}           # the rest is allowed
    assert delivered(view, "h1", icmp_echo(H1[0], H2[0], H1[1], H2[1])) == {"h2"}
    assert delivered(view, "h1", tcp(H1, H3, 22)) == {"h3"}           # the rule names h2's address only
    assert delivered(view, "h2", tcp(H2, H1, 22)) == {"h1"}           # and h1's port only


def test_a_pair_an_acl_keeps_apart_is_no_finding(tmp_path: Path) -> None:
    """no-h2 denies all of h1's IPv4 to h2: Faucet drops it, and the run reports the operator's intent
    as nothing (the pair is kept apart by the config), while every other pair is still checked."""
    d = faucet_run(tmp_path, str(DATA / "acl_deny_h2.yaml"), "linear,3")
    assert d["violations"] == [], d["violations"]
    assert d["pingall"]["ok"] == 4, d["pingall"]            # h1 -> h2, and h2 -> h1's replies, are denied
    assert sorted(d["pingall"]["failed_on_purpose"]) == ["h1->h2", "h2->h1"]   # so exit 0: the config says so
    assert d["pingall"]["failed_why"]["h2->h1"]["why"].startswith("the controller's configuration keeps h1's")
    view = rebuilt_view(tmp_path / "trace.jsonl")
    assert delivered(view, "h1", tcp(H1, H2, 80)) == set()
    assert delivered(view, "h1", icmp_echo(H1[0], H2[0], H1[1], H2[1])) == set()
    assert delivered(view, "h1", tcp(H1, H3, 80)) == {"h3"}
    assert delivered(view, "h2", tcp(H2, H1, 80)) == {"h1"}


def test_an_acl_changed_to_allow_breaks_the_deny_expectation(tmp_path: Path) -> None:
    d = faucet_run(tmp_path, str(DATA / "acl_allow_ssh.yaml"), "linear,3")
    assert d["violations"] == [], d["violations"]          # its own config now allows SSH
    view = rebuilt_view(tmp_path / "trace.jsonl")
    assert delivered(view, "h1", tcp(H1, H2, 22)) == {"h2"}
    proc = cli("invariants", str(tmp_path / "trace.jsonl"), "--check", "acl",
               "--faucet-policy", str(DATA / "acl_block_ssh.yaml"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert ('rule 0 of acl "block-ssh" on s1 port 1 denies tcp h1 -> h2:22, but it is delivered '
            "over s1:1 -> s2:2 -> s2:1") in proc.stdout, proc.stdout


def test_step_shows_the_stack_coming_up(two_vlans: tuple[Path, dict], tmp_path: Path) -> None:
    out, _d = two_vlans
    commands = tmp_path / "cmds.txt"
    commands.write_text("show ports s1\nstep 100000\nshow ports s1\n")
    proc = cli("step", str(out / "trace.jsonl"), "--headless", "--commands", str(commands))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    before, after = proc.stdout.split("end of trace")
    assert "init (peer s2:3; LLDP never)" in before and "up (" not in before
    assert "up (peer s2:3; LLDP" in after and "from s2:3)" in after
    assert "up (peer s3:3; LLDP" in after and "from s3:3)" in after
    assert "stack root s1" in after
