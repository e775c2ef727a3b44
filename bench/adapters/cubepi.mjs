// cubepi as a column of the peer benchmarks (issue 7). Written against cubepi's PUBLIC API only: `cubepi`,
// `cubepi/testing`, `cubepi/checkpoint/sqlite`, `cubepi/checkpoint/postgres` (the package as built in ../dist), plus
// `rxjs` to build the scripted provider's Observable, exactly as docs/providers.md ("Writing your own provider") does.
//
// The model is a scripted in-process Provider built on cubepi's MessageAssembler, following the harness's fake-model
// rules (see TEMPLATE.mjs): the script is indexed by model-call number, tool bodies call markTool() first, W2 awaits
// PACERS[pacing](i) before each delta, W5 streams from startTicker(1) and stops it only from the abort signal or the
// unsubscription cubepi hands the provider, W3 seeds seedGroup() content.
//
// Like pi's scripted streamFn (adapters/pi.mjs), each model call answers after ONE microtask hop (a real request is
// never answered synchronously); a tool-call answer is then emitted in one synchronous burst, each call whole (its
// arguments an object, as pi's script hands them: `startToolCall(id, name, args)` + `endToolCall`, no JSON text to
// parse); and like pi's, the script checks the abort signal where it waits and listens to it only while it streams
// over time (the W5 ticker). Unsubscribing stops it at any moment (cubepi unsubscribes a cancelled run's stream).
//
// rxjs: bench/package.json deliberately does not list rxjs, so `import 'rxjs'` here resolves to the copy cubepi itself
// loads (../node_modules/rxjs), as an application's deduplicated install would. checkSingleRxjs() verifies it.
// zod: bench/package.json lists zod (the LangGraph adapter needs it), and because cubepi is installed as a link
// ("file:.."), a plain `import 'zod'` here would load a second copy of the same version next to cubepi's (3.4 MB more
// heap, and a zod cold in the measured run). An application's install holds one zod, so this adapter loads the copy
// cubepi resolves (cubepiZod() below).
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Observable } from "rxjs";
import { Agent, Compaction, MemoryCheckpointer, MessageAssembler, defineTool, EMPTY_USAGE } from "cubepi";
import { FauxProvider, fauxMessage, fauxToolCall } from "cubepi/testing";
import { markTool, now, sleep, startTicker, SRC, PACERS, seedGroup, readIo, fileSize, pgConfig, FILL as FILL_TEXT } from "../common.mjs";

export const name = "cubepi";
export const variants = {
  w2: [{ pacing: "burst16" }, { pacing: "micro" }],
  w3: [{ saver: "sqlite" }, { saver: "postgres" }],
  // W6: FauxProvider (as the issue asks) with and without a store, and the scripted provider pi's column uses.
  w6: [{ provider: "faux", store: "memory" }, { provider: "faux", store: "none" }, { provider: "scripted", store: "none" }],
};
// W3 history sizes for this adapter (run.mjs reads it; the bar is at 100 / 1,000 / 10,000; 5,000 is the
// peers' largest size, kept so there is a like-for-like column).
export const w3Sizes = [100, 1000, 5000, 10000];

const MODEL = { id: "scripted-1", provider: "scripted" };

/** The zod module cubepi itself imports: resolved from cubepi's own location, then loaded through its ESM entry. */
export async function cubepiZod() {
  const cubepiRequire = createRequire(fileURLToPath(import.meta.resolve("cubepi")));
  const manifest = cubepiRequire.resolve("zod/package.json");
  const { exports } = JSON.parse(fs.readFileSync(manifest, "utf8"));
  return import(pathToFileURL(path.join(path.dirname(manifest), exports["."].import)).href);
}
const { z } = await cubepiZod();

function checkSingleRxjs(agent) {
  if (!(agent.events$ instanceof Observable)) {
    process.stderr.write("warning: the bench and cubepi load two different copies of rxjs\n");
  }
}

