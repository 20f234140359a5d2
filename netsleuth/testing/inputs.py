"""The inputs a test (or Hypothesis) applies to a live network, one small value each.

They are the fuzzer's input kinds (world/world.py) in the form a test reads
and Hypothesis prints: `Send("h1", "h2")`, `Move("h2", "s3")`. Each says in
plain words what it does (:meth:`words`) and applies itself to a live handle
(:meth:`apply`), which records it in the trace as the World's typed input
event with its dependencies, so `netsleuth replay` re-runs it.

They carry only what a test decides; what follows from the network's state
(the free port a moved host gets, the failure a recovery depends on) the
World decides and records, exactly as for the fuzzer's inputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

TRAFFIC_KINDS = ("icmp", "arp", "tcp_syn")


class InputTarget(Protocol):
    """What an input does to a network: the live handle of ``testing.network`` has these (and more).
    Named here, not imported, so the handle and its inputs do not import each other."""

    def send(self, *args: Any, **kwargs: Any) -> Any: ...
    def migrate(self, *args: Any, **kwargs: Any) -> Any: ...
    def fail_link(self, *args: Any, **kwargs: Any) -> Any: ...
    def recover_link(self, *args: Any, **kwargs: Any) -> Any: ...
    def fail_switch(self, *args: Any, **kwargs: Any) -> Any: ...
    def recover_switch(self, *args: Any, **kwargs: Any) -> Any: ...
    def crash_controller(self, *args: Any, **kwargs: Any) -> Any: ...
    def restart_controller(self, *args: Any, **kwargs: Any) -> Any: ...


class NetworkInput(Protocol):
    def words(self) -> str: ...
    def apply(self, net: InputTarget) -> None: ...


@dataclass(frozen=True)
class Send:
    """Host ``src`` sends ``dst`` one packet: an ICMP echo (ARP first if needed), an ARP request or a TCP SYN."""

    src: str
    dst: str
    what: str = "icmp"

    def words(self) -> str:
        what = {"icmp": "pings", "arp": "ARPs for", "tcp_syn": "sends a TCP SYN to"}.get(self.what, self.what)
        return f"{self.src} {what} {self.dst}"

    def apply(self, net: InputTarget) -> None:
        net.send(self.src, self.dst, self.what)


@dataclass(frozen=True)
class Move:
    """Host ``host`` is unplugged and plugged into the next free port of ``switch``."""

    host: str
    switch: str

    def words(self) -> str:
        return f"{self.host} moves to {self.switch}"

    def apply(self, net: InputTarget) -> None:
        net.migrate(self.host, self.switch)


@dataclass(frozen=True)
class FailLink:
    """The link between nodes ``a`` and ``b`` goes down."""

    a: str
    b: str

    def words(self) -> str:
        return f"link {self.a}-{self.b} fails"

    def apply(self, net: InputTarget) -> None:
        net.fail_link(self.a, self.b)


@dataclass(frozen=True)
class RecoverLink:
    """The link between nodes ``a`` and ``b`` comes back."""

    a: str
    b: str

    def words(self) -> str:
        return f"link {self.a}-{self.b} recovers"

    def apply(self, net: InputTarget) -> None:
        net.recover_link(self.a, self.b)


@dataclass(frozen=True)
class FailSwitch:
    """Switch ``switch`` powers off: its control connections drop, its table is lost."""

    switch: str

    def words(self) -> str:
        return f"switch {self.switch} fails"

    def apply(self, net: InputTarget) -> None:
        net.fail_switch(self.switch)


@dataclass(frozen=True)
class RecoverSwitch:
    """Switch ``switch`` powers on with an empty table and reconnects."""

    switch: str

    def words(self) -> str:
        return f"switch {self.switch} recovers"

    def apply(self, net: InputTarget) -> None:
        net.recover_switch(self.switch)


@dataclass(frozen=True)
class CrashController:
    """The controller process is killed (SIGKILL)."""

    controller: str = "c0"

    def words(self) -> str:
        return f"controller {self.controller} crashes"

    def apply(self, net: InputTarget) -> None:
        net.crash_controller(self.controller)


@dataclass(frozen=True)
class RestartController:
    """The controller process starts again and the live switches reconnect to it."""

    controller: str = "c0"

    def words(self) -> str:
        return f"controller {self.controller} restarts"

    def apply(self, net: InputTarget) -> None:
        net.restart_controller(self.controller)


def describe_inputs(inputs: list[NetworkInput] | tuple[NetworkInput, ...]) -> str:
    """The sequence in plain words, one numbered line per input."""
    return "\n".join(f"  {k}. {i.words()}" for k, i in enumerate(inputs, 1)) or "  (no inputs)"


__all__ = ["NetworkInput", "Send", "Move", "FailLink", "RecoverLink", "FailSwitch", "RecoverSwitch",
           "CrashController", "RestartController", "describe_inputs", "TRAFFIC_KINDS"]
