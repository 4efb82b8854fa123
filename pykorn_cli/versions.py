"""What `pykorn --version` says: this release, and the upstream it is measured against."""

from __future__ import annotations

from importlib import metadata

try:
    PYKORN_VERSION = metadata.version("pykorn-scheduler")
except metadata.PackageNotFoundError:  # run from a source tree that was never installed
    PYKORN_VERSION = "unknown (not installed)"

# The YuniKorn release whose behaviour pykorn follows, and the yunikorn-core commit its conformance
# tables were read at (tests/conformance/upstream.py holds the same commit; a test keeps them equal).
YUNIKORN_RELEASE = "1.9"
YUNIKORN_CORE_COMMIT = "be3bb487298956dd70906fca15e577bbc12d23cb"
TRACKS = f"Apache YuniKorn {YUNIKORN_RELEASE}, yunikorn-core {YUNIKORN_CORE_COMMIT[:8]}"
