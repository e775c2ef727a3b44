// The access matrix both servers are held to: every route × every caller (no credentials, another principal, the
// owner, the owner over a limit), with the status each gets and what must not have happened (nothing run, read or
// changed). A table, so a column can be added without rewriting the cases: a `Caller`, its token in `TOKENS` (and
// the servers' authenticators), and its status in each case's table.
//
// Limits bound starting work, not access: the owner over her limit is refused (429, `Retry-After`, nothing run,
// stored or queued) where a route starts a run (a prompt, an approval's answer, /chat, /ag-ui) and served like the
// owner where a route only reads or stops (read a thread, list, watch a run's events, cancel, the chat resume).
import { WebSocket } from 'ws';
import { expect } from 'vitest';
import type { Principal } from 'cubepi';
import type { Limits, LimitsPolicy } from 'cubepi/server';

export const TOKENS = {
  alice: 'alice-token-0123456789',
  bob: 'bob-token-0123456789ab',
  aliceOver: 'alice-over-token-012345',
} as const;

/** The principals of `TOKENS`, for `bearerToken`: `aliceOver` is alice (she owns alice's threads) on a spent plan. */
export const PRINCIPALS: Readonly<Record<string, Principal>> = {
  [TOKENS.alice]: { id: 'alice' },
  [TOKENS.bob]: { id: 'bob' },
  [TOKENS.aliceOver]: { id: 'alice', roles: ['spent'] },
};

/**
 * The servers' limits policy: alice on her spent plan may run nothing more at once (0 of 0, so she is over her
 * `concurrentRuns` whatever else runs); everyone else has no limits (so the other columns count nothing).
 */
export const OVER_LIMIT: LimitsPolicy<Principal> = (principal): Limits | undefined =>
  principal.roles?.includes('spent') ? { concurrentRuns: 0 } : undefined;

/** Who calls: nobody (no credentials), another principal (bob), the owner (alice), the owner over her limit. */
export type Caller = 'none' | 'other' | 'owner' | 'over';
export const CALLERS: readonly Caller[] = ['none', 'other', 'owner', 'over'];

const TOKEN_OF: Record<Caller, string | undefined> = {
  none: undefined,
  other: TOKENS.bob,
  owner: TOKENS.alice,
  over: TOKENS.aliceOver,
};

/** What a case is given: the server under test, and alice's resources made for it. */
export interface Harness {
  /** The base URL over real HTTP (toNodeListener + attachWebSocket). */
  readonly base: string;
  /** The server's own Fetch handler (the path an edge runtime uses). */
  readonly fetch: (request: Request) => Promise<Response>;
  /** Alice starts a run that stays live (until cancelled or the test ends) on a fresh thread. */
  liveRun(threadId: string): Promise<string>;
  /** Alice's thread with a finished run (a history), and that run's id. */
  finishedThread(threadId: string): Promise<string>;
  /** Alice's thread suspended on an approval: its request id. */
  suspendedThread(threadId: string): Promise<string>;
  /** Whether the server serves /chat and /ag-ui (the queue server answers 501). */
  readonly frontEnds: boolean;
  /** Runs started on the thread so far (queued, or run in process): what a refused start must not have added to. */
  runsOf(threadId: string): Promise<number>;
  /** Denials counted so far. */
  metrics(): { unauthenticated: number; forbidden: number; limited: number };
}

export function headers(caller: Caller, extra: Record<string, string> = {}): Record<string, string> {
  const token = TOKEN_OF[caller];
  return { ...extra, ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) };
}

const post = (base: string, path: string, caller: Caller, body: unknown) =>
  fetch(`${base}${path}`, {
    method: 'POST',
    headers: headers(caller, { 'content-type': 'application/json' }),
    body: JSON.stringify(body),
  });

const get = (base: string, path: string, caller: Caller, extra: Record<string, string> = {}) =>
  fetch(`${base}${path}`, { headers: headers(caller, extra) });

/** Alice's view of a thread. */
async function aliceReads(h: Harness, threadId: string) {
  const response = await get(h.base, `/threads/${threadId}`, 'owner');
  expect(response.status).toBe(200);
  return (await response.json()) as { messages: unknown[]; pending: unknown[]; activeRunId: string | null };
}

/** The body a missing resource gets, with `missingId` in it replaced by `id`: what a refusal must equal. */
async function missingBody(response: Promise<Response>, missingId: string, id: string): Promise<string> {
  return (await (await response).text()).replaceAll(missingId, id);
}