// --- the scripted provider ---------------------------------------------------------------------------------------
/**
 * script(callIndex, messages) -> { tools: [{ id, name, args }] } | { text, deltas, pace } | { ticker: true }.
 * Follows docs/providers.md: cold, one terminal event then complete(), `options.signal` ends the stream with an
 * `aborted` error event, unsubscribing (teardown) stops everything.
 */
function scriptedProvider(script) {
  let call = 0;
  return {
    id: "scripted",
    stream(model, messages, request = {}) {
      return new Observable((subscriber) => {
        const step = script(call++, messages);
        const asm = new MessageAssembler({ provider: "scripted", model: model.id });
        const signal = request.options?.signal;
        let closed = false;
        let ticker;
        let listening = false;
        const end = (event) => {
          if (closed) return;
          closed = true;
          if (listening) signal.removeEventListener("abort", onAbort);
          subscriber.next(event);
          subscriber.complete();
        };
        function onAbort() {
          if (closed) return; // torn down already (cubepi unsubscribes a cancelled run's stream first)
          ticker?.stop("signal");
          end(asm.error("aborted", "Request aborted"));
        }

        queueMicrotask(() => {
          if (closed || subscriber.closed) return;
          if (signal?.aborted) return onAbort();
          subscriber.next(asm.start());
          if (step.tools) {
            for (const c of step.tools) {
              const i = asm.blockCount;
              subscriber.next(asm.startToolCall(c.id, c.name, c.args));
              subscriber.next(asm.endToolCall(i));
            }
            return end(asm.done("toolUse"));
          }
          subscriber.next(asm.startText());
          if (step.ticker) {
            // W5: push-model source, stopped only by the signal (onAbort) or by the teardown below.
            if (signal) {
              signal.addEventListener("abort", onAbort, { once: true });
              listening = true;
            }
            ticker = startTicker(1, () => {
              if (!closed) subscriber.next(asm.textDelta(0, "x"));
            });
            return;
          }
          void (async () => {
            const deltas = step.deltas ?? 1;
            const text = step.deltas ? step.text : (step.text ?? "done");
            for (let i = 0; i < deltas; i++) {
              if (deltas > 1) {
                const w = step.pace(i);
                if (w !== undefined) await w;
              }
              if (closed || subscriber.closed) return;
              if (signal?.aborted) return onAbort();
              subscriber.next(asm.textDelta(0, text));
            }
            subscriber.next(asm.endText(0));
            end(asm.done("stop"));
          })();
        });

        return () => {
          closed = true;
          // Removed even when the signal is aborted: cubepi unsubscribes a cancelled run's stream from its own abort
          // listener, during the signal's dispatch, before this `once` listener has run (docs/providers.md does the
          // same).
          if (listening) signal.removeEventListener("abort", onAbort);
          ticker?.stop("consumer-cancel");
        };
      });
    },
  };
}

// The same tool body as every peer's: markTool() first, then an async answer "ok i".
function echoTool(delayMs = 0) {
  return defineTool({
    name: "echo",
    description: "returns a short string",
    parameters: z.object({ i: z.number() }),
    execute: async (_id, { i }) => {
      markTool();
      if (delayMs) await sleep(delayMs);
      return `ok ${i}`;
    },
  });
}

function makeAgent(script, tools, extra = {}) {
  const agent = new Agent({ provider: scriptedProvider(script), model: MODEL, systemPrompt: "bench", tools, ...extra });
  checkSingleRxjs(agent);
  return agent;
}

function assertOk(agent) {
  if (agent.state.errorMessage) throw new Error("run failed: " + agent.state.errorMessage);
}

// --- W1 loop overhead ----------------------------------------------------------------------------------------------
export async function w1({ T }) {
  const agent = makeAgent(
    (k) => (k < T ? { tools: [{ id: `call_${k}`, name: "echo", args: { i: k } }] } : { text: "final answer" }),
    [echoTool()],
  );
  const t0 = now();
  await agent.prompt("go");
  const wallNs = now() - t0;
  assertOk(agent);
  const last = agent.state.messages.at(-1);
  if (last?.content?.[0]?.text !== "final answer") throw new Error("unexpected last message " + JSON.stringify(last));
  return { wallNs, messages: agent.state.messages.length };
}

