// The browser as an attacker (issue 37): a page on another origin, in a headless Chromium, tries what a web page can
// do to a token-less agent server on loopback (`cubepi serve --no-auth`, or any server without a token) — a
// `text/plain` POST (a simple request, no preflight), an HTML form POST, a JSON fetch (preflighted), a WebSocket to a
// run's events — and a page on a DNS name rebound to 127.0.0.1 reads a thread. None starts a run or reads anything:
// asserted on the server (no agent made, nothing stored) and in the page (no frame received).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lastValueFrom, toArray } from 'rxjs';
import { chromium, type BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRun } from 'cubepi/client';
import { CHROMIUM, haveChromium, requireChromium } from './chromium.js';
import { agentFactory, serve, type Served } from './server/serve-helpers.js';

requireChromium('the CSRF browser test');

/** What the attacker's page reports of each attempt. */
interface Attempt {
  readonly name: string;
  readonly outcome: string;
}

const ATTACK = String.raw`
<!doctype html><meta charset="utf-8"><title>a page on another origin</title>
<iframe name="sink"></iframe>
<script>
window.attack = async (target, runId) => {
  const results = [];
  // 1. A simple request: text/plain needs no preflight, and a no-cors fetch is sent whatever the server says.
  try {
    await fetch(target + '/threads/plain/runs', {
      method: 'POST', mode: 'no-cors', headers: { 'content-type': 'text/plain' }, body: '{"input":"from another origin"}',
    });
    results.push({ name: 'text/plain', outcome: 'sent' });
  } catch (e) { results.push({ name: 'text/plain', outcome: 'refused: ' + e.message }); }
  // 2. An HTML form (enctype text/plain makes its body look like JSON) posted into a frame.
  await new Promise((resolve) => {
    const frame = document.querySelector('iframe');
    frame.addEventListener('load', resolve, { once: true });
    const form = document.createElement('form');
    form.method = 'POST';
    form.enctype = 'text/plain';
    form.action = target + '/threads/form/runs';
    form.target = 'sink';
    const field = document.createElement('input');
    field.name = '{"input":"from a form","x":"';
    field.value = '"}';
    form.appendChild(field);
    document.body.appendChild(form);
    form.submit();
  });
  results.push({ name: 'form', outcome: 'submitted' });
  // 3. A JSON fetch: the browser asks first (preflight), and sends nothing when the server does not allow the origin.
  try {
    const response = await fetch(target + '/threads/json/runs', {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"input":"preflighted"}',
    });
    results.push({ name: 'json', outcome: 'status ' + response.status });
  } catch (e) { results.push({ name: 'json', outcome: 'refused' }); }
  // 4. A WebSocket to a run's events: not subject to CORS, so only the server's Origin check stands in the way.
  const frames = await new Promise((resolve) => {
    const received = [];
    const socket = new WebSocket(target.replace('http', 'ws') + '/runs/' + runId + '/events');
    socket.onmessage = (event) => received.push(event.data);
    socket.onclose = () => resolve(received.length);
  });
  results.push({ name: 'websocket', outcome: 'frames ' + frames });
  return results;
};
</script>`;

describe.skipIf(!haveChromium)('a page on another origin against a token-less server, in a headless Chromium', () => {
  let served: Served;
  let attacker: Server;
  let attackerOrigin = '';
  let context: BrowserContext;
  let dir = '';
  const factory = agentFactory();

  beforeAll(async () => {
    served = await serve({ agent: factory.agent, checkpointer: factory.checkpointer, flushMs: 0 });
    attacker = createServer((_, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(ATTACK));
    await new Promise<void>((resolve) => attacker.listen(0, '127.0.0.1', resolve));
    // Another site: `localhost` is not `127.0.0.1`, and the port differs too.
    attackerOrigin = `http://localhost:${(attacker.address() as AddressInfo).port}`;
    dir = mkdtempSync(join(tmpdir(), 'cubepi-csrf-'));
    context = await chromium.launchPersistentContext(dir, {
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        // A DNS name an attacker controls, rebound to loopback.
        '--host-resolver-rules=MAP rebind.test 127.0.0.1',
      ],
    });
  }, 120_000);

  afterAll(async () => {
    await context?.close();
    await served?.close();
    attacker?.closeAllConnections();
    await new Promise<void>((resolve) => (attacker === undefined ? resolve() : attacker.close(() => resolve())));
    if (dir !== '') rmSync(dir, { recursive: true, force: true });
  });

  it('a text/plain POST, a form POST, a JSON fetch and a WebSocket start nothing and read nothing', async () => {
    // A run of the victim's own, whose id the attacker is assumed to know.
    const own = await lastValueFrom(startRun(served.base, 'victim', 'Define cube').pipe(toArray()));
    const runId = own[0]!.runId;
    const made = factory.created.length;
    const page = await context.newPage();
    await page.goto(`${attackerOrigin}/`);
    const results = await page.evaluate<Attempt[], [string, string]>(
      ([target, id]) =>
        (globalThis as unknown as { attack(t: string, r: string): Promise<Attempt[]> }).attack(target, id),
      [served.base, runId],
    );
    expect(results.map((r) => r.name)).toEqual(['text/plain', 'form', 'json', 'websocket']);
    // On the server: no agent was made for any thread the page named, nothing was stored, no run is active.
    expect(factory.created.slice(made)).toEqual([]);
    for (const thread of ['plain', 'form', 'json']) {
      expect(await factory.checkpointer.load(thread)).toBeNull();
      expect(served.server.registry.activeRun(thread)).toBeUndefined();
    }
    expect(results.find((r) => r.name === 'json')!.outcome).toBe('refused');
    expect(results.find((r) => r.name === 'websocket')!.outcome).toBe('frames 0');
    await page.close();
  }, 60_000);

  it('a page on a DNS name rebound to 127.0.0.1 reads no thread (403)', async () => {
    await lastValueFrom(startRun(served.base, 'secret', 'Define cube').pipe(toArray()));
    const page = await context.newPage();
    const response = await page.goto(`http://rebind.test:${new URL(served.base).port}/threads/secret`);
    expect(response?.status()).toBe(403);
    const body = await page.locator('body').innerText();
    expect(body).toContain('host_not_allowed');
    expect(body).not.toContain('Define cube');
    await page.close();
  }, 60_000);
});
