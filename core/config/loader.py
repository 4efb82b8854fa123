"""Load queues.yaml text into a validated SchedulerConfig, strictly.

Everything wrong is collected, not just the first problem, so one round trip shows the sender the
whole list; each problem names its YAML path and line.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from importlib import resources as importlib_resources

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from core.config.readers import (
    read_limits,
    read_nodesort,
    read_preemption,
    read_resolver,
    read_resource,
    read_rule,
)
from core.config.schema import (
    DEFAULT_PARTITION,
    ROOT_QUEUE,
    ChildTemplate,
    PartitionConfig,
    PlacementRuleConfig,
    QueueConfig,
    SchedulerConfig,
)
from core.config.validation import validate_partition
from core.config.yaml_reader import Problem, YamlReader, line_of
from core.resources import Resource

_TOP_KEYS = frozenset({"partitions", "checksum"})
_PARTITION_KEYS = frozenset(
    {
        "name",
        "queues",
        "placementrules",
        "limits",
        "preemption",
        "nodesortpolicy",
        "usergroupresolver",
        "statedumpfilepath",
    }
)
_QUEUE_KEYS = frozenset(
    {
        "name",
        "parent",
        "resources",
        "maxapplications",
        "properties",
        "adminacl",
        "submitacl",
        "childtemplate",
        "limits",
        "queues",
    }
)
_RESOURCES_KEYS = frozenset({"guaranteed", "max"})
_TEMPLATE_KEYS = frozenset({"maxapplications", "properties", "resources"})

# Bounds that keep any text, however hostile, cheap to refuse (tests/unit/test_fuzz_config.py):
MAX_QUEUE_DEPTH = 64  # queue levels below root; real trees have a handful
# Configured queues per partition. Aliases let a few KB of YAML name hundreds of thousands, which
# would stall the scheduler while it builds them; real configurations have dozens to a few thousand.
MAX_QUEUES = 10_000
MAX_YAML_DEPTH = 2 * MAX_QUEUE_DEPTH + 16  # each queue level is a list and a mapping
MAX_YAML_NODES = 1_000_000  # after aliases are expanded; a 5,000-queue config has about 100,000
MAX_PROBLEMS = 100  # problems (and warnings) reported; the rest are counted


class ConfigError(ValueError):
    """A configuration that cannot be used; `problems` lists every reason."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("invalid configuration: " + "; ".join(str(p) for p in problems))


@dataclass(frozen=True)
class LoadedConfig:
    config: SchedulerConfig
    warnings: tuple[Problem, ...]


def default_config_text() -> str:
    return importlib_resources.files("core.config").joinpath("default_queues.yaml").read_text()


def load_config(text: str) -> LoadedConfig:
    """Parse and validate; an empty text means the bundled default configuration."""
    if not text.strip():
        text = default_config_text()
    try:
        document = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 0
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError([Problem("", line, f"not valid YAML: {problem}")]) from None
    except RecursionError:
        raise ConfigError([Problem("", 0, "not usable YAML: nested too deeply")]) from None
    if document is not None:
        problem = _check_document(document)
        if problem is not None:
            raise ConfigError([problem])
    reader = YamlReader()
    partitions = _read_document(reader, document)
    if not reader.problems:
        for part in partitions:
            validate_partition(reader, part)
    if reader.problems:
        raise ConfigError(_bounded(reader.problems, "problems"))
    warnings = tuple(_bounded(reader.warnings, "warnings"))
    return LoadedConfig(SchedulerConfig(tuple(partitions), source=text), warnings)


def _bounded(problems: list[Problem], what: str) -> list[Problem]:
    if len(problems) <= MAX_PROBLEMS:
        return problems
    return [*problems[:MAX_PROBLEMS], Problem("", 0, f"... and {len(problems) - MAX_PROBLEMS:,} more {what}")]