/** Opens a WebSocket to the run's events: `{ status }` when the upgrade is refused, else the frames it got. */
export function openSocket(
  base: string,
  runId: string,
  caller: Caller,
  after = 0,
): Promise<{ status: number; frames: unknown[] }> {
  const token = caller === 'none' ? '' : `&access_token=${TOKEN_OF[caller]}`;
  const url = `${base.replace('http', 'ws')}/runs/${runId}/events?after=${after}${token}`;
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url);
    const frames: unknown[] = [];
    socket.on('unexpected-response', (_req, res) => {
      resolve({ status: res.statusCode ?? 0, frames });
      socket.terminate();
    });
    socket.on('message', (data: Buffer) => {
      frames.push(JSON.parse(data.toString()));
      // Enough to prove the stream flows; the run may be long.
      if (frames.length >= 3) socket.close();
    });
    socket.on('close', () => resolve({ status: 101, frames }));
    socket.on('error', reject);
  });
}

/** The refusal of a route that starts work, to the owner over her limit: 429, `Retry-After`, the typed body. */
async function expectOverLimit(response: Response): Promise<void> {
  expect(response.status).toBe(429);
  expect(response.headers.get('retry-after')).toBe('1');
  expect(await response.json()).toEqual({
    error: {
      code: 'too_many_runs',
      message: 'too many runs at once: 0 of 0 running; retry when one ends',
      limit: 'concurrentRuns',
      used: 0,
      allowed: 0,
      retryAfterMs: 1000,
    },
  });
}

/** /chat and /ag-ui start a run: 401, 501 where not served, 404 to another, 429 over a limit, else 200. */
function frontEndStatus(h: Harness, caller: Caller): number {
  if (caller === 'none') return 401;
  if (!h.frontEnds) return 501;
  return { other: 404, owner: 200, over: 429 }[caller];
}

/** One route's case: what `caller` does and what must hold after. */
export interface RouteCase {
  readonly route: string;
  run(h: Harness, caller: Caller, id: string): Promise<void>;
}

