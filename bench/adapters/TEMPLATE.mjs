// Adapted from the workplace's bench-peers harness (../shared/bench-peers/bench/adapters/TEMPLATE.mjs).
// Adapter template for adding a third column (e.g. our RxJS runtime).
// Copy to adapters/<name>.mjs, implement with the library's PUBLIC API only, then:
//   node run.mjs --adapters cubepi,pi,langgraph,aisdk,floor,adapters/<name>.mjs   (from bench/)
// Every workload function is optional; the orchestrator only runs the ones exported.
// Contract (same scripted fake model behaviour in every adapter):
//   - the model answers instantly from a script; the script is indexed by model-call number.
//   - tool bodies must call markTool() first (W1 per-turn intervals are derived from it).
//   - W2/W5 producers must use PACERS / startTicker from ../common.mjs so pacing is identical.
import { markTool, now, sleep, startTicker, SRC, PACERS, seedGroup, readIo, fileSize } from "../common.mjs";

export const name = "our-lib";
// Optional extra job dimensions, e.g. { w3: [{ saver: "sqlite" }] }; each object is merged into params.
export const variants = {};

/** W1: one run of T turns; turns 0..T-1 = one tool call to `echo({i})` returning "ok i"; turn T = text "final answer".
 *  return { wallNs: bigint } measured from run start to run settled. */
export async function w1({ T }) { throw new Error("todo"); }

/** W2: one assistant text answer of N deltas (content "x"), produced with PACERS[pacing](i) awaited before each delta
 *  when it returns a promise; count delta events delivered to user code. return { wallNs, deltas } */
export async function w2({ N, pacing = "burst16" }) { throw new Error("todo"); }

/** W3: seed a persisted thread to H messages (use seedGroup(i) content: user, tool-call, tool-result, answer),
 *  then run turns+1 turns (first is warm-up, dropped); each turn = user msg -> one echo tool call -> result -> answer.
 *  Per measured turn push { ms, wchar (readIo().wchar delta), fileGrowth, logicalBytes } into rows. return { rows } */
export async function w3({ H, turns, dbPath }) { throw new Error("todo"); }

/** W4: one assistant turn with K tool calls; each tool awaits sleep(delayMs); then a text turn. return { wallNs } */
export async function w4({ K, delayMs }) { throw new Error("todo"); }

/** W5: model streams from startTicker(1, onTick) forever; stop the ticker ONLY from the abort signal / cancellation
 *  the library hands to the model (h.stop("signal") or h.stop("consumer-cancel")). Wait for the first delta delivered,
 *  then sleep(abortAfterMs), set SRC.abortAt = now(), abort through the public API, await the run promise.
 *  return { settleNs: now() - SRC.abortAt, outcome: "resolved" | "rejected:<name>", delivered } */
export async function w5({ abortAfterMs }) { throw new Error("todo"); }
