"""What the engine is asked to do. Built by rmproxy from si messages; free of transport types.

Partitions here are keyed with the sending RM (PartitionKey), so a command can only reach the
partitions of the RM that sent it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from core.config.schema import SchedulerConfig
from core.objects.allocation import Allocation
from core.objects.gang import GangStyle
from core.objects.partition_key import PartitionKey
from core.resources import Resource
from core.scheduler.results import Termination

if TYPE_CHECKING:
    from core.scheduler.preemption.dry_run import QuotaPreview


class NodeAction(StrEnum):
    CREATE = "CREATE"
    CREATE_DRAIN = "CREATE_DRAIN"
    UPDATE = "UPDATE"
    DRAIN = "DRAIN_NODE"
    DRAIN_TO_SCHEDULABLE = "DRAIN_TO_SCHEDULABLE"
    DECOMMISSION = "DECOMISSION"


@dataclass(frozen=True)
class NodeChange:
    node_id: str
    action: NodeAction
    partition: PartitionKey
    attributes: dict[str, str] = field(default_factory=dict)
    capacity: Resource | None = None


@dataclass(slots=True)  # not frozen: one per application, and a frozen __init__ costs 3x
class AppAdd:
    app_id: str
    partition: PartitionKey
    queue: str
    user: str = ""
    groups: tuple[str, ...] = ()
    tags: dict[str, str] = field(default_factory=dict)
    # Gang scheduling (AddApplicationRequest): the whole gang's size, Soft or Hard (None: not said),
    # and the placeholder timeout in milliseconds (0: the default). A style the wire names that is
    # neither is kept as sent, to be warned about: Soft is used.
    placeholder_ask: Resource | None = None
    gang_style: GangStyle | None = None
    unknown_gang_style: str = ""
    placeholder_timeout_ms: int = 0


@dataclass(frozen=True)
class AppRemove:
    app_id: str
    partition: PartitionKey


@dataclass(frozen=True)
class ReleaseRequest:
    partition: PartitionKey
    app_id: str
    key: str  # empty: everything the application holds
    message: str = ""
    termination: Termination | None = None  # PLACEHOLDER_REPLACED confirms a replacement


# A reply hook for commands whose sender waits (registration, config updates): called with None on
# success or with the exception that refused the command.
Reply = Callable[[Exception | None], None]


@dataclass(frozen=True)
class RegisterRM:
    rm_id: str
    config: SchedulerConfig
    reply: Reply | None = None
    build_info: tuple[tuple[str, str], ...] = ()  # the RM's buildInfo, shown by /ws/v1/clusters
    who: str = ""  # the caller as the transport knows it (the history's configuration changes)


@dataclass(frozen=True)
class UnregisterRM:
    """Forget everything an RM had: it stayed away longer than the grace period."""

    rm_id: str


@dataclass(frozen=True)
class UpdateConfig:
    rm_id: str
    config: SchedulerConfig
    reply: Reply | None = None
    who: str = ""  # the caller as the transport knows it (the history's configuration changes)


@dataclass(frozen=True)
class UpdateNodes:
    rm_id: str
    changes: tuple[NodeChange, ...]


@dataclass(frozen=True)
class UpdateApplications:
    rm_id: str
    adds: tuple[AppAdd, ...] = ()
    removes: tuple[AppRemove, ...] = ()


@dataclass(frozen=True)
class UpdateAllocations:
    rm_id: str
    allocations: tuple[Allocation, ...] = ()
    releases: tuple[ReleaseRequest, ...] = ()


@dataclass(frozen=True)
class PreviewConfig:
    """What applying `config` now would preempt; the answer (or an exception) goes to `reply`."""

    rm_id: str
    config: SchedulerConfig
    reply: Callable[[list[QuotaPreview] | Exception], None]


Command = (
    RegisterRM
    | UnregisterRM
    | UpdateConfig
    | UpdateNodes
    | UpdateApplications
    | UpdateAllocations
    | PreviewConfig
)
