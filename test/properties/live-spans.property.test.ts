// Property: whatever a run's events were before its agent_end (any order of turns, attempts, retries, fallbacks,
// tool calls, approvals, hook errors, guardrail trips, compactions — including ones that never finished), and
// however it ended (completed, failed, cancelled, suspended, stopped), spansFromEvents leaves no span open after
// agent_end, every bar inside its run, every parent known. 2,000 seeded runs; a failure prints the seed and the
// shrunk event list.
import fc from 'fast-check';
import { lastValueFrom, of, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { EMPTY_USAGE, type AgentEvent, type RunOutcome } from 'cubepi';
import { fauxMessage } from 'cubepi/testing';
import { spansFromEvents } from '../../page/studio/live-spans.js';

const SEED = 0x34_0001;
const R = 'r';
const ok = fauxMessage('ok');
const failed = fauxMessage([], { stopReason: 'error', errorKind: 'rate_limited' });

/** One event of a run, as generated: built against the turn and attempt counters as the list is read. */
const step = fc.oneof(
  fc.constant({ t: 'turn' as const }),
  fc.constant({ t: 'attempt' as const }),
  fc.constant({ t: 'fallback' as const }),
  fc.boolean().map((error) => ({ t: 'answer' as const, error })),
  fc.integer({ min: 1, max: 3 }).map((call) => ({ t: 'toolStart' as const, call })),
  fc
    .tuple(fc.integer({ min: 1, max: 3 }), fc.constantFrom('ok' as const, 'error' as const, 'denied' as const))
    .map(([call, outcome]) => ({ t: 'toolEnd' as const, call, outcome })),
  fc.integer({ min: 1, max: 3 }).map((call) => ({ t: 'approval' as const, call })),
  fc.constant({ t: 'hookError' as const }),
  fc.integer({ min: 0, max: 3 }).map((call) => ({ t: 'guardrail' as const, call })),
  fc.constant({ t: 'compactionStart' as const }),
  fc.constant({ t: 'compactionEnd' as const }),
  fc.constant({ t: 'turnEnd' as const }),
  fc.constant({ t: 'update' as const }),
);
type Step = typeof step extends fc.Arbitrary<infer S> ? S : never;

function events(steps: readonly Step[], outcome: RunOutcome): AgentEvent[] {
  const out: AgentEvent[] = [{ type: 'agent_start', runId: R }];
  let turn = -1;
  let attempt = 0;
  let compaction = 0;
  for (const s of steps) {
    const turnIndex = Math.max(turn, 0);
    switch (s.t) {
      case 'turn':
        turn += 1;
        attempt = 0;
        out.push({ type: 'turn_start', runId: R, turnIndex: turn });
        break;
      case 'attempt':
        attempt += 1;
        out.push({
          type: 'model_attempt',
          runId: R,
          turnIndex,
          invocationId: `${R}.${turnIndex}`,
          attemptId: `${R}.${turnIndex}.${attempt}.${out.length}`,
          attempt,
          provider: 'faux',
          model: 'faux',
        });
        break;
      case 'fallback':
        out.push({
          type: 'model_fallback',
          runId: R,
          turnIndex,
          invocationId: `${R}.${turnIndex}`,
          from: { provider: 'faux', model: 'faux' },
          to: { provider: 'faux', model: 'small' },
        });
        break;
      case 'answer':
        out.push({ type: 'message_end', runId: R, message: s.error ? failed : ok });
        break;
      case 'update':
        out.push({
          type: 'message_update',
          runId: R,
          message: ok,
          streamEvent: { type: 'text_delta', contentIndex: 0, delta: 'o', partial: ok },
        });
        break;
      case 'toolStart':
        out.push({ type: 'tool_execution_start', runId: R, toolCallId: `c${s.call}`, toolName: 'echo', args: {} });
        break;
      case 'toolEnd':
        out.push({
          type: 'tool_execution_end',
          runId: R,
          toolCallId: `c${s.call}`,
          toolName: 'echo',
          result: { content: [{ type: 'text', text: 'x' }] },
          isError: s.outcome === 'error',
          outcome: s.outcome,
        });
        break;
      case 'approval':
        out.push({
          type: 'approval_requested',
          runId: R,
          requestId: `${R}:c${s.call}:${out.length}`,
          toolCallId: `c${s.call}`,
          toolName: 'echo',
          args: {},
          reason: 'sure?',
        });
        break;
      case 'hookError':
        out.push({ type: 'hook_error', runId: R, middleware: 'Audit', hook: 'afterToolCall', error: 'boom' });
        break;
      case 'guardrail':
        out.push({
          type: 'guardrail_tripped',
          runId: R,
          turnIndex,
          guardrail: 'pii',
          kind: s.call === 0 ? 'output' : 'tool',
          reason: 'x',
          action: 'deny',
          ...(s.call === 0 ? {} : { toolCallId: `c${s.call}` }),
        });
        break;
      case 'compactionStart':
        compaction += 1;
        out.push({
          type: 'compaction_start',
          runId: R,
          turnIndex,
          middleware: 'Compaction',
          invocationId: `k${compaction}`,
          reason: 'threshold',
          fromSeq: 0,
          throughSeq: 3,
          tokensBefore: 100,
        });
        break;
      case 'compactionEnd':
        out.push({
          type: 'compaction_end',
          runId: R,
          turnIndex,
          middleware: 'Compaction',
          invocationId: `k${compaction}`,
          outcome: 'stored',
          throughSeq: 3,
        });
        break;
      case 'turnEnd':
        out.push({ type: 'turn_end', runId: R, turnIndex, message: ok, toolResults: [] });
        break;
    }
  }
  out.push({ type: 'agent_end', runId: R, messages: [], outcome, usage: EMPTY_USAGE });
  return out;
}

describe('spansFromEvents: every span opened is closed by agent_end', () => {
  it('for any run of events and any outcome', async () => {
    let clock = 1_000;
    const now = () => (clock += 1);
    await fc.assert(
      fc.asyncProperty(
        fc.array(step, { maxLength: 40 }),
        fc.constantFrom<RunOutcome>('completed', 'failed', 'cancelled', 'suspended', 'stopped'),
        async (steps, outcome) => {
          const emitted = await lastValueFrom(of(...events(steps, outcome)).pipe(spansFromEvents({ now }), toArray()));
          const last = emitted.at(-1)!;
          expect(last.filter((s) => s.status === 'running' || s.durationMs === null)).toEqual([]);
          const ids = new Map(last.map((s) => [s.spanId, s]));
          expect(ids.size).toBe(last.length);
          const run = last[0]!;
          expect(run.kind).toBe('run');
          expect(run.attributes['cubepi.run.outcome']).toBe(outcome);
          if (outcome === 'failed') expect(run.status).toBe('error');
          for (const span of last.slice(1)) {
            expect(ids.has(span.parentSpanId!)).toBe(true);
            expect(span.startMs).toBeGreaterThanOrEqual(run.startMs);
            expect(span.startMs + span.durationMs!).toBeLessThanOrEqual(run.startMs + run.durationMs!);
          }
          // Each emission differs from the one before it: nothing is emitted for an event that changed nothing.
          for (let i = 1; i < emitted.length; i++) expect(emitted[i]).not.toBe(emitted[i - 1]);
        },
      ),
      { seed: SEED, numRuns: 2_000 },
    );
  });
});
