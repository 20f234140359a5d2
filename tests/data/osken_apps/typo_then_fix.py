"""A reactive os-ken hub that installs a wrong rule and removes it at once, once per switch.

Every packet-in is flooded with a PACKET_OUT (no flow entries: the hub stays
reactive, so every header is handled by the controller).  On the first
packet-in from a switch the app also sends two FLOW_MODs back to back: an
ADD of a rule sending TCP to port 22 out of port 99, which no switch has (a
blackhole), and a DELETE_STRICT of that same rule.  The blackhole lives for
exactly one message: a check once per round almost never sees it, a check
after every FLOW_MOD always does, and must call it transient and name both
messages.
"""

from os_ken.base import app_manager
from os_ken.controller import ofp_event
from os_ken.controller.handler import MAIN_DISPATCHER, set_ev_cls
from os_ken.ofproto import ofproto_v1_0


class TypoThenFix(app_manager.OSKenApp):
    OFP_VERSIONS = [ofproto_v1_0.OFP_VERSION]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fixed = set()

    @set_ev_cls(ofp_event.EventOFPPacketIn, MAIN_DISPATCHER)
    def _packet_in(self, ev):
        msg = ev.msg
        dp = msg.datapath
        ofp, parser = dp.ofproto, dp.ofproto_parser
        if dp.id not in self.fixed:
            self.fixed.add(dp.id)
            ssh = parser.OFPMatch(dl_type=0x0800, nw_proto=6, tp_dst=22)
            for command in (ofp.OFPFC_ADD, ofp.OFPFC_DELETE_STRICT):
                dp.send_msg(parser.OFPFlowMod(datapath=dp, match=ssh, cookie=0, command=command, idle_timeout=0,
                                              hard_timeout=0, priority=100,
                                              actions=[parser.OFPActionOutput(99)]))
        data = msg.data if msg.buffer_id == ofp.OFP_NO_BUFFER else None
        dp.send_msg(parser.OFPPacketOut(datapath=dp, buffer_id=msg.buffer_id, in_port=msg.in_port,
                                        actions=[parser.OFPActionOutput(ofp.OFPP_FLOOD)], data=data))