export const ROUTES: readonly RouteCase[] = [
  {
    route: 'POST /threads/:id/runs',
    async run(h, caller, id) {
      const runId = await h.finishedThread(id);
      const before = await aliceReads(h, id);
      const response = await post(h.base, `/threads/${id}/runs`, caller, { input: 'more' });
      const expected = { none: 401, other: 404, owner: 201, over: 429 }[caller];
      expect(response.status).toBe(expected);
      if (caller === 'over') await expectOverLimit(response);
      if (caller !== 'owner') {
        const after = await aliceReads(h, id);
        expect(after.activeRunId).toBeNull(); // nothing started
        expect(after.messages).toEqual(before.messages);
        expect(runId).toBeTruthy();
        expect(await h.runsOf(id)).toBe(1); // nothing queued or registered beyond alice's own run
      }
    },
  },
  {
    route: 'GET /threads/:id',
    async run(h, caller, id) {
      await h.finishedThread(id);
      const response = await get(h.base, `/threads/${id}`, caller);
      if (caller === 'none') return void expect(response.status).toBe(401);
      expect(response.status).toBe(200);
      const body = (await response.json()) as { messages: unknown[] };
      if (caller === 'other') {
        // Exactly what a thread that does not exist reads as.
        const missing = await missingBody(get(h.base, `/threads/${id}-missing`, 'other'), `${id}-missing`, id);
        expect(JSON.stringify(body)).toBe(missing);
        expect(body.messages).toEqual([]);
      } else expect(body.messages.length).toBeGreaterThan(0);
    },
  },
  {
    route: 'GET /threads',
    async run(h, caller, id) {
      await h.finishedThread(id);
      const response = await get(h.base, `/threads?limit=1000`, caller);
      if (caller === 'none') return void expect(response.status).toBe(401);
      expect(response.status).toBe(200);
      const { threads } = (await response.json()) as { threads: { threadId: string }[] };
      const ids = threads.map((t) => t.threadId);
      if (caller === 'other') expect(ids).not.toContain(id);
      else expect(ids).toContain(id);
    },
  },
  {
    route: 'GET /runs/:id/events (SSE, Node adapter and Fetch, fresh and resumed)',
    async run(h, caller, id) {
      const runId = await h.finishedThread(id);
      for (const lastEventId of [undefined, '2']) {
        const extra: Record<string, string> = lastEventId === undefined ? {} : { 'last-event-id': lastEventId };
        const viaNode = await get(h.base, `/runs/${runId}/events`, caller, extra);
        const viaFetch = await h.fetch(
          new Request(`http://api.test/runs/${runId}/events`, { headers: headers(caller, extra) }),
        );
        for (const response of [viaNode, viaFetch]) {
          const expected = { none: 401, other: 404, owner: 200, over: 200 }[caller];
          expect(response.status).toBe(expected);
          const text = await response.text();
          if (caller === 'other') {
            const missing = await missingBody(get(h.base, `/runs/no-such-run/events`, 'other'), 'no-such-run', runId);
            expect(text).toBe(missing);
          }
          if (caller === 'owner' || caller === 'over') expect(text).toContain('event: end');
          else expect(text).not.toContain('agent_start');
        }
      }
    },
  },
  {
    route: 'GET /runs/:id/events (WebSocket, fresh and resumed)',
    async run(h, caller, id) {
      const runId = await h.finishedThread(id);
      for (const after of [0, 2]) {
        const { status, frames } = await openSocket(h.base, runId, caller, after);
        expect(status).toBe({ none: 401, other: 404, owner: 101, over: 101 }[caller]);
        if (caller === 'owner' || caller === 'over') expect(frames.length).toBeGreaterThan(0);
        else expect(frames).toEqual([]);
      }
    },
  },
  {
    route: 'DELETE /runs/:id',
    async run(h, caller, id) {
      const runId = await h.liveRun(id);
      const response = await fetch(`${h.base}/runs/${runId}`, { method: 'DELETE', headers: headers(caller) });
      expect(response.status).toBe({ none: 401, other: 404, owner: 202, over: 202 }[caller]);
      if (caller === 'other') {
        const missing = await missingBody(
          fetch(`${h.base}/runs/no-such-run`, { method: 'DELETE', headers: headers('other') }),
          'no-such-run',
          runId,
        );
        expect(await response.text()).toBe(missing);
      }
      if (caller === 'none' || caller === 'other') {
        // The run goes on: still the thread's active run, and alice can still cancel it.
        expect((await aliceReads(h, id)).activeRunId).toBe(runId);
        const own = await fetch(`${h.base}/runs/${runId}`, { method: 'DELETE', headers: headers('owner') });
        expect(await own.json()).toEqual({ runId, cancelled: true });
      } else expect(await response.json()).toEqual({ runId, cancelled: true });
    },
  },
  {
    route: 'POST /threads/:id/approvals/:requestId',
    async run(h, caller, id) {
      const requestId = await h.suspendedThread(id);
      const response = await post(h.base, `/threads/${id}/approvals/${requestId}`, caller, { approve: true });
      expect(response.status).toBe({ none: 401, other: 409, owner: 200, over: 429 }[caller]);
      if (caller === 'over') await expectOverLimit(response);
      if (caller === 'other') {
        // Exactly what an answer to a request that does not exist gets.
        const missing = await missingBody(
          post(h.base, `/threads/${id}/approvals/no-such-request`, 'owner', { approve: true }),
          'no-such-request',
          requestId,
        );
        expect(await response.text()).toBe(missing);
      }
      if (caller !== 'owner') {
        const thread = await aliceReads(h, id);
        expect(thread.pending).toEqual([expect.objectContaining({ requestId })]); // not applied
        expect(thread.activeRunId).toBeNull();
        expect(await h.runsOf(id)).toBe(1); // the run that asked; no run answered it
      }
    },
  },
  {
    route: 'POST /chat',
    async run(h, caller, id) {
      await h.finishedThread(id);
      const before = await aliceReads(h, id);
      const response = await post(h.base, '/chat', caller, {
        id,
        messages: [{ id: 'm1', role: 'user', parts: [{ type: 'text', text: 'hello' }] }],
      });
      const expected = frontEndStatus(h, caller);
      expect(response.status).toBe(expected);
      if (expected === 429) await expectOverLimit(response);
      else await response.text();
      if (caller !== 'owner') {
        expect((await aliceReads(h, id)).messages).toEqual(before.messages);
        expect(await h.runsOf(id)).toBe(1);
      }
    },
  },
  {
    route: 'POST /ag-ui',
    async run(h, caller, id) {
      await h.finishedThread(id);
      const before = await aliceReads(h, id);
      const response = await post(h.base, '/ag-ui', caller, {
        threadId: id,
        runId: 'r',
        messages: [{ id: 'm1', role: 'user', content: 'hello' }],
        tools: [],
        context: [],
        state: {},
        forwardedProps: {},
      });
      const expected = frontEndStatus(h, caller);
      expect(response.status).toBe(expected);
      if (expected === 429) await expectOverLimit(response);
      else await response.text();
      if (caller !== 'owner') {
        expect((await aliceReads(h, id)).messages).toEqual(before.messages);
        expect(await h.runsOf(id)).toBe(1);
      }
    },
  },
  {
    route: 'GET /chat/:id/stream',
    async run(h, caller, id) {
      await h.liveRun(id);
      const response = await get(h.base, `/chat/${id}/stream`, caller);
      // A resume only reads: the owner over her limit gets it too.
      const expected = caller === 'none' ? 401 : !h.frontEnds ? 501 : caller === 'other' ? 204 : 200;
      expect(response.status).toBe(expected);
      await response.body?.cancel();
    },
  },
];

/** Every (route, caller) pair, for `it.each`. */
export const MATRIX: readonly [string, Caller, RouteCase][] = ROUTES.flatMap((c) =>
  CALLERS.map((caller) => [c.route, caller, c] as [string, Caller, RouteCase]),
);
