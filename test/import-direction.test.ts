// The source tree keeps the direction of DESIGN.md §1 and STYLE.md ("Direction"): no import runs back up a layer, no
// import circle, and the browser-safe entry points reach no `node:` module and no vendor SDK.
import { readdirSync, readFileSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));

interface SourceFile {
  /** Files of ours it imports (paths relative to the root, `.ts`). */
  readonly local: string[];
  /** Packages and built-in modules it imports. */
  readonly bare: string[];
  /** Those of {@link bare} imported for their types only (`import type`, erased from the build). */
  readonly typeOnly: string[];
}

// Static imports and re-exports (`import … from`, `export … from`, side-effect `import '…'`) and `import('…')`.
const IMPORT =
  /^\s*(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\s+from\s+)?['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/gm;

function sourceFiles(): Map<string, SourceFile> {
  const files = new Map<string, SourceFile>();
  const walk = (dir: string): void => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(path);
      else if (path.endsWith('.ts')) files.set(path, parse(path));
    }
  };
  walk('src');
  walk('operators');
  return files;
}

function parse(path: string): SourceFile {
  const local: string[] = [];
  const bare: string[] = [];
  const typeOnly: string[] = [];
  for (const match of readFileSync(join(root, path), 'utf8').matchAll(IMPORT)) {
    const specifier = (match[1] ?? match[2])!;
    if (specifier.startsWith('.')) {
      local.push(relative(root, resolve(root, dirname(path), specifier.replace(/\.js$/, '.ts'))));
    } else if (/^\s*(import|export) type\s/.test(match[0])) typeOnly.push(specifier);
    else bare.push(specifier);
  }
  return { local, bare, typeOnly };
}

const files = sourceFiles();

/** The folders a file in each folder may import from (its own included); DESIGN.md §1. */
const MAY_IMPORT: Record<string, readonly string[]> = {
  'src/types': ['src/types'],
  operators: ['operators', 'src/types'],
  'src/tools': ['src/tools', 'src/types'],
  'src/providers': ['src/providers', 'src/types', 'operators'],
  'src/checkpoint': ['src/checkpoint', 'src/types'],
  'src/middleware': ['src/middleware', 'src/types', 'operators'],
  // Guardrails: verdicts, checks and the built-ins; the loop (src/loop) runs them.
  'src/guardrails': ['src/guardrails', 'src/types', 'operators', 'src/middleware'],
  // cubepi/mcp: the only folder that imports the MCP SDK.
  'src/mcp': ['src/mcp', 'src/types', 'src/tools', 'src/agent'],
  // Composition operators over agents (sequence, parallel, race, supervise): they run Agents, so they sit above them.
  'src/agent/compose': ['src/agent/compose', 'src/agent', 'src/types', 'src/tools'],
  // The loop (runAgentLoop, a turn, the tool batch, the model call): below the Agent, above the provider stream. It
  // imports nothing of the facade (src/agent): the folders draw the seeds' picture, Agent ⊃ the loop ⊃ provider stream.
  'src/loop': [
    'src/loop',
    'src/types',
    'operators',
    'src/tools',
    'src/providers',
    'src/middleware',
    'src/checkpoint',
    'src/guardrails',
  ],
  'src/agent': [
    'src/agent',
    'src/loop',
    'src/types',
    'operators',
    'src/tools',
    'src/providers',
    'src/middleware',
    'src/checkpoint',
    'src/guardrails',
  ],
  'src/testing': [
    'src/testing',
    'src/types',
    'operators',
    'src/providers',
    'src/middleware',
    'src/checkpoint',
    'src/agent',
    'src/tools',
    'src/loop',
  ],
  src: [
    'src',
    'src/types',
    'operators',
    'src/tools',
    'src/providers',
    'src/middleware',
    'src/checkpoint',
    'src/agent',
    'src/agent/compose',
    'src/guardrails',
    'src/loop',
  ],
  // The wire protocol shared by cubepi/server and cubepi/client: event types in, frames out.
  'src/wire': ['src/wire', 'src/types'],
  // cubepi/client runs in browsers: the wire protocol and types only.
  'src/client': ['src/client', 'src/wire', 'src/types'],
  // cubepi/react: hooks over cubepi/client and the UI operators (React an optional peer, imported here only).
  'src/react': ['src/react', 'src/client', 'src/wire', 'src/types', 'operators'],
  // cubepi/studio: the studio's page and API over a thread store, a trace file and an agent server (Node.js only).
  'src/studio': [
    'src/studio',
    'src/server',
    'src/client',
    'src/wire',
    'src/types',
    'operators',
    'src/checkpoint',
    'src/tracing',
  ],
  // cubepi/server serves agents: coalesces and numbers their events with the operators, reads threads.
  // (src/tools: the AG-UI route makes an input's frontend tools into client tools, `clientTool`; tools sit below the
  // agent the server already imports.)
  'src/server': ['src/server', 'src/wire', 'src/types', 'operators', 'src/agent', 'src/checkpoint', 'src/tools'],
  // cubepi/worker runs on PostgreSQL: stores and reads the wire frames of cubepi/server (the run-event log), and runs
  // agents for the queue (coalescing their deltas with the operators, checking thread ids as the checkpointers do).
  'src/worker': ['src/worker', 'src/wire', 'src/types', 'operators', 'src/agent', 'src/checkpoint'],
  // Tracing reads events (their types) and hashes prompts with the middleware's hash; nothing imports it but its entry.
  'src/tracing': ['src/tracing', 'src/types', 'src/middleware'],
  // cubepi/evals runs agents over datasets and replays recorded calls through the FauxProvider (src/providers).
  'src/evals': ['src/evals', 'src/types', 'src/middleware', 'src/providers', 'src/agent'],
};

