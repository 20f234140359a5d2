"""A reactive os-ken hub with an ARP filter on s1 (dpid 1) only.

Every packet-in is flooded with a PACKET_OUT.  When s1 connects the app installs a rule that
matches every ARP frame and has no actions: s1 drops ARP.  Hosts behind other switches reach
each other; h1 (on s1) resolves nobody and nobody resolves h1, so ping fails for every pair
with h1 in it, and only the rule says why.
"""

from os_ken.base import app_manager
from os_ken.controller import ofp_event
from os_ken.controller.handler import CONFIG_DISPATCHER, MAIN_DISPATCHER, set_ev_cls
from os_ken.ofproto import ofproto_v1_0


class ArpFilterHub(app_manager.OSKenApp):
    OFP_VERSIONS = [ofproto_v1_0.OFP_VERSION]

    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
    def _features(self, ev):
        dp = ev.msg.datapath
        if dp.id == 1:
            ofp, parser = dp.ofproto, dp.ofproto_parser
            dp.send_msg(parser.OFPFlowMod(datapath=dp, match=parser.OFPMatch(dl_type=0x0806),
                                          command=ofp.OFPFC_ADD, priority=200, actions=[]))

    @set_ev_cls(ofp_event.EventOFPPacketIn, MAIN_DISPATCHER)
    def _packet_in(self, ev):
        msg = ev.msg
        dp = msg.datapath
        ofp, parser = dp.ofproto, dp.ofproto_parser
        data = msg.data if msg.buffer_id == ofp.OFP_NO_BUFFER else None
        dp.send_msg(parser.OFPPacketOut(datapath=dp, buffer_id=msg.buffer_id, in_port=msg.in_port,
                                        actions=[parser.OFPActionOutput(ofp.OFPP_FLOOD)], data=data))
