"""queues.yaml loading: the valid and invalid corpora under tests/data/configs, and `pykorn config validate`.

Every invalid file states what it expects on its first line:
`# expect: <YAML path> line <N> <words of the message>`.
"""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import pytest

from core.config import ConfigError, LoadedConfig, default_config_text, load_config
from core.config.report import validate_file
from core.config.schema import PartitionConfig, QueueConfig
from core.config.yaml_reader import Problem

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "tests" / "data" / "configs"
VALID = sorted((CONFIGS / "valid").glob("*.yaml"))
INVALID = sorted((CONFIGS / "invalid").glob("*.yaml"))
EXPECT = re.compile(r"^# expect: (?P<path>\S+) line (?P<line>\d+) (?P<words>.+?)\s*$")

GI = 2**30
MI = 2**20


def _load(name: str) -> LoadedConfig:
    return load_config((CONFIGS / "valid" / name).read_text())


def _only_partition(loaded: LoadedConfig) -> PartitionConfig:
    assert len(loaded.config.partitions) == 1
    return loaded.config.partitions[0]


def _child(queue: QueueConfig, name: str) -> QueueConfig:
    matches = [q for q in queue.queues if q.name == name]
    assert len(matches) == 1, f"{name} not among {[q.name for q in queue.queues]}"
    return matches[0]


def _problems(text: str) -> list[Problem]:
    with pytest.raises(ConfigError) as info:
        load_config(text)
    return info.value.problems


# The valid corpus ------------------------------------------------------------------------------


def test_the_corpora_are_big_enough() -> None:
    assert len(VALID) >= 6
    assert len(INVALID) >= 14


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.name)
def test_every_valid_file_loads_without_warnings(path: Path) -> None:
    text = path.read_text()
    loaded = load_config(text)
    if path.name == "08_no_root.yaml":
        # A root added by the loader has no ACL: nobody could submit, which is worth a warning.
        assert [w.message.split(",")[0] for w in loaded.warnings] == ["no queue has a submitacl or adminacl"]
    else:
        assert loaded.warnings == ()
    assert loaded.config.partitions
    assert loaded.config.source == text
    for part in loaded.config.partitions:
        assert part.root.name == "root"
        assert part.root.is_parent
        assert part.root.guaranteed is None
        assert part.root.max is None


def test_the_bundled_default() -> None:
    text = (CONFIGS / "valid" / "01_default.yaml").read_text()
    assert text == default_config_text()
    part = _only_partition(load_config(text))
    assert part.name == "default"
    assert part.root.submit_acl == "*"
    assert [q.name for q in part.root.queues] == ["default"]
    assert not part.root.queues[0].is_parent
    assert [(r.name, r.create, r.value) for r in part.placement_rules] == [
        ("provided", False, ""),
        ("tag", True, "namespace"),
    ]
    assert part.node_sort_policy.type == "fair"
    assert part.preemption.enabled is True
    assert part.preemption.quota_preemption_enabled is False


def test_hierarchy_with_suffixed_resources() -> None:
    root = _only_partition(_load("02_hierarchy.yaml")).root
    assert [q.name for q in root.queues] == ["engineering", "marketing"]

    engineering = _child(root, "engineering")
    assert engineering.is_parent
    assert engineering.guaranteed == {"memory": 10 * GI, "vcore": 4000}
    assert engineering.max == {"memory": 100 * GI, "vcore": 50_000}
    assert engineering.path == "partitions[0].queues[0].queues[0]"

    batch = _child(engineering, "batch")
    assert not batch.is_parent
    assert batch.guaranteed == {"memory": 4 * GI, "vcore": 500}
    assert batch.max == {"memory": 8 * 10**9, "vcore": 1500}

    interactive = _child(engineering, "interactive")
    assert not interactive.is_parent
    assert interactive.guaranteed == {"memory": 512 * MI, "nvidia.com/gpu": 2}
    assert interactive.max is None

    marketing = _child(root, "marketing")
    assert marketing.queues == ()
    assert marketing.parent is True
    assert marketing.is_parent
    assert marketing.max_applications == 10


