"""Any configuration text, sent over gRPC to a real core, is accepted or refused with INVALID_ARGUMENT and
its reasons, never answered with a crash; and /ws/v1/config always shows the configuration in force.

The texts are the domain fuzz's (tests/unit/test_fuzz_config.py): configuration-shaped documents, a good
configuration with one field drawn from the edges (filter regexps, user and group names, quantities,
queue paths), a good configuration's text mutated line by line, and plain text. Each goes to
RegisterResourceManager (a fresh registration) and to UpdateConfiguration (an RM that keeps the last
configuration it had accepted). The core's log is checked for tracebacks when it stops (core_helpers.running):
a configuration the checks missed and the core failed on is refused, but logged as the bug it is.

`make test` runs a short profile; `make test-nightly` a long one (PYKORN_CONFIG_FUZZ_EXAMPLES).
"""

from __future__ import annotations

import os
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass

import grpc
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from core.config import default_config_text
from rmclient.core_process import CoreProcess
from si.v1 import si_pb2, si_pb2_grpc
from tests.integration.core_helpers import running
from tests.unit.test_fuzz_config import GOOD, documents, dump, edged, mutated

EXAMPLES = int(os.environ.get("PYKORN_CONFIG_FUZZ_EXAMPLES", "40"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=EXAMPLES <= 100,  # the short profile is the same every run; the long one explores
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)
UPDATING_RM = "fuzz-updating"


@dataclass
class Core:
    stub: si_pb2_grpc.SchedulerStub
    rest_url: str
    in_force: str  # the configuration UPDATING_RM has in force, as the core must show it


@pytest.fixture(scope="module")
def core() -> Iterator[Core]:
    for process in running(CoreProcess()):
        with grpc.insecure_channel(process.address) as channel:
            stub = si_pb2_grpc.SchedulerStub(channel)
            stub.RegisterResourceManager(
                si_pb2.RegisterResourceManagerRequest(rmID=UPDATING_RM, config=GOOD, policyGroup="queues")
            )
            yield Core(stub, process.rest_url, GOOD)


def config_shown(core: Core, rm_id: str) -> str:
    query = urllib.parse.urlencode({"rmID": rm_id})
    with urllib.request.urlopen(f"{core.rest_url}/ws/v1/config?{query}", timeout=10) as response:
        text: str = response.read().decode("utf-8")
        return text


def sendable(text: str) -> bool:
    """gRPC strings are UTF-8: a text holding a lone surrogate cannot be sent at all."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def the_core_answers_it(core: Core, text: str) -> None:
    assume(sendable(text))
    # A fresh registration: accepted (the text in force), or INVALID_ARGUMENT with reasons.
    rm_id = "fuzz-registering"
    try:
        core.stub.RegisterResourceManager(
            si_pb2.RegisterResourceManagerRequest(rmID=rm_id, config=text, policyGroup="queues")
        )
    except grpc.RpcError as exc:
        assert exc.code() == grpc.StatusCode.INVALID_ARGUMENT, (exc.code(), exc.details(), text)
        assert exc.details(), text
    else:
        assert config_shown(core, rm_id) == (text if text.strip() else default_config_text())
    # An update: accepted and in force, or refused with reasons and the previous one still in force.
    answer = core.stub.UpdateConfiguration(si_pb2.UpdateConfigurationRequest(rmID=UPDATING_RM, config=text))
    if answer.accepted:
        core.in_force = text if text.strip() else default_config_text()
    else:
        assert answer.errors, text
    assert config_shown(core, UPDATING_RM) == core.in_force, text


@FUZZ
@given(documents().map(dump))
def test_configuration_shaped_documents(core: Core, text: str) -> None:
    the_core_answers_it(core, text)


def filtered(user: str) -> str:
    """GOOD, its provided rule filtered by one user entry."""
    return GOOD.replace(
        "      - name: provided", f"      - name: provided\n        filter: {{users: [{user}]}}"
    )


@settings(FUZZ, max_examples=3 * EXAMPLES)  # where the crashes were: the cheapest to look at
@given(edged())
@example(filtered('"a[b"'))  # registration answered UNKNOWN (re.error) before 46
@example(filtered('"x**"'))  # Python compiles it, Go does not
@example(filtered('"(?=x)"'))
def test_a_good_configuration_with_one_edge(core: Core, text: str) -> None:
    the_core_answers_it(core, text)


@FUZZ
@given(st.one_of(mutated(), st.text(max_size=200)))
def test_mutated_and_random_text(core: Core, text: str) -> None:
    the_core_answers_it(core, text)
