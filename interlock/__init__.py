"""Interlock: gate an agent's side effects on premises, leases and claims, and keep a hash-chained record.

The way in is `Interlock`: open a journal (a path or a `postgresql://` URL), decorate each function that acts on
the world with `@app.effect(...)`, call it with the values the agent decided on (`observed=`), and run
`app.recover()` after a crash. Each call returns an `Outcome` whose `Status` says whether the effect landed.

Below it sit `Gate` (one target behind a journal and claims), `Effect`, `Premise` and the leases, the targets
(`FunctionTarget`; `interlock.targets.gcs` and `interlock.targets.calendar` for the two cloud services), the
journals (`Journal`, `interlock.pg`), receipts (`verify`, `bundle`), and every error under `InterlockError`
(`interlock.errors`). Fault tests pass a hook (`interlock.hooks`); nothing outside the program can fault it.
"""

from .app import Action, AsyncAction, Interlock, Recovered, Unsettled, current_effect, current_epoch
from .backends import open_journal
from .checks import Check
from .claims import Claim, FileClaims
from .effects import Effect, effect_id_for
from .errors import (BundleError, ClaimLost, ConfigurationError, DuplicateAction, EffectError, EffectRefused,
                     EffectUnsettled, GuardFailed, InterlockError, JournalCorrupt, JournalError, JournalUnavailable,
                     SpillFailed, UnjournalableArgument, UnknownEffect)
from .gate import Gate
from .hooks import Hooks
from .journal import Journal, write_checkpoint
from .kinds import open_send
from .leases import CallableLease, Lease
from .outcomes import Outcome, RefusalCode, Status
from .premises import NOT_SET, Premise
from .records import EffectRecord
from .receipts import bundle, verify, verify_journal
from .signing import generate_key, public_hex
from .targets import (DEDUPE, DEFAULT_IN_FLIGHT, EPOCH, LEASE, TIER_BLIND, TIER_DEDUPE, TIER_LOOKUP, FunctionTarget,
                      Rejected, Target, Unanswered)

__all__ = [
    "Action", "AsyncAction", "BundleError", "CallableLease", "Check", "Claim", "ClaimLost", "ConfigurationError", "DEDUPE", "DEFAULT_IN_FLIGHT",
    "DuplicateAction", "EPOCH", "Effect", "EffectError", "EffectRecord", "EffectRefused", "EffectUnsettled", "FileClaims",
    "FunctionTarget", "Gate", "GuardFailed", "Hooks", "Interlock", "InterlockError", "Journal", "JournalCorrupt", "JournalError",
    "JournalUnavailable", "LEASE", "Lease", "NOT_SET", "Outcome", "Premise", "Recovered", "RefusalCode", "Rejected",
    "SpillFailed", "Status",
    "TIER_BLIND", "TIER_DEDUPE", "TIER_LOOKUP", "Target", "Unanswered", "UnjournalableArgument", "UnknownEffect", "Unsettled",
    "bundle", "current_effect", "current_epoch", "effect_id_for", "generate_key", "open_journal", "open_send", "public_hex", "verify", "verify_journal",
    "write_checkpoint",
]
