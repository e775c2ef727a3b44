import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import { Agent, handoff } from 'cubepi';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { traceAgent } from 'cubepi/tracing';

describe('handoffs in traces', () => {
  it('the run span has a handoff event (from, to, call), and each turn span names its active agent', async () => {
    const exporter = new InMemorySpanExporter();
    const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }).getTracer('t');
    const billing = new Agent({
      name: 'billing',
      provider: new FauxProvider({ responses: [fauxMessage('b')] }),
      model: 'faux',
    });
    const triage = new Agent({
      name: 'triage',
      provider: new FauxProvider({ responses: [fauxMessage([fauxToolCall('transfer_to_billing', {}, { id: 'h1' })])] }),
      model: 'faux',
      tools: [handoff(billing, { description: 'b' })],
    });
    traceAgent(triage, { tracer });
    await triage.prompt('hi');
    const spans = exporter.getFinishedSpans();
    const runSpan = spans.find((s) => s.name.startsWith('invoke_agent'))!;
    const event = runSpan.events.find((e) => e.name === 'handoff')!;
    expect(event.attributes).toMatchObject({
      'cubepi.handoff.from': 'triage',
      'cubepi.handoff.to': 'billing',
      'gen_ai.tool.call.id': 'h1',
    });
    const turns = spans.filter((s) => s.name.startsWith('turn ')).sort((a, b) => a.name.localeCompare(b.name));
    expect(turns.map((s) => s.attributes['gen_ai.agent.name'])).toEqual(['triage', 'billing']);
  });
});
