"""The Kubernetes API as the shim and the admission controller use it: objects and watch events
(`objects`), the HTTP clients (`kube_http` over `http1`), the shim's writes (`kube`), informers, the
Lease election, and the shapes of the objects read (`object_shapes`)."""
