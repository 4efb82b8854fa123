"""The history's REST readings (core.server.rest_history) on a real SQLite database: a partition named
`[rmID]name` narrows to that RM's rows, as YuniKorn's REST paths name partitions; configuration
changes newest first; a query that cannot be used says which parameter and why."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.history.store import HistoryStore
from core.server.rest_history import BadQuery, HistoryAPI


@pytest.fixture
def store(tmp_path: Path) -> HistoryStore:
    store = HistoryStore(f"sqlite:///{tmp_path}/h.db")
    store.migrate()
    for rm_id, user, at in (("rm-a", "alice", 10.0), ("rm-b", "bob", 20.0)):
        key = (rm_id, "default", "job")
        store.write([
            ("app_new", (*key, "root.q", user, "[]", "{}", at)),
            ("alloc_start", (*key, f"{rm_id}-1", at, "root.q", user, "n1", "", '{"memory": 1}')),
            ("config_change", (rm_id, at, f"ipv4:10.0.0.1:{int(at)}", "+q", "registered", "q\n")),
        ])  # fmt: skip
    return store


def test_a_partition_named_with_its_rm_reads_that_rm_s_rows_only(store: HistoryStore) -> None:
    api = HistoryAPI(store)
    one = api.application(store, {}, {"p": "[rm-b]default", "a": "job"})
    assert (one["rmID"], one["user"]) == ("rm-b", "bob")
    assert [a["allocationKey"] for a in one["allocations"]] == ["rm-b-1"]
    listed = api.applications(store, {"partition": "[rm-a]default"}, {})
    assert [(a["rmID"], a["user"]) for a in listed["applications"]] == [("rm-a", "alice")]
    both = api.applications(store, {"partition": "default"}, {})
    assert both["total"] == 2
    with pytest.raises(LookupError):
        api.application(store, {}, {"p": "[rm-c]default", "a": "job"})


def test_configuration_changes_newest_first_and_of_one_rm(store: HistoryStore) -> None:
    api = HistoryAPI(store)
    everything = api.config_changes(store, {}, {})["changes"]
    assert [(c["rmID"], c["time"]) for c in everything] == [("rm-b", 20.0), ("rm-a", 10.0)]
    (mine,) = api.config_changes(store, {"rmID": "rm-a"}, {})["changes"]
    assert (mine["who"], mine["change"], mine["diff"]) == ("ipv4:10.0.0.1:10", "registered", "+q")


def test_a_query_that_cannot_be_used_says_which_and_why(store: HistoryStore) -> None:
    api = HistoryAPI(store)
    with pytest.raises(BadQuery, match="limit='0'"):
        api.config_changes(store, {"limit": "0"}, {})
    with pytest.raises(BadQuery, match="from='yesterday'"):
        api.applications(store, {"from": "yesterday"}, {})
