"""The refusal of one item of a stream message: raised where the item is checked (si_inbound, the ask
cache's limit), answered on the stream by the intake with its text as the reason."""

from __future__ import annotations


class BadItem(ValueError):
    """One item of a stream message that cannot be used; its text goes back as the rejection reason."""
