// Orchestrator of cubepi's peer benchmarks (issue 7). Adapted from the workplace's bench-peers harness
// (../shared/bench-peers/bench/run.mjs): same worker-per-measurement design, same workloads W1–W5; added cubepi and the
// floor as columns, W3 at H = 10,000, W5 over a real socket (cubepi), W6 fan-out, the memory check, interleaved
// repetitions, and bench/RESULTS.md written from the run (ratios of cubepi to each peer, and the bars of the issue).
//
//   node run.mjs [--adapters cubepi,pi,langgraph,aisdk,floor|./path/ours.mjs] [--quick] [--only w1,w2,w3,w4,w5,w5net,w6,mem]
//                [--out results] [--tmp DIR] [--no-md]
//
// Every measurement is its own process, `/usr/bin/time -v timeout -k 5 <s> node worker.mjs <adapter> <w> '<json>'`:
// peak RSS comes from /usr/bin/time, the numbers from the worker's `RESULT {json}` line, and a hard timeout bounds it
// (plus an in-process timer in the worker). Repetitions are interleaved across runtimes (rep 0 of every job, then
// rep 1, …), so a noisy moment on this shared machine hits every runtime alike.
// Writes <out>/raw.jsonl, summary.json, summary.md and (unless --no-md, or with --only) the peer section of RESULTS.md.
import { execFileSync, spawnSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL, fileURLToPath } from "node:url";
import { median } from "./common.mjs";
import { writeResultsMd } from "./report.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const opt = (k, d) => { const i = args.indexOf(k); return i >= 0 ? args[i + 1] : d; };
const quick = args.includes("--quick");
const ALL = ["w1", "w2", "w3", "w4", "w5", "w5net", "w6", "mem"];
const only = opt("--only", ALL.join(",")).split(",");
const outDir = path.resolve(here, opt("--out", quick ? "results-quick" : "results"));
const tmpDir = path.resolve(opt("--tmp", path.join(os.tmpdir(), "cubepi-bench")));
const KNOWN = { cubepi: "adapters/cubepi.mjs", pi: "adapters/pi.mjs", langgraph: "adapters/langgraph.mjs", aisdk: "adapters/aisdk.mjs", floor: "adapters/floor.mjs" };
const adapterSpecs = opt("--adapters", "cubepi,pi,langgraph,aisdk,floor").split(",");
// RESULTS.md is only rewritten by a run of every workload (a partial run would replace full tables with holes).
const writeMd = !args.includes("--no-md") && !args.includes("--only");
fs.mkdirSync(outDir, { recursive: true });
fs.mkdirSync(tmpDir, { recursive: true });

// `short`: one-shot measurements of well under a second (a cold process's first turns, an abort, one batch), where a
// shared machine's noise is as large as the differences; more processes make their medians steadier.
// `cancel`: W5, a parity bar (settle ≤ pi-agent-core's) on a time of ~1 ms that varies by ±30% between processes.
// `stream`: W2, whose runs of 0.1–5 s vary by ±30% between processes here.
const R = quick ? { short: 3, cancel: 3, stream: 2, fast: 2, slow: 1 } : { short: 21, cancel: 41, stream: 15, fast: 5, slow: 3 };
const W3_SIZES = [100, 1000, 5000, 10000];

/** The workload matrix of one adapter. reps: processes per cell; timeoutS: hard per-process bound. */
function jobsFor(peer, mod, file) {
  const v = mod.variants ?? {};
  const V = (w) => v[w] ?? [{}];
  const jobs = [];
  const add = (w, params, reps, timeoutS) => {
    if (only.includes(w) && typeof mod[w] === "function") jobs.push({ peer, file, w, params: { ...params, timeoutS }, reps, timeoutS });
  };
  for (const va of V("w1")) {
    // LangGraph's SqliteSaver variant writes a database file: keep it in the temp folder (removed after each job).
    if (va.saver === "sqlite") va.dbPath = path.join(tmpDir, `${peer}-lg-w1.sqlite`);
    add("w1", { ...va, T: 200 }, va.saver === "sqlite" ? R.fast : R.short, 120);
    // LangGraph+SqliteSaver at T=1000 writes O(T^2) bytes (~0.8 GB): one bounded run only.
    add("w1", { ...va, T: 1000 }, va.saver === "sqlite" ? 1 : va.saver === "memory" ? R.slow : R.fast, 240);
  }
  for (const va of V("w2")) add("w2", { ...va, N: 100000 }, va.pacing === "micro" ? R.slow : R.stream, 120);
  // W3: each adapter's own H list (mod.w3Sizes), default 100 / 1,000 / 5,000 as in the shared harness. LangGraph at
  // 10,000 re-writes the whole history on every step (~30 MB written per turn, ~15 s a process here): bounded by a
  // longer hard timeout; a timeout shows as a failed run in the table.
  const sizes = mod.w3Sizes ?? [100, 1000, 5000];
  for (const va of V("w3")) {
    for (const H of sizes.filter((h) => W3_SIZES.includes(h))) {
      add("w3", { ...va, H, turns: 5, dbPath: path.join(tmpDir, `${peer}-w3-${H}.db`) }, quick ? 1 : R.fast, H >= 10000 ? 420 : 300);
    }
  }
  add("w4", { K: 8, delayMs: 100 }, R.short, 60);
  add("w5", { abortAfterMs: 50 }, R.cancel, 60);
  add("w5net", { abortAfterMs: 50 }, R.short, 60);
  for (const va of V("w6")) add("w6", { ...va, N: 1000, turns: 3 }, R.slow, 180);
  return jobs;
}

