"""Which host pairs a Faucet config keeps apart, read from real Faucet configs.

The configs are the ones in tests/data/faucet, which Faucet's own checker
accepts (test_faucet_network.py runs it on each) and which real Faucet runs
in test_faucet_network.py: a pair an ACL denies all plain traffic to is set
aside, a pair an ACL denies only SSH to is still checked, hosts on different
VLANs stay apart whether or not a router joins them.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from netsleuth.invariants.policy.intent import faucet_separated
from netsleuth.model.topo_builders import parse_topo

DATA = Path(__file__).parent / "data" / "faucet"


def _config(name: str) -> dict[str, Any]:
    return yaml.safe_load((DATA / name).read_text())


def _both(a: str, b: str) -> set[tuple[str, str]]:
    return {(a, b), (b, a)}


def test_a_pair_an_acl_denies_is_set_aside_one_way() -> None:
    topo = parse_topo("linear,3")
    # h1's port denies all IPv4 to h2: h1 -> h2 is kept apart; h2 -> h1 and the pairs with h3 are checked
    assert faucet_separated(_config("acl_deny_h2.yaml"), topo, {}) == {("h1", "h2")}


def test_a_partial_deny_leaves_the_pair_checked() -> None:
    """block-ssh denies TCP to h2's port 22 only: the rest of h1's traffic to h2 is meant to arrive, so
    reachability still asks it to (the SSH it drops is a drop on purpose there)."""
    topo = parse_topo("linear,3")
    assert faucet_separated(_config("acl_block_ssh.yaml"), topo, {}) == frozenset()
    assert faucet_separated(_config("acl_allow_ssh.yaml"), topo, {}) == frozenset()


def test_denies_that_add_up_to_everything_set_the_pair_aside() -> None:
    topo = parse_topo("linear,3")
    config = _config("acl_block_ssh.yaml")
    rules = config["acls"]["block-ssh"]
    # deny SSH, then anything not TCP to h2, then TCP to h2: together all of h1's IPv4 to h2
    rules.insert(1, {"rule": {"dl_type": 0x800, "ip_proto": 6, "ipv4_dst": "10.0.0.2", "actions": {"allow": 0}}})
    assert faucet_separated(config, topo, {}) == frozenset()   # UDP and ICMP to h2 still allowed
    rules.insert(1, {"rule": {"dl_type": 0x800, "ipv4_dst": "10.0.0.0/30", "ip_proto": 17,
                              "actions": {"allow": 0}}})
    rules.insert(1, {"rule": {"dl_type": 0x800, "ipv4_dst": "10.0.0.2", "ip_proto": 1, "actions": {"allow": 0}}})
    assert faucet_separated(config, topo, {}) == frozenset()   # other IP protocols still allowed
    rules.pop()  # the catch-all allow: Faucet drops what no rule matches
    assert faucet_separated(config, topo, {}) == {("h1", "h2"), ("h1", "h3")}


def test_the_vlan_acl_applies_after_the_port_acl() -> None:
    topo = parse_topo("linear,3")
    config = _config("acl_block_ssh.yaml")
    config["acls"]["guard-h3"] = [{"rule": {"dl_type": 0x800, "ipv4_src": "10.0.0.1", "ipv4_dst": "10.0.0.3",
                                            "actions": {"allow": 0}}},
                                  {"rule": {"actions": {"allow": 1}}}]
    config["vlans"]["office"]["acls_in"] = ["guard-h3"]
    assert faucet_separated(config, topo, {}) == {("h1", "h3")}


def test_a_rule_the_model_cannot_judge_sets_what_it_may_match_aside() -> None:
    topo = parse_topo("linear,3")
    config = _config("acl_deny_h2.yaml")
    unjudged = copy.deepcopy(config)
    # in_port is no header the model carries: what that rule and every rule after it do is unknown
    unjudged["acls"]["no-h2"].insert(0, {"rule": {"in_port": 1, "actions": {"allow": 1}}})
    assert faucet_separated(unjudged, topo, {}) == {("h1", "h2"), ("h1", "h3")}
    mirrored = copy.deepcopy(config)
    # a rule that mirrors leaves what it matches undecided, and only that
    mirrored["acls"]["no-h2"].insert(0, {"rule": {"dl_type": 0x800, "ipv4_dst": "10.0.0.3",
                                                  "actions": {"allow": 1, "mirror": 2}}})
    assert faucet_separated(mirrored, topo, {}) == {("h1", "h2"), ("h1", "h3")}
    mirrored["acls"]["no-h2"][0]["rule"]["ip_proto"] = 6
    assert faucet_separated(mirrored, topo, {}) == {("h1", "h2")}   # UDP and ICMP to h3 certainly allowed


def test_vlans_keep_their_hosts_apart_with_or_without_a_router() -> None:
    topo = parse_topo("tree,depth=2,fanout=2")
    office, guest = ("h1", "h3"), ("h2", "h4")
    across = {(a, b) for a in office for b in guest} | {(b, a) for a in office for b in guest}
    assert faucet_separated(_config("two_vlans.yaml"), topo, {}) == across
    assert faucet_separated(_config("two_vlans_routed.yaml"), topo, {}) == across   # routing is not plain traffic
    # two_vlans_misassigned puts h2 in office: the split follows the config, whatever was meant
    assert faucet_separated(_config("two_vlans_misassigned.yaml"), topo, {}) == (
        _both("h1", "h4") | _both("h2", "h4") | _both("h3", "h4"))


def test_a_host_on_a_port_the_config_does_not_list_is_kept_apart_from_all() -> None:
    topo = parse_topo("linear,3")
    assert faucet_separated(_config("acl_block_ssh.yaml"), topo, {"h3": ("s3", 7)}) == (
        _both("h1", "h3") | _both("h2", "h3"))


def test_a_config_the_model_cannot_read_keeps_every_pair_apart() -> None:
    topo = parse_topo("single,2")
    config = {"include": ["other.yaml"], "dps": {}}
    assert faucet_separated(config, topo, {}) == _both("h1", "h2")
