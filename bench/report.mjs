// Renders the "## Peer comparison (issue 7)" section of bench/RESULTS.md from a run's summary (run.mjs calls it).
// Re-render from a results folder without re-running: node report.mjs results
// The section "## Checkpoint cost vs history (W3)" (written by checkpoint-cost.mjs) and any other section are kept.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { median } from "./common.mjs";

export const HEADING = "## Peer comparison (issue 7)";
const ORDER = ["cubepi", "pi-agent-core", "langgraph", "ai-sdk", "floor"];
const rank = (peer) => { const i = ORDER.indexOf(peer); return i < 0 ? ORDER.length : i; };

// ---- formatting ----------------------------------------------------------------------------------------------------
const int = (x) => (x === undefined || x === null || !Number.isFinite(x) ? "–" : Math.round(x).toLocaleString("en"));
const num = (x, d = 2) => (x === undefined || x === null || !Number.isFinite(x) ? "–" : x >= 1000 ? Math.round(x).toLocaleString("en") : x >= 100 ? x.toFixed(1) : x.toFixed(d));
const bytes = (x) => (x === undefined || x === null || !Number.isFinite(x) ? "–" : x >= 1e6 ? `${(x / 1e6).toFixed(2)} MB` : x >= 10240 ? `${(x / 1024).toFixed(1)} KiB` : `${Math.round(x)} B`);
const rate = (x) => (x === undefined || !Number.isFinite(x) ? "–" : x >= 1e6 ? `${(x / 1e6).toFixed(2)} M` : `${Math.round(x / 1000)} k`);
const ratio = (a, b) => (a === undefined || b === undefined || !Number.isFinite(a) || !Number.isFinite(b) || b === 0 ? "–" : `${(a / b).toFixed(2)}×`);
const mmm = (s, fmt = num) => (s ? `${fmt(s.median)} (${fmt(s.min)}–${fmt(s.max)})` : "–");
/**
 * A 95% percentile-bootstrap interval for median(a) ÷ median(b), a and b resampled independently (2,000 resamples,
 * a fixed seed: re-rendering gives the same text). Undefined when either side has fewer than 5 values.
 */
