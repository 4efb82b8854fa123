"""History that outlives the core: applications, allocations, queue usage and the core's event records
written to a database (`pykorn core --history URL`: SQLite or PostgreSQL) off the scheduling path, and
read back through `/ws/v1/history/...` and `pykorn history`. See docs/history.md."""
