"""The tables, and the constraints that make the database itself refuse a forked chain or a second resolution."""

from __future__ import annotations

# pg_advisory_xact_lock(SCHEMA_LOCK, ...) keys: two-int4 keys, a space apart from the claims' bigint keys.
LOCK_SPACE = 0x1A7E
SCHEMA_LOCK = 1
APPEND_LOCK = 2

DDL = """
CREATE TABLE IF NOT EXISTS interlock_journal (
    seq         bigint PRIMARY KEY CHECK (seq >= 0),
    effect_id   text   NOT NULL,
    kind        text   NOT NULL,
    prev        text   UNIQUE,
    effect_prev text,
    hash        text   NOT NULL UNIQUE,
    epoch       bigint,
    line        text   NOT NULL,
    CONSTRAINT only_the_first_entry_has_no_prev CHECK ((seq = 0) = (prev IS NULL))
);
CREATE UNIQUE INDEX IF NOT EXISTS interlock_journal_one_successor_per_effect_entry
    ON interlock_journal (effect_id, effect_prev) WHERE effect_prev IS NOT NULL;
CREATE UNIQUE INDEX IF NOT EXISTS interlock_journal_one_first_entry_per_effect
    ON interlock_journal (effect_id) WHERE effect_prev IS NULL;
CREATE UNIQUE INDEX IF NOT EXISTS interlock_journal_one_resolution_per_effect
    ON interlock_journal (effect_id) WHERE kind IN ('COMMITTED', 'REFUSED', 'AMBIGUOUS');
CREATE INDEX IF NOT EXISTS interlock_journal_by_effect ON interlock_journal (effect_id, seq);

CREATE TABLE IF NOT EXISTS interlock_claims (
    effect_id text        PRIMARY KEY,
    epoch     bigint      NOT NULL,
    lock_key  bigint      NOT NULL,
    owner     text        NOT NULL,
    backend   integer     NOT NULL,
    expires   timestamptz NOT NULL
);
"""