def _check_document(document: Node) -> Problem | None:
    """Refuse, before reading it, a node tree that is too deep, expands (through aliases) to too many
    nodes or into itself, or holds text that is not valid Unicode (a lone surrogate, which YAML's
    escapes can make and no gRPC message can carry). Iterative, and linear in the distinct nodes."""
    sizes: dict[int, int] = {}  # expanded size of each finished node, by id
    open_nodes: set[int] = set()
    stack: list[tuple[Node, int, bool]] = [(document, 1, False)]
    while stack:
        node, depth, children_done = stack.pop()
        key = id(node)
        if children_done:
            children = _children(node)
            sizes[key] = 1 + sum(sizes[id(c)] for c in children)
            open_nodes.discard(key)
            if sizes[key] > MAX_YAML_NODES:
                return Problem(
                    "",
                    line_of(node),
                    f"the document expands to more than {MAX_YAML_NODES:,} YAML nodes (aliases?)",
                )
            continue
        if key in sizes:
            continue  # an alias to a finished node: its size is known
        if key in open_nodes:
            return Problem("", line_of(node), "an alias refers to itself: the document would be infinite")
        if depth > MAX_YAML_DEPTH:
            return Problem("", line_of(node), f"nested too deeply (more than {MAX_YAML_DEPTH} levels)")
        if isinstance(node, ScalarNode):
            try:
                node.value.encode("utf-8")
            except UnicodeEncodeError:
                shown = node.value.encode("utf-8", "backslashreplace").decode("utf-8")
                return Problem("", line_of(node), f"{shown!r} is not valid Unicode (a lone surrogate)")
            sizes[key] = 1
            continue
        open_nodes.add(key)
        stack.append((node, depth, True))
        stack.extend((child, depth + 1, False) for child in _children(node))
    return None


def _children(node: Node) -> list[Node]:
    if isinstance(node, MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, SequenceNode):
        return list(node.value)
    return []


def _read_document(reader: YamlReader, document: Node | None) -> list[PartitionConfig]:
    if document is None:
        reader.error("", None, "the configuration is empty: it needs a 'partitions' list")
        return []
    top = reader.mapping(document, "", _TOP_KEYS)
    if top is None:
        return []
    if "checksum" in top:
        message = "checksum is ignored: the scheduler computes it from the text, as YuniKorn does"
        reader.warnings.append(Problem("checksum", line_of(top["checksum"]), message))
    if "partitions" not in top:
        reader.error("partitions", document, "missing: a configuration needs a 'partitions' list")
        return []
    items = reader.sequence(top["partitions"], "partitions")
    if items is None:
        return []
    if not items:
        reader.error("partitions", top["partitions"], "at least one partition is required")
    out = []
    seen: dict[str, str] = {}
    for i, node in enumerate(items):
        path = f"partitions[{i}]"
        part = _read_partition(reader, node, path)
        if part is None:
            continue
        lowered = part.name.lower()
        if lowered in seen:
            reader.error(
                f"{path}.name",
                _key_node(node, "name"),
                f"duplicate partition name {part.name!r} (also {seen[lowered]})",
            )
            continue
        seen[lowered] = path
        out.append(part)
    return out


