// Identity plumbing: `authenticate` decides who a request is (401 and nothing run without a principal), the agent
// factory and every run learn that principal, and hooks, tools and sub-agents see it as `ctx.principal`.
import { lastValueFrom, toArray } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Agent, ANONYMOUS_PRINCIPAL, agentTool, defineTool, type Principal } from 'cubepi';
import { bearerToken } from 'cubepi/server';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { serve, type Served } from '../server/serve-helpers.js';

let served: Served | undefined;
afterEach(async () => {
  await served?.close();
  served = undefined;
});

const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789ab';

/** A tool that reports the principal it ran for. */
const whoami = defineTool({
  name: 'whoami',
  description: 'Says who the run acts for',
  parameters: z.object({}),
  execute: (_id, _args, ctx) => `tool:${ctx.principal?.id ?? 'nobody'} run:${ctx.run.principal?.id ?? 'nobody'}`,
});

async function runToEnd(base: string, token: string | undefined, threadId: string): Promise<Response> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (token !== undefined) headers.authorization = `Bearer ${token}`;
  return fetch(`${base}/threads/${threadId}/runs`, { method: 'POST', headers, body: JSON.stringify({ input: 'hi' }) });
}

async function eventsOf(base: string, token: string, runId: string): Promise<string> {
  const response = await fetch(`${base}/runs/${runId}/events`, { headers: { authorization: `Bearer ${token}` } });
  expect(response.status).toBe(200);
  return response.text();
}

describe('identity', () => {
  it('gives the agent factory, the hooks and the tools the principal of the request', async () => {
    const factoryCalls: [string, string][] = [];
    const hookPrincipals: string[] = [];
    served = await serve({
      authenticate: bearerToken({ [ALICE]: { id: 'alice', roles: ['admin'] }, [BOB]: 'bob' }),
      agent: (threadId, principal) => {
        factoryCalls.push([threadId, principal.id]);
        return new Agent({
          provider: new FauxProvider({
            responses: [fauxMessage([fauxToolCall('whoami', {})]), fauxMessage('done')],
          }),
          model: 'faux',
          tools: [whoami],
          transformSystemPrompt: (prompt, ctx) => {
            hookPrincipals.push(ctx.principal?.id ?? 'nobody');
            return prompt;
          },
        });
      },
    });
    const started = await runToEnd(served.base, BOB, 't-bob');
    expect(started.status).toBe(201);
    const { runId } = (await started.json()) as { runId: string };
    const text = await eventsOf(served.base, BOB, runId);
    expect(text).toContain('tool:bob run:bob');
    expect(factoryCalls).toEqual([['t-bob', 'bob']]);
    expect(hookPrincipals).toEqual(['bob', 'bob']);
  });

  it('answers 401 to a missing or unknown token and runs nothing', async () => {
    const factoryCalls: string[] = [];
    served = await serve({
      authenticate: bearerToken({ [ALICE]: 'alice' }),
      agent: (threadId) => {
        factoryCalls.push(threadId);
        return new Agent({ provider: new FauxProvider({ responses: [fauxMessage('x')] }), model: 'faux' });
      },
    });
    for (const token of [undefined, BOB, `${ALICE}x`, ALICE.slice(0, -1)]) {
      const response = await runToEnd(served.base, token, 't1');
      expect(response.status).toBe(401);
      expect(await response.json()).toEqual({ error: { code: 'unauthorized', message: expect.any(String) } });
    }
    expect(factoryCalls).toEqual([]);
  });

  it('treats an authenticator that throws or returns a non-principal as no principal (401)', async () => {
    for (const authenticate of [
      () => {
        throw new Error('database down');
      },
      async () => ({ id: '' }),
      () => ({ name: 'no id' }) as unknown as Principal,
      () => undefined,
    ]) {
      served = await serve({
        authenticate,
        agent: () => new Agent({ provider: new FauxProvider({ responses: [] }), model: 'faux' }),
      });
      const response = await fetch(`${served.base}/threads`);
      expect(response.status).toBe(401);
      expect(JSON.stringify(await response.json())).not.toContain('database down');
      await served.close();
      served = undefined;
    }
  });

  it('makes every caller the anonymous principal without authenticate or authToken, and one token holder with authToken', async () => {
    const seen: string[] = [];
    const agent = (_threadId: string, principal: Principal) => {
      seen.push(principal.id);
      return new Agent({ provider: new FauxProvider({ responses: [fauxMessage('x')] }), model: 'faux' });
    };
    served = await serve({ agent });
    expect((await runToEnd(served.base, undefined, 'a1')).status).toBe(201);
    await served.close();
    served = await serve({ agent, authToken: ALICE });
    expect((await runToEnd(served.base, undefined, 'a2')).status).toBe(401);
    expect((await runToEnd(served.base, ALICE, 'a2')).status).toBe(201);
    expect(seen).toEqual([ANONYMOUS_PRINCIPAL.id, ANONYMOUS_PRINCIPAL.id]);
  });

  it('passes the principal to a sub-agent run through agentTool', async () => {
    const childSaw: string[] = [];
    const child = new Agent({
      provider: new FauxProvider({ responses: [fauxMessage([fauxToolCall('whoami', {})]), fauxMessage('child done')] }),
      model: 'faux',
      tools: [
        defineTool({
          name: 'whoami',
          description: 'who',
          parameters: z.object({}),
          execute: (_id, _args, ctx) => (childSaw.push(ctx.principal?.id ?? 'nobody'), 'ok'),
        }),
      ],
    });
    const parent = new Agent({
      provider: new FauxProvider({
        responses: [fauxMessage([fauxToolCall('helper', { prompt: 'go' })]), fauxMessage('parent done')],
      }),
      model: 'faux',
      tools: [agentTool({ agent: child, name: 'helper', description: 'helps' })],
    });
    await lastValueFrom(parent.prompt$('start', { principal: { id: 'carol' } }).pipe(toArray()));
    expect(childSaw).toEqual(['carol']);
  });

  it('refuses a run option principal without an id', async () => {
    const agent = new Agent({ provider: new FauxProvider({ responses: [fauxMessage('x')] }), model: 'faux' });
    await expect(agent.prompt('hi', { principal: { id: '' } })).rejects.toThrow(/principal/);
  });
});
