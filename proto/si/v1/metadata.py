"""gRPC call metadata that pykorn's additions to the wire use. The .proto cannot declare header names,
so they are defined here, once, beside the stubs: the core and every client import them from here."""

from __future__ import annotations

# Optional metadata on the three bidirectional streams: the rmID of the RM opening the stream, so the
# core binds the stream to it at once (answers held while it was away flow without a first message).
RM_ID = "pykorn-rm-id"

# Initial metadata of a StreamEvents call: the number of the first event recorded after it opened.
LIVE_FROM_ID = "pykorn-live-from-id"