def _read_partition(reader: YamlReader, node: Node, path: str) -> PartitionConfig | None:
    fields = reader.mapping(node, path, _PARTITION_KEYS)
    if fields is None:
        return None
    name = DEFAULT_PARTITION
    if "name" in fields:
        name = reader.string(fields["name"], f"{path}.name") or ""
        if not name:
            reader.error(f"{path}.name", fields["name"], "a partition name cannot be empty")
    root = _read_top_queues(reader, fields.get("queues"), f"{path}.queues", node)
    rules: tuple[PlacementRuleConfig, ...] = ()
    if "placementrules" in fields:
        rule_nodes = reader.sequence(fields["placementrules"], f"{path}.placementrules") or []
        rules = tuple(
            r
            for i, n in enumerate(rule_nodes)
            if (r := read_rule(reader, n, f"{path}.placementrules[{i}]")) is not None
        )
    limits = read_limits(reader, fields.get("limits"), f"{path}.limits")
    preemption = read_preemption(reader, fields.get("preemption"), f"{path}.preemption")
    nodesort = read_nodesort(reader, fields.get("nodesortpolicy"), f"{path}.nodesortpolicy")
    resolver = read_resolver(reader, fields.get("usergroupresolver"), f"{path}.usergroupresolver")
    if "statedumpfilepath" in fields:
        reader.warnings.append(
            Problem(
                f"{path}.statedumpfilepath",
                line_of(fields["statedumpfilepath"]),
                "statedumpfilepath is ignored: pykorn writes no state dump file (YuniKorn no longer "
                "does either); the REST API serves the state",
            )
        )
    if root is None:
        return None
    if limits:
        # Partition limits are the root queue's, as YuniKorn has them: said in one place or the other.
        if root.limits and root.limits != limits:
            reader.error(
                f"{path}.limits",
                fields["limits"],
                "the partition's limits and the root queue's limits differ: set them in one place",
            )
        root = replace(root, limits=limits)
    if (count := _count_queues(root)) > MAX_QUEUES:
        reader.error(f"{path}.queues", node, f"{count:,} queues configured, over the limit of {MAX_QUEUES:,}")
        return None
    return PartitionConfig(
        name=name,
        root=root,
        placement_rules=rules,
        limits=limits,
        preemption=preemption,
        node_sort_policy=nodesort,
        user_group_resolver=resolver,
        line=line_of(node),
        path=path,
    )


def _read_top_queues(reader: YamlReader, node: Node | None, path: str, owner: Node) -> QueueConfig | None:
    """The partition's queue list: a single `root`, or top-level queues that get a root added (an empty
    list too). Missing or null, it is refused, as YuniKorn refuses a partition without queues."""
    if node is None or (isinstance(node, ScalarNode) and node.tag == "tag:yaml.org,2002:null"):
        reader.error(
            path, node if node is not None else owner, "missing: a partition needs its queues (root at least)"
        )
        return None
    items = reader.sequence(node, path)
    if items is None:
        return None
    queues = [q for i, n in enumerate(items) if (q := _read_queue(reader, n, f"{path}[{i}]", 0)) is not None]
    if len(queues) == 1 and queues[0].name.lower() == ROOT_QUEUE:
        q = queues[0]
        return QueueConfig(
            name=ROOT_QUEUE,
            parent=True,
            guaranteed=q.guaranteed,
            max=q.max,
            max_applications=q.max_applications,
            properties=q.properties,
            submit_acl=q.submit_acl,
            admin_acl=q.admin_acl,
            child_template=q.child_template,
            limits=q.limits,
            queues=q.queues,
            line=q.line,
            path=q.path,
            lines=q.lines,
        )
    for q in queues:
        if q.name.lower() == ROOT_QUEUE:
            reader.problems.append(
                Problem(f"{q.path}.name", q.line_of("name"), "'root' must be the only top-level queue")
            )
    return QueueConfig(name=ROOT_QUEUE, parent=True, queues=tuple(queues), line=line_of(node), path=path)


def _count_queues(root: QueueConfig) -> int:
    count, stack = 0, [root]
    while stack:
        queue = stack.pop()
        count += 1
        stack.extend(queue.queues)
    return count