// ---- run ---------------------------------------------------------------------------------------------------------
const started = new Date();
const load0 = os.loadavg();
// The build under test: cubepi's dist/ (file:.. link) may be rebuilt by someone else while this runs (a shared
// checkout). Fingerprint it at the start and after every job; a change is reported in the log and in RESULTS.md.
// dist/src/cli (the `cubepi` command) is left out: the bench never loads it.
const git = (...a) => { try { return execFileSync("git", a, { cwd: path.join(here, ".."), encoding: "utf8" }).trim(); } catch { return "?"; } };
function distFingerprint() {
  const h = crypto.createHash("sha1");
  let newest = 0;
  const walk = (d) => { for (const e of fs.readdirSync(d, { withFileTypes: true })) { const f = path.join(d, e.name); if (e.isDirectory()) { if (!f.endsWith(path.join("dist", "src", "cli"))) walk(f); } else if (f.endsWith(".js")) { h.update(f); h.update(fs.readFileSync(f)); newest = Math.max(newest, fs.statSync(f).mtimeMs); } } };
  try { walk(path.join(here, "..", "dist")); } catch { return { hash: "missing", builtAt: null }; }
  return { hash: h.digest("hex").slice(0, 12), builtAt: new Date(newest).toISOString() };
}
const dist0 = distFingerprint();
const cubepiAtStart = { commit: git("rev-parse", "--short", "HEAD"), dirty: git("status", "--porcelain", "--", "src", "operators") !== "" };
let distChangedAt = null;
const raw = fs.createWriteStream(path.join(outDir, "raw.jsonl"));
const jobs = [];
for (const spec of adapterSpecs) {
  const file = path.resolve(here, KNOWN[spec] ?? path.relative(here, path.resolve(spec)));
  const mod = await import(pathToFileURL(file).href);
  jobs.push(...jobsFor(mod.name ?? spec, mod, file));
}
if (only.includes("mem")) jobs.push({ peer: "cubepi", w: "mem", params: { timeoutS: 300 }, reps: 1, timeoutS: 300 });
const total = jobs.reduce((n, j) => n + j.reps, 0);
console.log(`${jobs.length} jobs, ${total} processes${quick ? " (quick)" : ""}; raw results in ${path.relative(process.cwd(), outDir) || "."}`);

