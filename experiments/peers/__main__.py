"""`python -m experiments.peers --case DIR`: the harness's reading of a case's peer record after the run."""

from __future__ import annotations

import argparse
from pathlib import Path

from experiments.peers.run import read_after_run


def main() -> None:
    """Read the record in a process of its own, so the harness never loads a peer's library or its settings."""
    parser = argparse.ArgumentParser(prog="python -m experiments.peers", description=__doc__)
    parser.add_argument("--case", type=Path, required=True, help="the case directory a peer worker ran in")
    read_after_run(parser.parse_args().case)


if __name__ == "__main__":
    main()
