"""What a switch hands back: messages for controllers and packets leaving its ports.

Its own module so that the switch and its per-version parts
(:mod:`~netsleuth.model.switch`, :mod:`~netsleuth.model.switch13`) share
them without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from netsleuth.model.packet import Packet


@dataclass(frozen=True, slots=True)
class ToController:
    """A message for the controller on connection ``conn`` (None: every connection)."""

    conn: int | None
    msg: Any


@dataclass(frozen=True, slots=True)
class Emit:
    """A packet leaving the switch on ``port``."""

    port: int
    packet: Packet
    tag: Any = None


__all__ = ["Emit", "ToController"]
