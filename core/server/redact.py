"""Protobuf messages made safe to log: fields marked `[(si.v1.si_secret) = true]` lose their values.

`redacted(message)` is the message as a plain dict (field names as in the .proto, enums by name,
only fields that are set), walked recursively through sub-messages, repeated fields and maps, with
the whole value of every secret field replaced by REDACTED. Whatever a secret field holds (a string,
a list, a map), its content never reaches a log line; its presence still shows.
"""

from __future__ import annotations

import base64
from typing import Any

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from si.v1 import si_pb2

REDACTED = "<redacted>"


def is_secret(field: FieldDescriptor) -> bool:
    """Whether the field carries the `(si.v1.si_secret) = true` option."""
    return any(
        option.is_extension and option.number == si_pb2.SI_SECRET_FIELD_NUMBER and bool(value)
        for option, value in field.GetOptions().ListFields()
    )


def redacted(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for field, value in message.ListFields():
        out[field.name] = REDACTED if is_secret(field) else _field_value(field, value)
    return out


def _field_value(field: FieldDescriptor, value: Any) -> Any:
    if _is_map(field):
        assert field.message_type is not None  # a map field's entries are messages
        value_field = field.message_type.fields_by_name["value"]
        return {key: _single(value_field, item) for key, item in value.items()}
    if field.is_repeated:
        return [_single(field, item) for item in value]
    return _single(field, value)


def _single(field: FieldDescriptor, value: Any) -> Any:
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        return redacted(value)
    if field.type == FieldDescriptor.TYPE_ENUM:
        assert field.enum_type is not None
        named = field.enum_type.values_by_number.get(value)
        return named.name if named is not None else value
    if field.type == FieldDescriptor.TYPE_BYTES:
        return base64.b64encode(value).decode()  # as protobuf's JSON mapping writes bytes
    return value


def _is_map(field: FieldDescriptor) -> bool:
    return field.is_repeated and field.message_type is not None and field.message_type.GetOptions().map_entry
