// A checkpointed thread with a 5 MB PDF in its first message, then N later turns (issue 30): the bytes written per
// later turn must stay at the figure of the same thread without the file — the PDF is stored once, by reference, and
// a later turn writes only its own messages (the Agent resolves the ref before each request, a read).
//
// Per backend, two threads through an Agent (FauxProvider, one text answer a turn): `pdf` (a 5 MB PDF in the first
// prompt) and `none` (the same first prompt without it). Per later turn:
//   SQLite      — bytes this process passed to write() (wchar, /proc/self/io) and growth of the file + WAL;
//   PostgreSQL  — server WAL bytes (pg_current_wal_lsn before and after the turn; other sessions on the server add
//                 noise, hence medians) and the growth of the store's tables (pg_total_relation_size).
// Plus the first turn's figures (the one that stores the PDF) and the rows: the message rows' total size.
//
// Run after `npm run build` (it imports the built package by name):  node bench/blob-thread.mjs
//   --turns N (20)  --mb 5  --backends sqlite,postgres  --no-write (print only)
// Never part of `npm test`.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import pg from 'pg';
import { Agent } from 'cubepi';
import { FauxProvider, fauxMessage } from 'cubepi/testing';
import { SQLiteCheckpointer } from 'cubepi/checkpoint/sqlite';
import { PostgresCheckpointer } from 'cubepi/checkpoint/postgres';
import { fileSize, median, pgConfig, readIo, writeResultsSection } from './common.mjs';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
};
const TURNS = Number(option('turns', '20'));
const MB = Number(option('mb', '5'));
const BACKENDS = option('backends', 'sqlite,postgres').split(',');
const WRITE = !args.includes('--no-write');
const RESULTS = fileURLToPath(new URL('./RESULTS.md', import.meta.url));
const HEADING = '## A thread with a 5 MB PDF (blob-thread.mjs, issue 30)';

/** `size` bytes with a PDF header, the rest pseudo-random (incompressible, as a real PDF's streams mostly are). */
function fakePdf(size) {
  const bytes = new Uint8Array(size);
  bytes.set(new TextEncoder().encode('%PDF-1.7\n'));
  let x = 0x9e3779b9;
  for (let i = 9; i < size; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    bytes[i] = x & 0xff;
  }
  return Buffer.from(bytes).toString('base64');
}

const PDF = fakePdf(MB * 1024 * 1024);
const first = (withFile) => ({
  role: 'user',
  content: [
    { type: 'text', text: 'Summarise the attached report, section by section.' },
    ...(withFile ? [{ type: 'file', mimeType: 'application/pdf', name: 'report.pdf', data: PDF }] : []),
  ],
  timestamp: Date.now(),
});
const answer = (i) => fauxMessage(`Section ${i}: the figures rose by ${i}% against the previous quarter.`);

/** Runs the thread: the first turn, then TURNS later ones, measuring each with `measure` (before → after). */
async function thread(checkpointer, threadId, withFile, measure) {
  const faux = new FauxProvider();
  const agent = new Agent({ provider: faux, model: 'faux', checkpointer, threadId });
  const turns = [];
  for (let i = 0; i <= TURNS; i++) {
    faux.appendResponses([answer(i)]);
    const before = await measure();
    const t0 = performance.now();
    await agent.prompt(i === 0 ? first(withFile) : `And section ${i}?`);
    const ms = performance.now() - t0;
    turns.push({ ...(await measure(before)), ms });
  }
  return { first: turns[0], later: turns.slice(1) };
}

async function sqlite() {
  const out = {};
  for (const kind of ['pdf', 'none']) {
    const dir = mkdtempSync(join(os.tmpdir(), 'cubepi-blob-bench-'));
    const file = join(dir, 'threads.db');
    const checkpointer = new SQLiteCheckpointer(file);
    const size = () => fileSize(file) + fileSize(`${file}-wal`);
    const measure = async (before) => {
      const now = { wchar: readIo().wchar ?? NaN, size: size() };
      return before === undefined ? now : { wchar: now.wchar - before.wchar, grew: now.size - before.size };
    };
    const run = await thread(checkpointer, 't', kind === 'pdf', measure);
    await checkpointer.close();
    const db = new Database(file, { readonly: true });
    run.rowBytes = db.prepare('SELECT sum(length(body)) FROM cubepi_messages').pluck().get();
    run.blobs = db.prepare('SELECT count(*) FROM cubepi_blobs').pluck().get();
    db.close();
    rmSync(dir, { recursive: true, force: true });
    out[kind] = run;
  }
  return out;
}

