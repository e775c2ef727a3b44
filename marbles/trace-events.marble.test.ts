import { SpanStatusCode } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import { EMPTY_USAGE, type AgentEvent } from 'cubepi';
import { fauxMessage } from 'cubepi/testing';
import { traceEvents } from 'cubepi/tracing';
import { testScheduler } from './helpers.js';

const answer = fauxMessage('hi');
const values: Record<string, AgentEvent> = {
  a: { type: 'agent_start', runId: 'r' },
  t: { type: 'turn_start', runId: 'r', turnIndex: 0 },
  m: {
    type: 'model_attempt',
    runId: 'r',
    turnIndex: 0,
    invocationId: 'r.0',
    attemptId: 'r.0.1',
    attempt: 1,
    provider: 'faux',
    model: 'faux',
  },
  s: { type: 'message_start', runId: 'r', message: answer },
  u: {
    type: 'message_update',
    runId: 'r',
    message: answer,
    streamEvent: { type: 'text_delta', contentIndex: 0, delta: 'hi', partial: answer },
  },
  e: { type: 'message_end', runId: 'r', message: answer },
  T: { type: 'turn_end', runId: 'r', turnIndex: 0, message: answer, toolResults: [] },
  E: { type: 'agent_end', runId: 'r', messages: [answer], outcome: 'completed', usage: EMPTY_USAGE },
};

function tracer() {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const spans = () =>
    exporter.getFinishedSpans().map((s) => `${s.name}:${String(s.attributes['cubepi.run.outcome'] ?? s.status.code)}`);
  return { tracer: provider.getTracer('marbles'), spans, exporter };
}

describe('traceEvents', () => {
  it('passes every event through at its frame, and records the run', () => {
    const { tracer: t, spans } = tracer();
    testScheduler().run(({ hot, expectObservable, expectSubscriptions }) => {
      const source = hot('  -a-t-m-s-u-e-T-E-|', values);
      const subs = '        ^----------------!';
      const expected = '    -a-t-m-s-u-e-T-E-|';
      expectObservable(source.pipe(traceEvents({ tracer: t }))).toBe(expected, values);
      expectSubscriptions(source.subscriptions).toBe(subs);
    });
    expect(spans()).toEqual([
      `chat faux:${SpanStatusCode.UNSET}`,
      `turn 0:${SpanStatusCode.UNSET}`,
      'invoke_agent:completed',
    ]);
  });

  it('passes an empty source, a never source and an error through; an error ends the open run as failed', () => {
    const { tracer: t, spans } = tracer();
    testScheduler().run(({ cold, expectObservable }) => {
      expectObservable(cold<AgentEvent>('|').pipe(traceEvents({ tracer: t }))).toBe('|');
      expectObservable(cold<AgentEvent>('-').pipe(traceEvents({ tracer: t }))).toBe('-');
      expectObservable(cold<AgentEvent>('-a-t-#', values).pipe(traceEvents({ tracer: t }))).toBe('-a-t-#', values);
    });
    expect(spans()).toEqual([`turn 0:${SpanStatusCode.UNSET}`, 'invoke_agent:failed']);
  });

  it('unsubscribes from the source when unsubscribed, and ends the open spans as cancelled', () => {
    const { tracer: t, spans } = tracer();
    testScheduler().run(({ hot, expectObservable, expectSubscriptions }) => {
      const source = hot('  -a-t-m-s-u-e-T-E-|', values);
      const unsub = '       ----------!';
      const subs = '        ^---------!';
      expectObservable(source.pipe(traceEvents({ tracer: t })), unsub).toBe('-a-t-m-s-u', values);
      expectSubscriptions(source.subscriptions).toBe(subs);
    });
    // The attempt in flight, its turn and the run: all ended, the run cancelled.
    expect(spans()).toEqual([
      `chat faux:${SpanStatusCode.UNSET}`,
      `turn 0:${SpanStatusCode.UNSET}`,
      'invoke_agent:cancelled',
    ]);
  });

  it('records each subscription on its own', () => {
    const { tracer: t, exporter } = tracer();
    testScheduler().run(({ cold, expectObservable }) => {
      const traced = cold('-a-t-m-s-e-T-E-|', values).pipe(traceEvents({ tracer: t }));
      expectObservable(traced).toBe('-a-t-m-s-e-T-E-|', values);
      expectObservable(traced).toBe('-a-t-m-s-e-T-E-|', values);
    });
    const runs = exporter.getFinishedSpans().filter((s) => s.name === 'invoke_agent');
    expect(runs).toHaveLength(2);
    expect(new Set(runs.map((s) => s.spanContext().traceId)).size).toBe(2);
  });
});
