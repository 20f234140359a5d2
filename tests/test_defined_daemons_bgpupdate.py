"""The relay's own UPDATE decoder gives os-ken's words for every UPDATE it takes, and leaves the rest to os-ken."""

from __future__ import annotations

import random
import struct

from netsleuth.defined.daemons import bgpupdate
from netsleuth.defined.daemons.wire import describe, describe_with_os_ken


def bgp_update(withdrawn: bytes, attrs: bytes, nlri: bytes) -> bytes:
    body = struct.pack("!H", len(withdrawn)) + withdrawn + struct.pack("!H", len(attrs)) + attrs + nlri
    return b"\xff" * 16 + struct.pack("!HB", 19 + len(body), 2) + body


def attr(flags: int, kind: int, value: bytes) -> bytes:
    if flags & 0x10:
        return bytes([flags, kind]) + struct.pack("!H", len(value)) + value
    return bytes([flags, kind, len(value)]) + value


def as_path(*segs: tuple[int, list[int]], size: int = 4) -> bytes:
    fmt = "!I" if size == 4 else "!H"
    return attr(0x40, 2, b"".join(bytes([k, len(a)]) + b"".join(struct.pack(fmt, x) for x in a) for k, a in segs))


ORIGIN = attr(0x40, 1, b"\x00")
NH = attr(0x40, 3, bytes([10, 0, 1, 2]))
MED = attr(0x80, 4, struct.pack("!I", 7))
LOCAL_PREF = attr(0x40, 5, struct.pack("!I", 100))
NLRI = bytes([24, 203, 0, 113, 32, 10, 255, 0, 3, 0, 8, 10])
WITHDRAWN = bytes([16, 198, 51, 30, 10, 0, 0, 1])

PLAIN = [
    bgp_update(b"", ORIGIN + as_path((2, [65001, 65002])) + NH + MED, NLRI),
    bgp_update(WITHDRAWN, b"", b""),
    bgp_update(WITHDRAWN, ORIGIN + as_path((2, [65003]), (1, [65009, 65004, 65009])) + NH, NLRI[:4]),
    bgp_update(b"", ORIGIN + as_path((2, [3, 65001]), size=2) + NH + LOCAL_PREF, NLRI),     # 2-byte AS numbers
    bgp_update(b"", ORIGIN + as_path((2, [65001]), size=2) + as_path((2, [65002])) + NH, NLRI),   # the last path counts
    bgp_update(b"", ORIGIN + attr(0x50, 2, as_path((2, [65001]))[3:]) + MED + NH, NLRI),     # extended length
    bgp_update(b"", ORIGIN + as_path() + NH, NLRI),                                          # an empty path (iBGP)
]


def test_the_updates_bird_and_frr_send_are_decoded_without_os_ken_as_os_ken_decodes_them():
    for msg in PLAIN:
        fast = bgpupdate.decode(msg)
        assert fast is not None and fast == describe_with_os_ken(msg)
        assert list(fast) == list(describe_with_os_ken(msg))   # the same words in the same order
    assert describe(PLAIN[2])["as_path"] == [65003, 65004, 65009]   # an AS_SET sorted, once each


def test_any_other_update_goes_to_os_ken():
    community = attr(0xC0, 8, struct.pack("!I", 65001 << 16 | 1))
    unusual = [
        bgp_update(b"", ORIGIN + as_path((2, [65001])) + NH + community, NLRI),   # an attribute it does not read
        bgp_update(b"", ORIGIN + attr(0x40, 3, b"\x0a\x00\x01"), NLRI),            # a NEXT_HOP of 3 bytes
        bgp_update(b"", ORIGIN + as_path((3, [65001])), NLRI),                     # an unknown segment type
        bgp_update(b"", ORIGIN, bytes([40, 1, 2, 3, 4, 5])),                       # a prefix longer than 32 bits
        bgp_update(b"", ORIGIN, bytes([24, 10, 0])),                               # a prefix cut short
    ]
    for msg in unusual:
        assert bgpupdate.decode(msg) is None
    assert describe(unusual[0]) == {"type": "UPDATE", **describe_with_os_ken(unusual[0])}


def test_a_damaged_update_is_decoded_as_os_ken_decodes_it_or_left_to_os_ken():
    rng = random.Random(7)
    taken = 0
    for _ in range(3000):
        msg = bytearray(rng.choice(PLAIN))
        for _ in range(rng.randint(1, 3)):   # damage some bytes of the body, keep the header's length
            i = rng.randrange(19, len(msg))
            msg[i] = rng.randrange(256) if rng.random() < 0.5 else msg[i] ^ (1 << rng.randrange(8))
        fast = bgpupdate.decode(bytes(msg))
        if fast is not None:
            taken += 1
            assert fast == describe_with_os_ken(bytes(msg)), bytes(msg).hex()
    assert taken > 300   # the comparison ran on many damaged messages, not only on refused ones
