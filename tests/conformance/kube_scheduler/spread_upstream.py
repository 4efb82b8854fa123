"""The kube-scheduler sources the spread, inter-pod affinity and volume restriction filter cases are
ported from, pinned to the commits read.

The kubernetes/kubernetes repository is read file by file from the stored index (it is too big to fetch
whole), and the index holds each file at its own commits: the newest version of
podtopologyspread/filtering_test.go that was stored is at KUBERNETES_COMMIT, the newest stored versions of
the other two test files are at the commits named beside them. The code under test was read at the same
or at the nearest stored commit (its Filter logic has been stable across those versions).

Each case is named `Test.../<row name>`, the row name verbatim; where upstream has two rows of one name
in one table, the second is `<row name>#01`, as `go test` names it.
"""

from __future__ import annotations

# kubernetes/kubernetes: the version of podtopologyspread/filtering_test.go read (after the scheduler
# framework moved to k8s.io/kube-scheduler/framework, with PodTopologySpread's node inclusion policies,
# minDomains and matchLabelKeys).
KUBERNETES_COMMIT = "01c2588bf4a3eb6bb3524b1e2bd60efb38a4b577"

# The files read, with the commit each was read at.
SPREAD_FILTERING_TEST = "pkg/scheduler/framework/plugins/podtopologyspread/filtering_test.go"
SPREAD_FILTERING = "pkg/scheduler/framework/plugins/podtopologyspread/filtering.go"
SPREAD_COMMON = "pkg/scheduler/framework/plugins/podtopologyspread/common.go"
INTERPOD_FILTERING_TEST = "pkg/scheduler/framework/plugins/interpodaffinity/filtering_test.go"
INTERPOD_SCORING_TEST = "pkg/scheduler/framework/plugins/interpodaffinity/scoring_test.go"  # `namespaces`
INTERPOD_FILTERING = "pkg/scheduler/framework/plugins/interpodaffinity/filtering.go"
VOLUME_RESTRICTIONS_TEST = "pkg/scheduler/framework/plugins/volumerestrictions/volume_restrictions_test.go"

INTERPOD_COMMIT = "e7827879dbc282e7f5103451dc63169e964b6bb7"
VOLUME_RESTRICTIONS_COMMIT = "bace36fb03da88a1b97730d5bd67893c8b7f8067"

SOURCES: dict[str, str] = {
    SPREAD_FILTERING_TEST: KUBERNETES_COMMIT,
    SPREAD_FILTERING: KUBERNETES_COMMIT,
    SPREAD_COMMON: "02850301e61b0491a6efad7fb440dfa1b03cfc96",  # not stored at KUBERNETES_COMMIT
    INTERPOD_FILTERING_TEST: INTERPOD_COMMIT,
    INTERPOD_SCORING_TEST: "unknown (index excerpt, id 30376605)",
    INTERPOD_FILTERING: "53f1b9d6f8de259644c05a25aa7ac8c6a67258e2",  # not stored at INTERPOD_COMMIT
    VOLUME_RESTRICTIONS_TEST: VOLUME_RESTRICTIONS_COMMIT,
}


def kube_case(test: str, row: str) -> str:
    """The id of a ported kube-scheduler row: `TestX/<row name>` (the name verbatim)."""
    return f"{test}/{row}"
