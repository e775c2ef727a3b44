// cubepi/react in a real React app: test/react/app.mjs bundled by esbuild, served next to a createAgentServer with
// FauxProvider agents, driven in a headless Chromium. useThread streams a run's messages in, answers an approval with
// approve(), stop() cancels the run on the server, and unmounting cancels the component's own run but not a run it
// only watched. useRun watches another client's run to its end (one stream per mount in StrictMode), its stop()
// cancels it and unmounting does not. When the SSE stream is cut mid-run, useThread and useRun show `reconnecting`,
// resume from Last-Event-ID and end with the stored answer, no delta lost or repeated. useObservable (in StrictMode)
// subscribes once, never shows two values in one commit while the source emits during concurrent renders, and
// unsubscribes on unmount.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import type { BrowserContext, Page } from 'playwright-core';
import { lastValueFrom, toArray } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent, MemoryCheckpointer, ToolGuard } from 'cubepi';
import { fromAgentEvents, getThread, runEventsUrl, startRun, type SequencedEvent } from 'cubepi/client';
import { createAgentServer, toNodeListener, type AgentServer } from 'cubepi/server';
import { ANSWER, lookup, scriptedProvider } from '../server/serve-helpers.js';
import { haveChromium, launchChromium, requireChromium } from '../chromium.js';

const here = fileURLToPath(new URL('.', import.meta.url));

requireChromium('the cubepi/react browser test');

const HTML = '<!doctype html><meta charset="utf-8"><div id="root"></div><script type="module" src="/app.js"></script>';