const cleanTmp = () => { for (const f of fs.readdirSync(tmpDir)) if (f.includes("-w3-") || f.includes("lg-w1")) fs.rmSync(path.join(tmpDir, f), { force: true }); };
const all = [];
let done = 0;
for (let rep = 0; rep < Math.max(...jobs.map((j) => j.reps)); rep++) {
  for (const job of jobs) {
    if (rep >= job.reps) continue;
    const t0 = Date.now();
    const cmd = job.w === "mem"
      ? [process.execPath, "--expose-gc", path.join(here, "memory-check.mjs"), ...(quick ? ["--runs", "10000", "--cancelled", "200"] : [])]
      : [process.execPath, path.join(here, "worker.mjs"), job.file, job.w, JSON.stringify(job.params)];
    const p = spawnSync("/usr/bin/time", ["-v", "timeout", "-k", "5", String(job.timeoutS + 10), ...cmd], { encoding: "utf8", maxBuffer: 64 << 20, cwd: here });
    const line = (p.stdout.split("\n").find((l) => l.startsWith("RESULT ")) ?? `RESULT {"error":"no result (exit ${p.status}${p.status === 124 ? ": timeout" : ""})"}`).slice(7);
    const rss = /Maximum resident set size \(kbytes\): (\d+)/.exec(p.stderr)?.[1];
    const rec = { peer: job.peer, w: job.w, params: job.params, rep, exit: p.status, elapsedS: (Date.now() - t0) / 1000, peakRssMB: rss ? Number(rss) / 1024 : null, result: JSON.parse(line) };
    if (rec.result.error) rec.stderrTail = p.stderr.split("\n").filter((l) => !/^\s+\S.*:\s/.test(l)).slice(-8).join("\n");
    raw.write(JSON.stringify(rec) + "\n");
    all.push(rec);
    cleanTmp();
    if (distChangedAt === null && distFingerprint().hash !== dist0.hash) {
      distChangedAt = done + 1;
      console.log(`WARNING: cubepi's dist/ changed during the run (after job ${distChangedAt}): results mix two builds`);
    }
    const { dbPath, timeoutS, ...shown } = job.params;
    console.log(`[${++done}/${total}] ${job.peer} ${job.w} ${JSON.stringify(shown)} rep${rep} exit=${p.status} ${rec.elapsedS}s rss=${rec.peakRssMB?.toFixed(0)}MB ${rec.result.error ? "ERROR " + String(rec.result.error).slice(0, 300) : ""}`);
  }
}
raw.end();

// ---- aggregate ---------------------------------------------------------------------------------------------------
const stat = (xs) => { xs = xs.filter((x) => typeof x === "number" && Number.isFinite(x)); return xs.length ? { median: median(xs), min: Math.min(...xs), max: Math.max(...xs), n: xs.length } : null; };
const groups = new Map();
for (const r of all) {
  const { dbPath, timeoutS, turns, ...key } = r.params;
  const k = JSON.stringify([r.peer, r.w, key]);
  if (!groups.has(k)) groups.set(k, { peer: r.peer, w: r.w, key, recs: [] });
  groups.get(k).recs.push(r);
}
const summary = [];
for (const g of groups.values()) {
  const ok = g.recs.filter((r) => !r.result.error);
  const m = {};
  const pick = (name, f) => { const s = stat(ok.flatMap((r) => [].concat(f(r)))); if (s) m[name] = s; };
  pick("peakRssMB", (r) => r.peakRssMB);
  if (g.w === "w1") {
    pick("usPerTurn", (r) => r.result.usPerTurn); pick("firstDecileTurnUs", (r) => r.result.firstDecileMedianUs);
    pick("lastDecileTurnUs", (r) => r.result.lastDecileMedianUs); pick("wallMs", (r) => r.result.wallMs);
    // growth with history, per run: median tool-to-tool interval of the last 10% of turns / of the first 10%
    pick("lastOverFirst", (r) => r.result.lastDecileMedianUs / r.result.firstDecileMedianUs);
  }
  if (g.w === "w2") { pick("deltasPerSec", (r) => r.result.deltasPerSec); pick("wallMs", (r) => r.result.wallMs); m.allDelivered = ok.every((r) => r.result.ok); }
  if (g.w === "w3") {
    pick("msPerTurn", (r) => r.result.rows.map((x) => x.ms)); pick("wcharBytesPerTurn", (r) => r.result.rows.map((x) => x.wchar));
    pick("logicalBytesPerTurn", (r) => r.result.rows.map((x) => x.logicalBytes)); pick("fileGrowthPerTurn", (r) => r.result.rows.map((x) => x.fileGrowth));
  }
  if (g.w === "w4") pick("wallMs", (r) => r.result.wallMs);
  if (g.w === "w5") {
    pick("settleMs", (r) => r.result.settleMs); pick("producedAfterAbortAtSettle", (r) => r.result.producedAfterAbortAtSettle);
    // Every process's settle time, for the report's bootstrap interval of the ratio (the bar compares two medians).
    m.settleMsValues = ok.map((r) => r.result.settleMs).filter(Number.isFinite);
    pick("producedAfterAbortPlus100ms", (r) => r.result.producedAfterAbortPlus100ms); pick("leakedProducers", (r) => r.result.leakedProducers);
    m.outcomes = [...new Set(ok.map((r) => `${r.result.outcome}/${r.result.sourceStopReason}`))];
  }
  if (g.w === "w5net") {
    pick("settleMs", (r) => r.result.settleMs); pick("serverCloseMs", (r) => r.result.serverCloseMs ?? Infinity);
    pick("deliveredAfterAbort", (r) => r.result.deliveredAfterAbort); pick("chunksWrittenAfterAbort", (r) => r.result.chunksWrittenAfterAbort);
    m.serverSawClose = ok.filter((r) => r.result.serverCloseMs !== null).length;
  }
  if (g.w === "w6") {
    pick("wallMs", (r) => r.result.wallMs); pick("events", (r) => r.result.events); pick("misdelivered", (r) => r.result.misdelivered);
    pick("incomplete", (r) => r.result.incomplete); pick("badThreads", (r) => r.result.badThreads);
    m.store = ok[0]?.result.checkpointer;
  }
  if (g.w === "mem") m.result = ok[0]?.result ?? null;
  summary.push({ peer: g.peer, w: g.w, params: g.key, runs: g.recs.length, errors: g.recs.length - ok.length, errorSamples: g.recs.filter((r) => r.result.error).map((r) => String(r.result.error).slice(0, 300)), metrics: m });
}
fs.writeFileSync(path.join(outDir, "summary.json"), JSON.stringify(summary, null, 2));
const f = (x) => (x >= 1000 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));
const md = ["| peer | workload | params | metric | median | min | max | n |", "|---|---|---|---|---|---|---|---|"];
for (const s of summary) for (const [k, v] of Object.entries(s.metrics)) {
  if (v === null || typeof v !== "object" || Array.isArray(v) || !("median" in v)) md.push(`| ${s.peer} | ${s.w} | ${JSON.stringify(s.params)} | ${k} | ${typeof v === "object" ? JSON.stringify(v).slice(0, 200) : v} | | | |`);
  else md.push(`| ${s.peer} | ${s.w} | ${JSON.stringify(s.params)} | ${k} | ${f(v.median)} | ${f(v.min)} | ${f(v.max)} | ${v.n} |`);
}
fs.writeFileSync(path.join(outDir, "summary.md"), md.join("\n") + "\n");

