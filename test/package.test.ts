// The package as users get it: the built entry points, their types, and the `cubepi` command.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = fileURLToPath(new URL('..', import.meta.url));

beforeAll(async () => {
  // `npm test` builds first; a lone `vitest run` builds here.
  if (!existsSync(`${root}/dist/src/index.js`)) await run('npm', ['run', 'build'], { cwd: root });
}, 120_000);

describe('Node.js support', () => {
  const json = (path: string) => JSON.parse(readFileSync(join(root, path), 'utf8')) as Record<string, unknown>;
  const floor = (range: string): number[] => {
    const match = /^>=(\d+)\.(\d+)(?:\.(\d+))?$/.exec(range);
    if (match === null) throw new Error(`not a >=x.y range: ${range}`);
    return [Number(match[1]), Number(match[2]), Number(match[3] ?? 0)];
  };
  const atLeast = (version: number[], min: number[]) => {
    for (let i = 0; i < 3; i++) if (version[i] !== min[i]) return version[i]! > min[i]!;
    return true;
  };

  it("package.json's matrix covers every entry point, its floor is engines.node, and this Node.js satisfies each (the worker tests run on what the worker claims)", () => {
    const pkg = json('package.json') as {
      engines: { node: string };
      exports: Record<string, unknown>;
      nodeSupport: Record<string, string>;
    };
    const { '//': note, ...support } = pkg.nodeSupport;
    expect(note).toContain('docs/install.md');
    const entries = [...Object.keys(pkg.exports).filter((key) => key !== './package.json'), 'bin'];
    expect(Object.keys(support).sort()).toEqual(entries.sort());
    const floors = Object.values(support).map(floor);
    const lowest = floors.reduce((low, f) => (atLeast(f, low) ? low : f));
    expect(floor(pkg.engines.node)).toEqual(lowest);
    const running = process.versions.node.split('.').map(Number);
    for (const [entry, range] of Object.entries(support)) expect(atLeast(running, floor(range)), entry).toBe(true);
  });

  it("docs/install.md states the matrix and pg-boss's declared engines (read from the installed pg-boss)", () => {
    const doc = readFileSync(join(root, 'docs/install.md'), 'utf8');
    const section = doc.slice(doc.indexOf('## Node.js, entry by entry'), doc.indexOf('## What runs where'));
    expect(section.length).toBeGreaterThan(0);
    const pkg = json('package.json') as { exports: Record<string, unknown>; nodeSupport: Record<string, string> };
    for (const entry of Object.keys(pkg.exports).filter((key) => key !== './package.json')) {
      const name =
        entry === '.'
          ? '`cubepi`'
          : entry.startsWith('./providers/')
            ? '`cubepi/providers/*`'
            : `\`cubepi/${entry.slice(2)}\``;
      expect(section, entry).toContain(name);
    }
    const [major, minor] = floor(pkg.nodeSupport['./worker']!);
    expect(section).toContain(`| \`cubepi/worker\` | ${major}.${minor} or later |`);
    const bossEngines = (json('node_modules/pg-boss/package.json').engines as { node: string }).node;
    expect(section).toContain(bossEngines);
    const [bossMajor, bossMinor] = floor(bossEngines);
    expect(section).toContain(`**≥ ${bossMajor}.${bossMinor}**`);
    expect(doc).toMatch(/\| `pg-boss` \| `\^12\.38\.0` \| optional peer/);
  });
});

