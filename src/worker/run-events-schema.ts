/**
 * The run-event log's table and its append function, created on first use. See `docs/scale-out.md`.
 * @module
 */
import { createHash } from 'node:crypto';
import type pg from 'pg';
import { inTransaction } from './pg-transaction.js';

/** Where one log's rows live, and the names derived from it. @internal */
export interface RunEventTables {
  readonly schema: string;
  /**
   * The qualified table of format 3, quoted: one row per appended batch (`cubepi_run_events_v3`). Every frame this
   * version appends goes there.
   */
  readonly batches: string;
  /**
   * The qualified table of formats 1 and 2, quoted: one row per frame (`cubepi_run_events`), written by the versions
   * before. Still read (a run an older process started), never written.
   */
  readonly events: string;
  /** The qualified append function, quoted. */
  readonly append: string;
}

/** Schema names we accept: letters, digits and `_` (they are spliced into SQL, quoted). */
export const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,39}$/;

/**
 * The append function's name, versioned: a changed check gets a new name, so a process of an older version that
 * starts later (a rolling deploy) re-creates only its own function and never the newer processes'. Version 2 refuses
 * a batch that does not start right after the stored seqs (`cubepi_append_run_events`, version 1, took any greater
 * seq: the batch queued behind a failed one was written after a gap). Version 3 writes a batch as one row of
 * `cubepi_run_events_v3` and counts the run's rows of `cubepi_run_events` as stored (a run an older process began).
 * An older function left in a schema is unused once no process of that version runs, and may be dropped. @internal
 */
export const APPEND_FUNCTION = 'cubepi_append_run_events_v3';

/** The tables of a log in `schema`. @internal */
export function runEventTables(schema: string): RunEventTables {
  return {
    schema,
    batches: `"${schema}"."cubepi_run_events_v3"`,
    events: `"${schema}"."cubepi_run_events"`,
    append: `"${schema}"."${APPEND_FUNCTION}"`,
  };
}

/**
 * SQL for the last stored seq of the run whose id is `param` (`$1`), over both formats (0 when it has none). A run's
 * rows in the old table all come before its rows in the new one. @internal
 */
export function lastSeqSql(t: RunEventTables, param: string): string {
  return (
    `greatest((SELECT coalesce(max(last_seq), 0) FROM ${t.batches} WHERE run_id = ${param}), ` +
    `(SELECT coalesce(max(seq), 0) FROM ${t.events} WHERE run_id = ${param}))`
  );
}

/** SQL that is true when the run whose id is `param` has its terminal frame stored (either format). @internal */
export function endedSql(t: RunEventTables, param: string): string {
  return (
    `(EXISTS (SELECT 1 FROM ${t.batches} WHERE run_id = ${param} AND terminal) OR ` +
    `EXISTS (SELECT 1 FROM ${t.events} WHERE run_id = ${param} AND terminal))`
  );
}

/**
 * The NOTIFY channel of one run: a hash of schema and run id (a channel name is an identifier of at most 63 bytes;
 * run ids are any text). Only that run's readers listen to it. @internal
 */
export function channelOf(schema: string, runId: string): string {
  return `cubepi_run_${createHash('md5').update(`${schema}\u0000${runId}`).digest('hex')}`;
}

/** SQLSTATEs the append function raises (a class of our own). @internal */
export const RUN_ENDED = 'CP001';
/** @internal */
export const SEQ_ORDER = 'CP002';

// pg_advisory_xact_lock(classid, objid) while creating: a class of our own (not the checkpointer's), the schema's hash.
const MIGRATE_LOCK_CLASS = 0x63727765; // "crwe"

/**
 * Format 3: one row per appended batch (`first_seq`..`last_seq`, consecutive), its frames in `payload` (see
 * `encodeBatch`: each frame's wire JSON, compact for a delta that grows the previous snapshot, with its flags, the
 * whole deflated on the client: PostgreSQL compresses no value under ~2 KB, and a batch's frames repeat the run id,
 * their keys and the run's messages). `first_base`: the batch's first frame that carries a whole assistant snapshot,
 * from which the compact frames after it decode (null: none). `terminal`: the batch ends with the run's terminal
 * frame. `payload` is stored `MAIN` (inline: it is compressed already).
 *
 * The table of formats 1 and 2 (one row per frame) is created too, as before, so a reader can always read both: the
 * runs an older process wrote stay readable, and an older process starting later finds its table.
 *
 * The append function takes the run's lock (the same as version 2's, so a writer of either version waits for the
 * other), refuses a batch that does not continue the run or that follows its terminal frame (a batch continues the
 * run when its first seq is the run's last stored seq plus one, in either table, or 1 for a run with none: no gap,
 * even after a failed append), inserts its row, and notifies the run's channel — all in one statement, so batches of
 * one run commit in seq order and a reader that saw seq n never misses a later commit of a smaller seq.
 */
