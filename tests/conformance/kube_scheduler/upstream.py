"""The kube-scheduler sources the kube_scheduler conformance suites are ported from.

kubernetes/kubernetes is read file by file from a stored index of public repositories (the repository
is too large to fetch whole). The index keeps each file at the commit of one of its own stored
versions, so there is no single commit for all of them: KUBERNETES_COMMIT maps every file read to the
commit its text was read at. A suite names the files it ports from; when a suite is brought up to a
newer version of a file, change its commit here and say in the suite what changed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

PLUGINS = "pkg/scheduler/framework/plugins"

KUBERNETES_REPO: Final = "kubernetes/kubernetes"

# Path in kubernetes/kubernetes -> the commit its text was read at.
KUBERNETES_COMMIT: Final[Mapping[str, str]] = {
    f"{PLUGINS}/nodeunschedulable/node_unschedulable_test.go": "b574b11f6b28f06e17333bb110e9374db3259bad",
    f"{PLUGINS}/nodeunschedulable/node_unschedulable.go": "09b2e8f638daafd00efb22368ead44419ec72ad6",
    f"{PLUGINS}/tainttoleration/taint_toleration_test.go": "cb6ff2d8ce3595f88570f82c7d0e6d98910afd3c",
    f"{PLUGINS}/tainttoleration/taint_toleration.go": "0f7becbc443966e5cf4ac37aa20a1a509fab73eb",
    f"{PLUGINS}/nodeaffinity/node_affinity_test.go": "17bae91f207a5f2b101e581c90f7a72fc9adef96",
    f"{PLUGINS}/nodeaffinity/node_affinity.go": "5ae369a03439e3654c6fa01a1de5c3d9615fe897",
    f"{PLUGINS}/nodename/node_name_test.go": "96a58e4b8a59fab0b3735b1ae0cf92eeab6fc49c",
    f"{PLUGINS}/nodename/node_name.go": "6f137b77b15db02ba928582345afbcfe1faa9bd1",
    f"{PLUGINS}/nodeports/node_ports_test.go": "27214b84cfe38d60c33b93b5b3a43be3ad99c2e9",
    f"{PLUGINS}/nodeports/node_ports.go": "53f1b9d6f8de259644c05a25aa7ac8c6a67258e2",
    f"{PLUGINS}/noderesources/fit_test.go": "24fbb13eafec665e6f4b64961930774babd8b6d1",
    f"{PLUGINS}/noderesources/fit.go": "903b1f7e2884a152477f870ece3460be3d5025d1",
    # podtopologyspread/filtering_test.go as read is after the framework moved to
    # k8s.io/kube-scheduler/framework (node inclusion policies, minDomains, matchLabelKeys).
    f"{PLUGINS}/podtopologyspread/filtering_test.go": "01c2588bf4a3eb6bb3524b1e2bd60efb38a4b577",
    f"{PLUGINS}/podtopologyspread/filtering.go": "01c2588bf4a3eb6bb3524b1e2bd60efb38a4b577",
    f"{PLUGINS}/podtopologyspread/common.go": "02850301e61b0491a6efad7fb440dfa1b03cfc96",
    f"{PLUGINS}/interpodaffinity/filtering_test.go": "e7827879dbc282e7f5103451dc63169e964b6bb7",
    f"{PLUGINS}/interpodaffinity/filtering.go": "53f1b9d6f8de259644c05a25aa7ac8c6a67258e2",
    # its `namespaces` rows only; the index gave an excerpt without its commit
    f"{PLUGINS}/interpodaffinity/scoring_test.go": "unknown (index excerpt, id 30376605)",
    f"{PLUGINS}/volumerestrictions/volume_restrictions_test.go": "bace36fb03da88a1b97730d5bd67893c8b7f8067",
}
SPREAD_FILTERING_TEST = f"{PLUGINS}/podtopologyspread/filtering_test.go"
INTERPOD_FILTERING_TEST = f"{PLUGINS}/interpodaffinity/filtering_test.go"
VOLUME_RESTRICTIONS_TEST = f"{PLUGINS}/volumerestrictions/volume_restrictions_test.go"


def kube_case(test: str, case: str = "") -> str:
    """The id of a case ported from kube-scheduler: `Test.../row name`, as `go test -run` names it."""
    return f"{test}/{case}" if case else test
