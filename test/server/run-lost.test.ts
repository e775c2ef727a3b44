// A server restarted mid-run on the same SQLite file: the reconnecting client gets a typed `run_lost` with the stored
// partial state (not a bare 404), the dangling turn is closed in the thread, and the thread takes a new prompt.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { firstValueFrom, lastValueFrom, toArray } from 'rxjs';
import { WebSocket } from 'ws';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { Agent, type Message } from 'cubepi';
import { SQLiteCheckpointer } from 'cubepi/checkpoint/sqlite';
import {
  AgentServerError,
  fromAgentEvents,
  getThread,
  resumeThread,
  runEventsUrl,
  RunLostError,
  startRun,
  type RunClientOptions,
} from 'cubepi/client';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { expectConsistentTranscript, waitingTool } from '../helpers.js';
import { serve, type Served } from './serve-helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'cubepi-run-lost-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * A server on `file`: its model answers `answer` (asking for `hang`, a tool that never answers until its run is
 * cancelled, first on a thread that never called it: the process "dies" while it runs).
 */
async function serveOn(
  file: string,
  answer: string,
  hangFirst = true,
  hang = waitingTool('hang').tool,
): Promise<{ served: Served; checkpointer: SQLiteCheckpointer }> {
  const checkpointer = new SQLiteCheckpointer(file);
  const served = await serve({
    checkpointer,
    agent: (threadId) =>
      new Agent({
        provider: new FauxProvider({
          responses: [
            (messages) =>
              hangFirst && !JSON.stringify(messages).includes('"hang"')
                ? fauxMessage([fauxToolCall('hang', {})])
                : fauxMessage(answer),
            () => fauxMessage(answer),
          ],
        }),
        model: 'faux',
        tools: [hang],
        checkpointer,
        threadId,
      }),
  });
  return { served, checkpointer };
}

function expectNoTwoUsersInARow(messages: readonly Message[]): void {
  for (let i = 1; i < messages.length; i++) {
    expect(messages[i - 1]!.role === 'user' && messages[i]!.role === 'user', `messages ${i - 1}, ${i}`).toBe(false);
  }
}

const opened: Served[] = [];
afterEach(async () => {
  for (const served of opened.splice(0)) await served.close();
});