describe('package entry points', () => {
  it('resolves cubepi, cubepi/operators and cubepi/testing through the exports map, with their types', async () => {
    const script = `
      const core = await import('cubepi');
      const operators = await import('cubepi/operators');
      const testing = await import('cubepi/testing');
      console.log(JSON.stringify({
        core: ['Agent', 'runAgentLoop', 'defineTool', 'HookError', 'RunAbortedError', 'MessageAssembler'].filter((k) => typeof core[k] !== 'function'),
        operators: ['ofType', 'textDeltas', 'thinkingDeltas', 'finalMessage', 'executeToolCalls', 'foldHooks'].filter((k) => typeof operators[k] !== 'function'),
        testing: ['FauxProvider', 'fauxMessage', 'fauxText', 'fauxThinking', 'fauxToolCall'].filter((k) => typeof testing[k] !== 'function'),
      }));`;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: root });
    expect(JSON.parse(stdout)).toEqual({ core: [], operators: [], testing: [] });
    for (const types of ['dist/src/index.d.ts', 'dist/operators/index.d.ts', 'dist/src/testing/index.d.ts']) {
      expect(existsSync(`${root}/${types}`), types).toBe(true);
    }
  });

  it('resolves the checkpoint entry points', async () => {
    const script = `
      const sqlite = await import('cubepi/checkpoint/sqlite');
      const postgres = await import('cubepi/checkpoint/postgres');
      const { MemoryCheckpointer } = await import('cubepi');
      const { checkpointerConformance } = await import('cubepi/testing');
      console.log(JSON.stringify([typeof sqlite.SQLiteCheckpointer, typeof postgres.PostgresCheckpointer, typeof MemoryCheckpointer, typeof checkpointerConformance]));`;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: root });
    expect(JSON.parse(stdout)).toEqual(['function', 'function', 'function', 'function']);
  });

  it('runs the checkpointer conformance kit under node:test, with clear messages when a backend breaks the contract', async () => {
    // node:test runs describe/it registered by a plain script, reporting TAP when stdout is not a terminal.
    const script = `
      import { describe, it } from 'node:test';
      import { MemoryCheckpointer } from 'cubepi';
      import { checkpointerConformance } from 'cubepi/testing';
      class Lossy extends MemoryCheckpointer {
        async load(threadId) {
          const saved = await super.load(threadId);
          return saved && { ...saved, messages: saved.messages.slice(1) };
        }
      }
      checkpointerConformance(() => new MemoryCheckpointer(), { name: 'memory', describe, it });
      checkpointerConformance(() => new Lossy(), { name: 'lossy', describe, it });`;
    const result = (await run(process.execPath, ['--input-type=module', '-e', script], { cwd: root }).catch(
      (e: unknown) => e,
    )) as { code?: number; stdout: string };
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/^ok \d+ - memory$/m);
    expect(result.stdout).toMatch(/^not ok \d+ - lossy$/m);
    expect(result.stdout).toContain('error: \'values differ at $: expected an array of 5, got 4 (["b","c","d","e"])\'');
  });

  it('resolves the provider entry points, each loading only its own SDK', async () => {
    const script = `
      const anthropic = await import('cubepi/providers/anthropic');
      const openai = await import('cubepi/providers/openai');
      const google = await import('cubepi/providers/google');
      const kit = await import('cubepi/providers/kit');
      const bedrock = await import('cubepi/providers/bedrock');
      console.log(JSON.stringify([typeof anthropic.AnthropicProvider, typeof openai.OpenAIProvider, typeof openai.OpenAIResponsesProvider, typeof google.GoogleProvider,
        typeof bedrock.BedrockProvider, typeof bedrock.BedrockError,
        ...['fromSdkStream', 'stallTimeouts', 'MessageAssembler', 'classifyError', 'classifyErrorCode', 'parseRetryAfter', 'parsePartialJson', 'parseToolArguments'].map((k) => typeof kit[k]),
        typeof kit.DEFAULT_STALL_TIMEOUT_MS, typeof kit.DEFAULT_REASONING_STALL_TIMEOUT_MS]));`;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: root });
    expect(JSON.parse(stdout)).toEqual([...Array<string>(14).fill('function'), 'number', 'number']);
    for (const types of [
      'dist/src/providers/anthropic.d.ts',
      'dist/src/providers/openai.d.ts',
      'dist/src/providers/google.d.ts',
      'dist/src/providers/kit.d.ts',
      'dist/src/providers/bedrock.d.ts',
    ]) {
      expect(existsSync(`${root}/${types}`), types).toBe(true);
    }
  });

  it('resolves cubepi/server and cubepi/client, with their types', async () => {
    const script = `
      const server = await import('cubepi/server');
      const client = await import('cubepi/client');
      console.log(JSON.stringify([typeof server.createAgentServer, typeof server.toNodeListener,
        typeof server.attachWebSocket, typeof client.fromAgentEvents, typeof client.startRun, typeof client.respond]));`;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: root });
    expect(JSON.parse(stdout)).toEqual(Array<string>(6).fill('function'));
    expect(existsSync(`${root}/dist/src/server/index.d.ts`)).toBe(true);
    expect(existsSync(`${root}/dist/src/client/index.d.ts`)).toBe(true);
  });

  it('resolves cubepi/worker, with its types', async () => {
    const script = `
      const worker = await import('cubepi/worker');
      console.log(JSON.stringify([typeof worker.createRunEventLog, typeof worker.RunEventLogError]));`;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: root });
    expect(JSON.parse(stdout)).toEqual(['function', 'function']);
    expect(existsSync(`${root}/dist/src/worker/index.d.ts`)).toBe(true);
  });

  it('resolves cubepi/mcp, which loads the MCP SDK', async () => {
    const script = `
      const mcp = await import('cubepi/mcp');
      console.log(JSON.stringify([typeof mcp.mcpTools, typeof mcp.parametersFromJsonSchema]));`;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: root });
    expect(JSON.parse(stdout)).toEqual(['function', 'function']);
    expect(existsSync(`${root}/dist/src/mcp/index.d.ts`)).toBe(true);
  });

  it('keeps vendor SDKs, database drivers and Node built-ins out of the core entry points and the provider kit', async () => {
    // A resolve hook records every bare specifier the three entry points pull in, however deep.
    const dir = mkdtempSync(join(tmpdir(), 'cubepi-imports-'));
    writeFileSync(
      join(dir, 'hooks.mjs'),
      `export async function resolve(specifier, context, next) {
         if (!/^[./]|^file:/.test(specifier)) process.stderr.write('IMPORT ' + specifier + '\\n');
         return next(specifier, context);
       }`,
    );
    writeFileSync(
      join(dir, 'register.mjs'),
      `import { register } from 'node:module'; register(${JSON.stringify(pathToFileURL(join(dir, 'hooks.mjs')).href)});`,
    );
    const script = `await import('cubepi'); await import('cubepi/operators'); await import('cubepi/testing'); await import('cubepi/providers/kit');`;
    const { stderr } = await run(
      process.execPath,
      ['--import', pathToFileURL(join(dir, 'register.mjs')).href, '--input-type=module', '-e', script],
      { cwd: root },
    );
    const imported = new Set(
      stderr
        .split('\n')
        .filter((l) => l.startsWith('IMPORT '))
        .map((l) => l.slice(7)),
    );
    expect(imported.has('rxjs')).toBe(true); // the hook does see the entry points' imports
    expect(
      [...imported].filter((s) =>
        /^(openai|@anthropic-ai\/sdk|@aws-sdk\/client-bedrock-runtime|@modelcontextprotocol\/sdk|pg|better-sqlite3)(\/|$)/.test(
          s,
        ),
      ),
    ).toEqual([]);
    // Nor OpenTelemetry: `@opentelemetry/api` is an optional peer, needed by `cubepi/tracing` only.
    expect([...imported].filter((s) => s.startsWith('@opentelemetry/'))).toEqual([]);
    // Nor any Node built-in: these entries run in browsers and edge runtimes (test/browser.test.ts bundles them).
    expect([...imported].filter((s) => s.startsWith('node:') || builtinModules.includes(s.split('/')[0]!))).toEqual([]);
  });

  it('resolves cubepi/tracing and cubepi/tracing/jsonl, with their types', async () => {
    const script = `
      const tracing = await import('cubepi/tracing');
      console.log(JSON.stringify(['traceAgent', 'traceEvents', 'toolCallContext', 'withToolCallContext'].map((k) => typeof tracing[k])));`;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: root });
    expect(JSON.parse(stdout)).toEqual(Array<string>(4).fill('function'));
    expect(existsSync(`${root}/dist/src/tracing/index.d.ts`)).toBe(true);
    const jsonl = `
      const { JsonlSpanExporter, parseJsonlSpans } = await import('cubepi/tracing/jsonl');
      console.log(JSON.stringify([typeof JsonlSpanExporter, typeof parseJsonlSpans]));`;
    const read = await run(process.execPath, ['--input-type=module', '-e', jsonl], { cwd: root });
    expect(JSON.parse(read.stdout)).toEqual(['function', 'function']);
    expect(existsSync(`${root}/dist/src/tracing/jsonl.d.ts`)).toBe(true);
  });

  it('resolves cubepi/evals and cubepi/evals/vitest, with their types; the matcher entry loads no vitest', async () => {
    const script = `
      const evals = await import('cubepi/evals');
      const { evalMatchers } = await import('cubepi/evals/vitest');
      console.log(JSON.stringify([...['evaluate', 'loadDataset', 'recordProvider', 'compare', 'exact', 'trajectory'].map((k) => typeof evals[k]), typeof evalMatchers.toPass]));`;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: root });
    expect(JSON.parse(stdout)).toEqual(Array<string>(7).fill('function'));
    for (const types of ['dist/src/evals/index.d.ts', 'dist/src/evals/vitest.d.ts'])
      expect(existsSync(`${root}/${types}`), types).toBe(true);
    expect(readFileSync(`${root}/dist/src/evals/vitest.js`, 'utf8')).not.toMatch(/^import .*from ['"]vitest/m);
  });
});