/** The command uses the public API only: the package's entry points (its `exports`, mapped back to the sources). */
const CLI_MAY_IMPORT = Object.values(
  (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { exports: Record<string, unknown> }).exports,
).flatMap((target) =>
  typeof target === 'object' && target !== null && 'default' in target
    ? [
        String(target.default)
          .replace(/^\.\/dist\//, '')
          .replace(/\.js$/, '.ts'),
      ]
    : [],
);

const VENDOR_SDK =
  /^(openai|@anthropic-ai\/sdk|@aws-sdk\/client-bedrock-runtime|@modelcontextprotocol\/sdk|pg|better-sqlite3)(\/|$)/;

/** Every file `entry` loads, itself included. */
function closure(entry: string): Set<string> {
  const seen = new Set<string>();
  const visit = (path: string): void => {
    if (seen.has(path)) return;
    seen.add(path);
    for (const next of files.get(path)?.local ?? []) visit(next);
  };
  visit(entry);
  return seen;
}

describe('import direction', () => {
  it('finds the files it checks', () => {
    expect(files.size).toBeGreaterThan(50);
    expect(files.get('src/agent/agent.ts')?.local).toContain('src/types/is-promise-like.ts');
  });

  it('has no import that runs back up a layer', () => {
    const upward: string[] = [];
    for (const [path, { local }] of files) {
      const folder = dirname(path);
      for (const target of local) {
        const inCli = (dir: string) => dir === 'src/cli' || dir.startsWith('src/cli/');
        const allowed = inCli(folder)
          ? CLI_MAY_IMPORT.includes(target) || inCli(dirname(target)) // the command's own files, and entries
          : MAY_IMPORT[folder]?.includes(dirname(target));
        if (!allowed) upward.push(`${path} → ${target}`);
      }
    }
    expect(upward).toEqual([]);
  });

  it('keeps the loop below the Agent: src/loop imports nothing of the facade (src/agent)', () => {
    const loop = [...files.keys()].filter((path) => path.startsWith('src/loop/'));
    expect(loop).toContain('src/loop/run-agent-loop.ts');
    expect(loop).toContain('src/loop/turn.ts');
    const intoFacade = loop.flatMap((path) =>
      files
        .get(path)!
        .local.filter((target) => target.startsWith('src/agent/'))
        .map((target) => `${path} → ${target}`),
    );
    expect(intoFacade).toEqual([]);
    // and the facade does use the loop (the direction is Agent → loop, not two unrelated folders)
    expect(files.get('src/agent/agent-runs.ts')?.local).toContain('src/loop/run-agent-loop.ts');
  });

  it('keeps src/types free of our code and of every package but zod (and rxjs types)', () => {
    const outside: string[] = [];
    for (const [path, { bare, typeOnly }] of files) {
      if (!path.startsWith('src/types/')) continue;
      // `Provider.stream` returns an Observable: rxjs may appear, for its types only (erased from the build).
      for (const specifier of [...bare, ...typeOnly.filter((s) => s !== 'rxjs')]) {
        if (specifier !== 'zod') outside.push(`${path} → ${specifier}`);
      }
    }
    expect(outside).toEqual([]);
  });

  it('has no import circle', () => {
    // Tarjan's strongly connected components: a component of more than one file is a circle.
    const index = new Map<string, number>();
    const low = new Map<string, number>();
    const stack: string[] = [];
    const onStack = new Set<string>();
    const circles: string[][] = [];
    let counter = 0;
    const connect = (path: string): void => {
      index.set(path, counter);
      low.set(path, counter++);
      stack.push(path);
      onStack.add(path);
      for (const next of files.get(path)?.local ?? []) {
        if (!files.has(next)) continue;
        if (!index.has(next)) {
          connect(next);
          low.set(path, Math.min(low.get(path)!, low.get(next)!));
        } else if (onStack.has(next)) low.set(path, Math.min(low.get(path)!, index.get(next)!));
      }
      if (low.get(path) !== index.get(path)) return;
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== path);
      if (component.length > 1 || files.get(path)!.local.includes(path)) circles.push(component.sort());
    };
    for (const path of files.keys()) if (!index.has(path)) connect(path);
    expect(circles).toEqual([]);
  });

  it.each([
    'src/index.ts',
    'operators/index.ts',
    'src/providers/kit.ts',
    'src/tracing/index.ts',
    'src/client/index.ts',
    'src/react/index.ts',
  ])('%s reaches no node: module and no vendor SDK (it runs in browsers and edge runtimes)', (entry) => {
    const reached = [...closure(entry)].flatMap((path) =>
      (files.get(path)?.bare ?? [])
        .filter((specifier) => isBuiltin(specifier) || VENDOR_SDK.test(specifier))
        .map((specifier) => `${path} → ${specifier}`),
    );
    expect(files.has(entry), entry).toBe(true);
    expect(reached).toEqual([]);
  });

  it.each(['src/index.ts', 'operators/index.ts', 'src/testing/index.ts', 'src/providers/kit.ts'])(
    '%s reaches no @opentelemetry package (only cubepi/tracing needs the optional peer)',
    (entry) => {
      const reached = [...closure(entry)].flatMap((path) =>
        [...(files.get(path)?.bare ?? []), ...(files.get(path)?.typeOnly ?? [])]
          .filter((specifier) => specifier.startsWith('@opentelemetry/'))
          .map((specifier) => `${path} → ${specifier}`),
      );
      expect(files.has(entry), entry).toBe(true);
      expect(reached).toEqual([]);
    },
  );

  it('imports react only under src/react (cubepi/react: react is an optional peer), and that entry does', () => {
    const importers = [...files].flatMap(([path, { bare, typeOnly }]) =>
      [...bare, ...typeOnly].some((specifier) => /^react(-dom)?(\/|$)/.test(specifier)) ? [path] : [],
    );
    expect(importers.filter((path) => !path.startsWith('src/react/'))).toEqual([]);
    expect([...closure('src/react/index.ts')].some((path) => importers.includes(path))).toBe(true);
  });

  it('finds the tracing entry importing @opentelemetry/api (the check above works)', () => {
    const reached = [...closure('src/tracing/index.ts')].flatMap((path) => files.get(path)?.bare ?? []);
    expect(reached).toContain('@opentelemetry/api');
  });

  it('cubepi/server reaches neither pg nor pg-boss (it runs on edge runtimes; the queue server is structural)', () => {
    const reached = [...closure('src/server/index.ts')].flatMap((path) =>
      [...(files.get(path)?.bare ?? []), ...(files.get(path)?.typeOnly ?? [])]
        .filter((specifier) => /^(pg|pg-boss)(\/|$)/.test(specifier))
        .map((specifier) => `${path} → ${specifier}`),
    );
    expect(closure('src/server/index.ts')).toContain('src/server/queue-server.ts');
    expect(reached).toEqual([]);
  });
});
