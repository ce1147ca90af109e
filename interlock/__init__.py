"""Interlock: gate an agent's side effects on premises, leases and claims, and keep a hash-chained record."""

from .app import Action, AsyncAction, Interlock, Recovered, Unsettled, current_effect
from .backends import open_journal
from .checks import Check
from .claims import Claim, FileClaims
from .effects import Effect, effect_id_for
from .errors import (BundleError, ClaimLost, ConfigurationError, DuplicateAction, EffectError, EffectRefused,
                     EffectUnsettled, GuardFailed, InterlockError, JournalCorrupt, JournalError, JournalUnavailable,
                     UnjournalableArgument)
from .gate import Gate
from .hooks import Hooks
from .journal import EffectRecord, Journal
from .leases import CallableLease, Lease
from .outcomes import Outcome, RefusalCode, Status, UnknownOutcome, landed
from .premises import NOT_SET, Premise
from .receipts import bundle, verify, verify_journal
from .signing import generate_key, public_hex, write_checkpoint
from .targets import (DEFAULT_IN_FLIGHT, TIER_BLIND, TIER_DEDUPE, TIER_LOOKUP, FunctionTarget, Rejected, Target,
                      Unanswered)

__all__ = [
    "Action", "AsyncAction", "BundleError", "CallableLease", "Check", "Claim", "ClaimLost", "ConfigurationError", "DEFAULT_IN_FLIGHT",
    "DuplicateAction", "Effect", "EffectError", "EffectRecord", "EffectRefused", "EffectUnsettled", "FileClaims",
    "FunctionTarget", "Gate", "GuardFailed", "Hooks", "Interlock", "InterlockError", "Journal", "JournalCorrupt", "JournalError",
    "JournalUnavailable", "Lease", "NOT_SET", "Outcome", "Premise", "Recovered", "RefusalCode", "Rejected", "Status",
    "TIER_BLIND", "TIER_DEDUPE", "TIER_LOOKUP", "Target", "Unanswered", "UnjournalableArgument", "UnknownOutcome", "Unsettled",
    "bundle", "current_effect", "effect_id_for", "generate_key", "landed", "open_journal", "public_hex", "verify", "verify_journal",
    "write_checkpoint",
]
