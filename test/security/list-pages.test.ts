// GET /threads pages through cubepi/client's listThreadPage: with an `authorize` that decides thread by thread, a
// page can be short or empty and still have more after it; following `nextCursor` finds every visible thread once.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent, MemoryCheckpointer } from 'cubepi';
import { bearerToken, createAgentServer, ownerOnly, toNodeListener, type AgentServer } from 'cubepi/server';
import { lastValueFrom } from 'rxjs';
import { listThreadPage, listThreads, startRun } from 'cubepi/client';
import { FauxProvider, fauxMessage } from 'cubepi/testing';

const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789ab';

describe('listThreadPage', () => {
  let server: AgentServer;
  let http: Server;
  let base: string;
  const asked: string[] = [];

  beforeAll(async () => {
    const checkpointer = new MemoryCheckpointer();
    server = createAgentServer({
      agent: (threadId) =>
        new Agent({
          provider: new FauxProvider({ responses: [fauxMessage('ok')] }),
          model: 'faux',
          checkpointer,
          threadId,
        }),
      checkpointer,
      authenticate: bearerToken({ [ALICE]: 'alice', [BOB]: 'bob' }),
      // The default rule, as a function of its own: the server then asks it about each thread of a page.
      authorize: (principal, action, resource) => {
        if (action === 'list_threads' && resource.type === 'thread') asked.push(resource.threadId);
        return ownerOnly(principal, action, resource);
      },
    });
    http = createServer(toNodeListener(server));
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(http.address() as AddressInfo).port}/`;
    // Alice's threads are a1..a3, Bob's b1..b5, created so that Bob's fill whole pages between Alice's.
    for (const [threadId, token] of [
      ['a1', ALICE],
      ['b1', BOB],
      ['b2', BOB],
      ['a2', ALICE],
      ['b3', BOB],
      ['b4', BOB],
      ['b5', BOB],
      ['a3', ALICE],
    ] as const) {
      await lastValueFrom(startRun(base, threadId, 'hi', { token }));
    }
  });

  afterAll(async () => {
    server.close();
    await new Promise((resolve) => http.close(resolve));
  });

  it('follows nextCursor through short and empty pages to every thread the caller may see, and only those', async () => {
    const pages: string[][] = [];
    let after: string | undefined;
    for (;;) {
      const page = await listThreadPage(base, { token: ALICE, limit: 2, ...(after !== undefined ? { after } : {}) });
      pages.push(page.threads.map((thread) => thread.threadId));
      if (page.nextCursor === null) break;
      after = page.nextCursor;
    }
    expect(pages.flat().sort()).toEqual(['a1', 'a2', 'a3']);
    // A page of Bob's threads only is empty for Alice, and the list goes on after it.
    expect(pages.some((page) => page.length === 0)).toBe(true);
    expect(asked.length).toBeGreaterThanOrEqual(8);
    // listThreads is the first page's threads.
    expect((await listThreads(base, { token: BOB, limit: 100 })).map((t) => t.threadId).sort()).toEqual([
      'b1',
      'b2',
      'b3',
      'b4',
      'b5',
    ]);
  });
});