async function postgres() {
  const admin = new pg.Pool({ ...pgConfig(), max: 2 });
  const out = {};
  try {
    for (const kind of ['pdf', 'none']) {
      const schema = `cubepi_blob_bench_${process.pid}_${kind}`;
      await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      const pool = new pg.Pool({ ...pgConfig(), max: 4 });
      const checkpointer = new PostgresCheckpointer(pool, { schema });
      await checkpointer.migrate();
      const tables = ['threads', 'messages', 'blobs', 'blob_refs'].map((t) => `'"${schema}".cubepi_${t}'`);
      const measure = async (before) => {
        const { rows } = await admin.query(
          `SELECT pg_current_wal_lsn()::text AS lsn,
                  (SELECT sum(pg_total_relation_size(t::regclass)) FROM unnest(ARRAY[${tables.join(', ')}]) AS t)::bigint
                    AS size`,
        );
        const now = { lsn: rows[0].lsn, size: Number(rows[0].size) };
        if (before === undefined) return now;
        const wal = await admin.query('SELECT pg_wal_lsn_diff($1, $2)::bigint AS d', [now.lsn, before.lsn]);
        return { wal: Number(wal.rows[0].d), grew: now.size - before.size };
      };
      const run = await thread(checkpointer, 't', kind === 'pdf', measure);
      const rows = await admin.query(
        `SELECT (SELECT sum(octet_length(coalesce(body::text, body_raw))) FROM "${schema}".cubepi_messages) AS r,
                (SELECT count(*) FROM "${schema}".cubepi_blobs) AS b`,
      );
      run.rowBytes = Number(rows.rows[0].r);
      run.blobs = Number(rows.rows[0].b);
      await checkpointer.close();
      await pool.end();
      await admin.query(`DROP SCHEMA "${schema}" CASCADE`);
      out[kind] = run;
    }
  } finally {
    await admin.end();
  }
  return out;
}

const kb = (n) => `${(n / 1024).toFixed(1)} KiB`;
const mb = (n) => `${(n / 1024 / 1024).toFixed(2)} MB`;
const results = {};
if (BACKENDS.includes('sqlite')) results.sqlite = await sqlite();
if (BACKENDS.includes('postgres')) results.postgres = await postgres();

const lines = [
  HEADING,
  '',
  `Node ${process.version}, ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown'}); ${MB} MB PDF in the first` +
    ` prompt, then ${TURNS} later turns through an Agent (FauxProvider, one answer a turn: 2 messages stored a turn).` +
    ` \`pdf\`: the thread with the file; \`none\`: the same thread without it. Medians over the later turns.`,
  '',
  '| backend | thread | first turn writes | later turn: bytes written (median, max) | later turn: store growth (median) | later turn ms (median) | message rows total | blobs |',
  '| --- | --- | --- | --- | --- | --- | --- | --- |',
];
for (const [backend, runs] of Object.entries(results)) {
  for (const [kind, run] of Object.entries(runs)) {
    const written = run.later.map((t) => (backend === 'sqlite' ? t.wchar : t.wal));
    const firstWritten = backend === 'sqlite' ? run.first.wchar : run.first.wal;
    lines.push(
      `| ${backend} | ${kind} | ${mb(firstWritten)} | ${kb(median(written))}, ${kb(Math.max(...written))} | ` +
        `${kb(median(run.later.map((t) => t.grew)))} | ${median(run.later.map((t) => t.ms)).toFixed(1)} | ` +
        `${kb(run.rowBytes)} | ${run.blobs} |`,
    );
  }
}
lines.push(
  '',
  'Bytes written: SQLite, what this process passed to write() (wchar: WAL frames, fsyncs excluded); PostgreSQL, the',
  "server's WAL bytes over the turn (other sessions on a shared server add to it). The `pdf` and `none` rows of a",
  'backend match on later turns: the file is written once, in the first turn (its blob), and never again.',
);
const text = lines.join('\n');
console.log(text);
if (WRITE) writeResultsSection(RESULTS, HEADING, text);
