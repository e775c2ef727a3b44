/**
 * The run queue's own table: one row per run (what it asks, where it is, how it ended), beside pg-boss's jobs and the
 * run-event log. See `docs/scale-out.md`.
 * @module
 */
import type pg from 'pg';
import { migrateUnderLock } from './run-events-schema.js';

/** The qualified names of one queue's objects. @internal */
export interface RunTables {
  readonly schema: string;
  /** The runs table, qualified and quoted. */
  readonly runs: string;
  /** The agents' numbers (the pg-boss job priority a run for the agent is queued with), qualified and quoted. */
  readonly agents: string;
  /** The NOTIFY channel cancellations travel on (one per schema). */
  readonly cancelChannel: string;
}

/** @internal */
export function runTables(schema: string): RunTables {
  return {
    schema,
    runs: `"${schema}"."cubepi_runs"`,
    agents: `"${schema}"."cubepi_run_agents"`,
    cancelChannel: `cubepi_cancel_${schema}`.slice(0, 63),
  };
}

// pg_advisory_xact_lock(classid, objid) while creating: a class of our own, the schema's hash.
const MIGRATE_LOCK_CLASS = 0x63727271; // "crrq"

/**
 * `status`: `queued` (a job waits), `running` (a worker holds it; `attempts` counts the workers that took it), `ended`
 * (its terminal frame is stored; `outcome` the run's: `completed`, `stopped`, `failed`, `cancelled`, `suspended`, or
 * `error` when it failed as a whole). `base_count`: how many messages the thread had when the run first started, so a
 * retried run knows whether its prompt was stored. `routed`: its job carries its agent's number as its pg-boss priority
 * (false for the runs an older version queued, until `relabelRuns` gives their jobs the number). `owner`: the
 * `Principal.id` of the thread's owner when the run was queued (the run is theirs; NULL for an unowned thread or a run
 * an older version queued); `principal`: who the run acts for, passed to the agent by the worker (NULL: nobody);
 * `idempotency_key`: the request's key (`RunRequest.idempotencyKey`), unique per thread (NULL: none).
 *
 * `cubepi_run_agents` numbers the agent names (from 1): a run's job is sent with its agent's number as its priority,
 * and a worker fetches with `minPriority = maxPriority =` the number of each of its agents, so it only takes runs it
 * can run (docs/scale-out.md, "Which worker takes a run").
 */
const ddl = (t: RunTables): string => `
  CREATE TABLE IF NOT EXISTS ${t.runs} (
    run_id text PRIMARY KEY,
    thread_id text NOT NULL,
    agent text NOT NULL,
    request jsonb NOT NULL,
    status text NOT NULL DEFAULT 'queued',
    outcome text,
    error jsonb,
    attempts integer NOT NULL DEFAULT 0,
    base_count integer,
    worker text,
    cancel_requested_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    started_at timestamptz,
    ended_at timestamptz
  );
  CREATE INDEX IF NOT EXISTS cubepi_runs_thread ON ${t.runs} (thread_id, created_at);
  CREATE INDEX IF NOT EXISTS cubepi_runs_open ON ${t.runs} (thread_id) WHERE status <> 'ended';
  ALTER TABLE ${t.runs} ADD COLUMN IF NOT EXISTS routed boolean NOT NULL DEFAULT false;
  CREATE INDEX IF NOT EXISTS cubepi_runs_unrouted ON ${t.runs} (created_at) WHERE NOT routed AND status <> 'ended';
  ALTER TABLE ${t.runs} ADD COLUMN IF NOT EXISTS owner text;
  ALTER TABLE ${t.runs} ADD COLUMN IF NOT EXISTS principal jsonb;
  ALTER TABLE ${t.runs} ADD COLUMN IF NOT EXISTS idempotency_key text;
  CREATE UNIQUE INDEX IF NOT EXISTS cubepi_runs_idempotency ON ${t.runs} (thread_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
  CREATE TABLE IF NOT EXISTS ${t.agents} (
    name text PRIMARY KEY,
    number integer GENERATED ALWAYS AS IDENTITY UNIQUE
  );`;

/** Creates the schema (if missing) and the runs table, under a lock (several processes may start at once). */
export function migrateRuns(pool: pg.Pool, t: RunTables): Promise<void> {
  return migrateUnderLock(pool, MIGRATE_LOCK_CLASS, t.schema, ddl(t));
}
