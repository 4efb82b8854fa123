"""Placement rules: which queue an application goes to."""

from core.placement.manager import PlacementManager, PlacementRequest

__all__ = ["PlacementManager", "PlacementRequest"]
