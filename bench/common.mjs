// Adapted from the workplace's bench-peers harness (../shared/bench-peers/bench/common.mjs), unchanged otherwise.
// Shared helpers for the peer benchmark harness (plain ESM, Node >= 20).
import fs from "node:fs";

export const now = () => process.hrtime.bigint();
export const nsToMs = (ns) => Number(ns) / 1e6;
export const nsToUs = (ns) => Number(ns) / 1e3;
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Replaces (or appends) the section of RESULTS.md that starts at `heading` (a "## " line) with `text`: what the
 * hand-run scripts (checkpoint-cost, approval-roundtrip) write, leaving every other section as it is.
 */
export function writeResultsSection(file, heading, text) {
  let current = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : "# Benchmark results\n";
  const start = current.indexOf(heading);
  if (start >= 0) {
    // In place: the section keeps its position among the others.
    const next = current.indexOf("\n## ", start + heading.length);
    const rest = next >= 0 ? `\n\n${current.slice(next + 1)}` : "\n";
    fs.writeFileSync(file, `${current.slice(0, start)}${text.trimEnd()}${rest.trimEnd()}\n`);
    return;
  }
  fs.writeFileSync(file, `${current.trimEnd()}\n\n${text.trimEnd()}\n`);
}

/** The PostgreSQL the benchmarks use: the PG* variables, else 127.0.0.1:5432, user root, database test. */
export const pgConfig = () => ({
  host: process.env.PGHOST || "127.0.0.1",
  port: Number(process.env.PGPORT || 5432),
  user: process.env.PGUSER || "root",
  database: process.env.PGDATABASE || "test",
  ...(process.env.PGPASSWORD ? { password: process.env.PGPASSWORD } : {}),
});

export function median(xs) {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** /proc/self/io: wchar = bytes passed to write()/pwrite() syscalls by this process. */
export function readIo() {
  try {
    const txt = fs.readFileSync("/proc/self/io", "utf8");
    const o = {};
    for (const line of txt.split("\n")) {
      const [k, v] = line.split(":");
      if (k && v) o[k.trim()] = Number(v.trim());
    }
    return o;
  } catch {
    return {};
  }
}

export function fileSize(p) {
  try {
    return fs.statSync(p).size;
  } catch {
    return 0;
  }
}

// ---------------------------------------------------------------------------
// Turn markers (W1): adapters call markTool() from inside the tool body.
// The worker derives per-turn intervals from consecutive tool invocations.
export const markers = { t: [] };
export function markTool() {
  markers.t.push(now());
}
export function resetMarkers() {
  markers.t = [];
}
export function turnStats() {
  const t = markers.t;
  const d = [];
  for (let i = 1; i < t.length; i++) d.push(nsToUs(t[i] - t[i - 1]));
  const k = Math.max(1, Math.floor(d.length / 10));
  return {
    turnIntervals: d.length,
    firstDecileMedianUs: median(d.slice(0, k)),
    lastDecileMedianUs: median(d.slice(-k)),
  };
}

// ---------------------------------------------------------------------------
// W5 fake "forever" source: a timer-driven producer (push model) that emits one
// delta every `intervalMs`. It stops only when (a) the abort signal handed to the
// fake model fires, or (b) the consumer cancels/returns the stream. Any ticks
// counted after the user's abort() are "produced after abort".
export const SRC = { produced: 0, abortAt: null, afterAbort: 0, active: new Set() };
export function resetSource() {
  SRC.produced = 0;
  SRC.abortAt = null;
  SRC.afterAbort = 0;
}
export function startTicker(intervalMs, onTick) {
  const h = { stopped: false, timer: null, stopReason: null };
  h.timer = setInterval(() => {
    if (h.stopped) return;
    SRC.produced++;
    if (SRC.abortAt !== null) SRC.afterAbort++;
    onTick();
  }, intervalMs);
  h.stop = (why) => {
    if (h.stopped) return;
    h.stopped = true;
    h.stopReason = why;
    SRC.stopReason = why;
    clearInterval(h.timer);
    SRC.active.delete(h);
  };
  SRC.active.add(h);
  return h;
}
/** Forcefully stop leaked tickers so the worker process can exit; returns count leaked. */
export function killLeakedTickers() {
  const n = SRC.active.size;
  for (const h of [...SRC.active]) h.stop("killed-by-harness");
  return n;
}

// ---------------------------------------------------------------------------
// Synthetic conversation content shared by all adapters (W3 seeding).
// A "group" is 4 messages: user question, assistant tool call, tool result, assistant answer.
export const FILL = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut";
export function seedGroup(i) {
  return {
    user: `question ${i}: ${FILL}`,
    toolArgs: { i },
    toolResult: `result ${i}: ${FILL.slice(0, 40)}`,
    answer: `answer ${i}: ${FILL}`,
  };
}

// ---------------------------------------------------------------------------
// W2 producer pacing. "burst16": the fake model hands over 16 deltas per macrotask
// (setImmediate), like a network read that carries several SSE events; the consumer
// can drain between bursts. "micro": one microtask hop per delta (what pi-ai's faux
// provider does with no tokensPerSecond); a push-only queue can then grow unbounded.
const immediate = () => new Promise((r) => setImmediate(r));
export const PACERS = {
  burst16: (i) => (i % 16 === 15 ? immediate() : undefined),
  micro: () => null,
};

const cdpMetric = (metrics, name) => metrics.find((m) => m.name === name)?.value ?? 0;

/**
 * The main-thread cost in Chromium of `work()` (run from Node, on `page` of the Playwright `context`): the deltas of
 * CDP Performance.getMetrics' TaskDuration and ScriptDuration over it (ms), and the long-task durations the page
 * collected (`longtasks`: an expression evaluated in the page after `work`, e.g. a PerformanceObserver's array).
 * What bench/studio.mjs and bench/studio-app.mjs measure; `result` is what `work` resolved to.
 */
export async function measureMainThread(context, page, work, longtasks) {
  const cdp = await context.newCDPSession(page);
  await cdp.send("Performance.enable");
  const before = (await cdp.send("Performance.getMetrics")).metrics;
  const result = await work();
  const after = (await cdp.send("Performance.getMetrics")).metrics;
  const durations = await page.evaluate(longtasks);
  await cdp.detach();
  return {
    taskMs: (cdpMetric(after, "TaskDuration") - cdpMetric(before, "TaskDuration")) * 1e3,
    scriptMs: (cdpMetric(after, "ScriptDuration") - cdpMetric(before, "ScriptDuration")) * 1e3,
    longtasks: durations,
    result,
  };
}
