"""Targets: the services an effect lands on. Cloud clients are imported only by the modules that need them."""

from .base import (DEDUPE, DEFAULT_IN_FLIGHT, EPOCH, LEASE, TIER_BLIND, TIER_DEDUPE, TIER_LOOKUP, Rejected, Target,
                   Unanswered, covers, fences_of, in_flight_bound, unanswered)
from .function import FunctionTarget

__all__ = ["DEDUPE", "DEFAULT_IN_FLIGHT", "EPOCH", "FunctionTarget", "LEASE", "Rejected", "TIER_BLIND", "TIER_DEDUPE",
           "TIER_LOOKUP", "Target", "Unanswered", "covers", "fences_of", "in_flight_bound", "unanswered"]
