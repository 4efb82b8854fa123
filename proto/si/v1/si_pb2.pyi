from google.protobuf import descriptor_pb2 as _descriptor_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TerminationType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    UNKNOWN_TERMINATION_TYPE: _ClassVar[TerminationType]
    STOPPED_BY_RM: _ClassVar[TerminationType]
    TIMEOUT: _ClassVar[TerminationType]
    PREEMPTED_BY_SCHEDULER: _ClassVar[TerminationType]
    PLACEHOLDER_REPLACED: _ClassVar[TerminationType]
UNKNOWN_TERMINATION_TYPE: TerminationType
STOPPED_BY_RM: TerminationType
TIMEOUT: TerminationType
PREEMPTED_BY_SCHEDULER: TerminationType
PLACEHOLDER_REPLACED: TerminationType
SI_SECRET_FIELD_NUMBER: _ClassVar[int]
si_secret: _descriptor.FieldDescriptor

class RegisterResourceManagerRequest(_message.Message):
    __slots__ = ("rmID", "version", "policyGroup", "buildInfo", "config", "extraConfig")
    class BuildInfoEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class ExtraConfigEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    RMID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    POLICYGROUP_FIELD_NUMBER: _ClassVar[int]
    BUILDINFO_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    EXTRACONFIG_FIELD_NUMBER: _ClassVar[int]
    rmID: str
    version: str
    policyGroup: str
    buildInfo: _containers.ScalarMap[str, str]
    config: str
    extraConfig: _containers.ScalarMap[str, str]
    def __init__(self, rmID: _Optional[str] = ..., version: _Optional[str] = ..., policyGroup: _Optional[str] = ..., buildInfo: _Optional[_Mapping[str, str]] = ..., config: _Optional[str] = ..., extraConfig: _Optional[_Mapping[str, str]] = ...) -> None: ...

class RegisterResourceManagerResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class AllocationRequest(_message.Message):
    __slots__ = ("releases", "rmID", "allocations")
    RELEASES_FIELD_NUMBER: _ClassVar[int]
    RMID_FIELD_NUMBER: _ClassVar[int]
    ALLOCATIONS_FIELD_NUMBER: _ClassVar[int]
    releases: AllocationReleasesRequest
    rmID: str
    allocations: _containers.RepeatedCompositeFieldContainer[Allocation]
    def __init__(self, releases: _Optional[_Union[AllocationReleasesRequest, _Mapping]] = ..., rmID: _Optional[str] = ..., allocations: _Optional[_Iterable[_Union[Allocation, _Mapping]]] = ...) -> None: ...

class ApplicationRequest(_message.Message):
    __slots__ = ("new", "remove", "rmID")
    NEW_FIELD_NUMBER: _ClassVar[int]
    REMOVE_FIELD_NUMBER: _ClassVar[int]
    RMID_FIELD_NUMBER: _ClassVar[int]
    new: _containers.RepeatedCompositeFieldContainer[AddApplicationRequest]
    remove: _containers.RepeatedCompositeFieldContainer[RemoveApplicationRequest]
    rmID: str
    def __init__(self, new: _Optional[_Iterable[_Union[AddApplicationRequest, _Mapping]]] = ..., remove: _Optional[_Iterable[_Union[RemoveApplicationRequest, _Mapping]]] = ..., rmID: _Optional[str] = ...) -> None: ...

class NodeRequest(_message.Message):
    __slots__ = ("nodes", "rmID")
    NODES_FIELD_NUMBER: _ClassVar[int]
    RMID_FIELD_NUMBER: _ClassVar[int]
    nodes: _containers.RepeatedCompositeFieldContainer[NodeInfo]
    rmID: str
    def __init__(self, nodes: _Optional[_Iterable[_Union[NodeInfo, _Mapping]]] = ..., rmID: _Optional[str] = ...) -> None: ...