def test_placement_rules() -> None:
    rules = _only_partition(_load("03_placement.yaml")).placement_rules
    assert [r.name for r in rules] == ["provided", "user", "tag", "fixed"]
    provided, user, tag, fixed = rules
    assert provided.create is False
    assert user.create is True
    assert user.filter.type == "allow"
    assert (tag.value, tag.create) == ("namespace", True)
    assert (fixed.value, fixed.create) == ("shared", True)
    assert fixed.parent is not None
    assert (fixed.parent.name, fixed.parent.value, fixed.parent.create) == ("fixed", "sandbox", False)
    assert fixed.filter.type == "deny"
    assert fixed.filter.users == ("alice", "bob")
    assert fixed.filter.groups == ("admins",)
    assert [r.line for r in rules] == [4, 6, 8, 11]


def test_binpacking_with_resource_weights() -> None:
    policy = _only_partition(_load("04_binpacking.yaml")).node_sort_policy
    assert policy.type == "binpacking"
    assert dict(policy.resource_weights) == {"vcore": 4.0, "memory": 1.0}


def test_preemption_and_queue_properties() -> None:
    part = _only_partition(_load("05_preemption_properties.yaml"))
    assert part.preemption.enabled is False
    assert part.preemption.quota_preemption_enabled is True
    assert part.root.property_map() == {"application.sort.policy": "fifo"}
    jobs = _child(part.root, "jobs")
    assert jobs.property_map() == {
        "application.sort.policy": "fair",
        "preemption.delay": "30s",
        "priority.offset": "10",
    }


def test_limits() -> None:
    part = _only_partition(_load("06_limits.yaml"))
    (partition_limit,) = part.limits
    assert partition_limit.limit == "partition wide"
    assert partition_limit.users == ("*",)
    assert partition_limit.max_applications == 100
    assert partition_limit.max_resources is None

    per_user, group = _child(part.root, "tenants").limits
    assert per_user.users == ("alice", "bob")
    assert per_user.max_resources == {"memory": 8 * GI, "vcore": 2000}
    assert per_user.max_applications == 5
    assert group.groups == ("dev",)
    assert group.users == ()
    assert group.max_resources == {"memory": 16 * GI}
    assert group.max_applications == 0


def test_child_template() -> None:
    users = _child(_only_partition(_load("07_childtemplate.yaml")).root, "users")
    assert users.is_parent
    template = users.child_template
    assert template is not None
    assert template.max_applications == 3
    assert dict(template.properties) == {"application.sort.policy": "fifo"}
    assert template.guaranteed == {"memory": GI}
    assert template.max == {"memory": 4 * GI, "vcore": 2000}


def test_top_level_queues_without_root_get_a_root_added() -> None:
    root = _only_partition(_load("08_no_root.yaml")).root
    assert root.name == "root"
    assert root.is_parent
    assert [q.name for q in root.queues] == ["alpha", "beta"]
    alpha, beta = root.queues
    assert not alpha.is_parent
    assert alpha.max == {"memory": 2 * GI}
    assert beta.is_parent
    assert [q.name for q in beta.queues] == ["gamma"]
    assert alpha.path == "partitions[0].queues[0]"
    assert beta.queues[0].path == "partitions[0].queues[1].queues[0]"


def test_multiple_partitions() -> None:
    config = _load("09_multi_partition.yaml").config
    assert [p.name for p in config.partitions] == ["default", "gpu"]
    default = config.partition("default")
    gpu = config.partition("gpu")
    assert default is not None
    assert gpu is not None
    assert config.partition("missing") is None
    assert default.node_sort_policy.type == "fair"
    assert gpu.node_sort_policy.type == "binpacking"
    assert [q.name for q in default.root.queues] == ["a"]
    assert _child(gpu.root, "training").max == {"nvidia.com/gpu": 8}


def test_an_explicit_root_keeps_its_settings_and_is_named_root() -> None:
    text = """
partitions:
  - queues:
      - name: ROOT
        submitacl: "*"
        adminacl: admins
        maxapplications: 7
        properties:
          application.sort.policy: fifo
"""
    part = _only_partition(load_config(text))
    assert part.name == "default"
    assert part.root.name == "root"
    assert part.root.is_parent
    assert part.root.queues == ()
    assert (part.root.submit_acl, part.root.admin_acl) == ("*", "admins")
    assert part.root.max_applications == 7
    assert part.root.property_map() == {"application.sort.policy": "fifo"}


