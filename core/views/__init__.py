"""Read-only views of scheduler state for the REST API, shaped as YuniKorn's ws/v1 DAO objects."""
