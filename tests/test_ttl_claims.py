"""The control system's claims: a holder that dies without releasing is waited out for the TTL, as the published
run's claims were; a released claim is taken at once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from interlock import FileClaims

from experiments.ttl_claims import TtlClaims

ROOT = Path(__file__).resolve().parents[1]
TTL = 0.6


def _claims(tmp_path: Path) -> TtlClaims:
    return TtlClaims(FileClaims(tmp_path / "claims"), tmp_path / "ttl", ttl=TTL)


def test_a_released_claim_is_taken_again_at_once(tmp_path):
    claims = _claims(tmp_path)
    claims.acquire("e1", wait=1.0).release()

    began = time.monotonic()
    again = claims.acquire("e1", wait=1.0)

    assert again is not None and time.monotonic() - began < TTL / 2
    again.release()


def test_a_claim_whose_holder_was_sigkilled_is_waited_out_for_the_ttl_from_when_it_was_taken(tmp_path):
    code = ("import os, signal, sys\n"
            "from pathlib import Path\n"
            "from interlock import FileClaims\n"
            "from experiments.ttl_claims import TtlClaims\n"
            "d = Path(sys.argv[1])\n"
            f"TtlClaims(FileClaims(d / 'claims'), d / 'ttl', ttl={TTL}).acquire('e1', wait=1.0)\n"
            "os.kill(os.getpid(), signal.SIGKILL)\n")
    holder = subprocess.run([sys.executable, "-c", code, str(tmp_path)], cwd=ROOT, env=os.environ, timeout=60)
    assert holder.returncode == -signal.SIGKILL
    taken = json.loads((tmp_path / "ttl" / "e1.ttl.json").read_text())["since"]

    claim = _claims(tmp_path).acquire("e1", wait=1.0)

    assert claim is not None and time.time() >= taken + TTL
    claim.release()
