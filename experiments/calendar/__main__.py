"""`python -m experiments.calendar [--live] [--systems a,b] [--faults f,g] [--raced-trials N] [--journal URL]
[--out PATH]`."""

import sys

from experiments.calendar.scenario import Calendar
from experiments.runner import main

sys.exit(main(Calendar))
