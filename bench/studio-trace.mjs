// The studio benches' generated trace: one run of N spans in a JSONL file, as JsonlSpanExporter writes them.
import { writeFileSync } from 'node:fs';

/** A JSONL trace file with one run of `spans` spans: turns, each a model call and parallel tool calls, hook errors. */
export function writeTrace(file, spans, { runId = 'run_bench', threadId = 'bench' } = {}) {
  const lines = [];
  const t0 = Date.now() - 60_000;
  const rec = (spanId, parentSpanId, name, startMs, durationMs, attributes, events = [], code = 0) =>
    lines.push(
      JSON.stringify({
        traceId: 'bench',
        spanId,
        ...(parentSpanId === undefined ? {} : { parentSpanId }),
        name,
        kind: 0,
        startMs,
        durationMs,
        status: { code },
        attributes,
        events,
        scope: 'cubepi',
      }),
    );
  const turns = 40;
  const perTurn = Math.floor((spans - 1) / turns) - 2; // a turn, its chat, its tools
  let n = 1;
  for (let t = 0; t < turns; t++) {
    const start = t0 + t * 1_000;
    rec(`turn${t}`, 'run', `turn ${t}`, start, 990, { 'cubepi.turn_index': t }, [
      { name: 'hook_error', timeMs: start + 1, attributes: { 'cubepi.hook': 'beforeModelCall', 'cubepi.middleware': 'Audit' } },
    ]);
    rec(`chat${t}`, `turn${t}`, 'chat faux', start + 2, 300, {
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': 'faux',
      'gen_ai.usage.input_tokens': 1_000 + t,
      'gen_ai.usage.output_tokens': 50,
      'cubepi.attempt': 1,
    });
    n += 2;
    for (let k = 0; k < perTurn && n < spans; k++, n++) {
      rec(`tool${t}.${k}`, `turn${t}`, `execute_tool t${k}`, start + 310 + k, 200 + (k % 7) * 50, {
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': `t${k}`,
        'gen_ai.tool.call.id': `c${t}.${k}`,
      }, [], k % 13 === 0 ? 2 : 0);
    }
  }
  while (n < spans) rec(`extra${n}`, 'run', 'execute_tool extra', t0 + 100, 10, { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'extra' }), n++;
  rec('run', undefined, 'invoke_agent', t0, 40_000, {
    'gen_ai.operation.name': 'invoke_agent',
    'cubepi.run_id': runId,
    'cubepi.thread_id': threadId,
    'cubepi.run.outcome': 'completed',
  });
  writeFileSync(file, `${lines.join('\n')}\n`);
}

