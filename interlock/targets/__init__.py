"""Targets: the services an effect lands on. Cloud clients are imported only by the modules that need them."""

from .base import TIER_BLIND, TIER_DEDUPE, TIER_LOOKUP, Rejected, Target
from .function import FunctionTarget

__all__ = ["FunctionTarget", "Rejected", "TIER_BLIND", "TIER_DEDUPE", "TIER_LOOKUP", "Target"]
