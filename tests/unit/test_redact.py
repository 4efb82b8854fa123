"""Secret fields (`[(si.v1.si_secret) = true]`) never reach a log line, however deep they sit."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import structlog
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format
from google.protobuf.message import Message

from core.server.redact import REDACTED, is_secret, redacted
from rmclient.logging_setup import configure_logging
from si.v1 import si_pb2

SECRET = "hunter2-do-not-log"
F = descriptor_pb2.FieldDescriptorProto


def _field(message: descriptor_pb2.DescriptorProto, name: str, number: int, **kwargs: Any) -> F:
    secret = kwargs.pop("secret", False)
    field = message.field.add(name=name, number=number, label=kwargs.pop("label", F.LABEL_OPTIONAL), **kwargs)
    if secret:
        text_format.Parse("[si.v1.si_secret]: true", field.options)
    return field


def _map_entry(message: descriptor_pb2.DescriptorProto, name: str, value: dict[str, Any]) -> str:
    entry = message.nested_type.add(name=name)
    entry.options.map_entry = True
    _field(entry, "key", 1, type=F.TYPE_STRING)
    _field(entry, "value", 2, **value)
    return f".pykorn.test.{message.name}.{name}"


def _test_messages() -> tuple[type[Message], type[Message]]:
    """Inner {token (secret), name}; Outer with every place a secret can hide: a nested message, a
    repeated message, map values that are messages, and secret scalars, lists, maps and numbers."""
    pool = descriptor_pool.Default()
    try:
        outer = pool.FindMessageTypeByName("pykorn.test.Outer")
        inner = pool.FindMessageTypeByName("pykorn.test.Inner")
    except KeyError:
        proto = descriptor_pb2.FileDescriptorProto(
            name="pykorn_test/redact.proto",
            package="pykorn.test",
            syntax="proto3",
            dependency=["si/v1/si.proto"],
        )
        inner_proto = proto.message_type.add(name="Inner")
        _field(inner_proto, "token", 1, type=F.TYPE_STRING, secret=True)
        _field(inner_proto, "name", 2, type=F.TYPE_STRING)
        outer_proto = proto.message_type.add(name="Outer")
        by_name = _map_entry(
            outer_proto, "ByNameEntry", {"type": F.TYPE_MESSAGE, "type_name": ".pykorn.test.Inner"}
        )
        secret_map = _map_entry(outer_proto, "SecretMapEntry", {"type": F.TYPE_STRING})
        plain_map = _map_entry(outer_proto, "PlainMapEntry", {"type": F.TYPE_STRING})
        repeated = F.LABEL_REPEATED
        _field(outer_proto, "one", 1, type=F.TYPE_MESSAGE, type_name=".pykorn.test.Inner")
        _field(outer_proto, "many", 2, type=F.TYPE_MESSAGE, type_name=".pykorn.test.Inner", label=repeated)
        _field(outer_proto, "by_name", 3, type=F.TYPE_MESSAGE, type_name=by_name, label=repeated)
        _field(
            outer_proto,
            "secret_map",
            4,
            type=F.TYPE_MESSAGE,
            type_name=secret_map,
            label=repeated,
            secret=True,
        )
        _field(outer_proto, "plain_map", 5, type=F.TYPE_MESSAGE, type_name=plain_map, label=repeated)
        _field(outer_proto, "secret_list", 6, type=F.TYPE_STRING, label=repeated, secret=True)
        _field(outer_proto, "secret_number", 7, type=F.TYPE_INT64, secret=True)
        _field(outer_proto, "secret_blob", 8, type=F.TYPE_BYTES, secret=True)
        _field(outer_proto, "blob", 9, type=F.TYPE_BYTES)
        pool.Add(proto)
        outer = pool.FindMessageTypeByName("pykorn.test.Outer")
        inner = pool.FindMessageTypeByName("pykorn.test.Inner")
    return message_factory.GetMessageClass(outer), message_factory.GetMessageClass(inner)


def test_extra_config_of_registration_and_config_update_is_redacted() -> None:
    register = si_pb2.RegisterResourceManagerRequest(
        rmID="rm-1",
        version="v1",
        config="partitions: []",
        buildInfo={"commit": "abc"},
        extraConfig={"db.password": SECRET},
    )
    out = redacted(register)
    assert out == {
        "rmID": "rm-1",
        "version": "v1",
        "config": "partitions: []",
        "buildInfo": {"commit": "abc"},
        "extraConfig": REDACTED,
    }
    update = si_pb2.UpdateConfigurationRequest(rmID="rm-1", config="x", extraConfig={"token": SECRET})
    assert redacted(update)["extraConfig"] == REDACTED
    assert SECRET not in json.dumps(redacted(update))


def test_exactly_the_extra_config_fields_are_marked_secret() -> None:
    """Pins what the .proto marks: a secret field dropped from the .proto would be logged again."""
    marked = sorted(
        f"{message.name}.{field.name}"
        for message in si_pb2.DESCRIPTOR.message_types_by_name.values()
        for field in message.fields
        if is_secret(field)
    )
    assert marked == ["RegisterResourceManagerRequest.extraConfig", "UpdateConfigurationRequest.extraConfig"]


def test_secrets_are_found_in_nested_repeated_and_map_values() -> None:
    outer_cls, inner_cls = _test_messages()
    message = outer_cls(
        one=inner_cls(token=SECRET, name="first"),
        many=[inner_cls(token=SECRET + "-1", name="a"), inner_cls(name="b")],
        by_name={"k": inner_cls(token=SECRET + "-map", name="in-map")},
        secret_map={"user": SECRET + "-secret-map"},
        plain_map={"colour": "blue"},
        secret_list=[SECRET + "-list"],
        secret_number=424242,
        secret_blob=b"raw-secret-bytes",
        blob=b"\x01\x02",
    )
    out = redacted(message)
    assert out == {
        "one": {"token": REDACTED, "name": "first"},
        "many": [{"token": REDACTED, "name": "a"}, {"name": "b"}],
        "by_name": {"k": {"token": REDACTED, "name": "in-map"}},
        "secret_map": REDACTED,
        "plain_map": {"colour": "blue"},
        "secret_list": REDACTED,
        "secret_number": REDACTED,
        "secret_blob": REDACTED,
        "blob": "AQI=",
    }
    text = json.dumps(out)
    assert SECRET not in text and "424242" not in text and "raw-secret" not in text


def test_enums_are_named_and_unset_fields_left_out() -> None:
    node = si_pb2.NodeInfo(nodeID="n-1", action=si_pb2.NodeInfo.CREATE)
    assert redacted(node) == {"nodeID": "n-1", "action": "CREATE"}


@pytest.fixture
def restore_logging() -> Iterator[None]:
    saved = structlog.get_config()
    try:
        yield
    finally:
        structlog.configure(**saved)


def test_a_logged_request_never_shows_the_secret(
    restore_logging: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """Through the daemon's own structlog JSON pipeline, as the gRPC service logs a request."""
    configure_logging("debug", json=True)  # here, so it writes to the stderr capsys captures
    request = si_pb2.RegisterResourceManagerRequest(rmID="rm-1", extraConfig={"db.password": SECRET})
    structlog.get_logger("pykorn.test").debug("request received", request=redacted(request))
    [line] = capsys.readouterr().err.splitlines()
    event = json.loads(line)
    assert event["event"] == "request received"
    assert event["request"] == {"rmID": "rm-1", "extraConfig": REDACTED}
    assert SECRET not in line
