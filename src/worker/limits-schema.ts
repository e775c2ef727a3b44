/**
 * The tables and functions of the PostgreSQL limit store (`createPostgresLimitStore`), in the run queue's schema: one
 * row of counters per principal, one row per run holding a slot, and the admit function. See `docs/limits.md`.
 * @module
 */
import type pg from 'pg';
import { migrateUnderLock } from './run-events-schema.js';
import { migrateRuns, runTables } from './runs-schema.js';

/** The qualified names of one schema's limit objects. @internal */
export interface LimitTables {
  readonly schema: string;
  readonly counters: string;
  readonly slots: string;
  readonly admit: string;
  /** The run queue's runs table (a slot is held while its run has not ended). */
  readonly runs: string;
}

/** @internal */
export function limitTables(schema: string): LimitTables {
  return {
    schema,
    counters: `"${schema}"."cubepi_limit_counters"`,
    slots: `"${schema}"."cubepi_limit_slots"`,
    admit: `"${schema}"."cubepi_limit_admit_v1"`,
    runs: runTables(schema).runs,
  };
}

/** How long a slot whose run is not in the runs table counts (its API node is queueing it, or died doing so). */
export const UNQUEUED_SLOT_SECONDS = 60;

// pg_advisory_xact_lock(classid, objid) while creating: a class of our own, the schema's hash.
const MIGRATE_LOCK_CLASS = 0x63726c6d; // "crlm"

/**
 * `cubepi_limit_counters`: the fixed windows of a principal — the minute (`minute_start`, UTC wall clock) with its
 * run starts and tokens, the UTC day with its dollars. A new window is counted from zero (the row is reset when it is
 * next touched). `cubepi_limit_slots`: a run that holds one of its principal's `concurrentRuns`, with the limits it
 * was admitted under (what a worker enforces while it runs). A slot counts while its run has not ended in the runs
 * table — so a run ends its slot wherever it ends, and a worker that dies leaks nothing — or, for a run not queued
 * yet, for `UNQUEUED_SLOT_SECONDS`.
 *
 * The admit function does the whole check in one call (one round trip): it locks the principal's counters row (two
 * admissions of one principal run one after the other, on any node), checks `usdPerDay`, `tokensPerMinute`,
 * `requestsPerMinute`, `concurrentRuns` in that order — at the concurrency limit, after dropping the principal's slots
 * that no longer count — and either answers the first refusal or counts the request and inserts the slot. Windows use
 * the database's clock, the same for every node. A worker deletes the slot of each run it ends.
 */
