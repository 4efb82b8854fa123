"""queues.yaml: schema, strict loading, validation."""

from core.config.loader import ConfigError, LoadedConfig, default_config_text, load_config
from core.config.schema import PartitionConfig, QueueConfig, SchedulerConfig

__all__ = [
    "ConfigError",
    "LoadedConfig",
    "PartitionConfig",
    "QueueConfig",
    "SchedulerConfig",
    "default_config_text",
    "load_config",
]
