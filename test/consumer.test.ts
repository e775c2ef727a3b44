// The package as an app gets it from npm: `npm pack` (which builds from a clean dist/), then the tarball installed into
// fresh apps next to their own rxjs and zod, at the floors of our peer ranges, at the versions of the report in issue
// 16, and at ours. Each app type-checks (strict) and runs the README example, a hook written with its own rxjs and a
// tool with its own zod, and must end up with one copy of each.
import { execFile } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const exec = promisify(execFile);
const root = fileURLToPath(new URL('..', import.meta.url));
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  version: string;
  exports: Record<string, string | { types: string; default: string }>;
  bin: Record<string, string>;
  peerDependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};
const tsc = join(root, 'node_modules/typescript/bin/tsc');

/** The lowest version a `^x.y.z` range admits. */
function floorOf(range: string | undefined): string {
  const floor = /^\^(\d+\.\d+\.\d+)$/.exec(range ?? '')?.[1];
  if (floor === undefined) throw new Error(`expected a ^x.y.z peer range, got ${range}`);
  return floor;
}

interface App {
  readonly name: string;
  readonly rxjs: string;
  readonly zod: string;
  /** `node`: NodeNext resolution, @types/node, no DOM. `bundler`: Bundler resolution, the DOM lib, no @types/node. */
  readonly kind: 'node' | 'bundler';
  /**
   * Also type-check the libraries' declarations (ours against this app's zod and rxjs: a type of a newer zod that we
   * use would show here, where skipLibCheck would quietly make it `any`). It costs ~10 s of CPU, zod's declarations
   * mostly, so only the app at the floors, the versions furthest from ours, pays it.
   */
  readonly checkLibs: boolean;
}

const APPS: readonly App[] = [
  {
    name: 'at the floors of the peer ranges',
    rxjs: floorOf(pkg.peerDependencies.rxjs),
    zod: floorOf(pkg.peerDependencies.zod),
    kind: 'node',
    checkLibs: true,
  },
  { name: "at issue 16's versions, as a bundler app", rxjs: '7.8.1', zod: '4.1.13', kind: 'bundler', checkLibs: false },
  {
    name: 'at our versions',
    rxjs: pkg.devDependencies.rxjs!,
    zod: pkg.devDependencies.zod!,
    kind: 'node',
    checkLibs: false,
  },
];

// npm, run by `npm test`, hands its children npm_config_local_prefix, npm_package_* and the like: the apps' npm must
// not see them. Registry, proxy, TLS and cache settings are kept.
const npmEnv = Object.fromEntries(
  Object.entries(process.env).filter(
    ([key]) =>
      !key.toLowerCase().startsWith('npm_') ||
      /^npm_config_(.*registry.*|.*proxy.*|cafile|ca|cert|key|strict_ssl|cache|userconfig|globalconfig|.*_auth.*)$/i.test(
        key,
      ),
  ),
);

const work = mkdtempSync(join(tmpdir(), 'cubepi-consumer-'));
let tarball = '';
let packed: string[] = [];

beforeAll(async () => {
  // A copy of the working tree (what a release would pack, untracked files included), with a stale file in dist/ that
  // prepack must remove, and our node_modules for the build.
  const stage = join(work, 'stage');
  const skip = new Set(['node_modules', '.git', 'dist', '.tmp']);
  cpSync(root, stage, {
    recursive: true,
    filter: (source) => !skip.has(relative(root, source).split(/[\\/]/)[0]!) && !source.includes('/node_modules'),
  });
  mkdirSync(join(stage, 'dist'));
  writeFileSync(join(stage, 'dist/stale.js'), 'export const stale = true;\n');
  symlinkSync(join(root, 'node_modules'), join(stage, 'node_modules'), 'dir');
  const { stdout } = await exec('npm', ['pack', '--json', '--pack-destination', work], {
    cwd: stage,
    env: npmEnv,
    maxBuffer: 64 * 1024 * 1024,
  });
  // Script output may precede the JSON.
  const [result] = JSON.parse(stdout.slice(stdout.indexOf('[\n'))) as [{ filename: string; files: { path: string }[] }];
  tarball = join(work, result.filename);
  packed = result.files.map((f) => f.path);
  console.log(`packed ${result.filename}: ${packed.length} files`);
}, 600_000);

afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('the packed tarball', () => {
  it('holds the build, the sources its maps point at, the docs, LICENSE and CHANGELOG, and nothing else', () => {
    const allowed =
      /^(dist\/(src|operators)\/.+\.(js|d\.ts|js\.map|d\.ts\.map)|dist\/page\/(index\.html|app\.js|app\.css)|dist\/page\/studio\/(index\.html|studio\.js|studio\.css|timeline\.css)|(src|operators)\/.+\.ts|docs\/[^/]+\.md|README\.md|CHANGELOG\.md|LICENSE|package\.json)$/;
    expect(packed.filter((path) => !allowed.test(path))).toEqual([]);
    expect(
      packed.filter((path) => /(^|\/)(test|tests|bench|marbles|__tests__)\/|\.(test|spec)\.|\.tsbuildinfo$/.test(path)),
    ).toEqual([]);
    expect(packed).not.toContain('dist/stale.js'); // prepack cleaned dist/
    for (const file of ['LICENSE', 'CHANGELOG.md', 'README.md', 'package.json']) expect(packed).toContain(file);
    // cubepi serve's page, built by esbuild at pack time.
    for (const file of ['index.html', 'app.js', 'app.css']) expect(packed).toContain(`dist/page/${file}`);
    // The studio's page (cubepi studio, createStudio), built the same way.
    for (const file of ['index.html', 'studio.js', 'studio.css', 'timeline.css']) {
      expect(packed).toContain(`dist/page/studio/${file}`);
    }
    // Every docs page; not docs/images (the screenshots the pages show on the repository), kept out of the package.
    for (const doc of readdirSync(join(root, 'docs')).filter((name) => name.endsWith('.md'))) {
      expect(packed).toContain(`docs/${doc}`);
    }
    const targets = Object.values(pkg.exports).flatMap((target) =>
      typeof target === 'string' ? [target] : [target.types, target.default],
    );
    for (const target of [...targets, ...Object.values(pkg.bin)]) expect(packed).toContain(target.replace(/^\.\//, ''));
  });

  it('has source and declaration maps whose sources are all in the tarball', async () => {
    const installed = join(work, 'extracted');
    mkdirSync(installed);
    await exec('tar', ['-xzf', tarball, '-C', installed, '--strip-components=1']);
    const files = new Set(packed);
    const maps = packed.filter((path) => path.endsWith('.map'));
    expect(maps.filter((path) => path.endsWith('.js.map')).length).toBeGreaterThan(50);
    expect(maps.filter((path) => path.endsWith('.d.ts.map')).length).toBeGreaterThan(50);
    const unresolved: string[] = [];
    for (const path of maps) {
      const map = JSON.parse(readFileSync(join(installed, path), 'utf8')) as { sources: string[]; sourceRoot?: string };
      for (const source of map.sources) {
        const target = relative(installed, resolve(installed, dirname(path), map.sourceRoot ?? '', source));
        if (!files.has(target)) unresolved.push(`${path} → ${source}`);
      }
    }
    expect(unresolved).toEqual([]);
  });
});

describe.concurrent('an app that installs the tarball', () => {
  it.each(APPS.map((app, i) => [app.name, app, i] as const))(
    '%s: type-checks and runs, with one rxjs and one zod',
    async (_, app, i) => {
      const dir = join(work, `app-${i}`);
      writeApp(dir, app);
      await exec('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline'], { cwd: dir, env: npmEnv });

      // One copy of each: the app's own, at the version it asked for.
      const nested = join(dir, 'node_modules/cubepi/node_modules');
      expect(existsSync(nested) ? readdirSync(nested).filter((name) => name === 'rxjs' || name === 'zod') : []).toEqual(
        [],
      );
      // The optional peers are not installed: the core entries load and run without them (the MCP SDK included).
      expect(existsSync(join(dir, 'node_modules/@modelcontextprotocol/sdk'))).toBe(false);
      expect(versionIn(dir, 'rxjs')).toBe(app.rxjs);
      expect(versionIn(dir, 'zod')).toBe(app.zod);
      // No optional peer is installed for the app: what runs below runs without any vendor SDK, driver or OpenTelemetry.
      expect(existsSync(join(dir, 'node_modules/@opentelemetry/api'))).toBe(false);

      const checked = await exec(process.execPath, [tsc, '-p', dir]).catch((error: { stdout: string }) => error);
      expect(checked.stdout, 'tsc output').toBe('');

      const readme = await exec(process.execPath, ['out/readme.js'], { cwd: dir });
      expect(readme.stdout).toBe('Sunny.');

      const { stdout } = await exec(process.execPath, ['out/main.js'], { cwd: dir });
      const result = JSON.parse(stdout) as Record<string, unknown>;
      expect(result).toMatchObject({
        oneRxjs: true,
        systemPrompts: ["Be brief. Answer in French (the app's rxjs)."],
        text: 'Done after 4 messages.',
        tools: [
          { isError: true, text: expect.stringMatching(/^Invalid arguments for tool "weather":\n- city: /) },
          { isError: false, text: 'Paris: 21 °C' },
        ],
        schema: {
          type: 'object',
          properties: {
            city: { type: 'string', minLength: 1 },
            unit: { type: 'string', enum: ['C', 'F'], default: 'C' },
          },
          required: ['city'],
        },
        last: 'agent_end',
        zod3: expect.stringContaining('must be a zod 4 schema, got a zod 3 schema. cubepi needs zod 4'),
      });

      if (app.kind === 'node') {
        // The installed command runs its offline demo without any optional peer (no SQLite driver: nothing stored).
        const cli = await exec(join(dir, 'node_modules/.bin/cubepi'), ['demo', '--delay', '0'], { cwd: dir });
        expect(cli.stdout).toContain("This is cubepi's offline demo model");
      }
    },
    600_000,
  );
});

function versionIn(dir: string, name: string): string {
  return (JSON.parse(readFileSync(join(dir, 'node_modules', name, 'package.json'), 'utf8')) as { version: string })
    .version;
}

/** The README's example, as written there, with a body for the `lookUp` it only declares (the reader's own). */
function readmeExample(): string {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const example = /```ts\n([\s\S]*?)```/.exec(readme)?.[1];
  if (example === undefined || !example.includes("from 'cubepi'")) throw new Error('README.md: no ts example found');
  return `${example.replace(/^declare function lookUp\(.*$/m, '')}
async function lookUp(city: string, signal: AbortSignal): Promise<string> {
  signal.throwIfAborted();
  return city === 'Paris' ? 'Sunny in Paris' : 'Unknown';
}
void subscription;
`;
}

const MAIN = `import { Agent, defineTool, type AgentEvent } from 'cubepi';
import { ofType, textDeltas } from 'cubepi/operators';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { from, lastValueFrom, map, Observable, of, toArray } from 'rxjs';
import { z } from 'zod';
import { z as z3 } from 'zod/v3';

// A tool with the app's zod: a default, an enum, a check.
const weather = defineTool({
  name: 'weather',
  description: 'Current weather for a city',
  parameters: z.object({ city: z.string().min(1), unit: z.enum(['C', 'F']).default('C') }),
  execute: async (_id, { city, unit }) => ({ content: [{ type: 'text', text: \`\${city}: 21 °\${unit}\` }] }),
});

const systemPrompts: (string | undefined)[] = [];
const agent = new Agent({
  provider: new FauxProvider({
    responses: [
      (_messages, _model, { systemPrompt }) => {
        systemPrompts.push(systemPrompt);
        return fauxMessage([fauxToolCall('weather', { city: '' }), fauxToolCall('weather', { city: 'Paris' })]);
      },
      (messages) => fauxMessage(\`Done after \${messages.length} messages.\`),
    ],
  }),
  model: 'faux',
  systemPrompt: 'Be brief.',
  tools: [weather],
  // A hook written with the app's own rxjs: with two copies of rxjs this does not type-check (TS2322).
  transformSystemPrompt: (prompt) => of(prompt).pipe(map((p) => \`\${p} Answer in French (the app's rxjs).\`)),
});

const run$ = agent.prompt$('Weather in Paris?');
const events: AgentEvent[] = await lastValueFrom(run$.pipe(toArray()));
const text = await lastValueFrom(from(events).pipe(textDeltas(), toArray()));
const tools = await lastValueFrom(
  from(events).pipe(
    ofType('tool_execution_end'),
    map((e) => ({ isError: e.isError, text: e.result.content.map((c) => (c.type === 'text' ? c.text : '')).join('') })),
    toArray(),
  ),
);
let zod3 = '';
try {
  // A zod 3 schema (zod 4 ships zod 3 as zod/v3), as a JavaScript caller or a cast would pass it.
  defineTool({ name: 'old', description: 'd', parameters: z3.object({ city: z3.string() }) as never, execute: () => 'x' });
} catch (error) {
  zod3 = (error as Error).message;
}
console.log(
  JSON.stringify({
    oneRxjs: run$ instanceof Observable,
    systemPrompts,
    text: text.join(''),
    tools,
    schema: weather.inputSchema,
    last: events.at(-1)?.type,
    zod3,
  }),
);
`;

function writeApp(dir: string, app: App): void {
  mkdirSync(dir, { recursive: true });
  const dependencies: Record<string, string> = { cubepi: `file:${tarball}`, rxjs: app.rxjs, zod: app.zod };
  if (app.kind === 'node') dependencies['@types/node'] = pkg.devDependencies['@types/node']!;
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({ name: `consumer-${app.kind}`, private: true, type: 'module', dependencies }, null, 2),
  );
  const compilerOptions = {
    target: 'ES2022',
    strict: true,
    skipLibCheck: !app.checkLibs,
    noEmitOnError: true,
    outDir: 'out',
    ...(app.kind === 'node'
      ? { module: 'NodeNext', moduleResolution: 'NodeNext', lib: ['ES2022'], types: ['node'] }
      : { module: 'ESNext', moduleResolution: 'Bundler', lib: ['ES2022', 'DOM'], types: [] }),
  };
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, include: ['*.ts'] }, null, 2));
  writeFileSync(join(dir, 'readme.ts'), readmeExample());
  writeFileSync(join(dir, 'main.ts'), MAIN);
  // A browser app has no process; the README example writes to process.stdout.
  if (app.kind === 'bundler') {
    writeFileSync(join(dir, 'globals.d.ts'), 'declare const process: { stdout: { write(text: string): boolean } };\n');
  }
}