// --- W2 streaming: deltas counted on events$ ----------------------------------------------------------------------
export async function w2({ N, pacing = "burst16" }) {
  const agent = makeAgent(() => ({ text: "x", deltas: N, pace: PACERS[pacing] }), []);
  let count = 0;
  const sub = agent.events$.subscribe((ev) => {
    if (ev.type === "message_update" && ev.streamEvent.type === "text_delta") count++;
  });
  const t0 = now();
  await agent.prompt("go");
  const wallNs = now() - t0;
  sub.unsubscribe();
  assertOk(agent);
  return { wallNs, deltas: count };
}

// --- W4 parallel tools ---------------------------------------------------------------------------------------------
export async function w4({ K, delayMs }) {
  const agent = makeAgent(
    (k) => (k === 0 ? { tools: Array.from({ length: K }, (_, j) => ({ id: `c${j}`, name: "echo", args: { i: j } })) } : { text: "done" }),
    [echoTool(delayMs)],
  );
  const t0 = now();
  await agent.prompt("go");
  const wallNs = now() - t0;
  assertOk(agent);
  return { wallNs, messages: agent.state.messages.length };
}

// --- W5 cancel -----------------------------------------------------------------------------------------------------
export async function w5({ abortAfterMs }) {
  const agent = makeAgent(() => ({ ticker: true }), []);
  let delivered = 0, first;
  const firstDelta = new Promise((r) => (first = r));
  agent.subscribe((ev) => {
    if (ev.type === "message_update" && ev.streamEvent.type === "text_delta" && ++delivered === 1) first();
  });
  const p = agent.prompt("go");
  await firstDelta;
  await sleep(abortAfterMs);
  SRC.abortAt = now();
  agent.abort();
  let outcome = "resolved";
  try { await p; } catch (e) { outcome = "rejected:" + (e?.name ?? e); }
  const settleNs = now() - SRC.abortAt;
  return { settleNs, outcome, delivered, stopReason: agent.state.messages.at(-1)?.stopReason };
}

// --- W3 checkpoint cost vs history ---------------------------------------------------------------------------------
const T0 = 1_700_000_000_000;
function seedMessages(H) {
  const out = [];
  const asst = (content, stopReason, g) => ({ role: "assistant", content, stopReason, usage: EMPTY_USAGE, provider: "scripted", model: MODEL.id, timestamp: T0 + g });
  for (let g = 0; out.length < H; g++) {
    const s = seedGroup(g);
    out.push({ role: "user", content: s.user, timestamp: T0 + g });
    out.push(asst([{ type: "toolCall", id: `seed_${g}`, name: "echo", arguments: s.toolArgs }], "toolUse", g));
    out.push({ role: "toolResult", toolCallId: `seed_${g}`, toolName: "echo", content: [{ type: "text", text: s.toolResult }], isError: false, timestamp: T0 + g });
    out.push(asst([{ type: "text", text: s.answer }], "stop", g));
  }
  return out.slice(0, H);
}

export { pgConfig };

/**
 * A store for W3: the checkpointer plus the harness's probes, read OUTSIDE the timed/wchar window.
 *  sqlite:   fileGrowth = db + WAL file sizes; logicalBytes = SUM(LENGTH(body)) of the new message rows.
 *  postgres: fileGrowth = WAL bytes the server generated (pg_current_wal_insert_lsn; the whole server's);
 *            logicalBytes = SUM(pg_column_size(body)) of the new rows (the stored JSONB datums).
 */
