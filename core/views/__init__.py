"""Read-only views of scheduler state: for the REST API, shaped as YuniKorn's ws/v1 DAO objects (dao,
cluster_views, usage_views), and the gauges of the metrics (metrics_view)."""
