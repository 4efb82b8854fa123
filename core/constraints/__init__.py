"""The Kubernetes placement rules an ask and a node carry as tags and attributes, parsed: node selector,
tolerations and taints, node affinity, pod affinity, topology spread, host ports. Pure functions of the
tags; the checks that apply them over a partition are core/scheduler/fit's."""
