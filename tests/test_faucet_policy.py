"""Reading a Faucet config as the policy the isolation and acl invariants check (no Faucet needed)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from netsleuth.invariants import registry
from netsleuth.invariants.policy.faucet import FaucetPolicy, FaucetPolicyError, policy_from_config, policy_from_text
from netsleuth.model.of13.headerbits import wc13
from netsleuth.model.topo_builders import parse_topo
from netsleuth.model.topology import HostSpec

DATA = Path(__file__).parent / "data" / "faucet"
TREE = parse_topo("tree,depth=2,fanout=2")
LINEAR = parse_topo("linear,3")


def config(name: str) -> dict:
    return yaml.safe_load((DATA / name).read_text())


def test_vlans_ports_and_stack_root_in_faucet_terms() -> None:
    p = policy_from_config(config("two_vlans.yaml"), TREE)
    assert p.vlans == {"office": 100, "guest": 200}
    assert [p.vlan_at("s2", 1), p.vlan_at("s2", 2), p.vlan_at("s3", 1), p.vlan_at("s3", 2)] == \
        ["office", "guest", "office", "guest"]
    assert p.vlan_at("s1", 1) is None          # a stack port carries no native VLAN
    assert p.stack_root == "s1"
    assert not p.routes("office", "guest")


def test_a_router_joins_its_vlans_and_vids_name_vlans() -> None:
    data = config("two_vlans.yaml")
    data["routers"] = {"r1": {"vlans": ["office", 200]}}   # a VLAN may be named by its vid
    p = policy_from_config(data, TREE)
    assert p.routes("office", "guest") and p.routes("guest", "office")
    assert p.router_between("guest", "office") == "r1"


def test_dps_bind_to_switches_by_datapath_id_not_name() -> None:
    data = config("two_vlans.yaml")
    data["dps"] = {f"dp-{name}": dp for name, dp in data["dps"].items()}
    assert policy_from_config(data, TREE).vlan_at("s3", 2) == "guest"


def test_acl_rules_become_header_classes_in_order() -> None:
    p = policy_from_config(config("acl_block_ssh.yaml"), LINEAR)
    assert p.ports[("s1", 1)].acls == ("block-ssh",)
    deny, allow = p.acls["block-ssh"]
    # dl_type is Faucet's older spelling of eth_type; the address is a /32
    assert deny.wc == wc13(eth_type=0x800, ip_proto=6, ipv4_dst=0x0A000002, tcp_dst=22)
    assert (deny.index, deny.allow, allow.index, allow.allow) == (0, False, 1, True)
    assert allow.wc == (0, 0)
    h2 = HostSpec("h2", 2, 0x0A000002)
    h3 = HostSpec("h3", 3, 0x0A000003)
    assert deny.names("h1", h2) == "tcp h1 -> h2:22"
    assert deny.names("h1", h3) == "tcp h1 -> 10.0.0.2:22"   # the rule's own address, not h3's
    assert allow.names("h1", h2) == "traffic h1 -> h2"


def test_rules_the_checks_cannot_judge_are_marked() -> None:
    data = config("acl_block_ssh.yaml")
    data["acls"]["other"] = [
        {"rule": {"ipv4_src": "10.0.0.0/24", "udp_dst": "0x400/0xfc00", "actions": {"allow": True}}},
        {"rule": {"eth_type": 0x800, "actions": {"output": {"port": 2}}}},
        {"rule": {"ct_state": 32, "actions": {"allow": 0}}},
    ]
    masked, output, conntrack = policy_from_config(data, LINEAR).acls["other"]
    assert masked.wc == wc13(ipv4_src=(0x0A000000, 0xFFFFFF00), udp_dst=(0x400, 0xFC00)) and masked.allow is True
    assert output.wc is not None and output.allow is None and "output" in output.why_unchecked
    assert conntrack.wc is None and "ct_state" in conntrack.why_unchecked


@pytest.mark.parametrize(("text", "problem"), [
    ("vlans: [", "not valid YAML"),
    ("- just a list", "not a YAML mapping"),
    ("include: [other.yaml]\ndps: {}", "includes other files"),
    ("vlans: {office: {vid: 100}}\ndps: {s1: {dp_id: 1, interfaces: {1: {native_vlan: lobby}}}}",
     "VLAN 'lobby'"),
])
def test_unreadable_configs_are_one_line_errors(text: str, problem: str) -> None:
    with pytest.raises(FaucetPolicyError) as exc:
        policy_from_text(text, LINEAR, "Faucet config x.yaml")
    assert problem in str(exc.value) and "x.yaml" in str(exc.value)
    assert exc.value.fix


def test_isolation_and_acl_are_registered_and_on_by_default() -> None:
    assert {"isolation", "acl"} <= set(registry.DEFAULT)
    assert registry.resolve("acl")[0].name == "acl"


def test_a_faucet_run_records_its_config_and_reads_its_policy(tmp_path: Path) -> None:
    from netsleuth.live.session import Session

    config = tmp_path / "acl.yaml"
    config.write_text((DATA / "acl_block_ssh.yaml").read_text())
    s = Session("run", "linear,3", f"faucet:{config}", tmp_path / "out", checks=list(registry.DEFAULT))
    assert s.header_extra["faucet_config"] == {"source": str(config.resolve()), "file": "faucet.yaml",
                                               "text": config.read_text()}
    assert isinstance(s.faucet_policy, FaucetPolicy) and s.faucet_policy.acls["block-ssh"][0].allow is False
    auto = Session("run", "linear,3", "faucet:auto", tmp_path / "auto", checks=["acl"])
    assert auto.header_extra["faucet_config"]["text"].startswith("# Faucet config for the netsleuth topology")
    assert Session("run", "linear,3", "osken:os_ken.app.simple_switch", tmp_path / "o").faucet_policy is None


def test_a_config_with_includes_runs_unchecked_and_says_so(tmp_path: Path) -> None:
    from netsleuth.live.session import Session

    config = tmp_path / "main.yaml"
    config.write_text("include: [more.yaml]\n" + (DATA / "acl_block_ssh.yaml").read_text())
    s = Session("run", "linear,3", f"faucet:{config}", tmp_path / "out", checks=["isolation", "acl"])
    assert s.faucet_policy is None
    assert s.result.data["faucet_policy"].startswith("not checked: ") and "include" in s.result.data["faucet_policy"]


def test_vlans_with_acls_of_their_own_are_known() -> None:
    data = config("acl_block_ssh.yaml")
    assert policy_from_config(data, LINEAR).vlan_acls == frozenset()
    data["vlans"]["office"]["acls_in"] = ["block-ssh"]
    assert policy_from_config(data, LINEAR).vlan_acls == {"office"}