export function ratioInterval(a, b, resamples = 2000) {
  if (!a || !b || a.length < 5 || b.length < 5) return undefined;
  let seed = 0x9e3779b9;
  const rand = () => {
    // mulberry32
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const resample = (xs) => Array.from(xs, () => xs[Math.floor(rand() * xs.length)]);
  const ratios = Array.from({ length: resamples }, () => median(resample(a)) / median(resample(b))).sort((x, y) => x - y);
  return [ratios[Math.floor(0.025 * resamples)], ratios[Math.ceil(0.975 * resamples) - 1]];
}
const mark = (ok) => (ok === null || ok === undefined ? "❔" : ok ? "✅" : "❌");
const variantOf = (params, drop = []) => {
  const v = Object.entries(params).filter(([k]) => !drop.includes(k)).map(([k, val]) => `${k}=${val}`).join(", ");
  return v || "–";
};

export function renderSection(summary, meta) {
  const S = summary.filter((s) => s.w !== "mem");
  const get = (peer, w, pred = () => true) => S.find((s) => s.peer === peer && s.w === w && pred(s.params));
  const rows = (w) => S.filter((s) => s.w === w).sort((a, b) => rank(a.peer) - rank(b.peer));
  const med = (s, m) => s?.metrics?.[m]?.median;
  // W1 growth with history: median last-10% turn time ÷ median first-10% turn time (ratio of the medians shown).
  const growth = (s) => (med(s, "firstDecileTurnUs") > 0 ? med(s, "lastDecileTurnUs") / med(s, "firstDecileTurnUs") : undefined);
  const out = [];
  const p = (...l) => out.push(...l);
  const errorsNote = (list) => {
    const bad = list.filter((s) => s.errors > 0);
    if (bad.length) p("", ...bad.map((s) => `- ${s.peer} ${s.w} ${variantOf(s.params)}: ${s.errors}/${s.runs} runs failed (${(s.errorSamples[0] ?? "").split("\n")[0].slice(0, 160)})`));
  };

  p(HEADING, "");
  p(`Written by \`npm run bench\` (\`${meta.command}\`, in \`bench/\`) on ${meta.date.slice(0, 16).replace("T", " ")} UTC${meta.quick ? ", **quick mode** (fewer repetitions)" : ""}; the run took ${meta.minutes.toFixed(1)} min.`);
  p(`Machine: ${meta.cpu}, ${meta.cores} cores, Node ${meta.node}, ${meta.platform}; load average ${meta.loadavgStart.map((x) => x.toFixed(2)).join(" / ")} at the start, ${meta.loadavgEnd.map((x) => x.toFixed(2)).join(" / ")} at the end (a shared machine: compare ratios within this run, not absolute numbers across runs).`);
  p(`Versions: cubepi ${meta.cubepi.version} (commit ${meta.cubepi.commit}${meta.cubepi.dirty ? ", with uncommitted changes in src/ or operators/" : ""} at the start of the run; dist/ built ${meta.cubepi.dist?.builtAt?.slice(0, 16).replace("T", " ") ?? "?"} UTC; rxjs ${meta.rxjs}), ${Object.entries(meta.versions).map(([k, v]) => `${k} ${v}`).join(", ")}${meta.postgres ? `, PostgreSQL ${meta.postgres.v} (synchronous_commit=${meta.postgres.sc})` : ""}.`);
  if (meta.cubepi.distChangedAfterJob) p("", meta.cubepi.distChangeNote ? `Note: cubepi's dist/ was rebuilt during this run (after job ${meta.cubepi.distChangedAfterJob}); ${meta.cubepi.distChangeNote}` : `**Warning: cubepi's dist/ was rebuilt during this run (after job ${meta.cubepi.distChangedAfterJob}): the cubepi numbers mix two builds.**`);
  p("");
  p("Every measurement is its own process (one worker per repetition, `/usr/bin/time` for peak RSS, a hard timeout);");
  p("repetitions are interleaved across runtimes. Cells are **median (min–max)** over the processes (W3: over all");
  p("measured turns). The same scripted in-process fake model drives every runtime (see `adapters/TEMPLATE.mjs`):");
  p("the numbers are framework overhead. **cubepi ÷ this** is cubepi's median divided by that row's median: for times and");
  p("memory < 1 means cubepi is better; for throughput (W2) > 1 means cubepi is better. `floor` is a bare hand-written");
  p("loop with no framework (`adapters/floor.mjs`): what no runtime can beat.");

  // ---- bars ----
  const bars = [];
  const bar = (workload, what, measured, ok) => bars.push(`| ${workload} | ${what} | ${measured} | ${mark(ok)} |`);
  for (const T of [200, 1000]) {
    const c = get("cubepi", "w1", (q) => q.T === T), pi = get("pi-agent-core", "w1", (q) => q.T === T);
    const cu = med(c, "usPerTurn"), pu = med(pi, "usPerTurn");
    bar("W1", `T = ${T}: µs/turn ≤ 0.5 × pi-agent-core's`, `${num(cu)} µs vs pi ${num(pu)} µs: ${ratio(cu, pu)}`, cu !== undefined && pu !== undefined ? cu <= 0.5 * pu : null);
  }
  for (const T of [200, 1000]) {
    const c = get("cubepi", "w1", (q) => q.T === T), pi = get("pi-agent-core", "w1", (q) => q.T === T);
    const g = growth(c);
    bar("W1", `T = ${T}: flat with history (last-10% / first-10% turn time ≤ 1.2)`, `${num(g)} (${num(med(c, "firstDecileTurnUs"))} → ${num(med(c, "lastDecileTurnUs"))} µs; pi ${num(growth(pi))})`, g !== undefined ? g <= 1.2 : null);
  }
  for (const T of [200, 1000]) {
    const c = get("cubepi", "w1", (q) => q.T === T), pi = get("pi-agent-core", "w1", (q) => q.T === T);
    const cr = med(c, "peakRssMB"), pr = med(pi, "peakRssMB");
    bar("W1", `T = ${T}: peak RSS ≤ pi-agent-core's`, `${num(cr, 1)} MB vs ${num(pr, 1)} MB`, cr !== undefined && pr !== undefined ? cr <= pr : null);
  }
  {
    const c = get("cubepi", "w2", (q) => (q.pacing ?? "burst16") === "burst16"), pi = get("pi-agent-core", "w2", (q) => (q.pacing ?? "burst16") === "burst16");
    const cd = med(c, "deltasPerSec"), pd = med(pi, "deltasPerSec");
    bar("W2", "deltas/s ≥ 2 × pi-agent-core's (burst16 pacing)", `${rate(cd)}/s vs ${rate(pd)}/s: ${ratio(cd, pd)}`, cd !== undefined && pd !== undefined ? cd >= 2 * pd : null);
  }
  for (const saver of ["sqlite", "postgres"]) {
    const c = (H) => get("cubepi", "w3", (q) => q.saver === saver && q.H === H);
    const Hmax = Math.max(...S.filter((s) => s.peer === "cubepi" && s.w === "w3" && s.params.saver === saver).map((s) => s.params.H));
    const lo = c(100), hi = c(Hmax);
    const w0 = med(lo, "wcharBytesPerTurn"), w1 = med(hi, "wcharBytesPerTurn");
    const l0 = med(lo, "logicalBytesPerTurn"), l1 = med(hi, "logicalBytesPerTurn");
    const okBytes = w0 !== undefined && w1 !== undefined ? w1 / w0 <= 1.1 && w1 / w0 >= 0.9 : null;
    bar("W3", `${saver}: bytes written per turn constant (H = ${int(Hmax)} ÷ H = 100)`, `wchar ${bytes(w0)} → ${bytes(w1)} (${ratio(w1, w0)}); logical ${bytes(l0)} → ${bytes(l1)} (the 4 new messages)`, okBytes);
    const m0 = med(lo, "msPerTurn"), m1 = med(hi, "msPerTurn");
    bar("W3", `${saver}: ms/turn at H = ${int(Hmax)} ≤ 1.3 × at H = 100`, `${num(m0)} → ${num(m1)} ms (${ratio(m1, m0)})`, m0 !== undefined && m1 !== undefined ? m1 <= 1.3 * m0 : null);
  }
  {
    const c = get("cubepi", "w4");
    const wm = med(c, "wallMs");
    bar("W4", "8 tools × 100 ms: wall ≤ 103 ms", `${mmm(c?.metrics.wallMs)} ms`, wm !== undefined ? wm <= 103 : null);
  }
  {
    const c = get("cubepi", "w5"), pi = get("pi-agent-core", "w5");
    const cs = med(c, "settleMs"), ps = med(pi, "settleMs");
    // The bar compares two medians; the interval shows how far the ratio moves between resamples of the processes,
    // and the bare loop what Node's own abort dispatch costs in this run.
    const ci = ratioInterval(c?.metrics.settleMsValues, pi?.metrics.settleMsValues);
    const fl = med(get("floor", "w5"), "settleMs");
    const detail = [ci ? `95% interval ${ci[0].toFixed(2)}–${ci[1].toFixed(2)}×, bootstrap over the processes` : undefined, fl !== undefined ? `the bare loop ${num(fl)} ms` : undefined].filter(Boolean).join("; ");
    bar("W5", "abort → run settled ≤ pi-agent-core's", `${num(cs)} ms vs ${num(ps)} ms: ${ratio(cs, ps)}${detail ? ` (${detail})` : ""}`, cs !== undefined && ps !== undefined ? cs <= ps : null);
    const after = c?.metrics.producedAfterAbortPlus100ms?.max, leaked = c?.metrics.leakedProducers?.max;
    bar("W5", "zero deltas produced after the abort", `max ${num(after, 0)} (at settle and +100 ms), leaked producers ${num(leaked, 0)}, over ${c?.metrics.settleMs?.n ?? 0} runs`, after !== undefined ? after === 0 && leaked === 0 : null);
    const n = get("cubepi", "w5net");
    const close = n?.metrics.serverCloseMs;
    bar("W5", "real SDK (cubepi's OpenAIProvider, `openai` SDK) vs a local SSE server: server sees the socket closed ≤ 50 ms after abort", n ? `median ${num(close?.median)} ms, max ${num(close?.max)} ms (${n.metrics.serverSawClose}/${n.runs} runs saw the close); deltas delivered after abort: max ${num(n.metrics.deliveredAfterAbort?.max, 0)}` : "not measured", close ? close.max <= 50 && n.metrics.serverSawClose === n.runs && n.metrics.deliveredAfterAbort?.max === 0 : null);
  }
  for (const s of rows("w6").filter((x) => x.peer === "cubepi")) {
    const m = s.metrics;
    bar("W6", `1,000 agents × 3 turns (${variantOf(s.params, ["N", "turns"])}): completes, no event to the wrong run`, `${mmm(m.wallMs)} ms, peak RSS ${mmm(m.peakRssMB)} MB, misdelivered ${num(m.misdelivered?.max, 0)}, incomplete ${num(m.incomplete?.max, 0)}, wrong threads ${num(m.badThreads?.max, 0)}, errors ${s.errors}/${s.runs}`, s.errors === 0 && m.misdelivered?.max === 0 && m.incomplete?.max === 0 && m.badThreads?.max === 0);
  }
  const memS = summary.find((s) => s.w === "mem");
  const mem = memS?.metrics?.result;
  if (mem) {
    bar("memory", `${int(mem.sequential.runs)} sequential runs on one Agent: heap after GC within 10% of the start`, `${num(mem.sequential.heapStartMB)} → ${num(mem.sequential.heapEndMB)} MB (${ratio(mem.sequential.heapEndMB, mem.sequential.heapStartMB)})`, mem.sequential.heapRatio <= 1.1);
    const clean = mem.cancelled.every((c) => c.providerSubscriptionsLeft === 0 && c.timersLeft === 0 && c.deltasAfterCancel === 0 && c.toolsPending === 0 && c.toolSignalsFired === c.toolCalls && c.callerSignalListeners === 0 && c.resourcesLeft.length === 0);
    bar("memory", "cancelled runs leave nothing subscribed", `${mem.cancelled.map((c) => c.case).join(", ")}: ${mem.cancelled.reduce((n, c) => n + c.runs, 0)} runs, ${clean ? "nothing left" : "something left (see below)"}`, clean);
  } else bar("memory", "memory check", memS ? `failed: ${memS.errorSamples[0]}` : "not run", memS ? false : null);
  const met = bars.filter((b) => b.endsWith("✅ |")).length, failed = bars.filter((b) => b.endsWith("❌ |")).length;
  p("", "### Bars (issue 7)", "", `${met} met, ${failed} not met, ${bars.length - met - failed} not measured.`, "");
  p("| workload | bar | measured (medians) | met |", "| --- | --- | --- | --- |", ...bars);

  // ---- W1 ----
  p("", "### W1 loop overhead (T turns, one instant tool call per turn; µs per turn)", "");
  p("Turn time: the tool-to-tool interval (from `markTool()` in the tool body); first-10% / last-10%: median over the first");
  p("and the last tenth of the turns; last ÷ first is the ratio of those medians (growth with history). Each process warms");
  p("up with one run of T = 20 only, so early turns include JIT compilation (it shows in the first tenth).", "");
  p("| runtime | variant | T | µs/turn | n | first-10% turn µs | last-10% turn µs | last ÷ first | peak RSS MB | cubepi ÷ this (µs/turn) | cubepi ÷ this (RSS) |");
  p("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
  const w1 = rows("w1").sort((a, b) => a.params.T - b.params.T || rank(a.peer) - rank(b.peer));
  for (const s of w1) {
    const c = get("cubepi", "w1", (q) => q.T === s.params.T);
    p(`| ${s.peer} | ${variantOf(s.params, ["T"])} | ${s.params.T} | ${mmm(s.metrics.usPerTurn)} | ${s.metrics.usPerTurn?.n ?? 0} | ${num(med(s, "firstDecileTurnUs"))} | ${num(med(s, "lastDecileTurnUs"))} | ${num(growth(s))} | ${num(med(s, "peakRssMB"), 1)} | ${s.peer === "cubepi" ? "" : ratio(med(c, "usPerTurn"), med(s, "usPerTurn"))} | ${s.peer === "cubepi" ? "" : ratio(med(c, "peakRssMB"), med(s, "peakRssMB"))} |`);
  }
  errorsNote(w1);

  // ---- W2 ----
  p("", "### W2 streaming (one answer of 100,000 one-character deltas, counted by a subscriber; deltas/s)", "");
  p("`burst16`: the fake model hands over 16 deltas per macrotask (setImmediate); `micro`: one microtask hop per delta.", "");
  p("| runtime | pacing | deltas/s | n | wall ms | peak RSS MB | cubepi ÷ this (deltas/s, > 1: cubepi faster) |", "| --- | --- | ---: | ---: | ---: | ---: | ---: |");
  const w2 = rows("w2").sort((a, b) => (a.params.pacing ?? "burst16").localeCompare(b.params.pacing ?? "burst16") || rank(a.peer) - rank(b.peer));
  for (const s of w2) {
    const pacing = s.params.pacing ?? "burst16";
    const c = get("cubepi", "w2", (q) => (q.pacing ?? "burst16") === pacing);
    p(`| ${s.peer} | ${pacing} | ${mmm(s.metrics.deltasPerSec, rate)} | ${s.metrics.deltasPerSec?.n ?? 0} | ${num(med(s, "wallMs"))} | ${num(med(s, "peakRssMB"), 1)} | ${s.peer === "cubepi" ? "" : ratio(med(c, "deltasPerSec"), med(s, "deltasPerSec"))} |`);
  }
  errorsNote(w2);

  // ---- W3 ----
  p("", "### W3 checkpoint cost vs history (a thread of H messages, then turns of +4 messages; per measured turn)", "");
  p("Per turn: wall ms; **wchar**, bytes this process passed to `write()` (`/proc/self/io`; for PostgreSQL what the client");
  p("sent); **store growth**, SQLite/JSONL: growth of the files (db + WAL), PostgreSQL: WAL bytes the server generated;");
  p("**logical**, bytes of the new rows (SQLite: `SUM(LENGTH(...))` of new rows, LangGraph: checkpoints + writes blobs,");
  p("PostgreSQL: `pg_column_size` of the new JSONB rows, pi: the JSONL lines). pi-agent-core has no checkpointer: its row is");
  p("a harness-written JSONL append. cubepi: `SQLiteCheckpointer` (synchronous = full, WAL) and `PostgresCheckpointer`");
  p("(a schema per run, dropped after), as the Agent writes them (one append per message; `extra` at a turn end only when it changed, and the workload never changes it).", "");
  p("| runtime | saver | H | ms/turn | turns | wchar/turn | store growth/turn | logical/turn | peak RSS MB | cubepi sqlite ÷ this (ms) | cubepi sqlite ÷ this (wchar) |");
  p("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
  const w3 = rows("w3").sort((a, b) => rank(a.peer) - rank(b.peer) || String(a.params.saver).localeCompare(String(b.params.saver)) || a.params.H - b.params.H);
  for (const s of w3) {
    const c = get("cubepi", "w3", (q) => q.saver === "sqlite" && q.H === s.params.H);
    const self = s.peer === "cubepi" && s.params.saver === "sqlite";
    p(`| ${s.peer} | ${s.params.saver} | ${int(s.params.H)} | ${mmm(s.metrics.msPerTurn)} | ${s.metrics.msPerTurn?.n ?? 0} | ${bytes(med(s, "wcharBytesPerTurn"))} | ${bytes(med(s, "fileGrowthPerTurn"))} | ${bytes(med(s, "logicalBytesPerTurn"))} | ${num(med(s, "peakRssMB"), 1)} | ${self ? "" : ratio(med(c, "msPerTurn"), med(s, "msPerTurn"))} | ${self ? "" : ratio(med(c, "wcharBytesPerTurn"), med(s, "wcharBytesPerTurn"))} |`);
  }
  p("", "Flatness: the largest H measured ÷ H = 100 (1.00 = flat).", "");
  p("| runtime | saver | largest H | ms | wchar | logical |", "| --- | --- | ---: | ---: | ---: | ---: |");
  for (const key of [...new Set(w3.map((s) => `${s.peer}|${s.params.saver}`))]) {
    const [peer, saver] = key.split("|");
    const mine = w3.filter((s) => s.peer === peer && String(s.params.saver) === saver && s.metrics.msPerTurn);
    const lo = mine.find((s) => s.params.H === 100), hi = mine.sort((a, b) => b.params.H - a.params.H)[0];
    if (!lo || !hi || hi === lo) continue;
    p(`| ${peer} | ${saver} | ${int(hi.params.H)} | ${ratio(med(hi, "msPerTurn"), med(lo, "msPerTurn"))} | ${ratio(med(hi, "wcharBytesPerTurn"), med(lo, "wcharBytesPerTurn"))} | ${ratio(med(hi, "logicalBytesPerTurn"), med(lo, "logicalBytesPerTurn"))} |`);
  }
  errorsNote(w3);

  // ---- W4 ----
  p("", "### W4 parallel tools (one turn of 8 tool calls, each awaiting a 100 ms timer; run wall time)", "");
  p("| runtime | wall ms | n | peak RSS MB | cubepi ÷ this |", "| --- | ---: | ---: | ---: | ---: |");
  const w4 = rows("w4");
  const c4 = get("cubepi", "w4");
  for (const s of w4) p(`| ${s.peer} | ${mmm(s.metrics.wallMs)} | ${s.metrics.wallMs?.n ?? 0} | ${num(med(s, "peakRssMB"), 1)} | ${s.peer === "cubepi" ? "" : ratio(med(c4, "wallMs"), med(s, "wallMs"))} |`);
  errorsNote(w4);

  // ---- W5 ----
  p("", "### W5 cancel (abort 50 ms into an endless stream of one delta per ms)", "");
  p("Settle: abort through the public API → the run's promise settled. Produced after abort: ticks of the fake source after");
  p("the abort (the source stops only through the signal or the unsubscription the runtime hands the model).", "");
  p("| runtime | settle ms | n | produced after abort (max, at settle / +100 ms) | leaked producers (max) | outcome / source stopped by | peak RSS MB | cubepi ÷ this (settle) |");
  p("| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: |");
  const w5 = rows("w5");
  const c5 = get("cubepi", "w5");
  for (const s of w5) p(`| ${s.peer} | ${mmm(s.metrics.settleMs)} | ${s.metrics.settleMs?.n ?? 0} | ${num(s.metrics.producedAfterAbortAtSettle?.max, 0)} / ${num(s.metrics.producedAfterAbortPlus100ms?.max, 0)} | ${num(s.metrics.leakedProducers?.max, 0)} | ${(s.metrics.outcomes ?? []).join(", ")} | ${num(med(s, "peakRssMB"), 1)} | ${s.peer === "cubepi" ? "" : ratio(med(c5, "settleMs"), med(s, "settleMs"))} |`);
  errorsNote(w5);
  const n5 = rows("w5net");
  if (n5.length) {
    p("", "Over a real socket (cubepi only): `OpenAIProvider` (official `openai` SDK) against a local HTTP server streaming one");
    p("Chat Completions SSE chunk per ms; server close: abort → the server's response sees `close`.", "");
    p("| runtime | settle ms | server close ms | runs where the server saw the close | deltas delivered after abort (max) | chunks the server wrote after abort |", "| --- | ---: | ---: | ---: | ---: | ---: |");
    for (const s of n5) p(`| ${s.peer} | ${mmm(s.metrics.settleMs)} | ${mmm(s.metrics.serverCloseMs)} | ${s.metrics.serverSawClose}/${s.runs} | ${num(s.metrics.deliveredAfterAbort?.max, 0)} | ${mmm(s.metrics.chunksWrittenAfterAbort)} |`);
    errorsNote(n5);
  }

  // ---- W6 ----
  p("", "### W6 fan-out (1,000 agents in one process, one thread each, 3 turns each: two tool calls then an answer)", "");
  p("All prompts started together (`Promise.all`). Every event each agent's `events$` (pi: its `subscribe`) delivered is");
  p("checked: it carries the runId of that agent's run (cubepi) and every message in it is tagged with that agent;");
  p("each thread (or transcript) is checked at the end. `store=memory`: one `MemoryCheckpointer` shared by all agents,");
  p("one thread each; `provider=faux`: cubepi's `FauxProvider` (4-character chunks: more events per turn);");
  p("`provider=scripted`: the same scripted model as pi's column (like for like). cubepi ÷ this uses the like-for-like row.", "");
  p("| runtime | variant | wall ms | n | peak RSS MB | events | misdelivered (max) | incomplete (max) | wrong threads (max) | cubepi ÷ this (wall) | cubepi ÷ this (RSS) |");
  p("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
  const w6 = rows("w6");
  const c6 = get("cubepi", "w6", (q) => q.provider === "scripted" && q.store === "none");
  for (const s of w6) p(`| ${s.peer} | ${variantOf(s.params, ["N", "turns"])} | ${mmm(s.metrics.wallMs)} | ${s.metrics.wallMs?.n ?? 0} | ${num(med(s, "peakRssMB"), 1)} | ${int(med(s, "events"))} | ${num(s.metrics.misdelivered?.max, 0)} | ${num(s.metrics.incomplete?.max, 0)} | ${num(s.metrics.badThreads?.max, 0)} | ${s.peer === "cubepi" ? "" : ratio(med(c6, "wallMs"), med(s, "wallMs"))} | ${s.peer === "cubepi" ? "" : ratio(med(c6, "peakRssMB"), med(s, "peakRssMB"))} |`);
  errorsNote(w6);

  // ---- memory ----
  p("", "### Memory check (`node --expose-gc memory-check.mjs`)", "");
  if (mem) {
    const q = mem.sequential;
    p(`- **Sequential runs**: ${int(q.runs)} runs on one \`Agent\` after ${int(q.warmupRuns)} warm-up runs (a \`FauxProvider\` whose factory always answers: a tool call, then text; an \`events$\` listener and one caller \`AbortSignal\` for all runs; \`prompt()\` and \`prompt$()\` alternating; \`reset()\` between runs, since the transcript grows by design). Heap after GC: ${num(q.heapStartMB)} MB at the start, ${num(q.heapEndMB)} MB at the end (**${ratio(q.heapEndMB, q.heapStartMB)}**); by quarter: ${(q.heapTrendMB ?? []).map((x) => num(x)).join(" → ")} MB. ${num(q.msPerRun, 3)} ms and ${num(q.eventsPerRun, 1)} events per run. Abort listeners left on the caller's signal: ${q.callerSignalListeners}; Node resources left: ${q.resourcesLeft.length ? q.resourcesLeft.join(", ") : "none"}.`);
    p("- **Cancelled runs**: a provider whose Observable counts its active subscriptions and streams one delta per ms from a timer; a tool that never settles and counts its calls and fired signals.", "");
    p("| case | runs | closing stopReason | provider subscriptions left | timers left | deltas after cancel | tool signals fired / calls | caller-signal listeners left | Node resources left | heap after GC (start → end) |");
    p("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: |");
    for (const c of mem.cancelled) p(`| ${c.case} | ${c.runs} | ${c.stopReasons.join(", ")} | ${c.providerSubscriptionsLeft} | ${c.timersLeft} | ${c.deltasAfterCancel} | ${c.toolSignalsFired} / ${c.toolCalls} | ${c.callerSignalListeners} | ${c.resourcesLeft.length ? c.resourcesLeft.join(", ") : "none"} | ${num(c.heapStartMB)} → ${num(c.heapEndMB)} MB (${ratio(c.heapEndMB, c.heapStartMB)}) |`);
  } else p(memS ? `Failed: ${memS.errorSamples.join("; ")}` : "Not run.");
  return out.join("\n") + "\n";
}

/** Replaces (or inserts, right after the title) the peer section of RESULTS.md; every other section is kept. */
export function writeResultsMd(file, summary, meta) {
  let current = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : "# Benchmark results\n";
  const section = renderSection(summary, meta);
  const start = current.indexOf(HEADING);
  if (start >= 0) {
    const next = current.indexOf("\n## ", start + HEADING.length);
    current = current.slice(0, start) + section + (next >= 0 ? "\n" + current.slice(next + 1) : "");
  } else {
    const firstSection = current.indexOf("\n## ");
    current = firstSection >= 0 ? current.slice(0, firstSection + 1) + section + "\n" + current.slice(firstSection + 1) : current.trimEnd() + "\n\n" + section;
  }
  fs.writeFileSync(file, current.replace(/\n{3,}/g, "\n\n"));
  return file;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const dir = path.resolve(process.argv[2] ?? "results");
  const summary = JSON.parse(fs.readFileSync(path.join(dir, "summary.json"), "utf8"));
  const meta = JSON.parse(fs.readFileSync(path.join(dir, "meta.json"), "utf8"));
  const here = path.dirname(fileURLToPath(import.meta.url));
  console.log("wrote " + writeResultsMd(path.join(here, "RESULTS.md"), summary, meta));
}