describe.each(['sse', 'websocket'] as const)('a server restarted mid-run (%s)', (transport) => {
  it('answers the lost run with run_lost and its stored state, closes the turn, and takes a new prompt', async () => {
    const file = join(dir, `${transport}.db`);
    const hang = waitingTool('hang');
    const first = await serveOn(file, 'never said', true, hang.tool);
    const options: RunClientOptions = {
      transport,
      WebSocket,
      retry: { initialDelayMs: 20, maxDelayMs: 100, maxAttempts: 2 },
    };
    // The run's first event names it; the tool then hangs, the run never ends.
    const runId = (await firstValueFrom(startRun(first.served.base, 't1', 'Do the thing', options))).runId;
    await hang.started;

    // The process "dies": its sockets close, nothing of its run is ended or stored (its agent is abandoned).
    first.served.http.closeAllConnections();
    await new Promise<void>((resolve) => first.served.http.close(() => resolve()));
    const second = await serveOn(file, 'Done after the restart.');
    opened.push(second.served);

    const url = runEventsUrl(second.served.base, runId, transport, 't1');
    const error = await lastValueFrom(fromAgentEvents(url, options).pipe(toArray())).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RunLostError);
    const lost = error as RunLostError;
    expect(lost.code).toBe('run_lost');
    expect(lost.runId).toBe(runId);
    expect(lost.threadId).toBe('t1');
    // The stored partial state: the prompt, the call the model made, its interrupted result, the closing message.
    expect(lost.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'toolResult', 'assistant']);
    expect(lost.messages[2]).toMatchObject({ role: 'toolResult', toolName: 'hang', outcome: 'interrupted' });
    expect(lost.messages[3]).toMatchObject({ role: 'assistant', stopReason: 'aborted' });

    // Watching again, after the repair, gives the same answer; an id the thread never had stays 404.
    const again = await lastValueFrom(fromAgentEvents(url, options)).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(RunLostError);
    const unknown = runEventsUrl(second.served.base, 'run_0123', transport, 't1');
    const missing = await lastValueFrom(fromAgentEvents(unknown, options)).catch((e: unknown) => e);
    if (transport === 'sse') expect(missing).toMatchObject({ status: 404, code: 'unknown_run' });
    else expect(missing).toBeInstanceOf(Error);
    expect(missing).not.toBeInstanceOf(RunLostError);

    // The thread goes on: a new prompt runs to its end on the repaired transcript.
    const events = await lastValueFrom(startRun(second.served.base, 't1', 'Try again', options).pipe(toArray()));
    expect(events[events.length - 1]).toMatchObject({ type: 'agent_end' });
    const thread = await getThread(second.served.base, 't1');
    expect(thread.activeRunId).toBeNull();
    const stored = (await second.checkpointer.load('t1'))!.messages;
    expect(stored).toEqual(thread.messages);
    expectConsistentTranscript(stored);
    expectNoTwoUsersInARow(stored);
    expect(stored.map((m) => m.role)).toEqual(['user', 'assistant', 'toolResult', 'assistant', 'user', 'assistant']);
    expect(JSON.stringify(stored[stored.length - 1])).toContain('Done after the restart.');

    first.served.server.close();
  });

  it('continues the lost run ("Continue": resumeThread) on the repaired transcript, and refuses when nothing is left', async () => {
    const file = join(dir, `${transport}-continue.db`);
    const hang = waitingTool('hang');
    const first = await serveOn(file, 'never said', true, hang.tool);
    const options: RunClientOptions = { transport, WebSocket, retry: { initialDelayMs: 20, maxAttempts: 2 } };
    const runId = (await firstValueFrom(startRun(first.served.base, 't3', 'Do the thing', options))).runId;
    await hang.started;
    first.served.http.closeAllConnections();
    await new Promise<void>((resolve) => first.served.http.close(() => resolve()));
    const second = await serveOn(file, 'Finished on the second try.');
    opened.push(second.served);
    const lost = await lastValueFrom(
      fromAgentEvents(runEventsUrl(second.served.base, runId, transport, 't3'), options),
    ).catch((e: unknown) => e);
    expect(lost).toBeInstanceOf(RunLostError);

    // No new prompt: the model answers the history as it is (the closing message is record-only, never sent).
    const events = await lastValueFrom(resumeThread(second.served.base, 't3', options).pipe(toArray()));
    expect(events[events.length - 1]).toMatchObject({ type: 'agent_end', outcome: 'completed' });
    const stored = (await second.checkpointer.load('t3'))!.messages;
    expectConsistentTranscript(stored);
    expectNoTwoUsersInARow(stored);
    expect(stored.map((m) => m.role)).toEqual(['user', 'assistant', 'toolResult', 'assistant', 'assistant']);
    expect(stored[3]).toMatchObject({ stopReason: 'aborted' });
    expect(JSON.stringify(stored[4])).toContain('Finished on the second try.');

    // The thread ends with an answer now: nothing to continue (409, no model call); both keys at once: 400.
    const refused = await lastValueFrom(resumeThread(second.served.base, 't3', options)).catch((e: unknown) => e);
    expect(refused).toMatchObject({ status: 409 });
    const both = await fetch(`${second.served.base}/threads/t3/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ input: 'x', resume: true }),
    });
    expect(both.status).toBe(400);
    expect((await second.checkpointer.load('t3'))!.messages).toHaveLength(5);
    first.served.server.close();
  });

  it('closes a run lost before its first model answer (a dangling user message)', async () => {
    const file = join(dir, `${transport}-dangling.db`);
    const checkpointer = new SQLiteCheckpointer(file);
    // What a process that died right after storing the prompt leaves: the keyed user message alone.
    await checkpointer.append('t2', [
      {
        role: 'user',
        content: 'Hello?',
        timestamp: 1,
        metadata: { 'cubepi:run': 'run_lost1' },
      },
    ]);
    const second = await serveOn(file, 'Hello!', false);
    opened.push(second.served);
    const options: RunClientOptions = { transport, WebSocket };
    const error = await lastValueFrom(
      fromAgentEvents(runEventsUrl(second.served.base, 'run_lost1', transport, 't2'), options),
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RunLostError);
    expect((error as RunLostError).messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(error).not.toBeInstanceOf(AgentServerError);
    // The server opened the thread: it knows the lost run's thread without `?thread=` now.
    const unhinted = await lastValueFrom(
      fromAgentEvents(runEventsUrl(second.served.base, 'run_lost1', transport), options),
    ).catch((e: unknown) => e);
    expect(unhinted).toBeInstanceOf(RunLostError);

    await lastValueFrom(startRun(second.served.base, 't2', 'Anyone?', options).pipe(toArray()));
    const stored = (await checkpointer.load('t2'))!.messages;
    expectConsistentTranscript(stored);
    expectNoTwoUsersInARow(stored);
    expect(stored.map((m) => m.role).slice(0, 3)).toEqual(['user', 'assistant', 'user']);
  });
});
