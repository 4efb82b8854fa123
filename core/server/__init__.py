"""Transport adapters: the gRPC service and the daemon around it. No scheduling logic here."""
