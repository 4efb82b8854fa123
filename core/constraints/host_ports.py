"""Host ports, as Kubernetes' NodePorts plugin checks them.

The tag `pykorn.io/host-ports` is a JSON list of {"hostPort", "protocol", "hostIP"}: the ports of the
pod's containers that have a hostPort (protocol TCP and hostIP 0.0.0.0 when not given). Two uses of
one port conflict when the protocol is the same and the host IPs are equal or either is 0.0.0.0 (every
address). A node keeps the ports its pods use (ours and foreign ones), so the check costs a lookup
per port the ask wants.
"""

from __future__ import annotations

from dataclasses import dataclass

ANY_IP = "0.0.0.0"
PROTOCOLS = frozenset({"TCP", "UDP", "SCTP"})


class HostPortError(ValueError):
    pass


@dataclass(frozen=True)
class HostPort:
    port: int
    protocol: str = "TCP"
    host_ip: str = ANY_IP


def parse_host_ports(raw: object, where: str) -> tuple[HostPort, ...]:
    if not isinstance(raw, list):
        raise HostPortError(f"{where} must be a JSON list of {{hostPort, protocol, hostIP}}")
    out = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise HostPortError(f"{where}[{i}] must be an object")
        port = item.get("hostPort")
        if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
            raise HostPortError(f"{where}[{i}].hostPort must be a port number (1-65535), got {port!r}")
        protocol = item.get("protocol") or "TCP"
        if protocol not in PROTOCOLS:
            raise HostPortError(f"{where}[{i}].protocol must be one of {sorted(PROTOCOLS)}, got {protocol!r}")
        host_ip = item.get("hostIP") or ANY_IP
        if not isinstance(host_ip, str):
            raise HostPortError(f"{where}[{i}].hostIP must be a string")
        out.append(HostPort(port, protocol, host_ip))
    return tuple(out)


class PortsInUse:
    """The host ports the pods on one node use: (protocol, port) -> the host IPs, one per use."""

    __slots__ = ("_used",)

    def __init__(self) -> None:
        self._used: dict[tuple[str, int], list[str]] = {}

    def add(self, ports: tuple[HostPort, ...]) -> None:
        for p in ports:
            self._used.setdefault((p.protocol, p.port), []).append(p.host_ip)

    def remove(self, ports: tuple[HostPort, ...]) -> None:
        for p in ports:
            ips = self._used.get((p.protocol, p.port))
            if ips is not None and p.host_ip in ips:
                ips.remove(p.host_ip)
                if not ips:
                    del self._used[(p.protocol, p.port)]

    def conflict(self, ports: tuple[HostPort, ...]) -> HostPort | None:
        """The first wanted port already taken on this node, None when all are free."""
        for p in ports:
            ips = self._used.get((p.protocol, p.port))
            if ips and (p.host_ip == ANY_IP or ANY_IP in ips or p.host_ip in ips):
                return p
        return None

    def __bool__(self) -> bool:
        return bool(self._used)
