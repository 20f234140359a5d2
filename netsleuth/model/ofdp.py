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


class _StubDatapath:
    ofproto = ofp
    ofproto_parser = ofp_parser
    id = None

    def set_xid(self, msg: Any) -> int:  # os-ken's serialize() never calls it, but some helpers do
        xid: int = msg.xid or 0
        return xid


DATAPATH = _StubDatapath()

__all__ = ["DATAPATH", "ofp", "ofp_parser"]
