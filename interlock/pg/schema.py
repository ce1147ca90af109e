"""The tables, the constraints that make the database itself refuse a forked chain or a second resolution, and the
server-side functions that make an append, a claim and a release one round trip each."""

from __future__ import annotations

# Advisory lock keys: two-int4 keys in LOCK_SPACE, a space apart from the claims' bigint keys.
LOCK_SPACE = 0x1A7E
SCHEMA_LOCK = 1
APPEND_LOCK = 2
CLAIM_LOST = "IL001"  # SQLSTATE of a fenced write: the writer's claim was taken over
# Whether a resolution's line settles its effect (a refusal before any send, `resolves: false`, leaves a retry
# open). `resolves` is read with each \\u0000 escape made a space first: jsonb cannot hold U+0000, which a service's
# answer may; the swap keeps the text JSON, whatever escapes come before it, and changes no key into `resolves`.
SETTLES = "(replace(line, E'\\\\u0000', E'\\\\u0020')::jsonb ->> 'resolves') IS DISTINCT FROM 'false'"

DDL = f"""
CREATE TABLE IF NOT EXISTS interlock_journal (
    seq         bigint PRIMARY KEY CHECK (seq >= 0),
    effect_id   text   NOT NULL,
    kind        text   NOT NULL,
    prev        text   UNIQUE,
    effect_prev text,
    hash        text   NOT NULL,
    epoch       bigint,
    token       text,
    line        text   NOT NULL,
    CONSTRAINT only_the_first_entry_has_no_prev CHECK ((seq = 0) = (prev IS NULL))
);
CREATE UNIQUE INDEX IF NOT EXISTS interlock_journal_one_successor_per_effect_entry
    ON interlock_journal (effect_id, effect_prev) WHERE effect_prev IS NOT NULL;
CREATE UNIQUE INDEX IF NOT EXISTS interlock_journal_one_first_entry_per_effect
    ON interlock_journal (effect_id) WHERE effect_prev IS NULL;
DO $$ BEGIN  -- an index made before the swap refused every resolution holding U+0000: made again once
    IF pg_get_indexdef(to_regclass('interlock_journal_one_resolution_per_effect')) NOT LIKE '%replace(%' THEN
        DROP INDEX interlock_journal_one_resolution_per_effect;
    END IF;
END $$;
CREATE UNIQUE INDEX IF NOT EXISTS interlock_journal_one_resolution_per_effect
    ON interlock_journal (effect_id) WHERE kind IN ('COMMITTED', 'REFUSED', 'AMBIGUOUS')
    AND {SETTLES};
CREATE INDEX IF NOT EXISTS interlock_journal_by_effect ON interlock_journal (effect_id, seq);

-- One row per claimed effect. `holder` names one acquisition (a random token), so two acquisitions never pass
-- for each other even if a crash made the database forget one. `expires` is on the server's clock and NULL once
-- released. `in_request` is set by the holder's confirm (right before a request) and cleared by release: while it
-- is set, only the lease's expiry frees the claim, since a request may still be on its way. `stopped_epoch` names
-- an earlier holder that was taken over inside a request with its session still holding its lock (stopped, not
-- dead: it may still send), carried from holder to holder while that lock is held. `sent_until` is when a holder
-- released the claim with its last request unanswered (no entry after it) and the effect's send open, or when the
-- claim of one taken over inside a request ended: a request of it may land up to the target's in-flight bound after
-- then. Carried from holder to holder.
CREATE TABLE IF NOT EXISTS interlock_claims (
    effect_id  text        PRIMARY KEY,
    epoch      bigint      NOT NULL,
    holder     text        NOT NULL,
    owner      text        NOT NULL,
    backend    integer     NOT NULL,
    expires    timestamptz,
    in_request boolean     NOT NULL,
    taken      text        NOT NULL,
    since      timestamptz NOT NULL,
    stopped_epoch bigint,
    sent_until timestamptz
);
DO $$ BEGIN  -- a table made before the columns: each added once (ALTER would lock the table on every connect)
    IF NOT EXISTS (SELECT FROM pg_attribute WHERE attrelid = 'interlock_claims'::regclass
                   AND attname = 'stopped_epoch' AND NOT attisdropped) THEN
        ALTER TABLE interlock_claims ADD COLUMN stopped_epoch bigint;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_attribute WHERE attrelid = 'interlock_claims'::regclass
                   AND attname = 'sent_until' AND NOT attisdropped) THEN
        ALTER TABLE interlock_claims ADD COLUMN sent_until timestamptz;
    END IF;
    -- an acquire made before it returned `sent_until` (its result type cannot be replaced in place)
    IF EXISTS (SELECT FROM pg_proc WHERE proname = 'interlock_acquire' AND pronargs = 7
               AND NOT 'r_sent_until' = ANY(proargnames)) THEN
        DROP FUNCTION interlock_acquire(text, text, text, float8, text, text, text);
    END IF;
END $$;

-- The session advisory lock a holder keeps for one epoch of one effect: 48 bits of the effect, 16 of the epoch.
CREATE OR REPLACE FUNCTION interlock_lock_key(p_effect text, p_epoch bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
    SELECT (hashtextextended(p_effect, 0) & ~65535::bigint) | (p_epoch & 65535)
$$;

-- Whether another session holds the lock of this epoch of the effect (its holder's session lives on).
CREATE OR REPLACE FUNCTION interlock_lock_held(p_effect text, p_epoch bigint) RETURNS boolean
LANGUAGE sql VOLATILE AS $$
    SELECT CASE WHEN pg_try_advisory_lock(interlock_lock_key(p_effect, p_epoch))
                THEN NOT pg_advisory_unlock(interlock_lock_key(p_effect, p_epoch)) ELSE true END
$$;

-- Whether the effect's last send has no resolution after it: the journal's one open-send rule, in SQL, for the
-- claim's takeover; the journal's readers fold the entries themselves (EffectRecord).
CREATE OR REPLACE FUNCTION interlock_open_send(p_effect text) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT coalesce(max(seq) FILTER (WHERE kind IN ('DISPATCHED', 'REDISPATCHED')), -1)
         > coalesce(max(seq) FILTER (WHERE kind IN ('COMMITTED', 'REFUSED', 'AMBIGUOUS')), -1)
      FROM interlock_journal WHERE effect_id = p_effect
$$;

-- Take the claim if it is free, released, expired, or its holder is gone (its session's lock is free) with no
-- request in flight. Given a first entry (kind, token, body as `interlock_append_all` takes them), write it under
-- the new claim when the effect has no entries yet, in the same transaction. Returns the new epoch, how it was
-- taken, the effect's entries as the new holder finds them (seq and line, read after the claim is taken; not read,
-- NULL, when the first entry was written, the effect's only one) and whether that first entry is stored; or a NULL
-- epoch while a live holder keeps it; and `sent_until` as epoch seconds (see the table).
DROP FUNCTION IF EXISTS interlock_claim(text, text, text, float8);
DROP FUNCTION IF EXISTS interlock_acquire(text, text, text, float8);
CREATE OR REPLACE FUNCTION interlock_acquire(p_effect text, p_holder text, p_owner text, p_ttl float8,
                                             p_kind text, p_token text, p_body text,
                                             OUT r_epoch bigint, OUT r_taken text, OUT r_seqs bigint[],
                                             OUT r_lines text[], OUT r_first boolean, OUT r_sent_until float8)
LANGUAGE plpgsql AS $$
DECLARE
    c interlock_claims%ROWTYPE;
    v_stopped bigint;
    v_sync text;
BEGIN
    -- a new effect, the common case: its claim row is made already taken, in one statement
    IF pg_try_advisory_lock(interlock_lock_key(p_effect, 1)) THEN
        INSERT INTO interlock_claims VALUES (p_effect, 1, p_holder, p_owner, pg_backend_pid(),
                                             clock_timestamp() + make_interval(secs => p_ttl), false, 'new',
                                             clock_timestamp(), NULL)
            ON CONFLICT DO NOTHING;
        IF FOUND THEN
            r_epoch := 1;
            r_taken := 'new';
            PERFORM set_config('synchronous_commit', 'off', true);  -- as for any new claim (below)
        ELSE
            PERFORM pg_advisory_unlock(interlock_lock_key(p_effect, 1));  -- claimed before: the general way
        END IF;
    END IF;
    IF r_epoch IS NULL THEN
        INSERT INTO interlock_claims VALUES (p_effect, 0, '', '', 0, NULL, false, 'new', clock_timestamp(), NULL)
            ON CONFLICT DO NOTHING;
        SELECT * INTO c FROM interlock_claims WHERE effect_id = p_effect FOR UPDATE;
        r_sent_until := extract(epoch FROM c.sent_until);
        <<taking>>
        BEGIN
            IF c.holder = p_holder AND c.expires > clock_timestamp() THEN
                -- a retry of a claim taken before its answer was lost: this session takes the epoch's lock again
                PERFORM pg_try_advisory_lock(interlock_lock_key(p_effect, c.epoch));
                UPDATE interlock_claims SET backend = pg_backend_pid() WHERE effect_id = p_effect;
                r_epoch := c.epoch;
                r_taken := c.taken;
                EXIT taking;
            ELSIF c.expires IS NULL THEN
                r_taken := CASE WHEN c.epoch = 0 THEN 'new' ELSE 'released' END;
            ELSIF c.expires <= clock_timestamp() THEN
                r_taken := 'expired';
            ELSIF c.backend = pg_backend_pid() THEN
                RETURN;  -- held through this very session (advisory locks are re-entrant, so a probe would succeed)
            ELSIF NOT pg_try_advisory_lock(interlock_lock_key(p_effect, c.epoch)) THEN
                RETURN;  -- the holder's session still holds its lock
            ELSE
                PERFORM pg_advisory_unlock(interlock_lock_key(p_effect, c.epoch));
                IF c.in_request AND interlock_open_send(p_effect) THEN
                    RETURN;  -- a lost session is not a dead holder: its request may be in flight, so wait for the lease
                END IF;
                r_taken := 'holder_gone';
            END IF;
            IF NOT pg_try_advisory_lock(interlock_lock_key(p_effect, c.epoch + 1)) THEN
                r_taken := NULL;  -- a stale holder of this very key (65536 epochs ago) still lives: wait for the lease
                RETURN;
            END IF;
            IF c.in_request AND c.backend <> pg_backend_pid() AND interlock_open_send(p_effect)
                    AND interlock_lock_held(p_effect, c.epoch) THEN
                v_stopped := c.epoch;  -- taken over inside a request from a holder whose session lives: it may send
            ELSIF c.stopped_epoch IS NOT NULL AND interlock_lock_held(p_effect, c.stopped_epoch) THEN
                v_stopped := c.stopped_epoch;
            END IF;
            IF r_taken = 'new' THEN
                -- No wait for the disk: a claim a crash forgets is refused at its holder's next fenced write, and
                -- there is no earlier holder's entry to decide on. Every other takeover waits: its flush makes
                -- durable every entry its decisions rest on, a resolution whose own commit did not wait for the disk
                -- included.
                PERFORM set_config('synchronous_commit', 'off', true);
            END IF;
            UPDATE interlock_claims SET epoch = c.epoch + 1, holder = p_holder, owner = p_owner,
                   backend = pg_backend_pid(), expires = clock_timestamp() + make_interval(secs => p_ttl),
                   in_request = false, taken = r_taken,
                   since = clock_timestamp(), stopped_epoch = v_stopped,
                   -- taken inside a request: that send, retries included, may have run until the claim ended
                   sent_until = CASE WHEN c.in_request AND interlock_open_send(p_effect)
                                     THEN greatest(c.sent_until, least(c.expires, clock_timestamp()))
                                     ELSE c.sent_until END
             WHERE effect_id = p_effect
            RETURNING extract(epoch FROM sent_until) INTO r_sent_until;
            r_epoch := c.epoch + 1;
        END taking;
    END IF;
    IF p_body IS NOT NULL AND NOT EXISTS (SELECT FROM interlock_journal WHERE effect_id = p_effect) THEN
        -- written (or found written, by a retry): the effect's one entry is the holder's own, and the journal-wide
        -- lock the append took is held to the commit, so nothing more is done here
        v_sync := current_setting('synchronous_commit');  -- the append's own setting must not change the claim's
        PERFORM interlock_append_all(p_effect, ARRAY[p_kind], ARRAY[NULL::bigint], r_epoch, p_holder,
                                     ARRAY[p_token], ARRAY[p_body], ARRAY[NULL::text]);
        PERFORM set_config('synchronous_commit', v_sync, true);
        r_first := true;
        RETURN;
    END IF;
    SELECT coalesce(array_agg(seq ORDER BY seq), '{{}}'), coalesce(array_agg(line ORDER BY seq), '{{}}'),
           coalesce(bool_or(token = p_token), false) INTO r_seqs, r_lines, r_first
      FROM interlock_journal WHERE effect_id = p_effect;  -- read now that the claim is this holder's
END $$;

-- Give the claim back. `p_answered`: the holder's resolution goes with it (`interlock_release_after`), so no request
-- of it is left unanswered; else a holder that made a request and leaves the effect's send open notes when.
CREATE OR REPLACE FUNCTION interlock_let_go(p_effect text, p_epoch bigint, p_holder text, p_answered boolean)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);  -- a release lost with a crash only waits for the lease
    UPDATE interlock_claims SET expires = NULL, in_request = false,
           sent_until = CASE WHEN NOT p_answered AND in_request AND interlock_open_send(p_effect)
                             THEN clock_timestamp() ELSE sent_until END
     WHERE effect_id = p_effect AND epoch = p_epoch AND holder = p_holder;
    PERFORM pg_advisory_unlock(interlock_lock_key(p_effect, p_epoch));  -- a lost session's went with it
END $$;

CREATE OR REPLACE FUNCTION interlock_release(p_effect text, p_epoch bigint, p_holder text) RETURNS void
LANGUAGE sql AS $$ SELECT interlock_let_go(p_effect, p_epoch, p_holder, false) $$;

-- Give the claim back and append the last entries of the claimed effect (its resolution), in one transaction: the
-- holder's closing round trip. Its session holds the epoch's lock, which the release frees. The release comes
-- first, so the journal-wide lock is held for the append alone; the claim's row stays locked by it to the commit,
-- and the append's fence reads the epoch and holder it left.
CREATE OR REPLACE FUNCTION interlock_release_after(p_effect text, p_kinds text[], p_epochs bigint[], p_fence bigint,
                                                   p_holder text, p_tokens text[], p_bodies text[],
                                                   p_late_bodies text[]) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM interlock_let_go(p_effect, p_fence, p_holder, true);
    RETURN interlock_append_all(p_effect, p_kinds, p_epochs, p_fence, p_holder, p_tokens, p_bodies, p_late_bodies);
END $$;

-- Append entries of one effect, in order, in the caller's transaction. The client sends each entry's canonical
-- body with placeholders for what only the database decides (seq, ts, prev, effect_prev) and, for a resolution,
-- the LATE_RESULT form as well; the stored line is the body with the hash as its last field. The claim is checked
-- and the journal-wide lock taken once for all of them, the lock last and held only to the commit, which does not
-- wait for the disk (see PgJournal). Returns the last entry's line.
DROP FUNCTION IF EXISTS interlock_append(text, text, bigint, bigint, text, text, text, text, text, text);
DROP FUNCTION IF EXISTS interlock_append(text, text, bigint, bigint, text, text, text, text);
CREATE OR REPLACE FUNCTION interlock_append_all(p_effect text, p_kinds text[], p_epochs bigint[], p_fence bigint,
                                                p_holder text, p_tokens text[], p_bodies text[],
                                                p_late_bodies text[]) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    v_current interlock_claims%ROWTYPE;
    v_fenced  boolean := false;
    v_late    boolean;
    v_seq     bigint;
    v_prev    text;
    v_eprev   text;
    v_ts      text;
    v_body    text;
    v_line    text;
    v_hash    text;
    v_token   text;
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);  -- a send's flush comes after (see PgJournal)
    IF p_fence IS NOT NULL THEN
        SELECT * INTO v_current FROM interlock_claims WHERE effect_id = p_effect FOR SHARE;
        IF v_current.epoch IS DISTINCT FROM p_fence OR v_current.holder IS DISTINCT FROM p_holder THEN
            FOR i IN 1 .. cardinality(p_kinds) LOOP
                IF p_late_bodies[i] IS NULL THEN
                    RAISE EXCEPTION 'effect %: claim epoch % was taken over by epoch %; % not written',
                        p_effect, p_fence, v_current.epoch, p_kinds[i] USING ERRCODE = '{CLAIM_LOST}';
                END IF;
            END LOOP;
            v_fenced := true;
        END IF;
    END IF;
    PERFORM pg_advisory_xact_lock({LOCK_SPACE}, {APPEND_LOCK});  -- the journal-wide lock, to this commit
    SELECT line INTO v_line FROM interlock_journal
     WHERE effect_id = p_effect AND token = p_tokens[cardinality(p_tokens)];
    IF FOUND THEN
        RETURN v_line;  -- a retry of entries stored (in one transaction) before their answer was lost
    END IF;
    SELECT seq, hash INTO v_seq, v_prev FROM interlock_journal ORDER BY seq DESC LIMIT 1;
    v_seq := coalesce(v_seq, -1);
    SELECT hash INTO v_eprev FROM interlock_journal WHERE effect_id = p_effect ORDER BY seq DESC LIMIT 1;
    FOR i IN 1 .. cardinality(p_kinds) LOOP
        v_token := p_tokens[i];
        v_seq := v_seq + 1;
        v_late := v_fenced;
        IF p_late_bodies[i] IS NOT NULL AND NOT v_late THEN
            v_late := EXISTS (SELECT 1 FROM interlock_journal
                               WHERE effect_id = p_effect AND kind IN ('COMMITTED', 'REFUSED', 'AMBIGUOUS')
                                 AND {SETTLES});
        END IF;
        v_body := CASE WHEN v_late THEN p_late_bodies[i] ELSE p_bodies[i] END;
        v_ts := trim_scale(extract(epoch FROM clock_timestamp()))::text;
        IF position('.' IN v_ts) = 0 THEN
            v_ts := v_ts || '.0';
        END IF;
        v_body := replace(replace(replace(replace(v_body,
            '"' || v_token || 'seq"', v_seq::text),
            '"' || v_token || 'ts"', v_ts),
            '"' || v_token || 'prev"', coalesce(to_json(v_prev)::text, 'null')),
            '"' || v_token || 'effect_prev"', coalesce(to_json(v_eprev)::text, 'null'));
        v_hash := encode(sha256(convert_to(v_body, 'UTF8')), 'hex');
        v_line := left(v_body, -1) || ',"hash":"' || v_hash || '"}}' || chr(10);
        INSERT INTO interlock_journal (seq, effect_id, kind, prev, effect_prev, hash, epoch, token, line)
             VALUES (v_seq, p_effect, CASE WHEN v_late THEN 'LATE_RESULT' ELSE p_kinds[i] END, v_prev, v_eprev,
                     v_hash, p_epochs[i], v_token, v_line);
        v_prev := v_hash;
        v_eprev := v_hash;
    END LOOP;
    RETURN v_line;
END $$;
"""