describe.skipIf(!haveChromium)('cubepi/react in a headless Chromium', () => {
  let http: Server;
  let server: AgentServer;
  let origin = '';
  let context: BrowserContext;
  let dir = '';
  /** Event-stream requests of the page, per run id; its open event streams; its resumes and those held back. */
  const pageStreams = new Map<string, number>();
  const openStreams = new Set<ServerResponse>();
  const resumes: { runId: string; after: number }[] = [];
  let holding = false;
  let held: (() => void)[] = [];

  /** Cuts every event stream the page has open (their sockets destroyed mid-response) and holds its resumes. */
  const cutStreams = () => {
    holding = true;
    for (const response of openStreams) response.socket?.destroy();
  };
  const releaseResumes = () => {
    holding = false;
    for (const go of held) go();
    held = [];
  };

  beforeAll(async () => {
    const bundle = await esbuild.build({
      entryPoints: [join(here, 'app.mjs')],
      bundle: true,
      write: false,
      format: 'esm',
      platform: 'browser',
      target: 'es2022',
      define: { 'process.env.NODE_ENV': '"development"' },
      logLevel: 'warning',
    });
    const app = bundle.outputFiles[0]!.text;
    const checkpointer = new MemoryCheckpointer();
    // Threads named `ask-…` hold `lookup` for approval; `slow-…` stream slowly enough to be stopped mid-answer.
    server = createAgentServer({
      flushMs: 0,
      agent: (threadId) =>
        new Agent({
          provider: scriptedProvider(threadId.startsWith('slow-') ? 10 : 2, 5),
          model: 'faux',
          tools: [lookup],
          checkpointer,
          threadId,
          ...(threadId.startsWith('ask-')
            ? { middleware: [new ToolGuard({ policy: ToolGuard.byName({ ask: ['lookup'] }) })] }
            : {}),
        }),
    });
    const api = toNodeListener(server);
    http = createServer((request, response) => {
      const events = /^\/runs\/([^/?]+)\/events/.exec(request.url ?? '');
      if (events !== null && (request.headers['user-agent'] ?? '').includes('Chrome')) {
        // The page's run streams: counted per run, open ones kept so a test can cut them, resumes held on request.
        const runId = decodeURIComponent(events[1]!);
        pageStreams.set(runId, (pageStreams.get(runId) ?? 0) + 1);
        openStreams.add(response);
        response.on('close', () => openStreams.delete(response));
        const resumeFrom = request.headers['last-event-id'];
        if (resumeFrom !== undefined) {
          resumes.push({ runId, after: Number(resumeFrom) });
          if (holding) {
            held.push(() => void api(request, response));
            return;
          }
        }
      }
      if (request.url === '/' || request.url === '/app.js') {
        const js = request.url === '/app.js';
        response.writeHead(200, { 'content-type': js ? 'text/javascript' : 'text/html' });
        response.end(js ? app : HTML);
        return;
      }
      void api(request, response);
    });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
    dir = mkdtempSync(join(tmpdir(), 'cubepi-react-'));
    context = await launchChromium(join(dir, 'chromium'));
  }, 120_000);

  afterAll(async () => {
    await context?.close();
    server?.close();
    http?.closeAllConnections();
    await new Promise<void>((resolve) => (http ? http.close(() => resolve()) : resolve()));
    if (dir !== '') rmSync(dir, { recursive: true, force: true });
  });

  async function open(): Promise<{ page: Page; problems: string[] }> {
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
    await page.goto(`${origin}/`);
    await page.waitForFunction('window.ready === true');
    return { page, problems };
  }

  /** The run's events replayed from the server from its start, to its end. */
  const replay = (runId: string) =>
    lastValueFrom(fromAgentEvents(runEventsUrl(origin, runId)).pipe(toArray()), { defaultValue: [] });
  const outcome = async (runId: string) => {
    const events: SequencedEvent[] = await replay(runId);
    return events.find((event) => event.type === 'agent_end')?.outcome;
  };

  it('useObservable subscribes once per component in StrictMode, never tears under concurrent renders, and unsubscribes on unmount', async () => {
    const { page, problems } = await open();
    await page.evaluate('window.observable()');
    await page.waitForFunction('window.counts.commits > 0');
    // Values emitted while transitions render 40 slow children (each render yields to the emitting timer).
    await page.evaluate(`new Promise((resolve) => {
      let value = 0;
      const timer = setInterval(() => {
        window.emitValue(value++);
        if (value % 5 === 0) window.nextRound();
        if (value === 60) { clearInterval(timer); resolve(); }
      }, 3);
    })`);
    await page.waitForFunction(`[...document.querySelectorAll('.value')].every((node) => node.textContent === '59')`);
    const counts = await page.evaluate<Record<string, number>>('window.counts');
    // One subscription per component (40), not two: StrictMode's mount-unmount-mount kept the first.
    expect(counts.subscribed).toBe(40);
    expect(counts.active).toBe(40);
    expect(counts.torn).toBe(0);
    expect(counts.commits).toBeGreaterThan(1);
    await page.evaluate('window.unmount()');
    await page.waitForFunction('window.counts.active === 0');
    expect(problems).toEqual([]);
    await page.close();
  }, 90_000);

  it('useThread streams the answer in, token by token, and the thread ends idle', async () => {
    const { page, problems } = await open();
    await page.evaluate(`window.mount('stream-1')`);
    await page.waitForFunction(`window.view?.status === 'idle'`);
    await page.evaluate(`window.view.send('Define cube')`);
    await page.waitForFunction(`window.view.status === 'idle' && window.runIds.length === 1`, undefined, {
      timeout: 60_000,
    });
    const lengths = await page.evaluate<number[]>('window.lengths');
    expect(lengths.length).toBeGreaterThan(5); // many renders of a growing answer, not one at the end
    const text = await page.evaluate<string>(`window.view.messages.at(-1).content.map((b) => b.text ?? '').join('')`);
    expect(text).toContain(ANSWER);
    const roles = await page.evaluate<string[]>('window.view.messages.map((m) => m.role)');
    expect(roles).toEqual(['user', 'assistant', 'toolResult', 'assistant']);
    expect(problems).toEqual([]);
    await page.close();
  }, 90_000);

  it('a held call shows in pendingApprovals; approve() resumes the run to its answer', async () => {
    const { page, problems } = await open();
    await page.evaluate(`window.mount('ask-1')`);
    await page.waitForFunction(`window.view?.status === 'idle'`);
    await page.evaluate(`window.view.send('Define cube')`);
    await page.waitForFunction(
      `window.view.pendingApprovals.length === 1 && window.view.status === 'idle'`,
      undefined,
      {
        timeout: 60_000,
      },
    );
    expect(await page.evaluate('window.view.pendingApprovals[0].toolName')).toBe('lookup');
    await page.evaluate('window.view.pendingApprovals[0].approve()');
    // The resumed run is quick: its runId may come and go within one commit, so wait on what it leaves.
    await page.waitForFunction(
      `window.view.status === 'idle' && window.view.pendingApprovals.length === 0 &&
        (window.view.messages.at(-1).content ?? []).some((b) => b.type === 'text' && b.text.includes('Satz 119'))`,
      undefined,
      { timeout: 60_000 },
    );
    const roles = await page.evaluate<string[]>('window.view.messages.map((m) => m.role)');
    expect(roles).toEqual(['user', 'assistant', 'toolResult', 'assistant']);
    expect((await getThread(origin, 'ask-1')).pending).toEqual([]);
    expect(problems).toEqual([]);
    await page.close();
  }, 90_000);

  it('stop() cancels the streaming run on the server; its final events still reach the view', async () => {
    const { page, problems } = await open();
    await page.evaluate(`window.mount('slow-stop')`);
    await page.waitForFunction(`window.view?.status === 'idle'`);
    await page.evaluate(`window.view.send('Define cube')`);
    await page.waitForFunction('window.lengths.length > 3', undefined, { timeout: 60_000 });
    await page.evaluate('window.view.stop()');
    await page.waitForFunction(`window.view.status === 'idle'`, undefined, { timeout: 30_000 });
    const [runId] = await page.evaluate<string[]>('window.runIds');
    expect(await outcome(runId!)).toBe('cancelled');
    expect(await page.evaluate('window.view.messages.at(-1).stopReason')).toBe('aborted');
    expect(problems).toEqual([]);
    await page.close();
  }, 90_000);

  it('unmounting cancels the run the component started', async () => {
    const { page, problems } = await open();
    await page.evaluate(`window.mount('slow-unmount')`);
    await page.waitForFunction(`window.view?.status === 'idle'`);
    await page.evaluate(`window.view.send('Define cube')`);
    await page.waitForFunction('window.lengths.length > 3', undefined, { timeout: 60_000 });
    const [runId] = await page.evaluate<string[]>('window.runIds');
    await page.evaluate('window.unmount()');
    expect(await outcome(runId!)).toBe('cancelled');
    expect((await getThread(origin, 'slow-unmount')).activeRunId).toBeNull();
    expect(problems).toEqual([]);
    await page.close();
  }, 90_000);

  it("unmounting leaves a run it only watched (another client's) running to its end", async () => {
    const { page, problems } = await open();
    // Another client's run, already streaming when the component mounts.
    const others = lastValueFrom(startRun(origin, 'slow-other', 'Define cube').pipe(toArray()));
    await expect
      .poll(async () => (await getThread(origin, 'slow-other')).activeRunId, { timeout: 30_000 })
      .not.toBeNull();
    await page.evaluate(`window.mount('slow-other')`);
    await page.waitForFunction(`window.view?.status === 'running' && window.lengths.length > 2`, undefined, {
      timeout: 60_000,
    });
    await page.evaluate('window.unmount()');
    const events = await others;
    expect(events.at(-1)).toMatchObject({ type: 'agent_end', outcome: 'completed' });
    expect(problems).toEqual([]);
    await page.close();
  }, 90_000);
  /** Another client's run on `threadId`, already streaming: its events (to its end) and its run id. */
  async function othersRun(threadId: string): Promise<{ events: Promise<SequencedEvent[]>; runId: string }> {
    const events = lastValueFrom(startRun(origin, threadId, 'Define cube').pipe(toArray()));
    let runId: string | null = null;
    await expect
      .poll(async () => (runId = (await getThread(origin, threadId)).activeRunId), { timeout: 30_000 })
      .not.toBeNull();
    return { events, runId: runId! };
  }
  /** The text of the last assistant message the server stored on `threadId`. */
  const storedAnswer = async (threadId: string) => {
    const last = (await getThread(origin, threadId)).messages.at(-1)!;
    return last.role === 'assistant' ? last.content.map((b) => (b.type === 'text' ? b.text : '')).join('') : '';
  };
  const runText = `window.run.messages.at(-1).content.map((b) => b.text ?? '').join('')`;

  it("useRun watches another client's run to its end, with one stream per mount in StrictMode", async () => {
    const { page, problems } = await open();
    const { events, runId } = await othersRun('slow-watch');
    await page.evaluate(`window.mountRun(${JSON.stringify(runId)}, 'slow-watch')`);
    await page.waitForFunction(`window.run?.status === 'done'`, undefined, { timeout: 60_000 });
    expect((await events).at(-1)).toMatchObject({ type: 'agent_end', outcome: 'completed' });
    expect(await page.evaluate('window.run.outcome')).toBe('completed');
    expect(await page.evaluate<string[]>('window.runStatuses')).toEqual(['connecting', 'running', 'done']);
    expect(await page.evaluate<number>('window.runLengths.length')).toBeGreaterThan(5); // streamed, not at the end
    const roles = await page.evaluate<string[]>('window.run.messages.map((m) => m.role)');
    expect(roles).toEqual(['user', 'assistant', 'toolResult', 'assistant']);
    expect(await page.evaluate<string>(runText)).toBe(await storedAnswer('slow-watch'));
    // StrictMode mounted, unmounted and mounted again: the page opened the run's stream once.
    expect(pageStreams.get(runId)).toBe(1);
    expect(problems).toEqual([]);
    await page.close();
  }, 90_000);

  it("useRun's stop() cancels the run on the server; unmounting does not", async () => {
    const { page, problems } = await open();
    const stopped = await othersRun('slow-run-stop');
    await page.evaluate(`window.mountRun(${JSON.stringify(stopped.runId)}, 'slow-run-stop')`);
    await page.waitForFunction('window.runLengths.length > 3', undefined, { timeout: 60_000 });
    await page.evaluate('window.run.stop()');
    await page.waitForFunction(`window.run.status === 'done'`, undefined, { timeout: 30_000 });
    expect(await page.evaluate('window.run.outcome')).toBe('cancelled');
    expect((await stopped.events).at(-1)).toMatchObject({ type: 'agent_end', outcome: 'cancelled' });
    expect(await outcome(stopped.runId)).toBe('cancelled');
    await page.close();

    const second = await open();
    const watched = await othersRun('slow-run-leave');
    await second.page.evaluate(`window.mountRun(${JSON.stringify(watched.runId)}, 'slow-run-leave')`);
    await second.page.waitForFunction(`window.run?.status === 'running' && window.runLengths.length > 1`, undefined, {
      timeout: 60_000,
    });
    await second.page.evaluate('window.unmount()');
    // The page's stream closed with the component, and the run went on to its end.
    await expect.poll(() => openStreams.size, { timeout: 30_000 }).toBe(0);
    expect((await getThread(origin, 'slow-run-leave')).activeRunId).toBe(watched.runId);
    expect((await watched.events).at(-1)).toMatchObject({ type: 'agent_end', outcome: 'completed' });
    expect([...problems, ...second.problems]).toEqual([]);
    await second.page.close();
  }, 90_000);

  it('a cut stream shows reconnecting in useThread, resumes from Last-Event-ID, and ends idle with the stored answer', async () => {
    const { page, problems } = await open();
    await page.evaluate(`window.mount('slow-cut')`);
    await page.waitForFunction(`window.view?.status === 'idle'`);
    await page.evaluate(`window.view.send('Define cube')`);
    await page.waitForFunction('window.lengths.length > 3', undefined, { timeout: 60_000 });
    const [runId] = await page.evaluate<string[]>('window.runIds');
    const before = resumes.length;
    cutStreams();
    await page.waitForFunction(`window.view.status === 'reconnecting'`, undefined, { timeout: 30_000 });
    await expect.poll(() => held.length, { timeout: 30_000 }).toBe(1);
    releaseResumes();
    await page.waitForFunction(`window.view.status === 'idle'`, undefined, { timeout: 60_000 });
    const resumed = resumes.slice(before);
    expect(resumed).toHaveLength(1);
    expect(resumed[0]!.runId).toBe(runId);
    expect(resumed[0]!.after).toBeGreaterThan(0);
    const statuses = await page.evaluate<string[]>('window.statuses');
    expect(statuses.slice(-4)).toEqual(['running', 'reconnecting', 'running', 'idle']);
    const text = await page.evaluate<string>(`window.view.messages.at(-1).content.map((b) => b.text ?? '').join('')`);
    expect(text).toBe(await storedAnswer('slow-cut'));
    expect(text).toContain(ANSWER);
    expect(await outcome(runId!)).toBe('completed');
    expect(problems).toEqual([]);
    await page.close();
  }, 90_000);

  it('a cut stream shows reconnecting in useRun, resumes from Last-Event-ID, and ends done with the stored answer', async () => {
    const { page, problems } = await open();
    const { events, runId } = await othersRun('slow-run-cut');
    await page.evaluate(`window.mountRun(${JSON.stringify(runId)}, 'slow-run-cut')`);
    await page.waitForFunction('window.runLengths.length > 3', undefined, { timeout: 60_000 });
    const before = resumes.length;
    cutStreams();
    await page.waitForFunction(`window.run.status === 'reconnecting'`, undefined, { timeout: 30_000 });
    await expect.poll(() => held.length, { timeout: 30_000 }).toBe(1);
    releaseResumes();
    await page.waitForFunction(`window.run.status === 'done'`, undefined, { timeout: 60_000 });
    expect(resumes.slice(before)).toEqual([{ runId, after: expect.any(Number) as number }]);
    expect(resumes.at(-1)!.after).toBeGreaterThan(0);
    expect(await page.evaluate<string[]>('window.runStatuses')).toEqual([
      'connecting',
      'running',
      'reconnecting',
      'running',
      'done',
    ]);
    await events;
    const text = await page.evaluate<string>(runText);
    expect(text).toBe(await storedAnswer('slow-run-cut'));
    expect(text).toContain(ANSWER);
    expect(pageStreams.get(runId)).toBe(2);
    expect(problems).toEqual([]);
    await page.close();
  }, 90_000);
});
