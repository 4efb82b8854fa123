"""Pure readers of Kubernetes objects: what a pod, a node, a namespace, a PriorityClass or the
ConfigMaps say, as the shim reads them (its application and user, its requests in the core's units, its
rules as tags, its task groups, its volumes' topology terms), and how a reading refuses an object it
cannot use (bad_objects). No I/O and no state of the shim: the parts above decide on what these read."""
