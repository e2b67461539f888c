#!/usr/bin/env python3
"""Writes the seed corpora of the libFuzzer targets (corpus/<target>/).

The seeds are well-formed inputs in each target's input format (see the
header comment of each <target>.cc), encoded here by hand from the formats
of codec.h and proto/rolis/v1/*.proto, so that the fuzzer starts from inputs
that get past the first checks. Run it again after a format changes; the
files it writes are committed.
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


# --- the batch payload (codec.h) ---
def write(table, key, value=b"", flags=0, base_ts=0):
    out = struct.pack("<IB", table, flags)
    if flags == 2:
        out += struct.pack("<Q", base_ts)
    return out + struct.pack("<I", len(key)) + key + struct.pack("<I", len(value)) + value


def txn(ts, writes):
    return struct.pack("<QI", ts, len(writes)) + b"".join(writes)


def patch(runs):  # runs: [(offset, bytes)]
    return b"".join(struct.pack("<HH", off, len(b)) + b for off, b in runs)


PAYLOADS = {
    "empty": (0, 0, b""),
    "one_put": (1, 7, txn(7, [write(0, b"user1", b"value-1")])),
    "put_delete": (2, 9, txn(8, [write(0, b"a", b"1"), write(1, b"b", b"22")]) + txn(9, [write(0, b"a", flags=1)])),
    "patch": (1, 12, txn(12, [write(0, b"stock:1", patch([(4, b"abcd"), (40, b"xy")]), flags=2, base_ts=11)])),
    "many": (3, 30, b"".join(txn(10 * i, [write(i, b"k%d" % i, b"v" * (i * 5))]) for i in (1, 2, 3))),
}


# --- protobuf, by hand ---
def varint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def field(num, value):
    if isinstance(value, bytes):
        return varint(num << 3 | 2) + varint(len(value)) + value
    return varint(num << 3) + varint(value)


def fixed32(num, value):
    return varint(num << 3 | 5) + struct.pack("<I", value)


def batch(kind, epoch, last_ts, count=0, payload=b""):
    return (field(1, kind) + field(2, epoch) + field(3, last_ts) + field(5, payload) + field(6, count)
            + fixed32(7, crc32c(payload)))


def log_key(epoch, ts):
    return field(1, epoch) + field(2, ts)


def epoch_record(epoch, cut, config=0, members=()):
    out = field(1, epoch)
    for e, ts in cut.items():
        out += field(2, field(1, e) + field(2, ts))
    out += field(3, 1) + field(4, log_key(epoch - 1, 5)) + field(5, config)
    for mid, addr in members:
        out += field(6, field(1, mid) + field(2, addr))
    return out


def accept(epoch, stream, index, value, decided=None):
    out = field(1, epoch) + field(2, stream) + field(3, field(1, index) + field(2, epoch) + field(3, value))
    out += field(4, log_key(epoch, 3)) + field(5, 1) + field(6, 0) + field(7, index)
    if decided:
        out += field(8, decided)
    return out + field(9, b"10.0.0.1:7070")


def seeds():
    out = {"codec_decode_fuzz": {}, "accept_frame_fuzz": {}, "wire_fuzz": {}, "request_validation_fuzz": {}}
    for name, (count, last_ts, payload) in PAYLOADS.items():
        out["codec_decode_fuzz"][name] = struct.pack("<IQ", count, last_ts) + payload
    rec = epoch_record(3, {1: 9, 2: 4}, config=1, members=[(1, b"a:7001"), (2, b"b:7001"), (3, b"c:7001")])
    accepts = {
        "txns": accept(3, 0, 5, batch(1, 3, 9, 2, PAYLOADS["put_delete"][2]), rec),
        "patch": accept(3, 1, 6, batch(1, 3, 12, 1, PAYLOADS["patch"][2])),
        "heartbeat": accept(3, 1, 7, batch(1, 3, 14)),
        "noop": accept(3, 0, 2, batch(2, 3, 0)),
        "barrier": accept(3, 0, 3, batch(3, 3, 0), rec),
    }
    out["accept_frame_fuzz"].update(accepts)
    for name, a in accepts.items():
        out["wire_fuzz"]["accept_" + name] = b"\x00" + a
    slots = field(1, 0) + field(3, 4) + field(4, log_key(2, 8)) + field(5, 2)
    for i in range(3):
        slots += field(2, field(1, 4 + i) + field(2, 2) + field(3, batch(1, 2, 8 + i)))
    promise = field(1, 1) + field(2, 3) + field(4, rec) + field(5, 2) + field(9, 4) + field(10, 300) + field(11, 4)
    out["wire_fuzz"]["promise_reply"] = (b"\x01" + promise + field(12, rec) + field(3, slots)
                                         + field(3, field(1, 1) + field(3, 2)))
    for kind in (1, 2, 3, 4):
        ctl = field(1, kind) + field(2, 2) + field(3, 3) + field(4, 258) + field(5, rec) + field(6, epoch_record(2, {1: 9}))
        out["wire_fuzz"]["control_%d" % kind] = b"\x02" + ctl
    out["wire_fuzz"]["control_reply"] = b"\x03" + field(1, 1) + field(2, 2) + field(3, 258) + field(5, rec)
    out["wire_fuzz"]["epoch_record"] = b"\x04" + rec
    out["wire_fuzz"]["accept_reply"] = b"\x05" + field(1, 1) + field(2, 3) + field(6, 12) + field(7, 10)
    # A peek from slot 12 of stream 0 and none of stream 1 (packed), and a Prepare.
    packed = varint(12) + varint(2**64 - 1)
    out["wire_fuzz"]["promise_peek"] = b"\x06" + field(1, 3) + field(2, 2) + field(3, packed) + field(4, 1)
    out["wire_fuzz"]["promise_prepare"] = b"\x06" + field(1, 4) + field(2, 1)

    def op(kind, key, value=b"", table=b"", **kw):
        out = field(1, kind) + (field(2, table) if table else b"") + field(3, key)
        if value:
            out += field(4, value)
        for num, v in kw.items():
            out += field(int(num[1:]), v)
        return out

    reqs = {
        "put_get": field(1, op(2, b"k1", b"v1")) + field(1, op(1, b"k1")),
        "scan": field(1, op(5, b"a", f7=b"z", f8=10)),
        "put_if": field(1, op(4, b"k1", b"v2", f5=b"v1")) + field(1, op(4, b"k2", b"v", f6=1)),
        "delete_other": field(1, op(3, b"k1", table=b"other")) + field(3, 2),
        "bad_table": field(1, op(2, b"k", b"v", table=b"nope")),
        "empty_key": field(1, op(2, b"", b"v")),
    }
    for name, r in reqs.items():
        out["request_validation_fuzz"]["execute_" + name] = b"\x00\x00" + r
        out["request_validation_fuzz"]["interactive_" + name] = b"\x01\x00" + r
        out["request_validation_fuzz"]["abort_" + name] = b"\x01\x01" + r
    return out


def main():
    for target, files in seeds().items():
        d = os.path.join(HERE, "corpus", target)
        os.makedirs(d, exist_ok=True)
        for name, data in files.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
