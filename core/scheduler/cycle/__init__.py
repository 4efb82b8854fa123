"""One scheduling cycle over a partition: what it tries in which order (scheduling), what it keeps
while it runs (state), which asks it parks when no node takes them (parking), and gang placeholders
replaced by their real tasks (gangs)."""
