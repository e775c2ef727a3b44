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
  /** The qualified table, quoted. */
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
 * seq: the batch queued behind a failed one was written after a gap). An older function left in a schema is unused
 * once no process of that version runs, and may be dropped. @internal
 */
export const APPEND_FUNCTION = 'cubepi_append_run_events_v2';

/** The tables of a log in `schema`. @internal */
export function runEventTables(schema: string): RunEventTables {
  return {
    schema,
    events: `"${schema}"."cubepi_run_events"`,
    append: `"${schema}"."${APPEND_FUNCTION}"`,
  };
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
 * One row per frame, in the wire form `cubepi/server` sends (`frame`: the JSON text of `frameJson`, compact for a delta
 * that grows the previous snapshot). `base`: the row carries a whole assistant snapshot, from which the compact rows
 * after it decode. The append function takes the run's lock, refuses a batch that does not continue the run or that
 * follows its terminal frame (a batch continues the run when its seqs are consecutive and its first is the run's
 * last stored seq plus one, or 1 for a run with none: no gap, even after a failed append), inserts, and notifies the run's channel — all in one statement, so batches of one run
 * commit in seq order and a reader that saw seq n never misses a later commit of a smaller seq.
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
  CREATE OR REPLACE FUNCTION ${t.append}(
    p_run text, p_channel text, p_seqs bigint[], p_frames text[], p_compact boolean[], p_base boolean[],
    p_terminal boolean[]
  ) RETURNS void LANGUAGE plpgsql AS $fn$
  DECLARE
    v_last bigint;
    v_ended boolean;
  BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(p_channel, 0));
    SELECT seq, terminal INTO v_last, v_ended FROM ${t.events} WHERE run_id = p_run ORDER BY seq DESC LIMIT 1;
    IF v_ended THEN
      RAISE EXCEPTION 'run % has ended (its terminal frame is seq %)', p_run, v_last USING ERRCODE = '${RUN_ENDED}';
    END IF;
    IF p_seqs[1] <> coalesce(v_last, 0) + 1 THEN
      RAISE EXCEPTION 'seq % of run % does not follow its stored seq %', p_seqs[1], p_run, coalesce(v_last, 0)
        USING ERRCODE = '${SEQ_ORDER}';
    END IF;
    IF EXISTS (SELECT 1 FROM unnest(p_seqs) WITH ORDINALITY AS u(seq, i) WHERE u.seq <> p_seqs[1] + u.i - 1) THEN
      RAISE EXCEPTION 'the seqs of a batch of run % are not consecutive', p_run USING ERRCODE = '${SEQ_ORDER}';
    END IF;
    INSERT INTO ${t.events} (run_id, seq, frame, compact, base, terminal)
      SELECT p_run, u.seq, u.frame, u.compact, u.base, u.terminal
      FROM unnest(p_seqs, p_frames, p_compact, p_base, p_terminal) AS u(seq, frame, compact, base, terminal);
    PERFORM pg_notify(p_channel, p_seqs[cardinality(p_seqs)]::text);
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
