// The browser-safe entries as a browser gets them: each bundled by esbuild for the browser from the built package
// (failing on any Node built-in), the size of `import { Agent } from 'cubepi'` recorded, and an agent run in a headless
// Chromium, its events rendered into the page. docs/install.md reports the sizes.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { execFile } from 'node:child_process';
import { gzipSync } from 'node:zlib';
import * as esbuild from 'esbuild';
import type { BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haveChromium, launchChromium, requireChromium } from './chromium.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  exports: Record<string, { default: string }>;
};

const BROWSER_ENTRIES = [
  'cubepi',
  'cubepi/operators',
  'cubepi/testing',
  'cubepi/providers/kit',
  'cubepi/tracing',
  'cubepi/client',
] as const;

/**
 * Budgets for `import { Agent } from 'cubepi'`, minified and tree-shaken, in bytes, about 25% above what was measured
 * when they were set (docs/install.md has the measurements): cubepi's own code (rxjs and zod external), and with the
 * rxjs it uses bundled (zod external: an app that defines tools pays for zod itself, and `import { z } from 'zod'`
 * is ~450 kB minified whatever cubepi does). Raise them on purpose, never to make a test pass.
 *
 * Raised once, on purpose, by issue 17 (decisions, run state and patches, durable approvals, lifecycle hooks are part
 * of every Agent): 54.3 → 71.6 kB own code, 76.8 → 94.4 kB with rxjs. Raised again, on purpose, by issue 36 (the
 * provider boundary is checked on every model call — the stream guard and the full check of an assistant message —
 * and tool calls are stored before they run): measured 88.7 kB own code, 111.5 kB with rxjs. Raised again, on
 * purpose, by issue 30 (typed answers planned per model and validated, reasoning resolved per attempt, file blocks
 * checked and stored blobs resolved before a request: ~19 kB of new modules every Agent runs): measured 114.6 kB own
 * code, 137.9 kB with rxjs.
 */
const BUDGET = { ownCode: 143_000, withRxjs: 172_000 };

beforeAll(async () => {
  // `npm test` builds first; a lone `vitest run` builds here.
  if (!existsSync(join(root, 'dist/src/index.js'))) {
    await promisify(execFile)('npm', ['run', 'build'], { cwd: root });
  }
}, 180_000);

/** Resolves `cubepi` and its subpaths through package.json's exports, to the built files (as an app would). */
const cubepiFromDist: esbuild.Plugin = {
  name: 'cubepi-from-dist',
  setup(build) {
    build.onResolve({ filter: /^cubepi(\/.*)?$/ }, (args) => {
      const target = pkg.exports[`.${args.path.slice('cubepi'.length)}`];
      if (target === undefined) return { errors: [{ text: `cubepi has no export ${args.path}` }] };
      return { path: join(root, target.default) };
    });
  },
};

/** Fails the build on any import of a Node built-in (`node:x`, or a bare `fs`, `path`, …), naming the importer. */
const noNodeBuiltins: esbuild.Plugin = {
  name: 'no-node-builtins',
  setup(build) {
    build.onResolve({ filter: /.*/ }, (args) => {
      const name = args.path.startsWith('node:') ? args.path.slice(5) : args.path;
      if (!args.path.startsWith('node:') && !builtinModules.includes(name.split('/')[0]!)) return undefined;
      return { errors: [{ text: `Node built-in "${args.path}" imported by ${relative(root, args.importer)}` }] };
    });
  },
};

async function bundle(contents: string, options: esbuild.BuildOptions = {}): Promise<string> {
  const result = await esbuild.build({
    stdin: { contents, resolveDir: root, sourcefile: 'entry.js', loader: 'js' },
    bundle: true,
    write: false,
    platform: 'browser',
    format: 'esm',
    target: 'es2022',
    logLevel: 'silent',
    plugins: [noNodeBuiltins, cubepiFromDist],
    ...options,
  });
  return result.outputFiles![0]!.text;
}

function kB(bytes: number): string {
  return `${(bytes / 1024).toFixed(1)} kB`;
}

