// Adapted from the workplace's bench-peers harness (../shared/bench-peers/bench/adapters/langgraph.mjs).
// Peer B: @langchain/langgraph createReactAgent (prebuilt) + @langchain/core.
// The model is a scripted chat model: a user subclass of BaseChatModel (the documented way
// to write a custom chat model) whose bindTools() returns itself. LangChain's shipped fakes
// (FakeStreamingChatModel / FakeListChatModel in @langchain/core/utils/testing) cannot play
// a *sequence* of different tool-call turns, so they are not used.
import fs from "node:fs";
import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { AIMessage, AIMessageChunk, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { ChatGenerationChunk } from "@langchain/core/outputs";
import { tool } from "@langchain/core/tools";
import { z } from "zod";
import { createReactAgent } from "@langchain/langgraph/prebuilt";
import { MemorySaver } from "@langchain/langgraph";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import Database from "better-sqlite3";
import { markTool, now, sleep, startTicker, SRC, seedGroup, readIo, fileSize, PACERS } from "../common.mjs";

export const name = "langgraph";
// Extra job dimensions the orchestrator expands (checkpointer variants).
// W3 sizes for this adapter (run.mjs): H = 10,000 is one bounded run (it rewrites the whole history every step).
export const w3Sizes = [100, 1000, 5000, 10000];
export const variants = {
  w1: [{ saver: "none" }, { saver: "memory" }, { saver: "sqlite" }],
  w3: [{ saver: "sqlite" }, { saver: "memory" }],
};

class ScriptedChatModel extends BaseChatModel {
  constructor(script) {
    super({});
    this.script = script;
    this.call = 0;
  }
  _llmType() { return "scripted"; }
  bindTools() { return this; }
  _toMessage(step) {
    if (step.tools) {
      return new AIMessage({
        content: "",
        tool_calls: step.tools.map((c) => ({ id: c.id, name: c.name, args: c.args, type: "tool_call" })),
      });
    }
    return new AIMessage(step.text ?? "done");
  }
  async _generate(messages) {
    const step = this.script(this.call++, messages);
    if (step.deltas || step.ticker) throw new Error("streaming step requested via _generate");
    const message = this._toMessage(step);
    return { generations: [{ message, text: typeof message.content === "string" ? message.content : "" }] };
  }
  async *_streamResponseChunks(messages, options, runManager) {
    const step = this.script(this.call++, messages);
    if (step.ticker) {
      // push-model timer source bridged into this pull-based generator
      const q = [];
      let wake = null;
      const h = startTicker(1, () => { q.push("x"); if (wake) { wake(); wake = null; } });
      const onAbort = () => { h.stop("signal"); if (wake) { wake(); wake = null; } };
      options?.signal?.addEventListener("abort", onAbort, { once: true });
      try {
        while (!h.stopped || q.length) {
          if (!q.length) { await new Promise((r) => (wake = r)); continue; }
          const d = q.shift();
          const chunk = new ChatGenerationChunk({ message: new AIMessageChunk({ content: d }), text: d });
          yield chunk;
          await runManager?.handleLLMNewToken(d, undefined, undefined, undefined, undefined, { chunk });
        }
      } finally {
        h.stop("consumer-return");
        options?.signal?.removeEventListener("abort", onAbort);
      }
      return;
    }
    if (step.deltas) {
      const pace = PACERS[step.pacing ?? "burst16"];
      for (let i = 0; i < step.deltas; i++) {
        const w = pace(i);
        if (w !== undefined) await w;
        const chunk = new ChatGenerationChunk({ message: new AIMessageChunk({ content: step.text }), text: step.text });
        yield chunk;
        await runManager?.handleLLMNewToken(step.text, undefined, undefined, undefined, undefined, { chunk });
      }
      return;
    }
    const m = this._toMessage(step);
    const chunk = new ChatGenerationChunk({
      message: new AIMessageChunk({
        content: m.content,
        tool_call_chunks: (m.tool_calls ?? []).map((tc, index) => ({ id: tc.id, name: tc.name, args: JSON.stringify(tc.args), index, type: "tool_call_chunk" })),
      }),
      text: typeof m.content === "string" ? m.content : "",
    });
    yield chunk;
  }
}

function echoTool(delayMs = 0) {
  return tool(
    async ({ i }) => {
      markTool();
      if (delayMs) await sleep(delayMs);
      return `ok ${i}`;
    },
    { name: "echo", description: "returns a short string", schema: z.object({ i: z.number() }) },
  );
}

function makeSaver(kind, dbPath) {
  if (kind === "memory") return new MemorySaver();
  if (kind === "sqlite") {
    for (const suf of ["", "-wal", "-shm"]) fs.rmSync(dbPath + suf, { force: true });
    return SqliteSaver.fromConnString(dbPath);
  }
  return undefined;
}

function makeGraph(script, tools, saver) {
  const llm = new ScriptedChatModel(script);
  return createReactAgent({ llm, tools, checkpointer: saver, prompt: "bench" });
}

let threadSeq = 0;
const cfg = (extra = {}) => ({ configurable: { thread_id: `t${++threadSeq}` }, ...extra });

// --- workloads ---------------------------------------------------------------
export async function w1({ T, saver = "none", dbPath = "lg-w1.sqlite" }) {
  const graph = makeGraph(
    (k) => (k < T ? { tools: [{ id: `call_${k}`, name: "echo", args: { i: k } }] } : { text: "final answer" }),
    [echoTool()],
    makeSaver(saver, dbPath),
  );
  const t0 = now();
  const out = await graph.invoke({ messages: [new HumanMessage("go")] }, cfg({ recursionLimit: 2 * T + 20 }));
  return { wallNs: now() - t0, messages: out.messages.length, dbBytes: saver === "sqlite" ? fileSize(dbPath) + fileSize(dbPath + "-wal") : undefined };
}

export async function w2({ N, pacing = "burst16" }) {
  const graph = makeGraph(() => ({ text: "x", deltas: N, pacing }), [], undefined);
  let count = 0;
  const t0 = now();
  const stream = await graph.stream({ messages: [new HumanMessage("go")] }, cfg({ streamMode: "messages" }));
  for await (const [msg] of stream) {
    if (AIMessageChunk.isInstance(msg) && msg.content) count++;
  }
  return { wallNs: now() - t0, deltas: count };
}

export async function w4({ K, delayMs }) {
  const graph = makeGraph(
    (k) => (k === 0 ? { tools: Array.from({ length: K }, (_, j) => ({ id: `c${j}`, name: "echo", args: { i: j } })) } : { text: "done" }),
    [echoTool(delayMs)],
    undefined,
  );
  const t0 = now();
  const out = await graph.invoke({ messages: [new HumanMessage("go")] }, cfg());
  return { wallNs: now() - t0, messages: out.messages.length };
}

export async function w5({ abortAfterMs }) {
  const graph = makeGraph(() => ({ ticker: true }), [], undefined);
  const ac = new AbortController();
  let delivered = 0, first;
  const firstDelta = new Promise((r) => (first = r));
  const run = (async () => {
    const stream = await graph.stream({ messages: [new HumanMessage("go")] }, cfg({ streamMode: "messages", signal: ac.signal }));
    for await (const [msg] of stream) if (msg.content && ++delivered === 1) first();
  })();
  run.catch(() => {});
  await Promise.race([firstDelta, run]);
  await sleep(abortAfterMs);
  SRC.abortAt = now();
  ac.abort();
  let outcome = "resolved";
  try { await run; } catch (e) { outcome = "rejected:" + (e?.name ?? e); }
  return { settleNs: now() - SRC.abortAt, outcome, delivered };
}

// W3: seed a thread to H messages with one invoke (input = H-1 seed messages; model answers),
// then measure single turns (user msg -> tool call -> tool result -> answer = +4 messages).
function seedMessages(H) {
  const out = [];
  for (let g = 0; out.length < H; g++) {
    const s = seedGroup(g);
    out.push(new HumanMessage(s.user));
    out.push(new AIMessage({ content: "", tool_calls: [{ id: `seed_${g}`, name: "echo", args: s.toolArgs, type: "tool_call" }] }));
    out.push(new ToolMessage({ content: s.toolResult, tool_call_id: `seed_${g}`, name: "echo" }));
    out.push(new AIMessage(s.answer));
  }
  return out.slice(0, H);
}
function logicalBytes(db) {
  const a = db.prepare("SELECT COALESCE(SUM(LENGTH(checkpoint)+LENGTH(metadata)),0) b, COUNT(*) n FROM checkpoints").get();
  const w = db.prepare("SELECT COALESCE(SUM(LENGTH(value)),0) b, COUNT(*) n FROM writes").get();
  return { bytes: a.b + w.b, checkpoints: a.n, writes: w.n };
}
export async function w3({ H, turns, saver = "sqlite", dbPath }) {
  let mode = "seed", phase = 0;
  const graph = makeGraph(
    () => {
      if (mode === "seed") return { text: "ack" };
      return phase++ % 2 === 0 ? { tools: [{ id: `t_${phase}`, name: "echo", args: { i: phase } }] } : { text: seedGroup(phase).answer };
    },
    [echoTool()],
    makeSaver(saver, dbPath),
  );
  const config = cfg({ recursionLimit: 50 });
  const seed = seedMessages(H - 1); // ends with a user/tool/AI msg; + model "ack" => H messages
  if (!(seed.at(-1) instanceof HumanMessage)) seed.push(new HumanMessage("continue"));
  await graph.invoke({ messages: seed }, config);
  mode = "run";
  const reader = saver === "sqlite" ? new Database(dbPath, { readonly: true, fileMustExist: true }) : null;
  const size = () => (saver === "sqlite" ? fileSize(dbPath) + fileSize(dbPath + "-wal") : 0);
  const rows = [];
  for (let t = 0; t < turns + 1; t++) {
    const lb0 = reader ? logicalBytes(reader) : null;
    const io0 = readIo(), sz0 = size(), t0 = now();
    const out = await graph.invoke({ messages: [new HumanMessage(seedGroup(t).user)] }, config);
    const ns = now() - t0, io1 = readIo(), sz1 = size();
    const lb1 = reader ? logicalBytes(reader) : null;
    if (t === 0) continue; // warm-up turn
    rows.push({
      ms: Number(ns) / 1e6, wchar: io1.wchar - io0.wchar, fileGrowth: sz1 - sz0,
      logicalBytes: lb1 ? lb1.bytes - lb0.bytes : undefined,
      newCheckpoints: lb1 ? lb1.checkpoints - lb0.checkpoints : undefined,
      newWrites: lb1 ? lb1.writes - lb0.writes : undefined,
      messagesAfter: out.messages.length,
    });
  }
  reader?.close();
  return { rows };
}