@pytest.mark.parametrize("queues", ["", "    queues:\n", "    queues: ~\n"])
def test_a_partition_without_queues_is_refused_as_yunikorn_refuses_it(queues: str) -> None:
    (problem,) = _problems(f"partitions:\n  - name: empty\n{queues}")
    assert problem.path == "partitions[0].queues"
    assert "a partition needs its queues" in problem.message


def test_an_empty_queue_list_gets_an_empty_root() -> None:
    part = _only_partition(load_config("partitions:\n  - name: empty\n    queues: []\n"))
    assert part.name == "empty"
    assert part.root.name == "root"
    assert part.root.queues == ()


@pytest.mark.parametrize(
    ("written", "weight"),
    [("2", 2.0), ("0.5", 0.5), ("0x10", 16.0), ("1_000", 1000.0), ("1.5e+3", 1500.0), ("0", 0.0)],
)
def test_resource_weights_are_read_as_yaml_numbers(written: str, weight: float) -> None:
    text = f"partitions:\n- queues: []\n  nodesortpolicy:\n    resourceweights:\n      memory: {written}"
    part = _only_partition(load_config(text))
    assert dict(part.node_sort_policy.resource_weights) == {"memory": weight}


# Empty text ------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "   \n\n\t\n"])
def test_an_empty_text_loads_the_bundled_default(text: str) -> None:
    loaded = load_config(text)
    part = _only_partition(loaded)
    assert part.name == "default"
    assert [q.name for q in part.root.queues] == ["default"]
    default = part.root.queues[0]
    assert not default.is_parent
    assert f"{part.root.name}.{default.name}" == "root.default"
    assert loaded.config.source == default_config_text()


# The invalid corpus ----------------------------------------------------------------------------


def _expectation(path: Path) -> tuple[str, int, str]:
    first = path.read_text().splitlines()[0]
    match = EXPECT.match(first)
    assert match, f"{path.name}: the first line must be '# expect: PATH line N WORDS', got {first!r}"
    return match["path"], int(match["line"]), match["words"]


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.name)
def test_every_invalid_file_is_rejected_with_path_and_line(path: Path) -> None:
    yaml_path, line, words = _expectation(path)
    problems = _problems(path.read_text())
    rendered = [str(p) for p in problems]
    wanted = [r for r in rendered if yaml_path in r and f"(line {line})" in r and words in r]
    assert wanted, f"no problem with {yaml_path!r}, (line {line}) and {words!r} in {rendered}"
    assert all(p.line > 0 for p in problems), rendered


def test_config_error_message_lists_every_problem() -> None:
    text = (CONFIGS / "invalid" / "bad_quantity.yaml").read_text()
    with pytest.raises(ConfigError) as info:
        load_config(text)
    message = str(info.value)
    assert message.startswith("invalid configuration: ")
    assert "(line 10)" in message
    assert isinstance(info.value, ValueError)


def test_structural_problems_are_all_collected_at_once() -> None:
    text = """\
partitions:
  - name: default
    colour: blue
    queues:
      - name: root
        queues:
          - name: a
            maxapplications: many
            resources:
              max:
                memory: 10Xi
          - name: b
            parent: perhaps
    nodesortpolicy:
      type: random
"""
    rendered = [str(p) for p in _problems(text)]
    expected = [
        "partitions[0].colour (line 3): unknown key",
        "partitions[0].queues[0].queues[0].maxapplications (line 8): expected an integer",
        "partitions[0].queues[0].queues[0].resources.max.memory (line 11): memory: '10Xi' has an unknown",
        "partitions[0].queues[0].queues[1].parent (line 13): expected true or false",
        "partitions[0].nodesortpolicy.type (line 15): expected fair or binpacking",
    ]
    for start in expected:
        assert any(r.startswith(start) for r in rendered), (start, rendered)
    assert len(rendered) == len(expected)


def test_semantic_problems_are_all_collected_at_once() -> None:
    text = """\
partitions:
  - name: default
    queues:
      - name: root
        queues:
          - name: a.b
          - name: A
          - name: a
            resources:
              guaranteed:
                vcore: 2
              max:
                vcore: 1
"""
    rendered = [str(p) for p in _problems(text)]
    assert rendered == [
        "partitions[0].queues[0].queues[0].name (line 6): invalid queue name 'a.b': "
        "1 to 64 characters of a-z A-Z 0-9 _ : # / @ -",
        "partitions[0].queues[0].queues[2].name (line 8): duplicate queue name 'a' under 'root' "
        "(compared ignoring case)",
        "partitions[0].queues[0].queues[2].resources.guaranteed.vcore (line 11): guaranteed 2 is above "
        "max 1 in queue 'a'",
    ]


