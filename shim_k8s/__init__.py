"""The Kubernetes resource manager: pods and nodes in, bindings and evictions out."""
