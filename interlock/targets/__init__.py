"""Targets: the services an effect lands on. Cloud clients are imported only by the modules that need them."""

from .base import (DEFAULT_IN_FLIGHT, TIER_BLIND, TIER_DEDUPE, TIER_LOOKUP, Rejected, Target, Unanswered,
                   in_flight_bound, unanswered)
from .function import FunctionTarget

__all__ = ["DEFAULT_IN_FLIGHT", "FunctionTarget", "Rejected", "TIER_BLIND", "TIER_DEDUPE", "TIER_LOOKUP", "Target",
           "Unanswered", "in_flight_bound", "unanswered"]
