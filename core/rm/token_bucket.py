"""A token bucket: how many of an RM's items may go now when `pykorn core --limit rate_items_per_second`
is set (core/config/input_limits.py holds the rate and the burst)."""

from __future__ import annotations


class TokenBucket:
    """Up to `burst` items at once, refilled at `rate` items a second; rate 0 means no limit."""

    def __init__(self, rate: float, burst: int, now: float) -> None:
        self.rate = rate
        self.burst = burst
        self.tokens = float(burst)
        self.updated = now

    def take(self, wanted: int, now: float) -> int:
        """How many of `wanted` items may go now (the first ones); the tokens for those are spent."""
        if self.rate <= 0:
            return wanted
        if now > self.updated:
            self.tokens = min(float(self.burst), self.tokens + (now - self.updated) * self.rate)
            self.updated = now
        granted = min(wanted, int(self.tokens))
        self.tokens -= granted
        return granted

    def wait_for(self, items: int) -> float:
        """Seconds until `items` more tokens will have accrued (a hint for the sender)."""
        if self.rate <= 0:
            return 0.0
        return max(0.0, (min(items, self.burst) - self.tokens) / self.rate)