const ddl = (t: LimitTables): string => `
  CREATE TABLE IF NOT EXISTS ${t.counters} (
    principal text PRIMARY KEY,
    minute_start timestamptz NOT NULL,
    minute_requests integer NOT NULL DEFAULT 0,
    minute_tokens bigint NOT NULL DEFAULT 0,
    day_start date NOT NULL,
    day_usd double precision NOT NULL DEFAULT 0
  );
  CREATE TABLE IF NOT EXISTS ${t.slots} (
    run_id text PRIMARY KEY,
    principal text NOT NULL,
    limits jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp()
  );
  CREATE INDEX IF NOT EXISTS cubepi_limit_slots_principal ON ${t.slots} (principal);
  CREATE OR REPLACE FUNCTION ${t.admit}(p_principal text, p_run text, p_limits jsonb)
  RETURNS TABLE (code text, limit_name text, used double precision, allowed double precision, retry_after_ms bigint)
  LANGUAGE plpgsql AS $fn$
  DECLARE
    v_now timestamptz := clock_timestamp();
    v_minute timestamptz := date_trunc('minute', v_now);
    v_day date := (v_now AT TIME ZONE 'UTC')::date;
    v_minute_left bigint := ceil(extract(epoch FROM (v_minute + interval '1 minute' - v_now)) * 1000);
    v_day_left bigint := ceil(extract(epoch FROM (((v_day + 1)::timestamp AT TIME ZONE 'UTC') - v_now)) * 1000);
    v_usd double precision := (p_limits->>'usdPerDay')::double precision;
    v_tpm bigint := (p_limits->>'tokensPerMinute')::bigint;
    v_rpm integer := (p_limits->>'requestsPerMinute')::integer;
    v_runs integer := (p_limits->>'concurrentRuns')::integer;
    c ${t.counters}%ROWTYPE;
    v_active integer;
    v_dropped integer;
  BEGIN
    -- Counters, not records: this transaction's commit does not wait for the WAL flush (a crash of the database may
    -- forget the last fraction of a second of counts; it never corrupts them). It is most of a start's cost otherwise.
    PERFORM set_config('synchronous_commit', 'off', true);
    -- One statement creates the row or locks the existing one (the no-op update takes its row lock) and reads it.
    INSERT INTO ${t.counters} AS k (principal, minute_start, day_start) VALUES (p_principal, v_minute, v_day)
      ON CONFLICT (principal) DO UPDATE SET principal = k.principal
      RETURNING * INTO c;
    IF c.minute_start <> v_minute THEN c.minute_requests := 0; c.minute_tokens := 0; END IF;
    IF c.day_start <> v_day THEN c.day_usd := 0; END IF;
    IF v_usd IS NOT NULL AND c.day_usd >= v_usd THEN
      RETURN QUERY SELECT 'budget_exceeded', 'usdPerDay', c.day_usd, v_usd, v_day_left; RETURN;
    END IF;
    IF v_tpm IS NOT NULL AND c.minute_tokens >= v_tpm THEN
      RETURN QUERY SELECT 'rate_limited', 'tokensPerMinute', c.minute_tokens::double precision,
        v_tpm::double precision, v_minute_left;
      RETURN;
    END IF;
    IF v_rpm IS NOT NULL AND c.minute_requests >= v_rpm THEN
      RETURN QUERY SELECT 'rate_limited', 'requestsPerMinute', c.minute_requests::double precision,
        v_rpm::double precision, v_minute_left;
      RETURN;
    END IF;
    IF v_runs IS NOT NULL THEN
      SELECT count(*) INTO v_active FROM ${t.slots} s WHERE s.principal = p_principal;
      IF v_active >= v_runs THEN
        -- At the limit by the rows: drop the slots that no longer count (their runs ended without releasing them, or
        -- were never queued), then count again. Workers release the slots of the runs they end, so this is rare.
        DELETE FROM ${t.slots} s WHERE s.principal = p_principal AND NOT (
          EXISTS (SELECT 1 FROM ${t.runs} r WHERE r.run_id = s.run_id AND r.status <> 'ended')
          OR (s.created_at > v_now - interval '${UNQUEUED_SLOT_SECONDS} seconds'
              AND NOT EXISTS (SELECT 1 FROM ${t.runs} r WHERE r.run_id = s.run_id)));
        GET DIAGNOSTICS v_dropped = ROW_COUNT;
        v_active := v_active - v_dropped;
      END IF;
      IF v_active >= v_runs THEN
        RETURN QUERY SELECT 'too_many_runs', 'concurrentRuns', v_active::double precision, v_runs::double precision,
          1000::bigint;
        RETURN;
      END IF;
    END IF;
    UPDATE ${t.counters} SET minute_start = v_minute, minute_requests = c.minute_requests + 1,
      minute_tokens = c.minute_tokens, day_start = v_day, day_usd = c.day_usd
      WHERE principal = p_principal;
    INSERT INTO ${t.slots} (run_id, principal, limits) VALUES (p_run, p_principal, p_limits);
    RETURN QUERY SELECT NULL::text, NULL::text, NULL::double precision, NULL::double precision, NULL::bigint;
  END
  $fn$;`;

/** Creates the schema (if missing), the runs table (the slots read it), the limit tables and the admit function. */
export async function migrateLimits(pool: pg.Pool, t: LimitTables): Promise<void> {
  await migrateRuns(pool, runTables(t.schema));
  await migrateUnderLock(pool, MIGRATE_LOCK_CLASS, t.schema, ddl(t));
}
