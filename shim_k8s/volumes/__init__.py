"""Volumes as kube-scheduler's volume binding sees them: the claims, volumes, StorageClasses and
CSINodes the shim follows (cache), which volume may bind which claim (matching), the kinds of volumes
and their attach limits (kinds), and the binding of a pod's claims on the node the core chose before
the pod is bound (binding)."""