const ddl = (t: RunEventTables): string => `
  CREATE TABLE IF NOT EXISTS ${t.events} (
    run_id text NOT NULL,
    seq bigint NOT NULL,
    frame text NOT NULL,
    compact boolean NOT NULL,
    base boolean NOT NULL,
    terminal boolean NOT NULL,
    appended_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, seq)
  );
  CREATE TABLE IF NOT EXISTS ${t.batches} (
    run_id text NOT NULL,
    last_seq bigint NOT NULL,
    first_seq bigint NOT NULL,
    first_base bigint,
    terminal boolean NOT NULL,
    appended_at timestamptz NOT NULL DEFAULT now(),
    payload bytea NOT NULL,
    PRIMARY KEY (run_id, last_seq)
  );
  DO $storage$ BEGIN
    -- Only once (ALTER TABLE locks the table): PostgreSQL 15 takes no STORAGE in CREATE TABLE.
    IF (SELECT attstorage FROM pg_attribute WHERE attrelid = '${t.batches}'::regclass AND attname = 'payload') <> 'm'
    THEN ALTER TABLE ${t.batches} ALTER COLUMN payload SET STORAGE MAIN;
    END IF;
  END $storage$;
  CREATE OR REPLACE FUNCTION ${t.append}(
    p_run text, p_channel text, p_first bigint, p_last bigint, p_first_base bigint, p_terminal boolean,
    p_payload bytea
  ) RETURNS void LANGUAGE plpgsql AS $fn$
  DECLARE
    v_last bigint;
    v_ended boolean;
    v_old bigint;
    v_old_ended boolean;
  BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(p_channel, 0));
    SELECT last_seq, terminal INTO v_last, v_ended FROM ${t.batches} WHERE run_id = p_run
      ORDER BY last_seq DESC LIMIT 1;
    SELECT seq, terminal INTO v_old, v_old_ended FROM ${t.events} WHERE run_id = p_run ORDER BY seq DESC LIMIT 1;
    IF v_old > coalesce(v_last, 0) THEN
      v_last := v_old;
      v_ended := v_old_ended;
    END IF;
    IF v_ended THEN
      RAISE EXCEPTION 'run % has ended (its terminal frame is seq %)', p_run, v_last USING ERRCODE = '${RUN_ENDED}';
    END IF;
    IF p_first <> coalesce(v_last, 0) + 1 THEN
      RAISE EXCEPTION 'seq % of run % does not follow its stored seq %', p_first, p_run, coalesce(v_last, 0)
        USING ERRCODE = '${SEQ_ORDER}';
    END IF;
    IF p_last < p_first OR p_first_base < p_first OR p_first_base > p_last THEN
      RAISE EXCEPTION 'the seqs of a batch of run % are not consecutive', p_run USING ERRCODE = '${SEQ_ORDER}';
    END IF;
    INSERT INTO ${t.batches} (run_id, last_seq, first_seq, first_base, terminal, payload)
      VALUES (p_run, p_last, p_first, p_first_base, p_terminal, p_payload);
    PERFORM pg_notify(p_channel, p_last::text);
  END
  $fn$;`;

/** Creates the schema (if missing), the table and the function, under a lock (several processes may start at once). */
export function migrateRunEvents(pool: pg.Pool, t: RunEventTables): Promise<void> {
  return migrateUnderLock(pool, MIGRATE_LOCK_CLASS, t.schema, ddl(t));
}

/**
 * Runs `ddl` in one transaction under `pg_advisory_xact_lock(lockClass, hashtext(schema))`, creating `schema` first
 * if it is missing (asked first: CREATE SCHEMA IF NOT EXISTS needs the CREATE privilege even when it exists). @internal
 */
export function migrateUnderLock(pool: pg.Pool, lockClass: number, schema: string, ddl: string): Promise<void> {
  return inTransaction(pool, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [lockClass, schema]);
    const exists = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
    if (exists.rowCount === 0) await client.query(`CREATE SCHEMA "${schema}"`);
    await client.query(ddl);
  });
}
