"""Interlock: gate an agent's side effects on premises, leases and claims, and keep a hash-chained record."""

from .backends import open_journal
from .claims import Claim, FileClaims
from .effects import Effect, Outcome, effect_id_for
from .gate import Gate
from .errors import (BundleError, ClaimLost, ConfigurationError, InterlockError, JournalCorrupt,
                     JournalUnavailable)
from .journal import EffectRecord, Journal, write_checkpoint
from .kinds import open_send
from .leases import CallableLease, Lease
from .outcomes import UnknownOutcome, landed
from .premises import NOT_SET, Premise
from .receipts import bundle, verify, verify_journal
from .signing import generate_key, public_hex
from .targets import TIER_BLIND, TIER_DEDUPE, TIER_LOOKUP, FunctionTarget, Rejected, Target

__all__ = [
    "BundleError", "CallableLease", "Claim", "ClaimLost", "ConfigurationError", "Effect", "EffectRecord", "FileClaims", "FunctionTarget", "Gate",
    "InterlockError", "Journal", "JournalCorrupt", "JournalUnavailable", "Lease", "NOT_SET", "Outcome", "Premise", "Rejected", "TIER_BLIND", "TIER_DEDUPE",
    "TIER_LOOKUP", "Target", "UnknownOutcome", "bundle", "effect_id_for", "generate_key", "landed", "open_journal", "open_send", "public_hex",
    "verify", "verify_journal", "write_checkpoint",
]