describe('the cubepi command', () => {
  it('cubepi mcp serves the example agent and its tool over stdio, to the SDK client', async () => {
    const client = new Client({ name: 'test', version: '1.0.0' });
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: ['dist/src/cli/main.js', 'mcp', '--delay', '0'],
      cwd: root,
      stderr: 'pipe',
    });
    await client.connect(transport);
    try {
      // answer_approval too: this SDK client declares no elicitation.
      expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual([
        'ask_agent',
        'answer_approval',
        'weather',
      ]);
      const progress: (string | undefined)[] = [];
      const answer = await client.callTool(
        { name: 'ask_agent', arguments: { prompt: 'Weather in Paris and Oslo?' } },
        undefined,
        { onprogress: (p) => progress.push(p.message) },
      );
      const text = (answer.content as { text?: string }[]).map((block) => block.text ?? '').join('');
      expect(text).toContain('Pack an umbrella for Paris.');
      expect(text).toContain('Oslo: 7 °C, clear');
      expect(progress).toContain('calling weather');
      // A second call gets a fresh agent (and a fresh scripted model).
      const again = await client.callTool({ name: 'ask_agent', arguments: { prompt: 'Again?' } });
      expect(again.isError).toBeFalsy();
      const weather = await client.callTool({ name: 'weather', arguments: { city: 'Oslo' } });
      expect(weather.content).toEqual([{ type: 'text', text: 'Oslo: 7 °C, clear' }]);
    } finally {
      await client.close();
    }
  });

  it('cubepi demo (npm start) says what cubepi is and runs an agent offline, labelled as a demo', async () => {
    const { stdout, stderr } = await run(process.execPath, ['dist/src/cli/main.js', 'demo', '--delay', '0'], {
      cwd: root,
    });
    expect(stdout).toMatch(/^cubepi: an LLM agent runtime for TypeScript built on RxJS, and this is its command\.\n/);
    expect(stdout).toContain('> cubepi run "Show me around this directory." --provider faux --db memory');
    expect(stdout).toContain("This is cubepi's offline demo model");
    expect(stdout).toContain('- read_file README.md: "# cubepi"');
    expect(stdout).toContain('Next: cubepi chat (interactive)');
    expect(stderr).toContain('⚙ list_files({"path":"."})');
  });

  it('cubepi --help lists every command; an option without a command exits 2', async () => {
    const { stdout } = await run(process.execPath, ['dist/src/cli/main.js', '--help'], { cwd: root });
    for (const name of ['chat', 'run', 'threads', 'demo', 'mcp', 'trace', 'eval'])
      expect(stdout).toMatch(new RegExp(`^  ${name} `, 'm'));
    const error = (await run(process.execPath, ['dist/src/cli/main.js', '--events'], { cwd: root }).catch(
      (e: unknown) => e,
    )) as { code: number; stderr: string };
    expect(error.code).toBe(2);
    expect(error.stderr).toBe(
      'cubepi: unknown command "--events" (options go after a command; cubepi --help lists the commands)\n',
    );
  });
});
