"""Bounds on what a resource manager may send, so that no input can make the core slow, huge or dead.

Each limit is checked where a message is turned into commands (core/rm/proxy.py); an item over a limit
is rejected on its stream with a reason that names the limit, and the stream keeps serving. The
message size is the exception: gRPC itself refuses an over-size message (RESOURCE_EXHAUSTED) before
the core sees it, which ends that one call. docs/interface.md ("Limits") lists them for RM authors.

The defaults are chosen so that nothing a real cluster sends comes near them (the benchmarks, with
200,000 asks in one message, pass untouched), while a runaway or hostile sender is stopped long
before it costs the core its memory or its event loop.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, fields
from typing import Any

ECHO_SUFFIX = "…"  # marks an over-long ID echoed back in a rejection, cut to max_id_length


@dataclass(frozen=True)
class Limits:
    # gRPC's own limit on one message, each way. A Kubernetes pod's ask with its labels is about 300
    # bytes, so 64 MiB carries a 200,000-pod cluster's recovery in one message; gRPC's default of
    # 4 MiB would refuse one of 15,000 pods.
    max_message_bytes: int = 64 * 1024 * 1024
    # rmID, applicationID, allocationKey, nodeID, partitionName, taskGroupName. 253 is the longest
    # Kubernetes object name (a DNS subdomain): node names, pod UIDs and application IDs fit.
    max_id_length: int = 253
    # queueName, user and group names. A queue path is up to 64 characters per level (the config's
    # own rule) joined by dots; a user may be an OIDC subject or system:serviceaccount:<ns>:<name>.
    max_name_length: int = 1024
    # Tags on one ask or one application. The Kubernetes shim turns each pod label into a tag; pods
    # carry tens of labels, and 256 is far beyond any real pod.
    max_tags: int = 256
    # Attributes on one node. Node Feature Discovery labels a node with a few hundred CPU and device
    # features, each an attribute, so nodes get four times the room asks get.
    max_node_attributes: int = 1024
    # A tag, attribute or resource name. A Kubernetes label key is at most 317 characters (253 prefix,
    # '/', 63 name) and the shim prefixes it (kubernetes.io/label/): 512 leaves room.
    max_key_length: int = 512
    # A tag or attribute value, and a release message. Label values are 63 characters, but tags also
    # carry JSON (node selectors, tolerations, taints); Kubernetes caps all of an object's annotations
    # together at 256 KiB, so 64 KiB for one value is generous.
    max_value_length: int = 64 * 1024
    # Resource types in one resource (node capacity, ask). Clusters use a handful (memory, vcore,
    # pods, ephemeral storage, a few devices); every resource sum costs time per type.
    max_resource_types: int = 64
    # The queues.yaml text of a registration or configuration update. Kubernetes keeps a ConfigMap,
    # where the Kubernetes shim reads it from, under 1 MiB; 1 MiB holds about 5,000 queues and
    # takes the core some seconds to read (off its event loop).
    max_config_bytes: int = 1024 * 1024
    # Asks of one application pending in the core (sent and not yet allocated, rejected or released).
    # 100,000 is more executors than any Spark job asks for, and is what the scale benchmark puts on
    # each of its two applications; without a bound one application could fill the core's memory.
    max_pending_asks_per_application: int = 100_000
    # Asks (and reported allocations) of an application the core does not know yet, held for it for
    # `early_ask_seconds` (core.scheduler.early_asks): an RM sends an application and then its asks
    # without waiting, and the two streams may be read in either order. Per RM; past it such an ask is
    # refused at once. 0 turns holding off (refused at once, as YuniKorn's in-process core does).
    max_early_asks: int = 10_000
    early_ask_seconds: float = 2.0
    # Items (asks, releases, applications, nodes) per second from one RM on one kind of stream, as a
    # token bucket that holds up to `rate_burst` items. The core allocates about 25,000 asks a second
    # end to end (benchmarks/RESULTS.md), so 50,000 a second never slows an RM the core can keep up
    # with, and the burst takes a recovering RM's whole cluster (200,000 asks) in one message. Past
    # it, items are rejected with a "retry" reason instead of queueing without bound. 0 turns it off.
    rate_items_per_second: float = 50_000.0
    rate_burst: int = 250_000
    # Responses the core has queued on one stream and its RM has not read yet (core.rm.response_stream),
    # in their wire size, which is what the queue holds (they are queued serialized). A reading RM
    # keeps this near zero (one message per engine step and stream); one busy sending a recovery of
    # 200,000 pods reads late, and its answers (about 30 MiB) wait meanwhile. Per stream: over
    # `max_unread_response_bytes` with nothing read for `unread_grace_seconds`, or over four times
    # it, or over `max_unread_responses` messages, the stream is cut with RESOURCE_EXHAUSTED and its
    # queue freed; its RM's state waits out the grace period as for any dropped stream. Over every
    # stream together, past `max_unread_response_bytes_total` the streams furthest behind are cut:
    # however many RMs stop reading, the core's memory stays bounded.
    max_unread_responses: int = 10_000
    max_unread_response_bytes: int = 16 * 1024 * 1024
    unread_grace_seconds: float = 30.0
    max_unread_response_bytes_total: int = 128 * 1024 * 1024

    def clip(self, text: str) -> str:
        """`text` as it may be echoed back: an over-long ID is cut, so a rejection stays small."""
        if len(text) <= self.max_id_length:
            return text
        return text[: self.max_id_length] + ECHO_SUFFIX

    @classmethod
    def from_overrides(cls, overrides: list[str]) -> Limits:
        """Defaults with `NAME=VALUE` overrides (the `pykorn core --limit` flag); ValueError if bad."""
        types = {f.name: f.type for f in fields(cls)}
        changes: dict[str, Any] = {}  # each value of the type its field has (checked just above)
        for item in overrides:
            name, sep, raw = item.partition("=")
            name = name.strip().replace("-", "_")
            if not sep or name not in types:
                raise ValueError(f"unknown limit {item!r}; expected NAME=VALUE with NAME one of {names()}")
            try:
                value: int | float = float(raw) if types[name] == "float" else int(raw.replace("_", ""))
            except ValueError:
                raise ValueError(f"limit {name}: {raw!r} is not a number") from None
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"limit {name}: must be a finite number of at least 0, got {raw!r}")
            changes[name] = value
        limits = dataclasses.replace(cls(), **changes)
        if limits.rate_items_per_second > 0 and limits.rate_burst < 1:
            raise ValueError("limit rate_burst must be at least 1 while rate_items_per_second is set")
        return limits


def names() -> str:
    return ", ".join(f.name for f in fields(Limits))


DEFAULT_LIMITS = Limits()


def config_size_problem(text: str, most: int) -> str:
    """Why a configuration text is too large to read (over `most` bytes, max_config_bytes); "" when not."""
    # A str is at least as many bytes as characters: only one near or over the limit is encoded.
    if len(text) <= most // 4:
        return ""
    size = len(text.encode("utf-8"))
    if size <= most:
        return ""
    return f"the configuration is {size:,} bytes, over the limit of {most:,} (max_config_bytes)"