describe('bundled for the browser', () => {
  it.each(BROWSER_ENTRIES)('%s bundles with platform browser and imports no Node built-in', async (entry) => {
    const code = await bundle(`export * from '${entry}';`);
    expect(code.length).toBeGreaterThan(1000);
  });

  it('refuses an entry that imports a Node built-in (the check works)', async () => {
    const failure = (await bundle(`export * from 'cubepi/checkpoint/sqlite';`).catch((e: unknown) => e)) as {
      errors?: { text: string }[];
    };
    expect(failure.errors?.map((e) => e.text)).toContainEqual(
      expect.stringMatching(/^Node built-in "(node:)?[a-z_/]+" imported by (.*\/)?node_modules\/better-sqlite3\//),
    );
  });

  it("records the minified size of import { Agent } from 'cubepi': cubepi's own code, with rxjs, with zod too", async () => {
    const entry = `export { Agent } from 'cubepi';`;
    const measure = async (external: string[]) => {
      const code = await bundle(entry, { minify: true, external });
      return { minified: code.length, gzip: gzipSync(code).length };
    };
    const [ownCode, withRxjs, withZod] = await Promise.all([
      measure(['rxjs', 'rxjs/*', 'zod', 'zod/*']),
      measure(['zod', 'zod/*']),
      measure([]),
    ]);
    const show = (size: { minified: number; gzip: number }) => `${kB(size.minified)} (${kB(size.gzip)} gzip)`;
    console.log(
      `import { Agent } from 'cubepi', minified: cubepi's own code ${show(ownCode)}; with rxjs ${show(withRxjs)}; ` +
        `with rxjs and zod ${show(withZod)}. Budgets: ${kB(BUDGET.ownCode)}, ${kB(BUDGET.withRxjs)}.`,
    );
    expect(ownCode.minified).toBeLessThan(BUDGET.ownCode);
    expect(withRxjs.minified).toBeLessThan(BUDGET.withRxjs);
  });
});

requireChromium('the Chromium smoke test');

/** The page's script: an agent with a tool, its events rendered as list items, the outcome on <body>. */
const PAGE_SCRIPT = `
import { Agent, defineTool } from 'cubepi';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { z } from 'zod';

const list = document.querySelector('#events');
const weather = defineTool({
  name: 'weather',
  description: 'Current weather for a city',
  parameters: z.object({ city: z.string(), unit: z.enum(['C', 'F']).default('C') }),
  execute: async (_id, { city, unit }, { signal }) => {
    signal.throwIfAborted();
    return { content: [{ type: 'text', text: city + ': 18 °' + unit }] };
  },
});
const agent = new Agent({
  provider: new FauxProvider({
    responses: [fauxMessage([fauxToolCall('weather', { city: 'Paris' })]), fauxMessage('Sunny in Paris.')],
    delayMs: 2,
  }),
  model: 'faux',
  tools: [weather],
});
const textOf = (content) => content.map((block) => (block.type === 'text' ? block.text : '')).join('');
agent.prompt$('Weather in Paris?').subscribe({
  next: (event) => {
    if (event.type === 'message_update') return;
    const item = document.createElement('li');
    item.dataset.type = event.type;
    if (event.type === 'tool_execution_end') item.textContent = event.toolName + ': ' + textOf(event.result.content);
    if (event.type === 'message_end' && event.message.role === 'assistant') item.textContent = textOf(event.message.content);
    list.append(item);
  },
  error: (error) => {
    document.body.dataset.error = String(error && error.stack || error);
    document.body.dataset.state = 'error';
  },
  complete: () => {
    document.body.dataset.state = 'done';
  },
});
`;

describe.skipIf(!haveChromium)('in a headless Chromium', () => {
  let server: Server;
  let origin = '';
  let context: BrowserContext;
  let userDataDir = '';

  beforeAll(async () => {
    userDataDir = mkdtempSync(join(tmpdir(), 'cubepi-chromium-'));
    const script = await bundle(PAGE_SCRIPT);
    const html =
      '<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,">' +
      '<ul id="events"></ul><script type="module" src="/app.js"></script>';
    server = createServer((request, response) => {
      if (request.url === '/') response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(html);
      else if (request.url === '/app.js') response.writeHead(200, { 'content-type': 'text/javascript' }).end(script);
      else response.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    origin = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`;
    context = await launchChromium(userDataDir);
  }, 120_000);

  afterAll(async () => {
    await context?.close();
    await new Promise((resolve) => server?.close(resolve));
    if (userDataDir !== '') rmSync(userDataDir, { recursive: true, force: true });
  });

  it('runs an Agent with FauxProvider and a zod tool, rendering its events into the page', async () => {
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
    page.on('console', (message) => {
      if (message.type() === 'error' || message.type() === 'warning') problems.push(`console: ${message.text()}`);
    });
    await page.goto(`${origin}/`);
    await page.waitForSelector('body[data-state]', { timeout: 30_000 });
    // A string, evaluated in the page: the tests are type-checked without the DOM library.
    const outcome = await page.evaluate<{
      state?: string;
      error?: string;
      events: [string, string][];
      userAgent: string;
    }>(`({
      state: document.body.dataset.state,
      error: document.body.dataset.error,
      events: [...document.querySelectorAll('#events li')].map((li) => [li.dataset.type, li.textContent]),
      userAgent: navigator.userAgent,
    })`);
    console.log(`Chromium: ${outcome.userAgent}`);
    expect(problems).toEqual([]);
    expect(outcome.error).toBeUndefined();
    expect(outcome.state).toBe('done');
    const types = outcome.events.map(([type]) => type);
    expect(types[0]).toBe('agent_start');
    expect(types.at(-1)).toBe('agent_end');
    expect(types.filter((type) => type === 'turn_start')).toHaveLength(2);
    expect(types.indexOf('tool_execution_start')).toBeLessThan(types.indexOf('tool_execution_end'));
    // What the page shows: the tool's result (its zod default applied), then the model's answer.
    expect(outcome.events.filter(([, text]) => text !== '')).toEqual([
      ['tool_execution_end', 'weather: Paris: 18 °C'],
      ['message_end', 'Sunny in Paris.'],
    ]);
  }, 60_000);
});