class AllocationResponse(_message.Message):
    __slots__ = ("new", "released", "rejectedAllocations", "schedulingStates")
    NEW_FIELD_NUMBER: _ClassVar[int]
    RELEASED_FIELD_NUMBER: _ClassVar[int]
    REJECTEDALLOCATIONS_FIELD_NUMBER: _ClassVar[int]
    SCHEDULINGSTATES_FIELD_NUMBER: _ClassVar[int]
    new: _containers.RepeatedCompositeFieldContainer[Allocation]
    released: _containers.RepeatedCompositeFieldContainer[AllocationRelease]
    rejectedAllocations: _containers.RepeatedCompositeFieldContainer[RejectedAllocation]
    schedulingStates: _containers.RepeatedCompositeFieldContainer[UpdateContainerSchedulingStateRequest]
    def __init__(self, new: _Optional[_Iterable[_Union[Allocation, _Mapping]]] = ..., released: _Optional[_Iterable[_Union[AllocationRelease, _Mapping]]] = ..., rejectedAllocations: _Optional[_Iterable[_Union[RejectedAllocation, _Mapping]]] = ..., schedulingStates: _Optional[_Iterable[_Union[UpdateContainerSchedulingStateRequest, _Mapping]]] = ...) -> None: ...

class ApplicationResponse(_message.Message):
    __slots__ = ("rejected", "accepted", "updated")
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    UPDATED_FIELD_NUMBER: _ClassVar[int]
    rejected: _containers.RepeatedCompositeFieldContainer[RejectedApplication]
    accepted: _containers.RepeatedCompositeFieldContainer[AcceptedApplication]
    updated: _containers.RepeatedCompositeFieldContainer[UpdatedApplication]
    def __init__(self, rejected: _Optional[_Iterable[_Union[RejectedApplication, _Mapping]]] = ..., accepted: _Optional[_Iterable[_Union[AcceptedApplication, _Mapping]]] = ..., updated: _Optional[_Iterable[_Union[UpdatedApplication, _Mapping]]] = ...) -> None: ...

class NodeResponse(_message.Message):
    __slots__ = ("rejected", "accepted")
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    rejected: _containers.RepeatedCompositeFieldContainer[RejectedNode]
    accepted: _containers.RepeatedCompositeFieldContainer[AcceptedNode]
    def __init__(self, rejected: _Optional[_Iterable[_Union[RejectedNode, _Mapping]]] = ..., accepted: _Optional[_Iterable[_Union[AcceptedNode, _Mapping]]] = ...) -> None: ...

class UpdatedApplication(_message.Message):
    __slots__ = ("applicationID", "state", "stateTransitionTimestamp", "message")
    APPLICATIONID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    STATETRANSITIONTIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    applicationID: str
    state: str
    stateTransitionTimestamp: int
    message: str
    def __init__(self, applicationID: _Optional[str] = ..., state: _Optional[str] = ..., stateTransitionTimestamp: _Optional[int] = ..., message: _Optional[str] = ...) -> None: ...

class RejectedApplication(_message.Message):
    __slots__ = ("applicationID", "reason")
    APPLICATIONID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    applicationID: str
    reason: str
    def __init__(self, applicationID: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class AcceptedApplication(_message.Message):
    __slots__ = ("applicationID",)
    APPLICATIONID_FIELD_NUMBER: _ClassVar[int]
    applicationID: str
    def __init__(self, applicationID: _Optional[str] = ...) -> None: ...

class RejectedNode(_message.Message):
    __slots__ = ("nodeID", "reason")
    NODEID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    nodeID: str
    reason: str
    def __init__(self, nodeID: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class AcceptedNode(_message.Message):
    __slots__ = ("nodeID",)
    NODEID_FIELD_NUMBER: _ClassVar[int]
    nodeID: str
    def __init__(self, nodeID: _Optional[str] = ...) -> None: ...

class Resource(_message.Message):
    __slots__ = ("resources",)
    class ResourcesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: Quantity
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[Quantity, _Mapping]] = ...) -> None: ...
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    resources: _containers.MessageMap[str, Quantity]
    def __init__(self, resources: _Optional[_Mapping[str, Quantity]] = ...) -> None: ...

class Quantity(_message.Message):
    __slots__ = ("value",)
    VALUE_FIELD_NUMBER: _ClassVar[int]
    value: int
    def __init__(self, value: _Optional[int] = ...) -> None: ...

