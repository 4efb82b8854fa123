"""Whether an ask fits a node: its constraints, the pod rules over the partition, and room; the first
node in policy order that passes them all."""
