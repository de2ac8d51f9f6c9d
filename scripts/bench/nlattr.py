"""Netlink attributes, as the bench's own netlink speakers (floor.py over
rtnetlink, taskstats.py over generic netlink) build and read them."""

import struct


def attr(kind, payload):
    """One attribute: length, type, payload, padded to 4 bytes."""
    pad = (4 - len(payload) % 4) % 4
    return struct.pack("HH", 4 + len(payload), kind) + payload + b"\0" * pad


def attrs(data):
    """(type, payload) of each attribute in data (nested and byte-order
    flags masked off)."""
    off = 0
    while off + 4 <= len(data):
        length, kind = struct.unpack_from("HH", data, off)
        if length < 4:
            break
        yield kind & 0x3FFF, data[off + 4:off + length]
        off += (length + 3) & ~3