class PreemptionPolicy(_message.Message):
    __slots__ = ("allowPreemptSelf", "allowPreemptOther")
    ALLOWPREEMPTSELF_FIELD_NUMBER: _ClassVar[int]
    ALLOWPREEMPTOTHER_FIELD_NUMBER: _ClassVar[int]
    allowPreemptSelf: bool
    allowPreemptOther: bool
    def __init__(self, allowPreemptSelf: _Optional[bool] = ..., allowPreemptOther: _Optional[bool] = ...) -> None: ...

class AddApplicationRequest(_message.Message):
    __slots__ = ("applicationID", "queueName", "partitionName", "ugi", "tags", "executionTimeoutMilliSeconds", "placeholderAsk", "gangSchedulingStyle")
    class TagsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    APPLICATIONID_FIELD_NUMBER: _ClassVar[int]
    QUEUENAME_FIELD_NUMBER: _ClassVar[int]
    PARTITIONNAME_FIELD_NUMBER: _ClassVar[int]
    UGI_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    EXECUTIONTIMEOUTMILLISECONDS_FIELD_NUMBER: _ClassVar[int]
    PLACEHOLDERASK_FIELD_NUMBER: _ClassVar[int]
    GANGSCHEDULINGSTYLE_FIELD_NUMBER: _ClassVar[int]
    applicationID: str
    queueName: str
    partitionName: str
    ugi: UserGroupInformation
    tags: _containers.ScalarMap[str, str]
    executionTimeoutMilliSeconds: int
    placeholderAsk: Resource
    gangSchedulingStyle: str
    def __init__(self, applicationID: _Optional[str] = ..., queueName: _Optional[str] = ..., partitionName: _Optional[str] = ..., ugi: _Optional[_Union[UserGroupInformation, _Mapping]] = ..., tags: _Optional[_Mapping[str, str]] = ..., executionTimeoutMilliSeconds: _Optional[int] = ..., placeholderAsk: _Optional[_Union[Resource, _Mapping]] = ..., gangSchedulingStyle: _Optional[str] = ...) -> None: ...

class RemoveApplicationRequest(_message.Message):
    __slots__ = ("applicationID", "partitionName")
    APPLICATIONID_FIELD_NUMBER: _ClassVar[int]
    PARTITIONNAME_FIELD_NUMBER: _ClassVar[int]
    applicationID: str
    partitionName: str
    def __init__(self, applicationID: _Optional[str] = ..., partitionName: _Optional[str] = ...) -> None: ...

class UserGroupInformation(_message.Message):
    __slots__ = ("user", "groups")
    USER_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    user: str
    groups: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, user: _Optional[str] = ..., groups: _Optional[_Iterable[str]] = ...) -> None: ...

class Allocation(_message.Message):
    __slots__ = ("allocationKey", "allocationTags", "resourcePerAlloc", "priority", "nodeID", "applicationID", "partitionName", "taskGroupName", "placeholder", "originator", "preemptionPolicy")
    class AllocationTagsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ALLOCATIONKEY_FIELD_NUMBER: _ClassVar[int]
    ALLOCATIONTAGS_FIELD_NUMBER: _ClassVar[int]
    RESOURCEPERALLOC_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    NODEID_FIELD_NUMBER: _ClassVar[int]
    APPLICATIONID_FIELD_NUMBER: _ClassVar[int]
    PARTITIONNAME_FIELD_NUMBER: _ClassVar[int]
    TASKGROUPNAME_FIELD_NUMBER: _ClassVar[int]
    PLACEHOLDER_FIELD_NUMBER: _ClassVar[int]
    ORIGINATOR_FIELD_NUMBER: _ClassVar[int]
    PREEMPTIONPOLICY_FIELD_NUMBER: _ClassVar[int]
    allocationKey: str
    allocationTags: _containers.ScalarMap[str, str]
    resourcePerAlloc: Resource
    priority: int
    nodeID: str
    applicationID: str
    partitionName: str
    taskGroupName: str
    placeholder: bool
    originator: bool
    preemptionPolicy: PreemptionPolicy
    def __init__(self, allocationKey: _Optional[str] = ..., allocationTags: _Optional[_Mapping[str, str]] = ..., resourcePerAlloc: _Optional[_Union[Resource, _Mapping]] = ..., priority: _Optional[int] = ..., nodeID: _Optional[str] = ..., applicationID: _Optional[str] = ..., partitionName: _Optional[str] = ..., taskGroupName: _Optional[str] = ..., placeholder: _Optional[bool] = ..., originator: _Optional[bool] = ..., preemptionPolicy: _Optional[_Union[PreemptionPolicy, _Mapping]] = ...) -> None: ...

