// Store search (issue 33): exact cosine `search` over 10k and 100k items of 384-dimension embeddings (seeded random
// unit vectors) on SQLiteStore and PostgresStore. Reports p50 latency per size and the growth 10k → 100k (the
// baseline is the 10k run of the same backend, in the same run). Items are loaded with bulk SQL, not put() one by one.
// Run: npm run build (root), then: node bench/store-search.mjs [--sizes 10000,100000] [--queries 15]
import { createRequire } from 'node:module';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

const require = createRequire(new URL('../package.json', import.meta.url));
const Database = require('better-sqlite3');
const pg = require('pg');
const { SQLiteStore } = await import('../dist/src/checkpoint/sqlite.js');
const { PostgresStore } = await import('../dist/src/checkpoint/postgres.js');

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : process.argv[i + 1];
};
const sizes = arg('sizes', '10000,100000').split(',').map(Number);
const queries = Number(arg('queries', '15'));
const DIM = 384;

function rng(seed) {
  let s = seed >>> 0;
  return () => ((s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32) * 2 - 1;
}
function unit(next) {
  const v = new Float32Array(DIM);
  let n = 0;
  for (let d = 0; d < DIM; d++) n += (v[d] = next()) ** 2;
  n = Math.sqrt(n);
  for (let d = 0; d < DIM; d++) v[d] /= n;
  return v;
}
const queryVectors = (() => {
  const next = rng(7);
  return Array.from({ length: queries }, () => Array.from(unit(next)));
})();
let q = 0;
// The embedder returns the next seeded query vector (put() is not used: items are bulk-loaded).
const embed = (texts) => texts.map(() => queryVectors[q++ % queries]);
const ns = 'bench/';
const p50 = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function measure(store) {
  await store.search(['bench'], { query: 'warm up', limit: 10 });
  const times = [];
  for (let i = 0; i < queries; i++) {
    const t = performance.now();
    const hits = await store.search(['bench'], { query: `q${i}`, limit: 10 });
    times.push(performance.now() - t);
    if (hits.length !== 10) throw new Error('expected 10 hits');
  }
  return p50(times);
}

async function sqlite(size) {
  const dir = mkdtempSync(join(tmpdir(), 'cubepi-bench-store-'));
  const db = new Database(join(dir, 'bench.db'));
  try {
    const store = new SQLiteStore(db, { embed, dimensions: DIM });
    const insert = db.prepare(
      `INSERT INTO cubepi_store_items (ns, key, value, text, vector, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 1, 1)`,
    );
    const next = rng(42);
    db.transaction(() => {
      for (let i = 0; i < size; i++) {
        const v = unit(next);
        insert.run(ns, `k${i}`, `{"text":"item ${i}"}`, `item ${i}`, Buffer.from(v.buffer));
      }
    })();
    return await measure(store);
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function postgres(size) {
  const pool = new pg.Pool({
    host: process.env.PGHOST || '127.0.0.1',
    port: Number(process.env.PGPORT || 5432),
    user: process.env.PGUSER || 'root',
    database: process.env.PGDATABASE || 'test',
    max: 2,
  });
  const schema = `bench_store_${process.pid}_${size}`;
  try {
    const store = new PostgresStore(pool, { schema, embed, dimensions: DIM, vectorSearch: 'exact' });
    await store.vectorMode();
    const next = rng(42);
    for (let start = 0; start < size; start += 1000) {
      const keys = [];
      const vectors = [];
      for (let i = start; i < Math.min(size, start + 1000); i++) {
        keys.push(`k${i}`);
        vectors.push(`{${Array.from(unit(next)).join(',')}}`);
      }
      await pool.query(
        `INSERT INTO "${schema}".cubepi_store_items (ns, key, value, text, vector, created_at, updated_at)
         SELECT $1, k, json_build_object('text', 'item ' || k), 'item ' || k, v::real[], 1, 1
         FROM unnest($2::text[], $3::text[]) AS t(k, v)`,
        [ns, keys, vectors],
      );
    }
    await pool.query(`ANALYZE "${schema}".cubepi_store_items`);
    return await measure(store);
  } finally {
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => {});
    await pool.end();
  }
}

const rows = [];
for (const [name, run] of [
  ['SQLiteStore', sqlite],
  ['PostgresStore (exact SQL)', postgres],
]) {
  const results = [];
  for (const size of sizes) results.push([size, await run(size)]);
  const base = results[0][1];
  for (const [size, ms] of results) {
    rows.push(`| ${name} | ${size.toLocaleString('en')} | ${ms.toFixed(1)} ms | ${(ms / base).toFixed(1)}× |`);
  }
}
console.log(`search, limit 10, ${DIM}-dim, p50 of ${queries} queries; growth vs the first size of the same backend`);
console.log('| backend | items | p50 | growth |\n| --- | --- | --- | --- |');
console.log(rows.join('\n'));
