"""The resource-manager side of si.v1, shared by every shim and the CLI.

- `client`: SchedulerClient (register, the three streams, StreamEvents, configuration updates) that
  hands each response to its handlers once, as it arrives; it remembers nothing itself.
- `reconnect`: reconnect with backoff, register again and re-send the state, after the core went away.
- `messages`: builders of si messages from plain values; `tls`: TLS and mutual TLS to the core.
- `core_process`: a `pykorn core` daemon as a child process (for `pykorn fake run`, tests, benchmarks).

It imports nothing from the core but the generated stubs (`si`).
"""

from rmclient.client import ResponseHandler, SchedulerClient
from rmclient.reconnect import Backoff, reconnect
from rmclient.tls import ClientTLS

__all__ = ["Backoff", "ClientTLS", "ResponseHandler", "SchedulerClient", "reconnect"]