class AllocationReleasesRequest(_message.Message):
    __slots__ = ("allocationsToRelease",)
    ALLOCATIONSTORELEASE_FIELD_NUMBER: _ClassVar[int]
    allocationsToRelease: _containers.RepeatedCompositeFieldContainer[AllocationRelease]
    def __init__(self, allocationsToRelease: _Optional[_Iterable[_Union[AllocationRelease, _Mapping]]] = ...) -> None: ...

class AllocationRelease(_message.Message):
    __slots__ = ("partitionName", "applicationID", "terminationType", "message", "allocationKey")
    PARTITIONNAME_FIELD_NUMBER: _ClassVar[int]
    APPLICATIONID_FIELD_NUMBER: _ClassVar[int]
    TERMINATIONTYPE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    ALLOCATIONKEY_FIELD_NUMBER: _ClassVar[int]
    partitionName: str
    applicationID: str
    terminationType: TerminationType
    message: str
    allocationKey: str
    def __init__(self, partitionName: _Optional[str] = ..., applicationID: _Optional[str] = ..., terminationType: _Optional[_Union[TerminationType, str]] = ..., message: _Optional[str] = ..., allocationKey: _Optional[str] = ...) -> None: ...

class NodeInfo(_message.Message):
    __slots__ = ("nodeID", "action", "attributes", "schedulableResource")
    class ActionFromRM(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        UNKNOWN_ACTION_FROM_RM: _ClassVar[NodeInfo.ActionFromRM]
        CREATE: _ClassVar[NodeInfo.ActionFromRM]
        UPDATE: _ClassVar[NodeInfo.ActionFromRM]
        DRAIN_NODE: _ClassVar[NodeInfo.ActionFromRM]
        DECOMISSION: _ClassVar[NodeInfo.ActionFromRM]
        DRAIN_TO_SCHEDULABLE: _ClassVar[NodeInfo.ActionFromRM]
        CREATE_DRAIN: _ClassVar[NodeInfo.ActionFromRM]
    UNKNOWN_ACTION_FROM_RM: NodeInfo.ActionFromRM
    CREATE: NodeInfo.ActionFromRM
    UPDATE: NodeInfo.ActionFromRM
    DRAIN_NODE: NodeInfo.ActionFromRM
    DECOMISSION: NodeInfo.ActionFromRM
    DRAIN_TO_SCHEDULABLE: NodeInfo.ActionFromRM
    CREATE_DRAIN: NodeInfo.ActionFromRM
    class AttributesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NODEID_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    SCHEDULABLERESOURCE_FIELD_NUMBER: _ClassVar[int]
    nodeID: str
    action: NodeInfo.ActionFromRM
    attributes: _containers.ScalarMap[str, str]
    schedulableResource: Resource
    def __init__(self, nodeID: _Optional[str] = ..., action: _Optional[_Union[NodeInfo.ActionFromRM, str]] = ..., attributes: _Optional[_Mapping[str, str]] = ..., schedulableResource: _Optional[_Union[Resource, _Mapping]] = ...) -> None: ...

class RejectedAllocation(_message.Message):
    __slots__ = ("allocationKey", "applicationID", "reason")
    ALLOCATIONKEY_FIELD_NUMBER: _ClassVar[int]
    APPLICATIONID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    allocationKey: str
    applicationID: str
    reason: str
    def __init__(self, allocationKey: _Optional[str] = ..., applicationID: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class PredicatesArgs(_message.Message):
    __slots__ = ("allocationKey", "nodeID", "allocate")
    ALLOCATIONKEY_FIELD_NUMBER: _ClassVar[int]
    NODEID_FIELD_NUMBER: _ClassVar[int]
    ALLOCATE_FIELD_NUMBER: _ClassVar[int]
    allocationKey: str
    nodeID: str
    allocate: bool
    def __init__(self, allocationKey: _Optional[str] = ..., nodeID: _Optional[str] = ..., allocate: _Optional[bool] = ...) -> None: ...

class PreemptionPredicatesArgs(_message.Message):
    __slots__ = ("allocationKey", "nodeID", "preemptAllocationKeys", "startIndex")
    ALLOCATIONKEY_FIELD_NUMBER: _ClassVar[int]
    NODEID_FIELD_NUMBER: _ClassVar[int]
    PREEMPTALLOCATIONKEYS_FIELD_NUMBER: _ClassVar[int]
    STARTINDEX_FIELD_NUMBER: _ClassVar[int]
    allocationKey: str
    nodeID: str
    preemptAllocationKeys: _containers.RepeatedScalarFieldContainer[str]
    startIndex: int
    def __init__(self, allocationKey: _Optional[str] = ..., nodeID: _Optional[str] = ..., preemptAllocationKeys: _Optional[_Iterable[str]] = ..., startIndex: _Optional[int] = ...) -> None: ...

class PreemptionPredicatesResponse(_message.Message):
    __slots__ = ("success", "index")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    success: bool
    index: int
    def __init__(self, success: _Optional[bool] = ..., index: _Optional[int] = ...) -> None: ...

class UpdateContainerSchedulingStateRequest(_message.Message):
    __slots__ = ("applicationID", "allocationKey", "state", "reason")
    class SchedulingState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        UNKNOWN_SCHEDULING_STATE: _ClassVar[UpdateContainerSchedulingStateRequest.SchedulingState]
        SKIPPED: _ClassVar[UpdateContainerSchedulingStateRequest.SchedulingState]
        SCHEDULED: _ClassVar[UpdateContainerSchedulingStateRequest.SchedulingState]
        RESERVED: _ClassVar[UpdateContainerSchedulingStateRequest.SchedulingState]
        FAILED: _ClassVar[UpdateContainerSchedulingStateRequest.SchedulingState]
    UNKNOWN_SCHEDULING_STATE: UpdateContainerSchedulingStateRequest.SchedulingState
    SKIPPED: UpdateContainerSchedulingStateRequest.SchedulingState
    SCHEDULED: UpdateContainerSchedulingStateRequest.SchedulingState
    RESERVED: UpdateContainerSchedulingStateRequest.SchedulingState
    FAILED: UpdateContainerSchedulingStateRequest.SchedulingState
    APPLICATIONID_FIELD_NUMBER: _ClassVar[int]
    ALLOCATIONKEY_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    applicationID: str
    allocationKey: str
    state: UpdateContainerSchedulingStateRequest.SchedulingState
    reason: str
    def __init__(self, applicationID: _Optional[str] = ..., allocationKey: _Optional[str] = ..., state: _Optional[_Union[UpdateContainerSchedulingStateRequest.SchedulingState, str]] = ..., reason: _Optional[str] = ...) -> None: ...

class UpdateConfigurationRequest(_message.Message):
    __slots__ = ("rmID", "policyGroup", "config", "extraConfig")
    class ExtraConfigEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    RMID_FIELD_NUMBER: _ClassVar[int]
    POLICYGROUP_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    EXTRACONFIG_FIELD_NUMBER: _ClassVar[int]
    rmID: str
    policyGroup: str
    config: str
    extraConfig: _containers.ScalarMap[str, str]
    def __init__(self, rmID: _Optional[str] = ..., policyGroup: _Optional[str] = ..., config: _Optional[str] = ..., extraConfig: _Optional[_Mapping[str, str]] = ...) -> None: ...

class UpdateConfigurationResponse(_message.Message):
    __slots__ = ("accepted", "errors", "warnings")
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    accepted: bool
    errors: _containers.RepeatedScalarFieldContainer[str]
    warnings: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, accepted: _Optional[bool] = ..., errors: _Optional[_Iterable[str]] = ..., warnings: _Optional[_Iterable[str]] = ...) -> None: ...

class DryRunConfigurationResponse(_message.Message):
    __slots__ = ("valid", "errors", "queues")
    VALID_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    valid: bool
    errors: _containers.RepeatedScalarFieldContainer[str]
    queues: _containers.RepeatedCompositeFieldContainer[QuotaPreemptionPreview]
    def __init__(self, valid: _Optional[bool] = ..., errors: _Optional[_Iterable[str]] = ..., queues: _Optional[_Iterable[_Union[QuotaPreemptionPreview, _Mapping]]] = ...) -> None: ...

class QuotaPreemptionPreview(_message.Message):
    __slots__ = ("partitionName", "queue", "target", "achievable", "delaySeconds", "willRun", "reason", "victims")
    PARTITIONNAME_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    ACHIEVABLE_FIELD_NUMBER: _ClassVar[int]
    DELAYSECONDS_FIELD_NUMBER: _ClassVar[int]
    WILLRUN_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    VICTIMS_FIELD_NUMBER: _ClassVar[int]
    partitionName: str
    queue: str
    target: Resource
    achievable: Resource
    delaySeconds: float
    willRun: bool
    reason: str
    victims: _containers.RepeatedCompositeFieldContainer[PreviewVictim]
    def __init__(self, partitionName: _Optional[str] = ..., queue: _Optional[str] = ..., target: _Optional[_Union[Resource, _Mapping]] = ..., achievable: _Optional[_Union[Resource, _Mapping]] = ..., delaySeconds: _Optional[float] = ..., willRun: _Optional[bool] = ..., reason: _Optional[str] = ..., victims: _Optional[_Iterable[_Union[PreviewVictim, _Mapping]]] = ...) -> None: ...

class EventStreamRequest(_message.Message):
    __slots__ = ("rmID", "fromID", "types")
    RMID_FIELD_NUMBER: _ClassVar[int]
    FROMID_FIELD_NUMBER: _ClassVar[int]
    TYPES_FIELD_NUMBER: _ClassVar[int]
    rmID: str
    fromID: int
    types: _containers.RepeatedScalarFieldContainer[EventRecord.Type]
    def __init__(self, rmID: _Optional[str] = ..., fromID: _Optional[int] = ..., types: _Optional[_Iterable[_Union[EventRecord.Type, str]]] = ...) -> None: ...

class EventStreamResponse(_message.Message):
    __slots__ = ("id", "event", "lowestID")
    ID_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    LOWESTID_FIELD_NUMBER: _ClassVar[int]
    id: int
    event: EventRecord
    lowestID: int
    def __init__(self, id: _Optional[int] = ..., event: _Optional[_Union[EventRecord, _Mapping]] = ..., lowestID: _Optional[int] = ...) -> None: ...

class PreviewVictim(_message.Message):
    __slots__ = ("applicationID", "allocationKey", "nodeID", "queue", "resource", "priority")
    APPLICATIONID_FIELD_NUMBER: _ClassVar[int]
    ALLOCATIONKEY_FIELD_NUMBER: _ClassVar[int]
    NODEID_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    applicationID: str
    allocationKey: str
    nodeID: str
    queue: str
    resource: Resource
    priority: int
    def __init__(self, applicationID: _Optional[str] = ..., allocationKey: _Optional[str] = ..., nodeID: _Optional[str] = ..., queue: _Optional[str] = ..., resource: _Optional[_Union[Resource, _Mapping]] = ..., priority: _Optional[int] = ...) -> None: ...

class EventRecord(_message.Message):
    __slots__ = ("type", "objectID", "message", "timestampNano", "eventChangeType", "eventChangeDetail", "referenceID", "resource")
    class Type(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        UNKNOWN_EVENTRECORD_TYPE: _ClassVar[EventRecord.Type]
        REQUEST: _ClassVar[EventRecord.Type]
        APP: _ClassVar[EventRecord.Type]
        NODE: _ClassVar[EventRecord.Type]
        QUEUE: _ClassVar[EventRecord.Type]
        USERGROUP: _ClassVar[EventRecord.Type]
    UNKNOWN_EVENTRECORD_TYPE: EventRecord.Type
    REQUEST: EventRecord.Type
    APP: EventRecord.Type
    NODE: EventRecord.Type
    QUEUE: EventRecord.Type
    USERGROUP: EventRecord.Type
    class ChangeType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        NONE: _ClassVar[EventRecord.ChangeType]
        SET: _ClassVar[EventRecord.ChangeType]
        ADD: _ClassVar[EventRecord.ChangeType]
        REMOVE: _ClassVar[EventRecord.ChangeType]
    NONE: EventRecord.ChangeType
    SET: EventRecord.ChangeType
    ADD: EventRecord.ChangeType
    REMOVE: EventRecord.ChangeType
    class ChangeDetail(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        DETAILS_NONE: _ClassVar[EventRecord.ChangeDetail]
        REQUEST_CANCEL: _ClassVar[EventRecord.ChangeDetail]
        REQUEST_ALLOC: _ClassVar[EventRecord.ChangeDetail]
        REQUEST_TIMEOUT: _ClassVar[EventRecord.ChangeDetail]
        APP_ALLOC: _ClassVar[EventRecord.ChangeDetail]
        APP_REQUEST: _ClassVar[EventRecord.ChangeDetail]
        APP_REJECT: _ClassVar[EventRecord.ChangeDetail]
        APP_NEW: _ClassVar[EventRecord.ChangeDetail]
        APP_ACCEPTED: _ClassVar[EventRecord.ChangeDetail]
        APP_RUNNING: _ClassVar[EventRecord.ChangeDetail]
        APP_COMPLETING: _ClassVar[EventRecord.ChangeDetail]
        APP_COMPLETED: _ClassVar[EventRecord.ChangeDetail]
        APP_FAILING: _ClassVar[EventRecord.ChangeDetail]
        APP_FAILED: _ClassVar[EventRecord.ChangeDetail]
        APP_RESUMING: _ClassVar[EventRecord.ChangeDetail]
        APP_EXPIRED: _ClassVar[EventRecord.ChangeDetail]
        APP_CANNOTRUN_QUEUE: _ClassVar[EventRecord.ChangeDetail]
        APP_RUNNABLE_QUEUE: _ClassVar[EventRecord.ChangeDetail]
        APP_CANNOTRUN_QUOTA: _ClassVar[EventRecord.ChangeDetail]
        APP_RUNNABLE_QUOTA: _ClassVar[EventRecord.ChangeDetail]
        NODE_DECOMISSION: _ClassVar[EventRecord.ChangeDetail]
        NODE_SCHEDULABLE: _ClassVar[EventRecord.ChangeDetail]
        NODE_ALLOC: _ClassVar[EventRecord.ChangeDetail]
        NODE_CAPACITY: _ClassVar[EventRecord.ChangeDetail]
        NODE_OCCUPIED: _ClassVar[EventRecord.ChangeDetail]
        NODE_RESERVATION: _ClassVar[EventRecord.ChangeDetail]
        QUEUE_CONFIG: _ClassVar[EventRecord.ChangeDetail]
        QUEUE_DYNAMIC: _ClassVar[EventRecord.ChangeDetail]
        QUEUE_TYPE: _ClassVar[EventRecord.ChangeDetail]
        QUEUE_MAX: _ClassVar[EventRecord.ChangeDetail]
        QUEUE_GUARANTEED: _ClassVar[EventRecord.ChangeDetail]
        QUEUE_APP: _ClassVar[EventRecord.ChangeDetail]
        QUEUE_ALLOC: _ClassVar[EventRecord.ChangeDetail]
        QUEUE_PREEMPTION: _ClassVar[EventRecord.ChangeDetail]
        ALLOC_CANCEL: _ClassVar[EventRecord.ChangeDetail]
        ALLOC_PREEMPT: _ClassVar[EventRecord.ChangeDetail]
        ALLOC_TIMEOUT: _ClassVar[EventRecord.ChangeDetail]
        ALLOC_REPLACED: _ClassVar[EventRecord.ChangeDetail]
        ALLOC_NODEREMOVED: _ClassVar[EventRecord.ChangeDetail]
        UG_USER_LIMIT: _ClassVar[EventRecord.ChangeDetail]
        UG_GROUP_LIMIT: _ClassVar[EventRecord.ChangeDetail]
        UG_APP_LINK: _ClassVar[EventRecord.ChangeDetail]
        UG_USER_RESOURCE: _ClassVar[EventRecord.ChangeDetail]
        UG_GROUP_RESOURCE: _ClassVar[EventRecord.ChangeDetail]
    DETAILS_NONE: EventRecord.ChangeDetail
    REQUEST_CANCEL: EventRecord.ChangeDetail
    REQUEST_ALLOC: EventRecord.ChangeDetail
    REQUEST_TIMEOUT: EventRecord.ChangeDetail
    APP_ALLOC: EventRecord.ChangeDetail
    APP_REQUEST: EventRecord.ChangeDetail
    APP_REJECT: EventRecord.ChangeDetail
    APP_NEW: EventRecord.ChangeDetail
    APP_ACCEPTED: EventRecord.ChangeDetail
    APP_RUNNING: EventRecord.ChangeDetail
    APP_COMPLETING: EventRecord.ChangeDetail
    APP_COMPLETED: EventRecord.ChangeDetail
    APP_FAILING: EventRecord.ChangeDetail
    APP_FAILED: EventRecord.ChangeDetail
    APP_RESUMING: EventRecord.ChangeDetail
    APP_EXPIRED: EventRecord.ChangeDetail
    APP_CANNOTRUN_QUEUE: EventRecord.ChangeDetail
    APP_RUNNABLE_QUEUE: EventRecord.ChangeDetail
    APP_CANNOTRUN_QUOTA: EventRecord.ChangeDetail
    APP_RUNNABLE_QUOTA: EventRecord.ChangeDetail
    NODE_DECOMISSION: EventRecord.ChangeDetail
    NODE_SCHEDULABLE: EventRecord.ChangeDetail
    NODE_ALLOC: EventRecord.ChangeDetail
    NODE_CAPACITY: EventRecord.ChangeDetail
    NODE_OCCUPIED: EventRecord.ChangeDetail
    NODE_RESERVATION: EventRecord.ChangeDetail
    QUEUE_CONFIG: EventRecord.ChangeDetail
    QUEUE_DYNAMIC: EventRecord.ChangeDetail
    QUEUE_TYPE: EventRecord.ChangeDetail
    QUEUE_MAX: EventRecord.ChangeDetail
    QUEUE_GUARANTEED: EventRecord.ChangeDetail
    QUEUE_APP: EventRecord.ChangeDetail
    QUEUE_ALLOC: EventRecord.ChangeDetail
    QUEUE_PREEMPTION: EventRecord.ChangeDetail
    ALLOC_CANCEL: EventRecord.ChangeDetail
    ALLOC_PREEMPT: EventRecord.ChangeDetail
    ALLOC_TIMEOUT: EventRecord.ChangeDetail
    ALLOC_REPLACED: EventRecord.ChangeDetail
    ALLOC_NODEREMOVED: EventRecord.ChangeDetail
    UG_USER_LIMIT: EventRecord.ChangeDetail
    UG_GROUP_LIMIT: EventRecord.ChangeDetail
    UG_APP_LINK: EventRecord.ChangeDetail
    UG_USER_RESOURCE: EventRecord.ChangeDetail
    UG_GROUP_RESOURCE: EventRecord.ChangeDetail
    TYPE_FIELD_NUMBER: _ClassVar[int]
    OBJECTID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMPNANO_FIELD_NUMBER: _ClassVar[int]
    EVENTCHANGETYPE_FIELD_NUMBER: _ClassVar[int]
    EVENTCHANGEDETAIL_FIELD_NUMBER: _ClassVar[int]
    REFERENCEID_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    type: EventRecord.Type
    objectID: str
    message: str
    timestampNano: int
    eventChangeType: EventRecord.ChangeType
    eventChangeDetail: EventRecord.ChangeDetail
    referenceID: str
    resource: Resource
    def __init__(self, type: _Optional[_Union[EventRecord.Type, str]] = ..., objectID: _Optional[str] = ..., message: _Optional[str] = ..., timestampNano: _Optional[int] = ..., eventChangeType: _Optional[_Union[EventRecord.ChangeType, str]] = ..., eventChangeDetail: _Optional[_Union[EventRecord.ChangeDetail, str]] = ..., referenceID: _Optional[str] = ..., resource: _Optional[_Union[Resource, _Mapping]] = ...) -> None: ...
