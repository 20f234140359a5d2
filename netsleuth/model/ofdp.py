"""The stand-in datapath os-ken's OpenFlow 1.0 classes need to be built.

os-ken's message constructors take a ``datapath`` only to reach the
``ofproto`` modules when serializing; netsleuth builds messages far from any
socket (in the switch model, in the model checker), so one shared stub
serves everywhere.
"""

from __future__ import annotations

from typing import Any

from os_ken.ofproto import ofproto_v1_0 as ofp
from os_ken.ofproto import ofproto_v1_0_parser as ofp_parser
from os_ken.ofproto import ofproto_v1_3 as ofp13
from os_ken.ofproto import ofproto_v1_3_parser as ofp13_parser


class _StubDatapath:
    ofproto = ofp
    ofproto_parser = ofp_parser
    id = None

    def set_xid(self, msg: Any) -> int:  # os-ken's serialize() never calls it, but some helpers do
        xid: int = msg.xid or 0
        return xid


DATAPATH = _StubDatapath()

__all__ = ["DATAPATH", "ofp", "ofp_parser"]


class _ModelDatapath13:
    """The same stand-in for os-ken's OpenFlow 1.3 classes (the 1.3 switch builds its replies with them)."""

    ofproto = ofp13
    ofproto_parser = ofp13_parser
    id = None

    def set_xid(self, msg: Any) -> int:
        return int(msg.xid or 0)


DATAPATH13 = _ModelDatapath13()

__all__ += ["DATAPATH13", "ofp13", "ofp13_parser"]
