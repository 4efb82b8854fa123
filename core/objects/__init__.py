"""The scheduler's objects (floor 3): Queue and its tree, Application and its state machine,
Allocation, Node, reservations, gang state, the priority caches, and the event records of their
changes. Plain data and invariants; they know no service above them."""
