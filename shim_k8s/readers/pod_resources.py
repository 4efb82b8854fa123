"""What a pod asks of a node, as kube-scheduler computes it (`k8s.io/component-helpers/resource`,
`PodRequests` with `UseStatusResources`, which is how the scheduler's resource fit reads a pod):

- the sum of the containers' requests;
- restartable init containers (sidecars, `restartPolicy: Always`) run beside them: their requests add
  to the sum;
- each plain init container runs alone with the sidecars started before it: the pod needs at least its
  requests plus theirs, so the result is the larger of that and the sum, resource by resource;
- pod-level `spec.resources.requests` (Kubernetes 1.32+), where they name cpu, memory or hugepages-*,
  replace the containers' total for those resources;
- `spec.overhead` (the RuntimeClass's) is added;
- a pod resized in place (its containers' statuses say so) counts the largest, resource by resource, of
  three totals made by the rules above: from the specs; from what the kubelet allocated to each
  container (`allocatedResources`, else its spec); and from what each runs with
  (`status.containerStatuses[].resources.requests`, else allocated, else spec). When the kubelet found
  the resize infeasible (condition PodResizePending, reason Infeasible), the specs do not count.

Pod-level in-place resize (`status.resources` of the pod, an alpha feature) and dynamic resource
claims' node-allocatable resources are not counted: claims are reported on the pod as not honoured.

Quantities add exactly, in nano-units, and are rounded once at the end as the YuniKorn shim converts
them: cpu to milli-cores (`vcore`), every other resource to whole units, rounding up. Every pod
counts one `pods` slot. A field that cannot be read is a PodResourceError naming it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from shim_k8s.api.objects import clip
from shim_k8s.readers import quantity
from shim_k8s.readers.bad_objects import Refused

Nanos = dict[str, int]  # resource name (Kubernetes') -> nano-units
RESOURCE_NAMES = {"cpu": "vcore", "memory": "memory"}  # Kubernetes name -> the core's
POD_LEVEL = frozenset({"cpu", "memory"})  # and hugepages-*: what `spec.resources` may set
HUGEPAGES_PREFIX = "hugepages-"
INT64_MAX = 2**63 - 1
MILLI = quantity.NANO // 1000  # nano-units in a milli-unit
RESTART_ALWAYS = "Always"


class PodResourceError(Refused):
    """A resource field of a pod (or node) that cannot be counted; the text names the field."""

    def __init__(self, message: str) -> None:
        super().__init__(message, reason="invalid-quantity")


def pod_requests(pod: Mapping[str, Any]) -> dict[str, int]:
    """The pod's request in the core's units (vcore in milli-cores, memory in bytes, others as counted),
    with its one `pods` slot."""
    out = to_core_units(request_nanos(pod), "spec")
    out["pods"] = 1
    return out


def request_nanos(pod: Mapping[str, Any], overhead: bool = True, pod_level: bool = True) -> Nanos:
    """The request in nano-units by Kubernetes resource name (`overhead`, `pod_level`: as
    PodRequests' ExcludeOverhead and SkipPodLevelResources, both off for scheduling)."""
    spec = _mapping(pod.get("spec"), ("spec",))
    status = _mapping(pod.get("status"), ("status",))
    containers = _containers(spec, "containers")
    inits = _containers(spec, "initContainers")
    total = _aggregate(containers, inits, _spec_requests)
    running = _statuses(status)
    infeasible = _resize_infeasible(status)
    if running or infeasible:  # resized in place: the largest of what is asked, allocated and running
        allocated = _aggregate(containers, inits, partial(_allocated, running, infeasible))
        actuated = _aggregate(containers, inits, partial(_actuated, running, infeasible))
        total = {} if infeasible else total  # an infeasible resize: the new spec never counts
        _max(total, allocated)
        _max(total, actuated)
    if pod_level and spec.get("resources"):
        requests = _requests(spec, ("spec",))  # spec.resources.requests
        if any(_pod_level(name) for name in requests):
            total.update((name, value) for name, value in requests.items() if _pod_level(name))
    if overhead and spec.get("overhead"):
        _add(total, _quantities(spec["overhead"], ("spec", "overhead")))
    return total


Where = tuple[str | int, ...]  # a field's path, made text only for an error: ("spec", "containers", 0)
Container = tuple[Where, Mapping[str, Any]]
Getter = Callable[[Where, Mapping[str, Any]], Nanos]


def _aggregate(containers: list[Container], inits: list[Container], requests_of: Getter) -> Nanos:
    """Containers plus sidecars, or more while an init container runs beside the sidecars started
    before it: the largest at any moment, resource by resource."""
    total: Nanos = {}
    for where, container in containers:
        _add(total, requests_of(where, container))
    sidecars: Nanos = {}
    init_peak: Nanos = {}
    for where, container in inits:
        requests = requests_of(where, container)
        if container.get("restartPolicy") == RESTART_ALWAYS:
            _add(total, requests)
            _add(sidecars, requests)
            _max(init_peak, sidecars)
        else:
            alone = dict(requests)
            _add(alone, sidecars)
            _max(init_peak, alone)
    _max(total, init_peak)
    return total


def _spec_requests(where: Where, container: Mapping[str, Any]) -> Nanos:
    return _requests(container, where)


def _allocated(
    running: Mapping[str, Mapping[str, Any]], infeasible: bool, where: Where, container: Mapping[str, Any]
) -> Nanos:
    """What the kubelet allocated to the container; else its spec (nothing, when a resize of the pod
    is infeasible)."""
    status = running.get(str(container.get("name")))
    allocated = _reported(status.get("allocatedResources") if status is not None else None)
    if allocated is not None:
        return allocated
    return {} if infeasible else _spec_requests(where, container)


def _actuated(
    running: Mapping[str, Mapping[str, Any]], infeasible: bool, where: Where, container: Mapping[str, Any]
) -> Nanos:
    """What the kubelet reports the container runs with; else what it allocated; else its spec."""
    status = running.get(str(container.get("name")))
    resources = status.get("resources") if status is not None else None
    actuated = _reported(resources.get("requests") if isinstance(resources, Mapping) else None)
    if actuated is not None:
        return actuated
    return _allocated(running, infeasible, where, container)


def _reported(values: object) -> Nanos | None:
    """Quantities the kubelet reports; None when absent, or unreadable (a report is never a reason to
    refuse a pod: what the spec asks still counts)."""
    if values is None:
        return None
    try:
        return _quantities(values, ("status",))
    except PodResourceError:
        return None


def _pod_level(name: str) -> bool:
    """What `spec.resources` may set (IsSupportedPodLevelResource)."""
    return name in POD_LEVEL or name.startswith(HUGEPAGES_PREFIX)


def to_core_units(nanos: Mapping[str, int], where: str) -> dict[str, int]:
    """Nano-units as the core counts them; negative or beyond int64 is a PodResourceError."""
    out: dict[str, int] = {}
    for name, value in nanos.items():
        if value < 0:
            raise PodResourceError(f"{where}: {name} totals {quantity.Quantity(value)}, below zero")
        units = -(-value // (MILLI if name == "cpu" else quantity.NANO))  # rounded up, as Kubernetes
        if units > INT64_MAX:
            raise PodResourceError(f"{where}: {name} totals {quantity.Quantity(value)}, beyond int64")
        out[RESOURCE_NAMES.get(name, name)] = units
    return out


def quantities(values: object, where: str) -> dict[str, int]:
    """A ResourceList (a node's allocatable, a task group's minResource) in the core's units."""
    return to_core_units(_quantities(values, (where,)), where)


def from_json(value: object, where: str) -> int:
    """One quantity as the API's JSON carries it (a string, or a number; null is zero, as
    `Quantity.UnmarshalJSON` reads it), in nano-units."""
    if value is None:
        return 0
    if isinstance(value, str):
        text = value.strip()  # the API server trims it too
    elif isinstance(value, int | float) and not isinstance(value, bool):
        text = str(value)
    else:
        shown = clip(repr(value))
        raise PodResourceError(f"{where}: {shown} is not a quantity (a string such as 500m or 2Gi)")
    try:
        return quantity.nanos_of(text)
    except quantity.QuantityError as exc:
        raise PodResourceError(f"{where}: {exc}") from None


# Reading the pod ------------------------------------------------------------------------------------


def _requests(holder: Mapping[str, Any], where: Where) -> Nanos:
    resources = holder.get("resources")
    if resources is None:
        return {}
    if type(resources) is not dict:
        resources = _mapping(resources, (*where, "resources"))
    requests = resources.get("requests")
    return _quantities(requests, (*where, "resources", "requests")) if requests else {}


def _quantities(values: object, where: Where) -> Nanos:
    out: Nanos = {}
    for name, raw in _mapping(values, where).items():
        if type(raw) is str:  # as the API serves every quantity: the cached parse, no more
            try:
                out[name] = quantity.nanos_of(raw)
                continue
            except quantity.QuantityError:
                pass  # said with the field's path below
        out[str(name)] = from_json(raw, _text((*where, str(name))))
    return out


def _containers(spec: Mapping[str, Any], field: str) -> list[Container]:
    items = spec.get(field)
    if items is None:
        return []
    if not isinstance(items, list):
        raise PodResourceError(f"spec.{field}: expected a list, got {clip(repr(items))}")
    return [(("spec", field, i), _mapping(c, ("spec", field, i))) for i, c in enumerate(items)]


def _statuses(status: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The containers' statuses by name (sidecars report under initContainerStatuses); unreadable
    entries are skipped: a status is the kubelet's report, never a reason to refuse the pod."""
    out: dict[str, Mapping[str, Any]] = {}
    for field in ("containerStatuses", "initContainerStatuses"):
        items = status.get(field)
        if isinstance(items, list):
            out.update((str(s.get("name")), s) for s in items if isinstance(s, Mapping))
    return out


def _resize_infeasible(status: Mapping[str, Any]) -> bool:
    """The kubelet cannot resize the pod as asked: the first PodResizePending condition has reason
    Infeasible (before Kubernetes 1.33, `status.resize: Infeasible`)."""
    if status.get("resize") == "Infeasible":
        return True
    conditions = status.get("conditions")
    for condition in conditions if isinstance(conditions, list) else ():
        if isinstance(condition, Mapping) and condition.get("type") == "PodResizePending":
            return condition.get("reason") == "Infeasible"
    return False


def _mapping(value: object, where: Where) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise PodResourceError(f"{_text(where)}: expected an object, got {clip(repr(value))}")
    return value


def _text(where: Where) -> str:
    """A path as the error names it: spec.containers[0].resources."""
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in where).lstrip(".")


def _add(into: Nanos, values: Mapping[str, int]) -> None:
    for name, value in values.items():
        into[name] = into.get(name, 0) + value


def _max(into: Nanos, values: Mapping[str, int]) -> None:
    for name, value in values.items():
        if value > into.get(name, 0) or name not in into:
            into[name] = value