async function openStore(saver, dbPath) {
  if (saver === "sqlite") {
    const { SQLiteCheckpointer } = await import("cubepi/checkpoint/sqlite");
    const { default: Database } = await import("better-sqlite3");
    for (const suf of ["", "-wal", "-shm"]) fs.rmSync(dbPath + suf, { force: true });
    const checkpointer = new SQLiteCheckpointer(dbPath); // synchronous: 'full' (the default)
    const reader = new Database(dbPath, { readonly: true, fileMustExist: true });
    const q = reader.prepare("SELECT COALESCE(SUM(LENGTH(body)),0) AS b FROM cubepi_messages WHERE thread_id = ? AND seq >= ?");
    return {
      checkpointer,
      growth: async () => fileSize(dbPath) + fileSize(dbPath + "-wal"),
      logical: async (threadId, fromSeq) => q.get(threadId, fromSeq).b,
      close: async () => {
        reader.close();
        await checkpointer.close();
        for (const suf of ["", "-wal", "-shm"]) fs.rmSync(dbPath + suf, { force: true });
      },
    };
  }
  if (saver === "postgres") {
    const { PostgresCheckpointer } = await import("cubepi/checkpoint/postgres");
    const { default: pg } = await import("pg");
    const schema = `cubepi_bench_${process.pid}`; // a schema per run, dropped after
    const admin = new pg.Pool({ ...pgConfig(), max: 1 });
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    const pool = new pg.Pool({ ...pgConfig(), max: 2 });
    const checkpointer = new PostgresCheckpointer(pool, { schema });
    await checkpointer.migrate();
    return {
      checkpointer,
      growth: async () => (await admin.query("SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::float8 AS b")).rows[0].b,
      logical: async (threadId, fromSeq) =>
        Number((await admin.query(`SELECT COALESCE(SUM(COALESCE(pg_column_size(body), octet_length(body_raw))),0)::bigint AS b FROM "${schema}".cubepi_messages WHERE thread_id = $1 AND seq >= $2`, [threadId, fromSeq])).rows[0].b),
      close: async () => {
        await checkpointer.close?.();
        await pool.end();
        await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        await admin.end();
      },
    };
  }
  throw new Error("unknown saver " + saver);
}

/**
 * W3. With `compaction` (compaction-cost.mjs): a `Compaction` middleware on a 128k-token window (triggerAt 0.8,
 * keepRecent 8); the scripted model answers the summarising call with a fixed ~1 KB summary. Each row then also has
 * the request the model received (messages, JSON bytes; read outside the timed window), and the result the number of
 * summarising calls and the first (warm-up) turn's time, which is when the thread is compacted.
 */
export async function w3({ H, turns, saver = "sqlite", dbPath, compaction, window = 128_000 }) {
  const store = await openStore(saver, dbPath);
  try {
    const threadId = "w3";
    const { checkpointer } = store;
    // Seed the thread directly through the checkpointer (batches of 1,000 messages).
    const seed = seedMessages(H);
    let seq = 0;
    for (let k = 0; k < seed.length; k += 1000) ({ seq } = await checkpointer.append(threadId, seed.slice(k, k + 1000), { expectedSeq: seq }));
    let phase = 0;
    let summaries = 0;
    let request;
    const SUMMARY = `The user asked numbered questions about ${FILL_TEXT}; each was answered after one echo call. `.repeat(8);
    const agent = makeAgent(
      (_call, messages) => {
        if (compaction && typeof messages[0]?.content === "string" && messages[0].content.startsWith("Conversation to summarise")) {
          summaries++;
          return { text: SUMMARY };
        }
        request = messages;
        return phase++ % 2 === 0 ? { tools: [{ id: `t_${phase}`, name: "echo", args: { i: phase } }] } : { text: seedGroup(phase).answer };
      },
      [echoTool()],
      {
        checkpointer,
        threadId,
        ...(compaction ? { middleware: [new Compaction({ triggerAt: 0.8, keepRecent: 8, contextWindow: window })] } : {}),
      },
    );
    const rows = [];
    let warmMs;
    for (let t = 0; t < turns + 1; t++) {
      const seq0 = agent.state.messages.length; // before the first run the agent has not restored: == 0, unused
      const g0 = await store.growth();
      const io0 = readIo(), cpu0 = compaction !== undefined ? process.cpuUsage() : undefined, t0 = now();
      await agent.prompt(seedGroup(t).user);
      const ns = now() - t0, io1 = readIo();
      const cpu = cpu0 && process.cpuUsage(cpu0);
      const g1 = await store.growth();
      assertOk(agent);
      if (t === 0) {
        warmMs = Number(ns) / 1e6; // warm-up turn (it also restores the H seeded messages; with compaction, compacts)
        continue;
      }
      rows.push({
        ms: Number(ns) / 1e6, wchar: io1.wchar - io0.wchar, fileGrowth: g1 - g0,
        logicalBytes: await store.logical(threadId, seq0), messagesAfter: agent.state.messages.length,
        ...(cpu ? { cpuMs: (cpu.user + cpu.system) / 1e3, requestMessages: request.length, requestBytes: JSON.stringify(request).length } : {}),
      });
    }
    if (agent.state.messages.length !== H + 4 * (turns + 1)) throw new Error(`expected ${H + 4 * (turns + 1)} messages, got ${agent.state.messages.length}`);
    return { rows, warmMs, summaries };
  } finally {
    await store.close();
  }
}

