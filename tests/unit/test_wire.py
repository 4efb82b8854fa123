"""Pins the wire: every message, field, number, type, enum value and reservation of YuniKorn's si.proto.

The tables below were read off apache/yunikorn-scheduler-interface's si.proto. A client generated from
that file talks to pykorn only while every row here holds for our descriptor; pykorn's own additions
must not reuse any number or name upstream uses or reserves.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

import pytest
from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor

from core.events import ChangeDetail, ChangeType, EventType
from core.scheduler.commands import NodeAction
from core.scheduler.results import Termination
from si.v1 import si_pb2

# message -> ({field: (number, type, label)}, reserved number ranges (inclusive), reserved names)
UPSTREAM_MESSAGES: dict[str, tuple[dict[str, tuple[int, str, str]], list[tuple[int, int]], list[str]]] = {
    "si.v1.RegisterResourceManagerRequest": (
        {
            "rmID": (1, "string", "optional"),
            "version": (2, "string", "optional"),
            "policyGroup": (3, "string", "optional"),
            "buildInfo": (4, "si.v1.RegisterResourceManagerRequest.BuildInfoEntry", "repeated"),
            "config": (5, "string", "optional"),
            "extraConfig": (6, "si.v1.RegisterResourceManagerRequest.ExtraConfigEntry", "repeated"),
        },
        [],
        [],
    ),
    "si.v1.RegisterResourceManagerResponse": (
        {},
        [],
        [],
    ),
    "si.v1.AllocationRequest": (
        {
            "releases": (2, "si.v1.AllocationReleasesRequest", "optional"),
            "rmID": (3, "string", "optional"),
            "allocations": (4, "si.v1.Allocation", "repeated"),
        },
        [(1, 1)],
        ["asks"],
    ),
    "si.v1.ApplicationRequest": (
        {
            "new": (1, "si.v1.AddApplicationRequest", "repeated"),
            "remove": (2, "si.v1.RemoveApplicationRequest", "repeated"),
            "rmID": (3, "string", "optional"),
        },
        [],
        [],
    ),
    "si.v1.NodeRequest": (
        {"nodes": (1, "si.v1.NodeInfo", "repeated"), "rmID": (2, "string", "optional")},
        [],
        [],
    ),
    "si.v1.AllocationResponse": (
        {
            "new": (1, "si.v1.Allocation", "repeated"),
            "released": (2, "si.v1.AllocationRelease", "repeated"),
            "rejectedAllocations": (5, "si.v1.RejectedAllocation", "repeated"),
        },
        [(3, 3), (4, 4)],
        ["releasedAsks", "rejected"],
    ),
    "si.v1.ApplicationResponse": (
        {
            "rejected": (1, "si.v1.RejectedApplication", "repeated"),
            "accepted": (2, "si.v1.AcceptedApplication", "repeated"),
            "updated": (3, "si.v1.UpdatedApplication", "repeated"),
        },
        [],
        [],
    ),
    "si.v1.NodeResponse": (
        {
            "rejected": (1, "si.v1.RejectedNode", "repeated"),
            "accepted": (2, "si.v1.AcceptedNode", "repeated"),
        },
        [],
        [],
    ),
    "si.v1.UpdatedApplication": (
        {
            "applicationID": (1, "string", "optional"),
            "state": (2, "string", "optional"),
            "stateTransitionTimestamp": (3, "int64", "optional"),
            "message": (4, "string", "optional"),
        },
        [],
        [],
    ),
    "si.v1.RejectedApplication": (
        {"applicationID": (1, "string", "optional"), "reason": (2, "string", "optional")},
        [],
        [],
    ),
    "si.v1.AcceptedApplication": (
        {"applicationID": (1, "string", "optional")},
        [],
        [],
    ),
    "si.v1.RejectedNode": (
        {"nodeID": (1, "string", "optional"), "reason": (2, "string", "optional")},
        [],
        [],
    ),
    "si.v1.AcceptedNode": (
        {"nodeID": (1, "string", "optional")},
        [],
        [],
    ),
    "si.v1.Resource": (
        {"resources": (1, "si.v1.Resource.ResourcesEntry", "repeated")},
        [],
        [],
    ),
    "si.v1.Quantity": (
        {"value": (1, "int64", "optional")},
        [],
        [],
    ),
    "si.v1.PreemptionPolicy": (
        {"allowPreemptSelf": (1, "bool", "optional"), "allowPreemptOther": (2, "bool", "optional")},
        [],
        [],
    ),
    "si.v1.AddApplicationRequest": (
        {
            "applicationID": (1, "string", "optional"),
            "queueName": (2, "string", "optional"),
            "partitionName": (3, "string", "optional"),
            "ugi": (4, "si.v1.UserGroupInformation", "optional"),
            "tags": (5, "si.v1.AddApplicationRequest.TagsEntry", "repeated"),
            "executionTimeoutMilliSeconds": (6, "int64", "optional"),
            "placeholderAsk": (7, "si.v1.Resource", "optional"),
            "gangSchedulingStyle": (8, "string", "optional"),
        },
        [],
        [],
    ),
    "si.v1.RemoveApplicationRequest": (
        {"applicationID": (1, "string", "optional"), "partitionName": (2, "string", "optional")},
        [],
        [],
    ),
    "si.v1.UserGroupInformation": (
        {"user": (1, "string", "optional"), "groups": (2, "string", "repeated")},
        [],
        [],
    ),
    "si.v1.Allocation": (
        {
            "allocationKey": (1, "string", "optional"),
            "allocationTags": (2, "si.v1.Allocation.AllocationTagsEntry", "repeated"),
            "resourcePerAlloc": (5, "si.v1.Resource", "optional"),
            "priority": (6, "int32", "optional"),
            "nodeID": (8, "string", "optional"),
            "applicationID": (9, "string", "optional"),
            "partitionName": (10, "string", "optional"),
            "taskGroupName": (11, "string", "optional"),
            "placeholder": (12, "bool", "optional"),
            "originator": (14, "bool", "optional"),
            "preemptionPolicy": (15, "si.v1.PreemptionPolicy", "optional"),
        },
        [(7, 7), (3, 3), (13, 13)],
        ["queueName", "UUID", "allocationID"],
    ),
    "si.v1.AllocationReleasesRequest": (
        {"allocationsToRelease": (1, "si.v1.AllocationRelease", "repeated")},
        [(2, 2)],
        ["allocationAsksToRelease"],
    ),
    "si.v1.AllocationRelease": (
        {
            "partitionName": (1, "string", "optional"),
            "applicationID": (2, "string", "optional"),
            "terminationType": (4, "si.v1.TerminationType", "optional"),
            "message": (5, "string", "optional"),
            "allocationKey": (6, "string", "optional"),
        },
        [(3, 3), (7, 7)],
        ["UUID", "allocationID"],
    ),
    "si.v1.NodeInfo": (
        {
            "nodeID": (1, "string", "optional"),
            "action": (2, "si.v1.NodeInfo.ActionFromRM", "optional"),
            "attributes": (3, "si.v1.NodeInfo.AttributesEntry", "repeated"),
            "schedulableResource": (4, "si.v1.Resource", "optional"),
        },
        [(6, 6), (5, 5)],
        ["existingAllocations", "occupiedResource"],
    ),
    "si.v1.RejectedAllocation": (
        {
            "allocationKey": (1, "string", "optional"),
            "applicationID": (2, "string", "optional"),
            "reason": (3, "string", "optional"),
        },
        [],
        [],
    ),
    "si.v1.PredicatesArgs": (
        {
            "allocationKey": (1, "string", "optional"),
            "nodeID": (2, "string", "optional"),
            "allocate": (3, "bool", "optional"),
        },
        [],
        [],
    ),
    "si.v1.PreemptionPredicatesArgs": (
        {
            "allocationKey": (1, "string", "optional"),
            "nodeID": (2, "string", "optional"),
            "preemptAllocationKeys": (3, "string", "repeated"),
            "startIndex": (4, "int32", "optional"),
        },
        [],
        [],
    ),
    "si.v1.PreemptionPredicatesResponse": (
        {"success": (1, "bool", "optional"), "index": (2, "int32", "optional")},
        [],
        [],
    ),
    "si.v1.UpdateContainerSchedulingStateRequest": (
        {
            "applicationID": (1, "string", "optional"),
            "allocationKey": (2, "string", "optional"),
            "state": (3, "si.v1.UpdateContainerSchedulingStateRequest.SchedulingState", "optional"),
            "reason": (4, "string", "optional"),
        },
        [],
        [],
    ),
    "si.v1.UpdateConfigurationRequest": (
        {
            "rmID": (2, "string", "optional"),
            "policyGroup": (3, "string", "optional"),
            "config": (4, "string", "optional"),
            "extraConfig": (5, "si.v1.UpdateConfigurationRequest.ExtraConfigEntry", "repeated"),
        },
        [(1, 1)],
        ["configs"],
    ),
    "si.v1.EventRecord": (
        {
            "type": (1, "si.v1.EventRecord.Type", "optional"),
            "objectID": (2, "string", "optional"),
            "message": (5, "string", "optional"),
            "timestampNano": (6, "int64", "optional"),
            "eventChangeType": (7, "si.v1.EventRecord.ChangeType", "optional"),
            "eventChangeDetail": (8, "si.v1.EventRecord.ChangeDetail", "optional"),
            "referenceID": (9, "string", "optional"),
            "resource": (10, "si.v1.Resource", "optional"),
        },
        [(3, 3), (4, 4)],
        ["groupID", "reason"],
    ),
}
# enum -> ({value name: number}, reserved number ranges (inclusive), reserved names)
UPSTREAM_ENUMS: dict[str, tuple[dict[str, int], list[tuple[int, int]], list[str]]] = {
    "si.v1.NodeInfo.ActionFromRM": (
        {
            "UNKNOWN_ACTION_FROM_RM": 0,
            "CREATE": 1,
            "UPDATE": 2,
            "DRAIN_NODE": 3,
            "DECOMISSION": 4,
            "DRAIN_TO_SCHEDULABLE": 5,
            "CREATE_DRAIN": 6,
        },
        [],
        [],
    ),
    "si.v1.UpdateContainerSchedulingStateRequest.SchedulingState": (
        {"UNKNOWN_SCHEDULING_STATE": 0, "SKIPPED": 1, "SCHEDULED": 2, "RESERVED": 3, "FAILED": 4},
        [],
        [],
    ),
    "si.v1.EventRecord.Type": (
        {"UNKNOWN_EVENTRECORD_TYPE": 0, "REQUEST": 1, "APP": 2, "NODE": 3, "QUEUE": 4, "USERGROUP": 5},
        [],
        [],
    ),
    "si.v1.EventRecord.ChangeType": ({"NONE": 0, "SET": 1, "ADD": 2, "REMOVE": 3}, [], []),
    "si.v1.EventRecord.ChangeDetail": (
        {
            "DETAILS_NONE": 0,
            "REQUEST_CANCEL": 100,
            "REQUEST_ALLOC": 101,
            "REQUEST_TIMEOUT": 102,
            "APP_ALLOC": 200,
            "APP_REQUEST": 201,
            "APP_REJECT": 202,
            "APP_NEW": 203,
            "APP_ACCEPTED": 204,
            "APP_RUNNING": 206,
            "APP_COMPLETING": 207,
            "APP_COMPLETED": 208,
            "APP_FAILING": 209,
            "APP_FAILED": 210,
            "APP_RESUMING": 211,
            "APP_EXPIRED": 212,
            "APP_CANNOTRUN_QUEUE": 213,
            "APP_RUNNABLE_QUEUE": 214,
            "APP_CANNOTRUN_QUOTA": 215,
            "APP_RUNNABLE_QUOTA": 216,
            "NODE_DECOMISSION": 300,
            "NODE_SCHEDULABLE": 302,
            "NODE_ALLOC": 303,
            "NODE_CAPACITY": 304,
            "NODE_OCCUPIED": 305,
            "NODE_RESERVATION": 306,
            "QUEUE_CONFIG": 400,
            "QUEUE_DYNAMIC": 401,
            "QUEUE_TYPE": 402,
            "QUEUE_MAX": 403,
            "QUEUE_GUARANTEED": 404,
            "QUEUE_APP": 405,
            "QUEUE_ALLOC": 406,
            "QUEUE_PREEMPTION": 407,
            "ALLOC_CANCEL": 500,
            "ALLOC_PREEMPT": 501,
            "ALLOC_TIMEOUT": 502,
            "ALLOC_REPLACED": 503,
            "ALLOC_NODEREMOVED": 504,
            "UG_USER_LIMIT": 600,
            "UG_GROUP_LIMIT": 601,
            "UG_APP_LINK": 602,
            "UG_USER_RESOURCE": 603,
            "UG_GROUP_RESOURCE": 604,
        },
        [(205, 205), (301, 301)],
        ["APP_STARTING", "NODE_READY"],
    ),
    "si.v1.TerminationType": (
        {
            "UNKNOWN_TERMINATION_TYPE": 0,
            "STOPPED_BY_RM": 1,
            "TIMEOUT": 2,
            "PREEMPTED_BY_SCHEDULER": 3,
            "PLACEHOLDER_REPLACED": 4,
        },
        [],
        [],
    ),
}
# rpc -> (request, response, client streaming, server streaming)
UPSTREAM_METHODS: dict[str, tuple[str, str, bool, bool]] = {
    "RegisterResourceManager": (
        "si.v1.RegisterResourceManagerRequest",
        "si.v1.RegisterResourceManagerResponse",
        False,
        False,
    ),
    "UpdateAllocation": ("si.v1.AllocationRequest", "si.v1.AllocationResponse", True, True),
    "UpdateApplication": ("si.v1.ApplicationRequest", "si.v1.ApplicationResponse", True, True),
    "UpdateNode": ("si.v1.NodeRequest", "si.v1.NodeResponse", True, True),
}

PYKORN_ADDED_METHODS = {
    "UpdateConfiguration": (
        "si.v1.UpdateConfigurationRequest",
        "si.v1.UpdateConfigurationResponse",
        False,
        False,
    ),
    "DryRunConfiguration": (
        "si.v1.UpdateConfigurationRequest",
        "si.v1.DryRunConfigurationResponse",
        False,
        False,
    ),
    "StreamEvents": ("si.v1.EventStreamRequest", "si.v1.EventStreamResponse", False, True),
}

_TYPE_NAMES: dict[int, str] = {
    v: k.replace("TYPE_", "").lower() for k, v in descriptor_pb2.FieldDescriptorProto.Type.items()
}


def _type_of(field: FieldDescriptor) -> str:
    if field.message_type is not None:
        return field.message_type.full_name
    if field.enum_type is not None:
        return field.enum_type.full_name
    return _TYPE_NAMES[field.type]


def _label_of(field: FieldDescriptor) -> str:
    return "repeated" if field.is_repeated else "optional"


def _message(full_name: str) -> Descriptor:
    return si_pb2.DESCRIPTOR.pool.FindMessageTypeByName(full_name)


def _enum(full_name: str) -> EnumDescriptor:
    return si_pb2.DESCRIPTOR.pool.FindEnumTypeByName(full_name)


def _reserved(desc: Descriptor | EnumDescriptor) -> tuple[list[tuple[int, int]], list[str]]:
    proto: descriptor_pb2.DescriptorProto | descriptor_pb2.EnumDescriptorProto
    if isinstance(desc, Descriptor):
        proto = descriptor_pb2.DescriptorProto()
        desc.CopyToProto(proto)
        ranges = [(r.start, r.end - 1) for r in proto.reserved_range]  # message ranges are end-exclusive
    else:
        proto = descriptor_pb2.EnumDescriptorProto()
        desc.CopyToProto(proto)
        ranges = [(r.start, r.end) for r in proto.reserved_range]  # enum ranges are inclusive
    return ranges, list(proto.reserved_name)


def test_package_and_service_names() -> None:
    assert si_pb2.DESCRIPTOR.package == "si.v1"
    assert "Scheduler" in si_pb2.DESCRIPTOR.services_by_name


@pytest.mark.parametrize("name", sorted(UPSTREAM_MESSAGES))
def test_upstream_message_fields(name: str) -> None:
    fields, _, _ = UPSTREAM_MESSAGES[name]
    desc = _message(name)
    ours = {f.name: (f.number, _type_of(f), _label_of(f)) for f in desc.fields}
    for field_name, expected in fields.items():
        assert field_name in ours, f"{name}.{field_name} is missing"
        assert ours[field_name] == expected, (
            f"{name}.{field_name}: ours {ours[field_name]}, upstream {expected}"
        )


@pytest.mark.parametrize("name", sorted(UPSTREAM_MESSAGES))
def test_upstream_message_reservations_and_additions(name: str) -> None:
    fields, ranges, names = UPSTREAM_MESSAGES[name]
    desc = _message(name)
    our_ranges, our_names = _reserved(desc)
    assert sorted(our_ranges) == sorted(ranges)
    assert sorted(our_names) == sorted(names)
    upstream_numbers = {n for n, _, _ in fields.values()}
    for f in desc.fields:
        if f.name in fields:
            continue
        # A pykorn addition to an upstream message: number from 100 up, no clash with anything upstream.
        assert f.number >= 100, f"{name}.{f.name} is an addition and must be numbered from 100 up"
        assert f.number not in upstream_numbers
        assert not any(lo <= f.number <= hi for lo, hi in ranges)
        assert f.name not in names


@pytest.mark.parametrize("name", sorted(UPSTREAM_ENUMS))
def test_upstream_enums(name: str) -> None:
    values, ranges, names = UPSTREAM_ENUMS[name]
    desc = _enum(name)
    ours = {v.name: v.number for v in desc.values}
    for value_name, number in values.items():
        assert ours.get(value_name) == number, (
            f"{name}.{value_name}: ours {ours.get(value_name)}, upstream {number}"
        )
    our_ranges, our_names = _reserved(desc)
    assert sorted(our_ranges) == sorted(ranges)
    assert sorted(our_names) == sorted(names)


def test_upstream_methods_unchanged() -> None:
    service = si_pb2.DESCRIPTOR.services_by_name["Scheduler"]
    ours = {
        m.name: (m.input_type.full_name, m.output_type.full_name, m.client_streaming, m.server_streaming)
        for m in service.methods
    }
    for method, expected in UPSTREAM_METHODS.items():
        assert ours.get(method) == expected, method


def test_pykorn_additions_are_only_the_documented_ones() -> None:
    service = si_pb2.DESCRIPTOR.services_by_name["Scheduler"]
    added = {m.name for m in service.methods} - set(UPSTREAM_METHODS)
    assert added == set(PYKORN_ADDED_METHODS)
    for method in service.methods:
        if method.name in PYKORN_ADDED_METHODS:
            expected = PYKORN_ADDED_METHODS[method.name]
            ours = (
                method.input_type.full_name,
                method.output_type.full_name,
                method.client_streaming,
                method.server_streaming,
            )
            assert ours == expected


def test_new_messages_do_not_take_upstream_names() -> None:
    ours = set(si_pb2.DESCRIPTOR.message_types_by_name)
    upstream_top = {n.removeprefix("si.v1.") for n in UPSTREAM_MESSAGES if n.count(".") == 2}
    assert upstream_top <= ours
    assert ours - upstream_top == {
        "UpdateConfigurationResponse",
        "DryRunConfigurationResponse",
        "QuotaPreemptionPreview",
        "PreviewVictim",
        "EventStreamRequest",
        "EventStreamResponse",
    }


def test_secret_field_option_keeps_its_number() -> None:
    assert si_pb2.si_secret.number == 1059
    extended = si_pb2.si_secret.containing_type
    assert extended is not None and extended.full_name == "google.protobuf.FieldOptions"


def test_an_upstream_encoded_allocation_decodes_field_by_field() -> None:
    # Bytes as a client built from upstream's file would put them on the wire, written by hand:
    # allocationKey (1) = "k", priority (6) = 5, nodeID (8) = "n", applicationID (9) = "a".
    wire = b"\x0a\x01k" + b"\x30\x05" + b"\x42\x01n" + b"\x4a\x01a"
    alloc = si_pb2.Allocation.FromString(wire)
    assert (alloc.allocationKey, alloc.priority, alloc.nodeID, alloc.applicationID) == ("k", 5, "n", "a")


@pytest.mark.parametrize(
    ("vocabulary", "wire", "unused"),
    [
        (EventType, si_pb2.EventRecord.Type, {"UNKNOWN_EVENTRECORD_TYPE"}),
        (ChangeType, si_pb2.EventRecord.ChangeType, set()),
        (ChangeDetail, si_pb2.EventRecord.ChangeDetail, set()),
        (Termination, si_pb2.TerminationType, {"UNKNOWN_TERMINATION_TYPE"}),
        (NodeAction, si_pb2.NodeInfo.ActionFromRM, {"UNKNOWN_ACTION_FROM_RM"}),
    ],
)
def test_the_cores_enums_name_exactly_the_wire_values(
    vocabulary: type[StrEnum], wire: Any, unused: set[str]
) -> None:
    """The core's typed vocabulary for what goes on the wire: every member is a value of the si enum
    (the translation is by name), and every si value but the 'unknown' one has a member."""
    names = set(wire.keys())
    values = {member.value for member in vocabulary}
    assert values <= names, f"not in si: {sorted(values - names)}"
    assert names - unused <= values, f"without a member: {sorted(names - unused - values)}"
