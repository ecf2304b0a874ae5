"""Decode the pointer-generator "chunked" ``*.bin`` files the public Quora split is published as.

Why no TensorFlow: each file is a run of records, an 8-byte little-endian length then a serialized
``tf.train.Example``; reading the two byte features (``article``, ``abstract``) needs only a protobuf
varint walk, so fetching data never pulls a 500 MB framework. ``abstract`` wraps each sentence in
``<s> … </s>`` (pointer-generator's ``abstract2sents``); the paraphrase is those sentences joined.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

from bench.api.errors import DataError


def records(path: Path) -> Iterator[dict[str, bytes]]:
    """The byte features of each ``tf.train.Example`` in a chunk file, in file order."""
    data = path.read_bytes()
    pos = 0
    while pos < len(data):
        if pos + 8 > len(data):
            raise DataError(f"{path}: truncated record header at byte {pos}. Fix: fetch it again (--force).")
        (size,) = struct.unpack_from("<q", data, pos)
        start, pos = pos + 8, pos + 8 + size
        if size < 0 or pos > len(data):
            raise DataError(f"{path}: record at byte {start - 8} runs past the end. Fix: fetch it again (--force).")
        try:
            yield _example(data[start:pos])
        except (IndexError, ValueError) as exc:
            raise DataError(f"{path}: record at byte {start - 8} is not a tf.Example ({exc}).") from exc


def pair(features: dict[str, bytes]) -> tuple[str, str]:
    """(source question, paraphrase) of one record."""
    article = features.get("article", b"").decode("utf-8").strip()
    abstract = features.get("abstract", b"").decode("utf-8")
    sentences = []
    cur = 0
    while (start := abstract.find("<s>", cur)) >= 0 and (end := abstract.find("</s>", start + 3)) >= 0:
        sentences.append(abstract[start + 3 : end].strip())
        cur = end + 4
    return article, " ".join(sentences) if sentences else abstract.strip()


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def _fields(buf: bytes) -> Iterator[tuple[int, int, bytes | int]]:
    """(field number, wire type, value) of a protobuf message; length-delimited values as bytes."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
            yield number, wire, value
        elif wire == 2:
            size, pos = _varint(buf, pos)
            yield number, wire, buf[pos : pos + size]
            pos += size
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        else:
            raise ValueError(f"wire type {wire}")


def _example(buf: bytes) -> dict[str, bytes]:
    """Example{features=1: Features{feature=1: map<string, Feature{bytes_list=1: BytesList{value=1}}>}}."""
    out: dict[str, bytes] = {}
    for n, _, features in _fields(buf):
        if n != 1 or not isinstance(features, bytes):
            continue
        for m, _, entry in _fields(features):
            if m != 1 or not isinstance(entry, bytes):
                continue
            key, value = "", b""
            for k, _, part in _fields(entry):
                if k == 1 and isinstance(part, bytes):
                    key = part.decode("utf-8")
                elif k == 2 and isinstance(part, bytes):
                    for kind, _, lst in _fields(part):
                        if kind == 1 and isinstance(lst, bytes):
                            value = b"".join(v for i, _, v in _fields(lst) if i == 1 and isinstance(v, bytes))
            out[key] = value
    return out


def encode(features: dict[str, bytes]) -> bytes:
    """One chunk record (length + tf.Example) for ``features``: what tests and mirrors write."""

    def field(number: int, payload: bytes) -> bytes:
        return _encode_varint(number << 3 | 2) + _encode_varint(len(payload)) + payload

    entries = b"".join(field(1, field(1, k.encode()) + field(2, field(1, field(1, v))))
                       for k, v in features.items())
    message = field(1, entries)
    return struct.pack("<q", len(message)) + message


def _encode_varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)