// --- W6 fan-out ----------------------------------------------------------------------------------------------------
/**
 * N agents in one process, each with its own FauxProvider (cubepi/testing) and its own thread in ONE shared
 * MemoryCheckpointer; 3 turns each (two tool calls, then an answer); all prompts started together.
 * Each agent's events$ is checked: every event carries the runId of that agent's agent_start, and every message in it
 * (user prompt, tool calls, tool results, answer) is tagged with that agent's index. The store is checked after.
 */
export async function w6({ N = 1000, turns = 3, store = "memory", provider = "faux" }) {
  const checkpointer = store === "memory" ? new MemoryCheckpointer() : undefined;
  const tag = (i) => `agent-${i}`;
  const echo = defineTool({
    name: "echo",
    description: "returns its arguments",
    parameters: z.object({ agent: z.string(), step: z.number() }),
    execute: async (_id, { agent, step }) => `ok ${agent} ${step}`,
  });
  const agents = [];
  const seen = [];
  let events = 0, misdelivered = 0;
  const messageBelongs = (i, m) => {
    if (m.role === "user") return m.content === `go ${tag(i)}`;
    if (m.role === "toolResult") return m.content[0]?.text?.startsWith(`ok ${tag(i)} `) && m.toolCallId.startsWith(`${tag(i)}_`);
    return m.content.every((b) => (b.type === "toolCall" ? b.arguments.agent === tag(i) && b.id.startsWith(`${tag(i)}_`) : b.text === `done ${tag(i)}`));
  };
  for (let i = 0; i < N; i++) {
    let model;
    if (provider === "faux") {
      const script = [];
      for (let s = 0; s < turns - 1; s++) script.push(fauxMessage([fauxToolCall("echo", { agent: tag(i), step: s }, { id: `${tag(i)}_${s}` })]));
      script.push(fauxMessage(`done ${tag(i)}`));
      model = new FauxProvider({ responses: script });
    } else {
      // The same script as pi's W6 (adapters/pi.mjs), on this adapter's scripted provider.
      model = scriptedProvider((k) => (k < turns - 1 ? { tools: [{ id: `${tag(i)}_${k}`, name: "echo", args: { agent: tag(i), step: k } }] } : { text: `done ${tag(i)}` }));
    }
    const agent = new Agent({ provider: model, model: provider === "faux" ? "faux" : MODEL, tools: [echo], threadId: `thread-${i}`, ...(checkpointer ? { checkpointer } : {}) });
    const state = { runId: undefined, events: 0, turns: 0 };
    agent.events$.subscribe((ev) => {
      events++;
      state.events++;
      if (ev.type === "agent_start") state.runId ??= ev.runId;
      if (ev.runId !== state.runId) misdelivered++;
      else if ((ev.type === "message_end" || ev.type === "message_start") && !messageBelongs(i, ev.message)) misdelivered++;
      else if (ev.type === "tool_execution_end" && !ev.result?.content?.[0]?.text?.startsWith(`ok ${tag(i)} `)) misdelivered++;
      else if (ev.type === "turn_end") state.turns++;
    });
    agents.push(agent);
    seen.push(state);
  }
  const heap0 = process.memoryUsage().heapUsed;
  let peakRss = process.memoryUsage().rss;
  const sampler = setInterval(() => { peakRss = Math.max(peakRss, process.memoryUsage().rss); }, 5);
  const t0 = now();
  await Promise.all(agents.map((a, i) => a.prompt(`go ${tag(i)}`)));
  const wallNs = now() - t0;
  clearInterval(sampler);
  peakRss = Math.max(peakRss, process.memoryUsage().rss);
  // Every agent finished its 3 turns, with its own runId, and its thread holds exactly its own 6 messages.
  let incomplete = 0, badThreads = 0;
  const runIds = new Set();
  for (let i = 0; i < N; i++) {
    if (seen[i].turns !== turns || agents[i].state.errorMessage) incomplete++;
    runIds.add(seen[i].runId);
    // With the store: the thread as stored; without: the agent's transcript.
    const messages = checkpointer ? (await checkpointer.load(`thread-${i}`))?.messages : agents[i].state.messages;
    if (!messages || messages.length !== 2 * turns || !messages.every((m) => messageBelongs(i, m))) badThreads++;
  }
  return {
    agents: N, turnsEach: turns, wallNs, events, misdelivered, incomplete, badThreads,
    distinctRunIds: runIds.size, heapGrowthMB: (process.memoryUsage().heapUsed - heap0) / 2 ** 20, sampledPeakRssMB: peakRss / 2 ** 20,
    checkpointer: checkpointer ? "MemoryCheckpointer (one, shared; one thread per agent)" : "none (threadId set, no store)",
  };
}

