"""Responses assembled from their items' wire bytes, framed as protobuf frames repeated fields.

An allocation goes back to its RM as the RM's own ask with its node set. Rebuilding that message from
a kept copy costs two copies per ask (keeping it, then adding it to the response) and a serialization;
kept as the bytes it came in, it goes out as those bytes with the node's field after them (protobuf
reads the last value of a field that occurs twice), framed as an item of the response's repeated field.
A `FramedResponse` is such a response: what a response stream needs of a message (its size, its bytes)
and a split between items for a client whose receive limit is lower.
"""

from __future__ import annotations

_ONE_BYTE = [bytes((value,)) for value in range(0x80)]
_LENGTH_DELIMITED = 2  # protobuf's wire type of strings, bytes and messages


def varint(value: int) -> bytes:
    """A non-negative integer as protobuf's base-128 varint."""
    if value < 0x80:
        return _ONE_BYTE[value]
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def tag(number: int) -> bytes:
    """The key of a length-delimited field (a string, bytes or a message) with this field number."""
    return varint(number << 3 | _LENGTH_DELIMITED)


def framed(field_tag: bytes, body: bytes) -> bytes:
    """`body` (a string's bytes or a serialized message) as one occurrence of the tagged field."""
    return field_tag + varint(len(body)) + body


class FramedResponse:
    """A response message of repeated message fields only, held as its items, each already framed
    with its field's tag: its bytes are their concatenation (protobuf keeps each field's items in the
    order they occur, whatever the fields' order)."""

    __slots__ = ("_size", "items")

    def __init__(self) -> None:
        self.items: list[bytes] = []
        self._size = 0

    def add(self, item: bytes) -> None:
        self.items.append(item)
        self._size += len(item)

    def ByteSize(self) -> int:  # a protobuf message's name: what counts sizes calls it
        return self._size

    def SerializeToString(self) -> bytes:
        return b"".join(self.items)

    def split(self, limit: int) -> list[bytes]:
        """The response as several, each at most `limit` bytes unless one item alone is larger, the
        items in their order."""
        parts: list[bytes] = []
        current: list[bytes] = []
        size = 0
        for item in self.items:
            if current and size + len(item) > limit:
                parts.append(b"".join(current))
                current, size = [], 0
            current.append(item)
            size += len(item)
        parts.append(b"".join(current))
        return parts
