"""The names of allocation tags, application tags and node attributes that travel on the wire.

si.proto carries them as free-form string maps, so their keys are defined here, once, beside the stubs
(as `metadata.py` does for call metadata): the core reads them, every client writes them, and both import
them from this module. Where YuniKorn defines a key (its interface's `common/constants.go`), the value is
YuniKorn's, so a YuniKorn shim's tags mean the same here; pykorn's own keys start with `pykorn.io/`.
"""

from __future__ import annotations

# ---- Node attributes -------------------------------------------------------------------------------
# A node's Kubernetes labels, one attribute each: this prefix, then the label's key.
LABEL_PREFIX = "kubernetes.io/label/"
ATTR_HOSTNAME = "si/hostname"
ATTR_RACK_NAME = "si/rackname"
ATTR_NODE_PARTITION = "si/node-partition"
# The node's instance type (YuniKorn's si common InstanceType): an application's usage is tracked by it.
ATTR_INSTANCE_TYPE = "si/instance-type"
# The node's taints, as the JSON list of Kubernetes Taint objects.
ATTR_TAINTS = "pykorn.io/taints"
# The taint (effect NoSchedule) a cordoned Kubernetes node carries: sent among the node's taints with
# the node unschedulable, so the core lets in the asks that tolerate it, as kube-scheduler does.
TAINT_CORDON = "node.kubernetes.io/unschedulable"
# How many volumes of each CSI driver the node can attach (its CSINode's drivers[].allocatable.count), as
# a JSON object driver -> count; a driver not named has no limit.
ATTR_CSI_VOLUME_LIMITS = "pykorn.io/csi-volume-limits"

# ---- Allocation (ask) tags: where a pod may run ----------------------------------------------------
# Every value is JSON in the shape Kubernetes writes the field (see docs/interface.md).
TAG_REQUIRED_NODE = "yunikorn.apache.org/requiredNode"  # a node name: a DaemonSet pod's node
TAG_NODE_SELECTOR = "pykorn.io/node-selector"
TAG_TOLERATIONS = "pykorn.io/tolerations"
TAG_NODE_AFFINITY = "pykorn.io/node-affinity"
TAG_HOST_PORTS = "pykorn.io/host-ports"
TAG_POD_AFFINITY = "pykorn.io/pod-affinity"
TAG_POD_ANTI_AFFINITY = "pykorn.io/pod-anti-affinity"
TAG_TOPOLOGY_SPREAD = "pykorn.io/topology-spread"
# The CSI volumes the pod attaches, as a JSON object driver -> list of volume handles (ask and foreign
# allocation tag): a node's attach limit counts each handle once, however many pods share it.
TAG_CSI_VOLUMES = "pykorn.io/csi-volumes"
# The claims with access mode ReadWriteOncePod the pod uses, as a JSON list of "<namespace>/<name>" (ask
# and foreign allocation tag): no two pods of the partition may use one at once.
TAG_RWOP_CLAIMS = "pykorn.io/read-write-once-pod-claims"
# The in-tree disks the pod mounts directly, as a JSON list of {"id", "readOnly"} (ask and foreign
# allocation tag): two pods on one node may share a disk only when both mount it read-only.
TAG_DISKS = "pykorn.io/disks"

# ---- Allocation (ask) tags: pods that start together ----------------------------------------------
# The pod group an ask belongs to within its application (Kubernetes' Workload API: a Workload's pod
# group, or a PodGroup, with its replica key), and how many of the group's pods must be placed at once
# before any is (a whole number, at least 1; absent or 1: placed pod by pod, grouped for observability).
TAG_POD_GROUP = "pykorn.io/pod-group"
TAG_POD_GROUP_MIN_COUNT = "pykorn.io/pod-group-min-count"

# ---- Allocation tags: what the pod is ----------------------------------------------------------------
TAG_NAMESPACE = "kubernetes.io/meta/namespace"
TAG_POD_NAME = "kubernetes.io/meta/podName"
# The labels of the pod's namespace, one tag each: this prefix, then the label's key.
NAMESPACE_LABEL_PREFIX = "pykorn.io/namespace-label/"
TAG_CREATION_TIME = "creationTime"  # seconds since the epoch: the pod's creation
TAG_FOREIGN = "foreign"  # on an allocation the RM reports that another scheduler placed
# "true" on a running allocation whose pod is being deleted (metadata.deletionTimestamp set): it still
# holds its node, but topology spread no longer counts it, as kube-scheduler leaves terminating pods out.
TAG_TERMINATING = "pykorn.io/terminating"

# ---- Application tags ----------------------------------------------------------------------------------
TAG_APP_CREATION_TIME = "yunikorn.apache.org/creationTime"  # the core counts gang timeouts from it
TAG_CREATE_FORCE = "application.create.force"  # si's AppTagCreateForce: place even where rules refuse
# The namespace's quota and guarantee (si.Resource JSON) and maxapplications (a whole number), and the
# parent queue a namespace's queue is created under: YuniKorn's AppTagNamespace* keys.
TAG_QUOTA = "namespace.resourcequota"
TAG_GUARANTEED = "namespace.resourceguaranteed"
TAG_MAX_APPS = "namespace.resourcemaxapps"
TAG_PARENT_QUEUE = "namespace.parentqueue"