// --- W5 with a real SDK over a socket ------------------------------------------------------------------------------
/**
 * The third part of W5's bar: cubepi's OpenAIProvider (`cubepi/providers/openai`, the official `openai` SDK, resolved
 * from cubepi's own install) against a local HTTP server that streams one Chat Completions SSE chunk per ms forever.
 * 50 ms after the first delta reaches user code, agent.abort(); measured: abort -> run settled, abort -> the SERVER
 * sees the connection closed (`close` on its response), deltas delivered to user code after the abort.
 */
export async function w5net({ abortAfterMs }) {
  const http = await import("node:http");
  const { OpenAIProvider } = await import("cubepi/providers/openai");
  let abortAt = null, closedAt = null, written = 0, writtenAfterAbort = 0, requests = 0;
  const chunk = (delta, finish = null) =>
    `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", created: 0, model: "m", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  const server = http.createServer((req, res) => {
    requests++;
    req.resume();
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    res.write(chunk({ role: "assistant", content: "" }));
    const timer = setInterval(() => {
      written++;
      if (abortAt !== null) writtenAfterAbort++;
      res.write(chunk({ content: "x" }));
    }, 1);
    res.on("close", () => { clearInterval(timer); closedAt ??= now(); });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  try {
    const provider = new OpenAIProvider({ apiKey: "bench", baseURL: `http://127.0.0.1:${server.address().port}/v1` });
    const agent = new Agent({ provider, model: { id: "m", provider: "openai" } });
    let delivered = 0, deliveredAfterAbort = 0, first;
    const firstDelta = new Promise((r) => (first = r));
    agent.subscribe((ev) => {
      if (ev.type === "message_update" && ev.streamEvent.type === "text_delta") {
        if (abortAt !== null) deliveredAfterAbort++;
        if (++delivered === 1) first();
      }
    });
    const p = agent.prompt("go");
    await firstDelta;
    await sleep(abortAfterMs);
    abortAt = now();
    agent.abort();
    await p;
    const settleNs = now() - abortAt;
    for (let k = 0; k < 100 && closedAt === null; k++) await sleep(1); // wait up to ~100 ms for the server to notice
    await sleep(20);
    return {
      settleNs, serverCloseMs: closedAt === null ? null : Number(closedAt - abortAt) / 1e6, delivered, deliveredAfterAbort,
      chunksWritten: written, chunksWrittenAfterAbort: writtenAfterAbort, requests, stopReason: agent.state.messages.at(-1)?.stopReason,
    };
  } finally {
    server.closeAllConnections?.();
    await new Promise((r) => server.close(r));
  }
}