// ---- RESULTS.md --------------------------------------------------------------------------------------------------
const pkgVersion = (name) => { try { return JSON.parse(fs.readFileSync(path.join(here, "node_modules", name, "package.json"), "utf8")).version; } catch { return "?"; } };
let pgVersion = null;
try {
  const { default: pg } = await import("pg");
  const { pgConfig } = await import("./adapters/cubepi.mjs");
  const c = new pg.Client(pgConfig()); await c.connect();
  pgVersion = (await c.query("SELECT current_setting('server_version') v, current_setting('synchronous_commit') sc")).rows[0]; await c.end();
} catch { /* not measured */ }
const meta = {
  date: started.toISOString(), minutes: (Date.now() - started.getTime()) / 60000, quick,
  command: `node run.mjs ${args.join(" ")}`.trim(),
  cpu: os.cpus()[0]?.model.trim(), cores: os.cpus().length, node: process.version, platform: `${os.platform()} ${os.arch()}`,
  loadavgStart: load0, loadavgEnd: os.loadavg(),
  cubepi: { version: JSON.parse(fs.readFileSync(path.join(here, "..", "package.json"), "utf8")).version, ...cubepiAtStart, dist: dist0, distChangedAfterJob: distChangedAt },
  versions: Object.fromEntries(["@mariozechner/pi-agent-core", "@mariozechner/pi-ai", "@langchain/langgraph", "@langchain/core", "@langchain/langgraph-checkpoint-sqlite", "ai", "better-sqlite3", "pg", "zod"].map((n) => [n, pkgVersion(n)])),
  rxjs: (() => { try { return JSON.parse(fs.readFileSync(path.join(here, "..", "node_modules", "rxjs", "package.json"), "utf8")).version; } catch { return "?"; } })(),
  postgres: pgVersion,
};
fs.writeFileSync(path.join(outDir, "meta.json"), JSON.stringify(meta, null, 2));
if (writeMd) {
  const file = writeResultsMd(path.join(here, "RESULTS.md"), summary, meta);
  console.log(`wrote ${path.relative(process.cwd(), file)}`);
} else console.log("RESULTS.md not written (--only / --no-md); report.mjs can render it: node report.mjs " + path.relative(process.cwd(), outDir));
console.log(`done in ${meta.minutes.toFixed(1)} min`);
