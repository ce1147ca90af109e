"""`python -m experiments.gcp_resource [--live] [--systems a,b] [--faults f,g] [--journal URL] [--out PATH]`."""

import sys

from experiments.gcp_resource.scenario import GcpResource
from experiments.runner import main

sys.exit(main(GcpResource))
