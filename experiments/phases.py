"""The two workers of every cell: `decide` (the first, which the fault stops) and `restart` (the one after it).

Kept apart from the runner so a worker process imports two names, not the harness and its stand-ins.
"""

DECIDE = "decide"
RESTART = "restart"
PHASES = (DECIDE, RESTART)
