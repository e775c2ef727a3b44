// Checked state versions (issue 31, item 3: seed 002 §5 "Runtime 检查 patch 权限、版本与冲突"): a patch may declare
// the state version it read (`baseVersion`); a stale one is a typed conflict that fails the run.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  Agent,
  Decision,
  defineTool,
  HookError,
  StatePatchConflictError,
  type AgentEvent,
  type Middleware,
  type StatePatchedEvent,
} from 'cubepi';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { expectConsistentTranscript } from './helpers.js';

const lookup = defineTool({
  name: 'lookup',
  description: 'lookup',
  parameters: z.object({ q: z.string() }),
  execute: (_id, { q }) => `found ${q}`,
});

function setup(calls: number, middleware: Middleware[]) {
  const faux = new FauxProvider({
    responses: [
      fauxMessage(Array.from({ length: calls }, (_, i) => fauxToolCall('lookup', { q: `q${i}` }, { id: `c${i}` }))),
      fauxMessage('done'),
    ],
  });
  const agent = new Agent({ provider: faux, model: 'faux', tools: [lookup], middleware });
  const events: AgentEvent[] = [];
  agent.subscribe((event) => void events.push(event));
  const patched = () => events.filter((e): e is StatePatchedEvent => e.type === 'state_patched');
  return { agent, events, patched };
}

describe('StatePatch.baseVersion', () => {
  it('a patch based on the current version applies; state_patched reports the declared baseVersion', async () => {
    const { agent, patched } = setup(1, [
      { name: 'seed', onRunStart: () => ({ set: { n: 1 } }) },
      {
        name: 'checked',
        afterToolCall: (ctx) => ({
          patch: { set: { n: (ctx.state.values.n as number) + 1 }, baseVersion: ctx.state.version },
        }),
      },
    ]);
    await agent.prompt('go');
    expect(agent.state.runState.values).toEqual({ n: 2 });
    expect(patched().map((e) => [e.producer, e.baseVersion, e.version, e.patch.baseVersion])).toEqual([
      ['seed', 0, 1, undefined],
      ['checked', 1, 2, 1],
    ]);
  });

  it('a stale baseVersion fails the run with a StatePatchConflictError naming producer, keys and both versions', async () => {
    const { agent, patched, events } = setup(1, [
      { name: 'first', onRunStart: () => ({ set: { a: 1 } }) },
      { name: 'stale', onRunStart: () => ({ set: { b: 2 }, delete: ['c'], baseVersion: 0 }) },
    ]);
    const error = await agent.prompt('go').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StatePatchConflictError);
    expect(error).toMatchObject({
      reason: 'version',
      producer: 'stale',
      keys: ['b', 'c'],
      key: 'b',
      expectedVersion: 0,
      actualVersion: 1,
      producers: ['first', 'stale'],
    });
    expect((error as Error).message).toMatch(/stale .*version 0.*version 1 \(last changed by first\)/);
    // Refused: not applied, not announced; the run ended failed.
    expect(patched().map((e) => e.producer)).toEqual(['first']);
    expect(agent.state.runState.values).toEqual({ a: 1 });
    expect(events.at(-1)).toMatchObject({ type: 'agent_end', outcome: 'failed' });
  });

  it('a conflict is not skipped by onError: skip (it is the run verdict on the patch, not a hook failure)', async () => {
    const { agent } = setup(0, [
      { name: 'first', onRunStart: () => ({ set: { a: 1 } }) },
      { name: 'lenient', onError: 'skip', onRunStart: () => ({ set: { b: 1 }, baseVersion: 0 }) },
    ]);
    await expect(agent.prompt('go')).rejects.toBeInstanceOf(StatePatchConflictError);
  });

  it('parallel batch: two afterToolCalls based on the version both read, on different keys: the second conflicts', async () => {
    const read = new Map<string, number>();
    const { agent, patched } = setup(2, [
      {
        name: 'per-call',
        beforeToolCall: (ctx) => (read.set(ctx.toolCall.id, ctx.state.version), Decision.continue()),
        afterToolCall: (ctx) => ({
          patch: { set: { [ctx.toolCall.id]: 'seen' }, baseVersion: read.get(ctx.toolCall.id)! },
        }),
      },
    ]);
    const error = await agent.prompt('go').catch((e: unknown) => e);
    expect([...read.values()]).toEqual([0, 0]);
    expect(error).toBeInstanceOf(StatePatchConflictError);
    expect(error).toMatchObject({ reason: 'version', producer: 'per-call', expectedVersion: 0, actualVersion: 1 });
    expect(patched()).toHaveLength(1);
    expectConsistentTranscript(agent.state.messages);
  });

  it('without baseVersion the same batch applies both patches (today’s behaviour: the runtime stamps the version)', async () => {
    const { agent, patched } = setup(2, [
      { name: 'per-call', afterToolCall: (ctx) => ({ patch: { set: { [ctx.toolCall.id]: 'seen' } } }) },
    ]);
    await agent.prompt('go');
    expect(agent.state.runState.values).toEqual({ c0: 'seen', c1: 'seen' });
    expect(patched().map((e) => [e.baseVersion, e.version])).toEqual([
      [0, 1],
      [1, 2],
    ]);
  });

  it.each([-1, 1.5, '1', Number.NaN])('baseVersion %s is refused by the patch check (a HookError)', async (bad) => {
    const { agent } = setup(0, [{ name: 'bad', onRunStart: () => ({ set: { a: 1 }, baseVersion: bad as number }) }]);
    const error = await agent.prompt('go').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HookError);
    expect(String((error as HookError).cause)).toMatch(/baseVersion must be a state version/);
  });
});
