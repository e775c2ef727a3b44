// Patch permissions (issue 31, item 3: seed 002 §5 "Runtime 检查 patch 权限、版本与冲突", §12 "只观测的 hook 默认不可修改
// 状态"): a middleware declares what it may write (`writes`) or that it only observes (`observeOnly`); a patch outside
// that is refused with a typed error that fails the run, and an observer's answer that would steer the run is a bug.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  Agent,
  composeMiddleware,
  ConfigurationError,
  Decision,
  defineTool,
  HookError,
  StatePatchError,
  StatePatchPermissionError,
  type AgentEvent,
  type HookErrorEvent,
  type Middleware,
} from 'cubepi';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { expectConsistentTranscript } from './helpers.js';

const lookup = defineTool({
  name: 'lookup',
  description: 'lookup',
  parameters: z.object({ q: z.string() }),
  execute: (_id, { q }) => `found ${q}`,
});

function setup(middleware: Middleware[]) {
  const faux = new FauxProvider({
    responses: [fauxMessage([fauxToolCall('lookup', { q: 'x' }, { id: 'c0' })]), fauxMessage('done')],
  });
  const agent = new Agent({ provider: faux, model: 'faux', tools: [lookup], middleware });
  const events: AgentEvent[] = [];
  agent.subscribe((event) => void events.push(event));
  const hookErrors = () => events.filter((e): e is HookErrorEvent => e.type === 'hook_error');
  return { agent, events, hookErrors };
}

describe('Middleware.writes', () => {
  it('lets a middleware write the keys it declares, exact or under a ".*" prefix', async () => {
    const { agent } = setup([
      {
        name: 'memory',
        writes: ['prefs', 'memory.*', 'cubepi:fragment.rules', 'cubepi:events'],
        onRunStart: () => ({
          set: { prefs: 'dark', 'memory.a': 1, 'memory.b.c': 2 },
          appendEvents: [{ type: 'remembered' }],
          addContextFragments: [{ id: 'rules', content: 'be brief' }],
        }),
        afterToolCall: () => ({ patch: { delete: ['memory.a'] } }),
      },
    ]);
    await agent.prompt('go');
    expect(agent.state.runState.values).toEqual({ prefs: 'dark', 'memory.b.c': 2 });
    expect(agent.state.runState.contextFragments.map((f) => f.id)).toEqual(['rules']);
    expect(agent.state.runState.events).toEqual([{ type: 'remembered' }]);
  });

  it('refuses a patch touching a key outside writes: StatePatchPermissionError naming the offending keys, nothing applied, the run fails', async () => {
    const { agent, events } = setup([
      { name: 'seed', onRunStart: () => ({ set: { before: 1 } }) },
      {
        name: 'memory',
        writes: ['prefs', 'memory.*'],
        afterToolCall: () => ({ patch: { set: { prefs: 'x', memory: 1, 'memory.ok': 2 }, delete: ['other'] } }),
      },
    ]);
    const error = await agent.prompt('go').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StatePatchPermissionError);
    expect(error).toBeInstanceOf(StatePatchError);
    expect(error).toMatchObject({
      code: 'state_patch_permission',
      producer: 'memory',
      keys: ['memory', 'other'],
      allowed: ['prefs', 'memory.*'],
    });
    expect((error as Error).message).toBe('memory may not write "memory", "other": its writes are "prefs", "memory.*"');
    // The whole patch was refused (not even its allowed keys), and the run ended failed with a consistent transcript.
    expect(agent.state.runState.values).toEqual({ before: 1 });
    expect(events.filter((e) => e.type === 'state_patched')).toHaveLength(1);
    expect(events.at(-1)).toMatchObject({ type: 'agent_end', outcome: 'failed' });
    expectConsistentTranscript(agent.state.messages);
  });

  it("is not skippable: onError 'skip' still fails the run on a refused patch", async () => {
    const { agent, hookErrors } = setup([
      { name: 'sloppy', writes: [], onError: 'skip', onRunStart: () => Decision.continue({ set: { k: 1 } }) },
    ]);
    const error = await agent.prompt('go').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StatePatchPermissionError);
    expect(error).toMatchObject({ producer: 'sloppy', keys: ['k'], allowed: [] });
    expect(hookErrors()).toEqual([]);
  });

  it('names context fragments cubepi:fragment.<id> and appended events cubepi:events', async () => {
    const { agent } = setup([
      {
        name: 'ctx',
        writes: ['cubepi:fragment.user.*'],
        onRunStart: () => ({
          addContextFragments: [{ id: 'user.prefs', content: 'a' }],
          removeContextFragmentIds: ['system'],
          appendEvents: [{ type: 'x' }],
        }),
      },
    ]);
    const error = await agent.prompt('go').catch((e: unknown) => e);
    expect(error).toMatchObject({ keys: ['cubepi:events', 'cubepi:fragment.system'] });
  });

  it('checks a Promise answer too (the operator path) and leaves a middleware without writes free', async () => {
    const { agent } = setup([
      { name: 'free', afterToolCall: () => ({ patch: { set: { anything: 1 } } }) },
      { name: 'async', writes: ['a'], afterToolCall: async () => ({ patch: { set: { b: 1 } } }) },
    ]);
    const error = await agent.prompt('go').catch((e: unknown) => e);
    expect(error).toMatchObject({ producer: 'async', keys: ['b'] });
    expect(agent.state.runState.values).toEqual({ anything: 1 });
  });

  it('refuses invalid declarations at composition', () => {
    const bad = (m: object) => () => composeMiddleware([{ name: 'm', onRunStart: () => undefined, ...m }]);
    expect(bad({ writes: 'prefs' })).toThrow(ConfigurationError);
    expect(bad({ writes: ['a*'] })).toThrow(/only a trailing "\.\*"/);
    expect(bad({ writes: ['*'] })).toThrow(/only a trailing "\.\*"/);
    expect(bad({ writes: [''] })).toThrow(ConfigurationError);
    expect(bad({ observeOnly: false })).toThrow(/observeOnly must be true/);
    expect(bad({ observeOnly: true, writes: ['a'] })).toThrow(/cannot declare writes/);
    expect(bad({ observeOnly: true, writes: [] })).not.toThrow();
  });
});

