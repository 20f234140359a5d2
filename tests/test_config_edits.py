"""The operator's config edits the fuzzer draws, and what a config says about which hosts may talk.

Every edit must give a config the real Faucet accepts (its own checker,
check_faucet_config, from .venv-faucet), the same seed must give the same
edits, and the pairs a config keeps apart must be exactly those its VLANs
and ACLs separate.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import yaml

from netsleuth.controllers.faucet import check_user_configs, generate_config
from netsleuth.errors import ControllerError
from netsleuth.invariants.policy.intent import faucet_separated
from netsleuth.model.topo_builders import parse_topo
from netsleuth.schedulers.config_edits import HostAddr, propose
from netsleuth.schedulers.fuzz import Fuzzer, FuzzState, Rates


def _chain(spec: str, seed: int, n: int) -> list[tuple[str, str]]:
    topo = parse_topo(spec)
    config = generate_config(topo)
    hosts = [HostAddr(h.name, h.ip) for h in topo.hosts]
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        change = propose(config, rng, hosts)
        out.append((change.edit, change.config))
        config = yaml.safe_load(change.config)
    return out


@pytest.mark.real
def test_every_edit_gives_a_config_faucet_accepts(tmp_path: Path) -> None:
    edits = _chain("ring,4", 1, 7)
    kinds = {words.split()[0] for words, _ in edits}
    assert {"add", "move", "deny", "remove"} <= kinds, edits
    paths = []
    for i, (_words, text) in enumerate(edits):
        paths.append(tmp_path / f"c{i}.yaml")
        paths[-1].write_text(text)
    check_user_configs(paths)  # one run of Faucet's checker for them all; raises with its complaint otherwise


@pytest.mark.real
def test_a_rejected_config_among_several_is_named_with_faucet_s_complaint(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    config = generate_config(parse_topo("linear,2"))
    good.write_text(yaml.safe_dump(config))
    config["dps"]["s1"]["interfaces"][1]["native_vlan"] = "no-such-vlan"
    bad.write_text(yaml.safe_dump(config))
    with pytest.raises(ControllerError) as err:
        check_user_configs([bad, good])
    assert f"Faucet rejects its config {bad}: " in err.value.problem and str(good) not in err.value.problem
    assert "no-such-vlan" in err.value.problem, err.value.problem


def test_the_same_seed_gives_the_same_edits() -> None:
    assert _chain("linear,3", 3, 10) == _chain("linear,3", 3, 10)
    assert _chain("linear,3", 3, 10) != _chain("linear,3", 4, 10)


def test_the_fuzzer_draws_config_changes_only_at_its_rate() -> None:
    topo = parse_topo("linear,2")
    state = FuzzState(live_switches=("s1", "s2"), failed_switches=(), live_links=(), failed_links=(),
                      alive_controllers=("c0",), crashed_controllers=(), open_channels=(), blocked_channels=(),
                      hosts=("h1", "h2"), host_switch={"h1": "s1", "h2": "s2"}, switches=("s1", "s2"),
                      configs=(("c0", generate_config(topo)),), host_addrs=tuple(HostAddr(h.name, h.ip)
                                                                                  for h in topo.hosts))
    off = Fuzzer(random.Random(1), Rates({"traffic": 0.5}))
    assert all(p.kind != "config_change" for _ in range(50) for p in off.plan_round(state))
    on = Fuzzer(random.Random(1), Rates({"config_change": 1.0}))
    planned = on.plan_round(state)
    assert [p.kind for p in planned] == ["config_change"]
    assert isinstance(yaml.safe_load(str(planned[0].get("config"))), dict) and planned[0].get("controller") == "c0"


def test_separated_pairs_follow_vlans_and_acls() -> None:
    topo = parse_topo("single,3")
    config = generate_config(topo)
    assert faucet_separated(config, topo, {}) == frozenset()
    config["vlans"]["other"] = {"vid": 200}
    config["dps"]["s1"]["interfaces"][3]["native_vlan"] = "other"
    assert faucet_separated(config, topo, {}) == {("h1", "h3"), ("h3", "h1"), ("h2", "h3"), ("h3", "h2")}
    config["acls"] = {"no-h2": [{"rule": {"eth_type": 0x800, "ipv4_dst": "10.0.0.2", "actions": {"allow": 0}}},
                                {"rule": {"actions": {"allow": 1}}}]}
    config["dps"]["s1"]["interfaces"][1]["acls_in"] = ["no-h2"]
    assert ("h1", "h2") in faucet_separated(config, topo, {})
    assert ("h2", "h1") not in faucet_separated(config, topo, {})  # the ACL filters what h1 sends only
    config["acls"]["no-h2"].pop()  # without the catch-all allow Faucet drops whatever no rule allows
    assert faucet_separated(config, topo, {}) >= {("h1", "h2"), ("h1", "h3")}
    # a host moved to a port the config does not know is cut off from everyone
    assert ("h2", "h1") in faucet_separated(config, topo, {"h2": ("s1", 9)})
