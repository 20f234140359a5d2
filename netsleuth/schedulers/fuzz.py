"""The fuzzer's choices: which inputs to inject in one round.

STS leaked the global ``random``, so its recordings could not be reproduced
from a seed. Here every choice comes from one ``random.Random`` passed in,
and the choices depend only on state the fuzzer's own inputs determine
(which switches, links and controllers it failed, where it moved hosts),
never on timing-dependent things such as which packets happen to be in
flight. So the same seed gives the same sequence of inputs, whatever the
controller does.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

from netsleuth.errors import NetsleuthError
from netsleuth.schedulers.config_edits import HostAddr, propose

RATE_NAMES = (
    "switch_failure", "switch_recovery", "link_failure", "link_recovery", "controller_crash",
    "controller_recovery", "channel_block", "channel_unblock", "host_migration", "traffic",
    "dataplane_drop", "dataplane_delay", "control_delay", "config_change", "service_traffic",
)
# STS's fuzzer defaults: the probability of each kind of input per round; everything else is off unless asked for.
DEFAULT_RATES = {
    "switch_failure": 0.005, "switch_recovery": 0.09, "link_failure": 0.005, "link_recovery": 0.09,
    "traffic": 0.08,
}
TRAFFIC_KINDS = ("icmp", "arp", "tcp_syn")


class RateError(NetsleuthError):
    pass


@dataclass(frozen=True)
class Rates:
    """Per-round probabilities by name."""

    values: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_RATES))

    def get(self, name: str) -> float:
        return self.values.get(name, 0.0)

    def with_overrides(self, pairs: list[str]) -> Rates:
        values = dict(self.values)
        for pair in pairs:
            name, sep, value = pair.partition("=")
            values[_check_name(name.strip())] = _check_p(name, value if sep else "")
        return Rates(values)

    @classmethod
    def from_toml(cls, path: str | Path, base: Rates | None = None) -> Rates:
        import tomllib  # here: only a policy or rates file needs TOML; importing it costs every command

        try:
            data = tomllib.loads(Path(path).read_text())
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise RateError(f"cannot read rates file {path}: {exc}",
                            "write it as TOML lines like `host_migration = 0.05`") from exc
        data = data.get("rates", data)
        values = dict((base or cls()).values)
        for name, value in data.items():
            values[_check_name(name)] = _check_p(name, str(value))
        return cls(values)

    def only(self, names: list[str]) -> Rates:
        return Rates({n: p for n, p in self.values.items() if n in names})


def _check_name(name: str) -> str:
    if name not in RATE_NAMES:
        raise RateError(f"unknown rate '{name}'", f"use one of: {', '.join(RATE_NAMES)}")
    return name


def _check_p(name: str, value: str) -> float:
    try:
        p = float(value)
    except ValueError:
        p = -1.0
    if not 0.0 <= p <= 1.0:
        raise RateError(f"rate {name}={value!r} is not a probability", "give a number between 0 and 1")
    return p


@dataclass(frozen=True, slots=True)
class Planned:
    """One input the fuzzer decided on; ``args`` are the fields of the trace event."""

    kind: str
    args: tuple[tuple[str, object], ...]

    def get(self, key: str) -> object:
        return dict(self.args)[key]


@dataclass(frozen=True)
class FuzzState:
    """What the fuzzer may act on, all of it determined by earlier inputs; every list sorted."""

    live_switches: tuple[str, ...]
    failed_switches: tuple[str, ...]
    live_links: tuple[tuple[str, int, str, int], ...]      # switch-switch links that are up
    failed_links: tuple[tuple[str, int, str, int], ...]    # links the fuzzer failed
    alive_controllers: tuple[str, ...]
    crashed_controllers: tuple[str, ...]
    open_channels: tuple[tuple[str, str], ...]            # (switch, controller) not blocked
    blocked_channels: tuple[tuple[str, str], ...]
    hosts: tuple[str, ...]
    host_switch: dict[str, str]                            # host -> switch it is attached to
    switches: tuple[str, ...]
    links_into: tuple[tuple[str, int], ...] = ()           # (node, port) ends of live links
    # (controller, its configuration as data) for controllers whose config file the fuzzer may rewrite
    configs: tuple[tuple[str, dict], ...] = ()
    host_addrs: tuple[HostAddr, ...] = ()                  # what deny rules may name
    services: tuple[str, ...] = ()                         # addresses no host has that clients connect to


class Fuzzer:
    """Decides each round's inputs with one seeded RNG."""

    def __init__(self, rng: random.Random, rates: Rates, *, delay_seconds: float = 0.3) -> None:
        self.rng = rng
        self.rates = rates
        self.delay_seconds = delay_seconds

    def _hit(self, name: str) -> bool:
        p = self.rates.get(name)
        return p > 0 and self.rng.random() < p

    def _config_changes(self, s: FuzzState) -> list[Planned]:
        """Operator edits of each configurable controller's file: the whole new file, drawn from the RNG."""
        out = []
        for c, config in s.configs:
            if self._hit("config_change"):
                change = propose(config, self.rng, s.host_addrs)
                out.append(Planned("config_change", (("controller", c), ("config", change.config),
                                                     ("edit", change.edit))))
        return out

    def _traffic(self, s: FuzzState) -> list[Planned]:
        """Host-to-host traffic, and new TCP connections from a host to a service address
        (a load balancer's virtual IP): each one a SYN from a fresh source port."""
        out = []
        if len(s.hosts) >= 2 and self._hit("traffic"):
            src, dst = self.rng.sample(s.hosts, 2)
            out.append(Planned("traffic", (("host", src), ("dst", dst), ("what", self.rng.choice(TRAFFIC_KINDS)))))
        if s.services and s.hosts and self._hit("service_traffic"):
            src, service = self.rng.choice(s.hosts), self.rng.choice(s.services)
            out.append(Planned("traffic", (("host", src), ("dst_ip", service), ("what", "tcp_syn"))))
        return out

    def plan_round(self, s: FuzzState) -> list[Planned]:
        out: list[Planned] = []
        for sw in s.failed_switches:
            if self._hit("switch_recovery"):
                out.append(Planned("switch_recovery", (("switch", sw),)))
        for sw in s.live_switches:
            if self._hit("switch_failure"):
                out.append(Planned("switch_failure", (("switch", sw),)))
        for link in s.failed_links:
            if self._hit("link_recovery"):
                out.append(Planned("link_recovery", _link_args(link)))
        for link in s.live_links:
            if self._hit("link_failure"):
                out.append(Planned("link_failure", _link_args(link)))
        for c in s.crashed_controllers:
            if self._hit("controller_recovery"):
                out.append(Planned("controller_recovery", (("controller", c),)))
        for c in s.alive_controllers:
            if self._hit("controller_crash"):
                out.append(Planned("controller_crash", (("controller", c),)))
        for sw, c in s.blocked_channels:
            if self._hit("channel_unblock"):
                out.append(Planned("channel_unblock", (("switch", sw), ("controller", c))))
        for sw, c in s.open_channels:
            if self._hit("channel_block"):
                out.append(Planned("channel_block", (("switch", sw), ("controller", c))))
        if s.hosts and self._hit("host_migration"):
            host = self.rng.choice(s.hosts)
            targets = [sw for sw in s.switches if sw != s.host_switch[host]]
            if targets:
                out.append(Planned("host_migration", (("host", host), ("new_switch", self.rng.choice(targets)))))
        out.extend(self._traffic(s))
        if s.links_into and self._hit("dataplane_drop"):
            node, port = self.rng.choice(s.links_into)
            out.append(Planned("dataplane_drop", (("node", node), ("port", port))))
        if s.links_into and self._hit("dataplane_delay"):
            node, port = self.rng.choice(s.links_into)
            out.append(Planned("dataplane_delay", (("node", node), ("port", port),
                                                   ("seconds", self.delay_seconds))))
        out.extend(self._config_changes(s))
        if s.open_channels and self._hit("control_delay"):
            sw, c = self.rng.choice(s.open_channels)
            direction = self.rng.choice(("to_switch", "to_controller"))
            out.append(Planned("control_delay", (("switch", sw), ("controller", c), ("direction", direction),
                                                 ("seconds", self.delay_seconds))))
        return out


def _link_args(link: tuple[str, int, str, int]) -> tuple[tuple[str, object], ...]:
    n1, p1, n2, p2 = link
    return (("node1", n1), ("port1", p1), ("node2", n2), ("port2", p2))