describe('Middleware.observeOnly', () => {
  it('an observer that answers nothing (or its input unchanged) runs as any middleware', async () => {
    const seen: string[] = [];
    const { agent } = setup([
      {
        name: 'audit',
        observeOnly: true,
        onRunStart: () => Decision.continue(),
        transformContext: (messages) => messages,
        transformSystemPrompt: (prompt) => prompt,
        beforeToolCall: (ctx) => void seen.push(`before ${ctx.toolCall.name}`),
        afterToolCall: () => ({}),
        afterModelResponse: (response) => ({ response, injectMessages: [] }),
        shouldStopAfterTurn: () => false,
        onRunEnd: () => ({}),
      },
    ]);
    await agent.prompt('go');
    expect(seen).toEqual(['before lookup']);
    expect(agent.state.messages.at(-1)).toMatchObject({ role: 'assistant' });
  });

  it('a patch from an observer is a StatePatchPermissionError (allowed: none), even under skip', async () => {
    const { agent } = setup([
      { name: 'audit', observeOnly: true, onError: 'skip', onRunEnd: () => ({ appendEvents: [{ type: 'seen' }] }) },
    ]);
    const error = await agent.prompt('go').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StatePatchPermissionError);
    expect(error).toMatchObject({ producer: 'audit', keys: ['cubepi:events'], allowed: [] });
    expect((error as Error).message).toMatch(/audit is observeOnly: it may not patch the state/);
  });

  it.each([
    ['blocks a tool call', { beforeToolCall: () => ({ block: true, reason: 'no' }) }, /may not block a call/],
    ['pauses a tool call', { beforeToolCall: () => Decision.pause({ reason: 'ask' }) }, /may not answer pause/],
    ['stops the run at its start', { onRunStart: () => Decision.stop('failed', 'x') }, /may not answer stop/],
    ['rewrites a tool result', { afterToolCall: () => ({ isError: true }) }, /may not rewrite a tool result/],
    ['stops after a turn', { shouldStopAfterTurn: () => true }, /may not stop the run/],
    ['changes the context', { transformContext: () => [] }, /may not change the messages/],
    ['changes the prompt', { transformSystemPrompt: async () => 'other' }, /may not change the prompt/],
    ['decides the turn', { afterModelResponse: () => ({ decision: 'stop' as const }) }, /may not decide "stop"/],
  ])('an observer that %s fails the run with a HookError naming it', async (_what, hooks, message) => {
    const { agent } = setup([{ name: 'audit', observeOnly: true, ...hooks }]);
    const error = await agent.prompt('go').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HookError);
    expect(error).toMatchObject({ middleware: 'audit' });
    expect(((error as HookError).cause as Error).message).toMatch(message);
  });

  it("under onError 'skip' an observer's steering answer is dropped (hook_error) and the run goes on", async () => {
    const { agent, hookErrors } = setup([
      { name: 'audit', observeOnly: true, onError: 'skip', beforeToolCall: () => ({ block: true }) },
    ]);
    await agent.prompt('go');
    expect(hookErrors()).toMatchObject([
      { middleware: 'audit', hook: 'beforeToolCall', error: 'an observeOnly middleware may not block a call' },
    ]);
    // The call was not blocked: the tool ran.
    expect(agent.state.messages.find((m) => m.role === 'toolResult')).toMatchObject({ isError: false });
  });
});
