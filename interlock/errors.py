"""Every error the library raises, in one hierarchy, so a caller can catch by what an error means.

```text
InterlockError
├── ConfigurationError         the caller's own mistake, found before anything was journaled or sent
│   ├── DuplicateAction        two actions registered under one name
│   └── UnjournalableArgument  an argument that would not come back from the journal unchanged
├── JournalError
│   ├── JournalCorrupt         damage other than a torn last line; the file is left byte for byte as it was
│   └── JournalUnavailable     the journal could not be reached; `sent` says what is known of the send
├── ClaimLost                  this process's claim was taken over; it must not write or send
├── GuardFailed                a check run inside the dispatch transaction failed; DISPATCHED was not written
├── BundleError                a receipt bundle that cannot be read as one
├── UnknownEffect              the journal holds no entry of the effect asked for
├── SpillFailed                `interlock.receipts` could not keep effects' checks in its temporary folder
└── EffectError                raised by `Outcome.raise_for_status()`; carries the outcome
    ├── EffectRefused          the gate refused the effect (nothing landed)
    └── EffectUnsettled        whether the effect landed is not known yet (AMBIGUOUS, IN_FLIGHT)
```
"""

from __future__ import annotations

from typing import Any


class InterlockError(Exception):
    """The root of every error the library raises on purpose."""


class ConfigurationError(InterlockError, ValueError):
    """The caller's own mistake, reported before anything was sent: most before anything was journaled, a lease
    answer that is not a bool when the gate first reads it, after the effect's PROPOSED."""


class DuplicateAction(ConfigurationError):
    """Two actions were registered under one name, so recovery could not tell their effects apart."""


class UnjournalableArgument(ConfigurationError, TypeError):
    """An argument would not come back from the journal unchanged, so recovery could not rebuild the effect."""


class JournalError(InterlockError):
    """The journal cannot be used as it stands."""


class JournalCorrupt(JournalError):
    """The journal holds damage other than a torn last line; it is left untouched until a person looks."""


class JournalUnavailable(JournalError):
    """The journal could not be reached. `sent` is False when nothing was sent, None when a send's fate is unknown
    (recovery settles it once the journal is back)."""

    def __init__(self, message: str, *, sent: bool | None):
        super().__init__(message)
        self.sent = sent


class ClaimLost(InterlockError):
    """This process's claim was taken over (it stopped renewing, or its epoch was superseded): it must not send."""


class GuardFailed(InterlockError):
    """A check run inside the dispatch transaction failed, so DISPATCHED was not written."""

    def __init__(self, violations: list[str]):
        super().__init__("; ".join(violations))
        self.violations = violations


class BundleError(InterlockError, ValueError):
    """A receipt bundle or journal export that cannot be read as one."""


class UnknownEffect(InterlockError, KeyError):
    """The journal holds no entry of the effect asked for (a mistyped id, or another journal's)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class SpillFailed(InterlockError):
    """The scratch file for checks moved out of memory could not be made or written: a full or read-only
    temporary folder, not a fault of the journal."""


class EffectError(InterlockError):
    """An effect did not commit; raised by `Outcome.raise_for_status()`, carrying that outcome."""

    def __init__(self, message: str, outcome: Any):
        super().__init__(message)
        self.outcome = outcome


class EffectRefused(EffectError):
    """The gate refused the effect: nothing landed."""


class EffectUnsettled(EffectError):
    """Whether the effect landed is not known yet; recovery, or a later lookup, settles it."""