def test_a_queue_name_of_64_characters_is_accepted() -> None:
    name = "q" * 64
    text = f"partitions:\n  - queues:\n      - name: {name}\n"
    assert _only_partition(load_config(text)).root.queues[0].name == name
    with pytest.raises(ConfigError, match="invalid queue name"):
        load_config(text.replace(name, name + "q"))


def test_a_child_max_equal_to_its_parent_max_and_a_full_guarantee_are_accepted() -> None:
    text = """\
partitions:
  - queues:
      - name: parent
        resources:
          guaranteed: {memory: 2Gi}
          max: {memory: 2Gi}
        queues:
          - name: a
            resources:
              guaranteed: {memory: 1Gi}
              max: {memory: 2Gi}
          - name: b
            resources:
              guaranteed: {memory: 1024Mi}
"""
    parent = _only_partition(load_config(text)).root.queues[0]
    assert [q.name for q in parent.queues] == ["a", "b"]


@pytest.mark.parametrize("written", [".nan", "-.inf", "-1", "heavy"])
def test_a_resource_weight_must_be_a_finite_non_negative_number(written: str) -> None:
    text = f"partitions:\n- queues: []\n  nodesortpolicy:\n    resourceweights:\n      vcore: {written}"
    (problem,) = _problems(text)
    assert problem.path == "partitions[0].nodesortpolicy.resourceweights.vcore"
    assert problem.line == 5


def test_a_comment_only_text_is_not_the_default() -> None:
    (problem,) = _problems("# nothing here\n")
    assert "empty" in problem.message


def test_problem_without_a_line() -> None:
    assert str(Problem("", 0, "boom")) == "<document>: boom"
    assert str(Problem("partitions", 3, "boom")) == "partitions (line 3): boom"


# pykorn config validate ------------------------------------------------------------------------


def test_validate_file_prints_the_queue_tree_of_a_valid_file() -> None:
    out = io.StringIO()
    assert validate_file(CONFIGS / "valid" / "02_hierarchy.yaml", out) == 0
    text = out.getvalue()
    assert "partition default (nodesortpolicy fair)" in text
    for name in ("root: parent", "engineering: parent", "batch: leaf", "interactive: leaf", "marketing"):
        assert name in text
    # 4Gi and 500m as a person reads them (core/quantity_text.py)
    assert "guaranteed {memory: 4.0Gi, vcore: 0.5}" in text
    assert "maxapplications 10" in text


def test_validate_file_prints_every_partition() -> None:
    out = io.StringIO()
    assert validate_file(CONFIGS / "valid" / "09_multi_partition.yaml", out) == 0
    text = out.getvalue()
    assert "partition default (nodesortpolicy fair)" in text
    assert "partition gpu (nodesortpolicy binpacking)" in text
    assert "training: leaf; max {nvidia.com/gpu: 8}" in text


def test_validate_file_lists_the_problems_of_an_invalid_file() -> None:
    path = CONFIGS / "invalid" / "guaranteed_above_max.yaml"
    out = io.StringIO()
    assert validate_file(path, out) == 1
    lines = out.getvalue().splitlines()
    assert lines[0] == f"{path}: invalid configuration (1 problem(s))"
    assert lines[1].startswith("  partitions[0].queues[0].queues[0].resources.guaranteed.memory (line 10): ")


def test_validate_file_reports_an_unreadable_file(tmp_path: Path) -> None:
    out = io.StringIO()
    assert validate_file(tmp_path / "missing.yaml", out) == 2
    assert "cannot read" in out.getvalue()


@pytest.mark.parametrize(
    ("path", "code"),
    [
        (CONFIGS / "valid" / "08_no_root.yaml", 0),
        (CONFIGS / "invalid" / "duplicate_queue_name_case.yaml", 1),
    ],
    ids=["valid", "invalid"],
)
def test_the_config_validate_command(path: Path, code: int) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pykorn_cli", "config", "validate", str(path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == code, result.stdout + result.stderr
    if code == 0:
        assert "alpha: leaf" in result.stdout
        assert "gamma: leaf" in result.stdout
    else:
        assert "partitions[0].queues[0].queues[1].name (line 9): duplicate queue name" in result.stdout
