"""MAC and IPv4 addresses as ints inside the model, strings at the edges.

Ints make matching with wildcards and prefix masks a couple of bit
operations and keep packets cheap to hash; strings are what users read.
"""

from __future__ import annotations


def mac_to_int(mac: str | bytes | int) -> int:
    if isinstance(mac, int):
        return mac
    if isinstance(mac, (bytes, bytearray)):
        return int.from_bytes(mac, "big")
    return int(mac.replace(":", "").replace("-", ""), 16)


def int_to_mac(value: int) -> str:
    return value.to_bytes(6, "big").hex(":")   # "00:00:00:00:00:01": finding texts make many


def mac_to_bytes(value: int) -> bytes:
    return value.to_bytes(6, "big")


def ip_to_int(ip: str | bytes | int) -> int:
    if isinstance(ip, int):
        return ip
    if isinstance(ip, (bytes, bytearray)):
        return int.from_bytes(ip, "big")
    a, b, c, d = (int(x) for x in ip.split("."))
    return (a << 24) | (b << 16) | (c << 8) | d


def int_to_ip(value: int) -> str:
    return f"{(value >> 24) & 255}.{(value >> 16) & 255}.{(value >> 8) & 255}.{value & 255}"


BROADCAST_MAC = 0xFFFFFFFFFFFF
