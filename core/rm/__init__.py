"""The resource-manager adapter: the registry of RMs and their streams (proxy), si messages in and out,
the asks waiting for an answer, the input rate limit and the bounded response queues."""
