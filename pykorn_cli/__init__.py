"""The `pykorn` command: the one place that may import the core, the RM client and both shims."""
