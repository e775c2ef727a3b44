// Resuming approvals (issue 31; seed 002 §6 pause { resumeToken }, "resume 时重新验证 deadline 和目标状态", §9.2 Tool
// Guard allow/pause/stop): the resume token, a second process answering by it, beforeToolCall again on resume,
// approvals that expire, answers remembered for the thread, and ToolGuard's stop.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  Agent,
  Decision,
  defineTool,
  HookError,
  InvalidInputError,
  rememberedApprovalKey,
  textOf,
  ToolGuard,
  type AgentEvent,
  type ApprovalRequestedEvent,
  type Message,
  type Middleware,
  type ToolPolicy,
  type ToolResultMessage,
} from 'cubepi';
import { SQLiteCheckpointer } from 'cubepi/checkpoint/sqlite';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { expectConsistentTranscript } from './helpers.js';
import { bundledScript } from './bundled-script.js';

const dir = mkdtempSync(join(tmpdir(), 'cubepi-approvals-resume-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const fixture = fileURLToPath(new URL('./fixtures/respond-by-token.ts', import.meta.url));
/** `fixture` bundled once for this file (`bundledScript`): its processes start without compiling it. */
let fixtureBundle: string;
beforeAll(async () => {
  fixtureBundle = await bundledScript(fixture);
});
const root = fileURLToPath(new URL('..', import.meta.url));

const results = (messages: readonly Message[]) =>
  messages.filter((m): m is ToolResultMessage => m.role === 'toolResult');

/** An agent whose model calls `calls` (ids c0, c1, …) and then says done; its tools record their runs. */
function setup(
  calls: readonly [string, Record<string, unknown>][],
  options: {
    policy?: ToolPolicy;
    middleware?: Middleware[];
    checkpointer?: SQLiteCheckpointer;
    threadId?: string;
  } = {},
) {
  const ran: string[] = [];
  const seen: Message[][] = [];
  const tool = (name: string) =>
    defineTool({
      name,
      description: name,
      parameters: z.object({ to: z.string() }),
      execute: (_id, { to }) => {
        ran.push(`${name}:${to}`);
        return `${name} done for ${to}`;
      },
    });
  const faux = new FauxProvider({
    responses: [
      ...(calls.length === 0
        ? []
        : [fauxMessage(calls.map(([name, args], i) => fauxToolCall(name, args, { id: `c${i}` })))]),
      (messages) => (seen.push([...messages]), fauxMessage('done')),
    ],
  });
  const events: AgentEvent[] = [];
  const agent = new Agent({
    provider: faux,
    model: 'faux',
    tools: [tool('send_email'), tool('lookup'), tool('delete_file')],
    middleware: [
      new ToolGuard({ policy: options.policy ?? ToolGuard.byName({ ask: ['send_email', 'delete_file'] }) }),
      ...(options.middleware ?? []),
    ],
    ...(options.checkpointer === undefined
      ? {}
      : { checkpointer: options.checkpointer, threadId: options.threadId ?? 't' }),
  });
  agent.subscribe((event) => void events.push(event));
  return { agent, ran, seen, events, faux };
}

/** Runs the respond-by-token fixture to its end; resolves with its last stdout line, parsed. */
function respondInChild(file: string, threadId: string, token: string, answer: unknown, log: string) {
  return new Promise<{ outcome: string; results: { outcome: string }[]; last: string }>((resolve, reject) => {
    const child = spawn(process.execPath, [fixtureBundle, file, threadId, token, JSON.stringify(answer)], {
      cwd: root,
      env: { ...process.env, RUN_LOG: log },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.on('exit', (code) =>
      code === 0 ? resolve(JSON.parse(out.trim().split('\n').at(-1)!)) : reject(new Error(`exit ${code}:\n${err}`)),
    );
  });
}

/** Suspends a run of `pay` on a SQLite file in this process (the guard asks with `ask`); returns the token. */
async function suspendPay(file: string, threadId: string, ask: { ask: string; expiresAt?: number }) {
  const checkpointer = new SQLiteCheckpointer(file);
  const agent = new Agent({
    provider: new FauxProvider({ responses: [fauxMessage([fauxToolCall('pay', { amount: 5 }, { id: 'p1' })])] }),
    model: 'faux',
    tools: [
      defineTool({
        name: 'pay',
        description: 'pays',
        parameters: z.object({ amount: z.number() }),
        execute: () => {
          throw new Error('pay must not run in the suspending process');
        },
      }),
    ],
    middleware: [new ToolGuard({ policy: ToolGuard.when(() => true, ask) })],
    checkpointer,
    threadId,
  });
  await agent.prompt('pay 5');
  const [request] = agent.pending;
  await checkpointer.close();
  return request!;
}

describe('the resume token', () => {
  it('is the request id: the runtime names it <runId>:<toolCallId>, a pause may name it (resumeToken)', async () => {
    const { agent, ran, events } = setup(
      [
        ['lookup', { to: 'a' }],
        ['lookup', { to: 'b' }],
      ],
      {
        policy: () => 'allow',
        middleware: [
          {
            name: 'ticketing',
            beforeToolCall: (ctx) =>
              ctx.approval !== undefined
                ? undefined
                : ctx.toolCall.id === 'c0'
                  ? Decision.pause({ reason: 'ticket', resumeToken: 'ticket-7' })
                  : Decision.pause({ reason: 'default' }),
          },
        ],
      },
    );
    await agent.prompt('go');
    const requested = events.filter((e): e is ApprovalRequestedEvent => e.type === 'approval_requested');
    const runId = requested[1]!.runId;
    expect(requested.map((e) => e.requestId)).toEqual(['ticket-7', `${runId}:c1`]);
    expect(agent.pending.map((r) => r.requestId)).toEqual(['ticket-7', `${runId}:c1`]);
    await agent.respond(`${runId}:c1`, { approve: true });
    const added = await agent.respond('ticket-7', { approve: true });
    expect(ran).toEqual(['lookup:a', 'lookup:b']);
    expect(added.at(-1)).toMatchObject({ role: 'assistant', stopReason: 'stop' });
  });

  it('two held calls of one batch with the same token fail the run with InvalidInputError; nothing runs', async () => {
    const { agent, ran } = setup(
      [
        ['lookup', { to: 'a' }],
        ['lookup', { to: 'b' }],
      ],
      {
        policy: () => 'allow',
        middleware: [{ name: 'same', beforeToolCall: () => Decision.pause({ reason: 'r', resumeToken: 'dup' }) }],
      },
    );
    await expect(agent.prompt('go')).rejects.toBeInstanceOf(InvalidInputError);
    expect(ran).toEqual([]);
    expectConsistentTranscript(agent.state.messages);
  });

  it('another process answers by the token alone (agent.respond(token, answer)) and the run completes', async () => {
    const file = join(dir, 'by-token.db');
    const log = join(dir, 'by-token.log');
    writeFileSync(log, '');
    const request = await suspendPay(file, 'thread-a', { ask: 'payments need approval' });
    const child = await respondInChild(file, 'thread-a', request.requestId, { approve: true }, log);
    expect(child).toEqual({ outcome: 'completed', results: [{ outcome: 'ok', isError: false }], last: 'assistant' });
    expect(readFileSync(log, 'utf8')).toBe('pay:5\n'); // ran once, in the child
    const stored = (await new SQLiteCheckpointer(file).load('thread-a'))!;
    expect(stored.extra['cubepi:approvals']).toBeUndefined();
    expectConsistentTranscript(stored.messages);
  }, 60_000); // a child process (tsx) under a loaded machine

  it('the expiry is stored with the request: another process approving after it gets outcome expired, nothing runs', async () => {
    const file = join(dir, 'expired.db');
    const log = join(dir, 'expired.log');
    writeFileSync(log, '');
    const request = await suspendPay(file, 'thread-b', { ask: 'quick', expiresAt: 1_000 });
    expect(request.expiresAt).toBe(1_000);
    const child = await respondInChild(file, 'thread-b', request.requestId, { approve: true }, log);
    expect(child).toEqual({
      outcome: 'completed',
      results: [{ outcome: 'expired', isError: true }],
      last: 'assistant',
    });
    expect(readFileSync(log, 'utf8')).toBe('');
  }, 60_000); // a child process (tsx) under a loaded machine
});

describe('beforeToolCall runs again when a held call resumes', () => {
  it('a hook that denies on resume (the deadline passed): the call is denied, the tool never runs', async () => {
    const seenApproval: unknown[] = [];
    const { agent, ran, seen } = setup([['send_email', { to: 'ann' }]], {
      middleware: [
        {
          name: 'deadline',
          beforeToolCall: (ctx) => {
            seenApproval.push(ctx.approval);
            return ctx.approval === undefined ? undefined : { block: true, reason: 'The offer expired meanwhile' };
          },
        },
      ],
    });
    await agent.prompt('go');
    const [request] = agent.pending;
    const added = await agent.respond(request!.requestId, { approve: true });
    expect(ran).toEqual([]);
    expect(results(added).map((r) => [r.outcome, textOf(r)])).toEqual([['denied', 'The offer expired meanwhile']]);
    // The guard's pause won the first pass (later gates are not asked); on resume the guard lets it through.
    expect(seenApproval).toEqual([{ requestId: request!.requestId, answer: { approve: true } }]);
    expect(textOf(seen[0]!.at(-1)!)).toBe('The offer expired meanwhile');
  });

  it('a hook that pauses again: a new approval request; answering it runs the call once', async () => {
    let asked = 0;
    const { agent, ran } = setup([['lookup', { to: 'x' }]], {
      middleware: [
        {
          name: 'twice',
          beforeToolCall: () => (++asked <= 2 ? Decision.pause({ reason: `ask ${asked}` }) : undefined),
        },
      ],
    });
    await agent.prompt('go');
    const first = agent.pending[0]!;
    expect(await agent.respond(first.requestId, { approve: true })).toEqual([]);
    expect(ran).toEqual([]);
    expect(agent.pending.map((r) => r.reason)).toEqual(['ask 2']);
    const added = await agent.respond(agent.pending[0]!.requestId, { approve: true });
    expect(ran).toEqual(['lookup:x']);
    expect(added.at(-1)).toMatchObject({ role: 'assistant', stopReason: 'stop' });
    expectConsistentTranscript(agent.state.messages);
  });
});

describe('approvals that expire', () => {
  it('ToolGuard ttlMs sets ApprovalRequest.expiresAt to the ask time plus ttlMs', async () => {
    const before = Date.now();
    const { agent } = setup([['send_email', { to: 'ann' }]], {
      policy: () => ({ ask: 'quick', ttlMs: 60_000 }),
    });
    await agent.prompt('go');
    const expiresAt = agent.pending[0]!.expiresAt!;
    expect(expiresAt).toBeGreaterThanOrEqual(before + 60_000);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + 60_000);
  });

  it('an approval after expiresAt: respond resolves, the outcome is expired, nothing runs, the model is told', async () => {
    const { agent, ran, seen } = setup([['send_email', { to: 'ann' }]], {
      policy: () => ({ ask: 'quick', expiresAt: Date.now() - 1 }),
    });
    await agent.prompt('go');
    const added = await agent.respond(agent.pending[0]!.requestId, { approve: true });
    expect(ran).toEqual([]);
    const [result] = results(added);
    expect(result).toMatchObject({ outcome: 'expired', isError: true });
    expect(textOf(result!)).toMatch(/approval of this send_email call expired at .*the call did not run/);
    expect(seen[0]!.at(-1)).toMatchObject({ role: 'toolResult', outcome: 'expired' });
    expectConsistentTranscript(agent.state.messages);
  });

  it('an approval before expiresAt runs; a denial after it stays a denial', async () => {
    const { agent, ran } = setup(
      [
        ['send_email', { to: 'ann' }],
        ['delete_file', { to: 'f' }],
      ],
      {
        policy: (ctx) =>
          ctx.toolCall.name === 'send_email'
            ? { ask: 'later', expiresAt: Date.now() + 60_000 }
            : { ask: 'past', expiresAt: 1 },
      },
    );
    await agent.prompt('go');
    const [mail, del] = agent.pending;
    await agent.respond(del!.requestId, { deny: 'no' });
    const added = await agent.respond(mail!.requestId, { approve: true });
    expect(ran).toEqual(['send_email:ann']);
    expect(results(added).map((r) => r.outcome)).toEqual(['ok', 'denied']);
  });

  it('a ttlMs that is not a non-negative number is a HookError caused by InvalidInputError', async () => {
    const { agent } = setup([['send_email', { to: 'ann' }]], { policy: () => ({ ask: 'x', ttlMs: -5 }) });
    await expect(agent.prompt('go')).rejects.toSatisfy(
      (e: unknown) => e instanceof HookError && e.cause instanceof InvalidInputError,
    );
  });
});

describe("answers remembered for the thread (remember: 'thread')", () => {
  it('stores approvals.allow.<tool> (producer approvals); later calls of that tool run unasked, also in a new Agent', async () => {
    const file = join(dir, 'sticky.db');
    const first = setup([['send_email', { to: 'ann' }]], { checkpointer: new SQLiteCheckpointer(file) });
    await first.agent.prompt('go');
    await first.agent.respond(first.agent.pending[0]!.requestId, { approve: true, remember: 'thread' });
    expect(rememberedApprovalKey('send_email')).toBe('approvals.allow.send_email');
    expect(first.agent.state.extra['approvals.allow.send_email']).toBe(true);
    const patched = first.events.find((e) => e.type === 'state_patched');
    expect(patched).toMatchObject({ producer: 'approvals', patch: { set: { 'approvals.allow.send_email': true } } });

    // A new Agent on the file: send_email is no longer asked for; delete_file still is.
    const later = setup(
      [
        ['send_email', { to: 'bob' }],
        ['delete_file', { to: 'f' }],
      ],
      { checkpointer: new SQLiteCheckpointer(file) },
    );
    await later.agent.prompt('again');
    expect(later.ran).toEqual(['send_email:bob']);
    expect(later.agent.pending.map((r) => r.toolName)).toEqual(['delete_file']);
  });

  it('without remember nothing is stored: the next call asks again', async () => {
    const { agent, faux } = setup([['send_email', { to: 'ann' }]]);
    await agent.prompt('go');
    await agent.respond(agent.pending[0]!.requestId, { approve: true });
    expect(agent.state.extra['approvals.allow.send_email']).toBeUndefined();
    faux.appendResponses([fauxMessage([fauxToolCall('send_email', { to: 'bob' }, { id: 'c9' })])]);
    await agent.prompt('again');
    expect(agent.pending.map((r) => r.toolName)).toEqual(['send_email']);
  });

  it('remember on a denial or with another value is refused (InvalidInputError); the request stays open', async () => {
    const { agent } = setup([['send_email', { to: 'ann' }]]);
    await agent.prompt('go');
    const id = agent.pending[0]!.requestId;
    await expect(agent.respond(id, { deny: 'no', remember: 'thread' } as never)).rejects.toBeInstanceOf(
      InvalidInputError,
    );
    await expect(agent.respond(id, { approve: true, remember: 'forever' } as never)).rejects.toBeInstanceOf(
      InvalidInputError,
    );
    expect(agent.pending.map((r) => r.requestId)).toEqual([id]);
  });
});

describe('ToolGuard stop', () => {
  it.each(['failed', 'cancelled'] as const)(
    'stop (%s) ends the run with that outcome; every call of the batch gets exactly one result; nothing runs',
    async (outcome) => {
      const { agent, ran, events } = setup(
        [
          ['lookup', { to: 'a' }],
          ['delete_file', { to: 'f' }],
          ['lookup', { to: 'b' }],
        ],
        {
          policy: ToolGuard.when((ctx) => ctx.toolCall.name === 'delete_file', {
            stop: 'Deleting ends the session',
            outcome,
          }),
        },
      );
      const added = await agent.prompt('go'); // a stop resolves prompt(), as beforeToolCall's does
      expect(ran).toEqual([]);
      expect(results(added).map((r) => [r.toolCallId, r.outcome])).toEqual([
        ['c0', 'aborted'],
        ['c1', 'aborted'],
        ['c2', 'aborted'],
      ]);
      expect(events.find((e) => e.type === 'agent_end')).toMatchObject({ outcome });
      expect(added.at(-1)).toMatchObject({ role: 'assistant', errorMessage: 'Deleting ends the session' });
      expectConsistentTranscript(agent.state.messages);
    },
  );

  it('without outcome the stop is failed; an unknown outcome is a HookError', async () => {
    const plain = setup([['lookup', { to: 'a' }]], { policy: () => ({ stop: 'no' }) });
    await plain.agent.prompt('go');
    expect(plain.events.find((e) => e.type === 'agent_end')).toMatchObject({ outcome: 'failed' });
    const odd = setup([['lookup', { to: 'a' }]], { policy: () => ({ stop: 'no', outcome: 'maybe' }) as never });
    await expect(odd.agent.prompt('go')).rejects.toBeInstanceOf(HookError);
  });
});
