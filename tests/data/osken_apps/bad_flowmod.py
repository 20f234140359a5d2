"""A reactive os-ken hub that also sends one FLOW_MOD every switch refuses, once per switch.

Every packet-in is flooded with a PACKET_OUT, so hosts reach each other.  On a switch's first
packet-in the app installs a rule meant to send LLDP to the controller, but with a mistake many
hand-written apps make: the output port is 0 (no such port; OFPP_CONTROLLER was meant).  The
switch answers with ERROR BAD_ACTION/BAD_OUT_PORT, as Open vSwitch does, and the app never
notices: only the ERROR tells.
"""

from os_ken.base import app_manager
from os_ken.controller import ofp_event
from os_ken.controller.handler import MAIN_DISPATCHER, set_ev_cls
from os_ken.ofproto import ofproto_v1_0


class BadFlowMod(app_manager.OSKenApp):
    OFP_VERSIONS = [ofproto_v1_0.OFP_VERSION]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.sent = set()

    @set_ev_cls(ofp_event.EventOFPPacketIn, MAIN_DISPATCHER)
    def _packet_in(self, ev):
        msg = ev.msg
        dp = msg.datapath
        ofp, parser = dp.ofproto, dp.ofproto_parser
        if dp.id not in self.sent:
            self.sent.add(dp.id)
            match = parser.OFPMatch(dl_type=0x88CC)
            dp.send_msg(parser.OFPFlowMod(datapath=dp, match=match, command=ofp.OFPFC_ADD, priority=100,
                                          actions=[parser.OFPActionOutput(0)]))
        data = msg.data if msg.buffer_id == ofp.OFP_NO_BUFFER else None
        dp.send_msg(parser.OFPPacketOut(datapath=dp, buffer_id=msg.buffer_id, in_port=msg.in_port,
                                        actions=[parser.OFPActionOutput(ofp.OFPP_FLOOD)], data=data))