def _read_queue(reader: YamlReader, node: Node, path: str, depth: int) -> QueueConfig | None:
    if depth > MAX_QUEUE_DEPTH:
        reader.error(path, node, f"queues are nested more than {MAX_QUEUE_DEPTH} levels below root")
        return None
    fields = reader.mapping(node, path, _QUEUE_KEYS)
    if fields is None:
        return None
    if "name" not in fields:
        reader.error(f"{path}.name", node, "missing: every queue needs a name")
        return None
    name = reader.string(fields["name"], f"{path}.name")
    if name is None:
        return None
    parent = False
    if "parent" in fields:
        parent = bool(reader.boolean(fields["parent"], f"{path}.parent"))
    guaranteed, maximum = _read_queue_resources(reader, fields.get("resources"), f"{path}.resources")
    max_apps = 0
    if "maxapplications" in fields:
        max_apps = reader.integer(fields["maxapplications"], f"{path}.maxapplications", minimum=0) or 0
    properties = _read_properties(reader, fields.get("properties"), f"{path}.properties")
    submit_acl = reader.string(fields["submitacl"], f"{path}.submitacl") if "submitacl" in fields else None
    admin_acl = reader.string(fields["adminacl"], f"{path}.adminacl") if "adminacl" in fields else None
    template = None
    if "childtemplate" in fields:
        template = _read_child_template(reader, fields["childtemplate"], f"{path}.childtemplate")
    limits = read_limits(reader, fields.get("limits"), f"{path}.limits")
    children: list[QueueConfig] = []
    if "queues" in fields:
        child_nodes = reader.sequence(fields["queues"], f"{path}.queues") or []
        for i, child in enumerate(child_nodes):
            q = _read_queue(reader, child, f"{path}.queues[{i}]", depth + 1)
            if q is not None:
                children.append(q)
    return QueueConfig(
        name=name,
        parent=parent,
        guaranteed=guaranteed,
        max=maximum,
        max_applications=max_apps,
        properties=properties,
        submit_acl=submit_acl,
        admin_acl=admin_acl,
        child_template=template,
        limits=limits,
        queues=tuple(children),
        line=line_of(node),
        path=path,
        lines=_entry_lines(node),
    )


def _entry_lines(node: Node) -> tuple[tuple[str, int], ...]:
    """The line of every key in a queue's mapping by dotted path, for checks made after loading."""
    out: dict[str, int] = {}

    def walk(current: Node, prefix: str) -> None:
        if not isinstance(current, MappingNode):
            return
        for key_node, value_node in current.value:
            if isinstance(key_node, ScalarNode):
                key_path = f"{prefix}.{key_node.value}" if prefix else str(key_node.value)
                out.setdefault(key_path, line_of(key_node))
                walk(value_node, key_path)

    walk(node, "")
    return tuple(out.items())


def _key_node(node: Node, key: str) -> Node:
    """The node of `key` in a mapping, to point at; the mapping itself when the key is absent."""
    if isinstance(node, MappingNode):
        for key_node, _ in node.value:
            if isinstance(key_node, ScalarNode) and key_node.value == key:
                return key_node
    return node


def _read_queue_resources(
    reader: YamlReader, node: Node | None, path: str
) -> tuple[Resource | None, Resource | None]:
    if node is None:
        return None, None
    fields = reader.mapping(node, path, _RESOURCES_KEYS)
    if fields is None:
        return None, None
    guaranteed = (
        read_resource(reader, fields["guaranteed"], f"{path}.guaranteed") if "guaranteed" in fields else None
    )
    maximum = read_resource(reader, fields["max"], f"{path}.max") if "max" in fields else None
    return guaranteed, maximum


def _read_properties(reader: YamlReader, node: Node | None, path: str) -> tuple[tuple[str, str], ...]:
    if node is None:
        return ()
    fields = reader.free_mapping(node, path) or {}
    out = []
    for key, value_node in fields.items():
        text = reader.scalar_text(value_node, f"{path}.{key}")
        if text is not None:
            out.append((key, text))
    return tuple(out)


def _read_child_template(reader: YamlReader, node: Node, path: str) -> ChildTemplate | None:
    fields = reader.mapping(node, path, _TEMPLATE_KEYS)
    if fields is None:
        return None
    max_apps = 0
    if "maxapplications" in fields:
        max_apps = reader.integer(fields["maxapplications"], f"{path}.maxapplications", minimum=0) or 0
    guaranteed, maximum = _read_queue_resources(reader, fields.get("resources"), f"{path}.resources")
    # As YuniKorn's template.FromConf: a property with an empty key or value is dropped, and a template
    # that sets nothing is no template (the queues below look further up for one).
    props = tuple(
        (k, v) for k, v in _read_properties(reader, fields.get("properties"), f"{path}.properties") if k and v
    )
    if not max_apps and not props and guaranteed is None and maximum is None:
        return None
    return ChildTemplate(max_applications=max_apps, properties=props, guaranteed=guaranteed, max=maximum)
