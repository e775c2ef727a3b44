import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));

const ALL = ['marbles/**/*.test.ts', 'test/**/*.test.ts'];

// Two projects. `unit`: the marble specs and the in-process tests, whose files share their worker's module cache
// (`isolate: false`): importing cubepi's sources once per worker rather than once per file is most of their time
// (measured on 2 cores: 137 s isolated, 43 s shared, the same tests passing). `isolated`: what spawns processes or
// browsers, talks to PostgreSQL, packs or builds the package, or changes process-wide state — each file in a fresh
// module graph. `npm run test:quick` runs `unit` alone.
const OWN_PROCESS = [
  'test/worker/**',
  'test/cli/**',
  'test/limits/**',
  'test/security/**',
  'test/checkpoint/**',
  'test/blobs/**',
  'test/mcp/**',
  'test/**/*browser*.test.ts',
  'test/page-recovering.test.ts',
  'test/consumer.test.ts',
  'test/package.test.ts',
  'test/docs-examples.test.ts',
  'test/files-e2e.test.ts',
  'test/providers/google-restore.test.ts',
  'test/providers/provider-conformance.test.ts',
  'test/properties/thread-id.property.test.ts',
  'test/server/server.test.ts',
];

// Workers: vitest's default on 2 cores is one, so every file waited for the one before, though most of the isolated
// files spend their time waiting (child processes, PostgreSQL, pg-boss's heartbeats, a browser). Two workers overlap
// those waits. CUBEPI_TEST_WORKERS overrides.
const maxWorkers = Number(process.env.CUBEPI_TEST_WORKERS ?? 2);

// The files that take longest (bench/RESULTS.md, "Suite time"), started first so that none of them begins last and
// draws out the run's tail. Without this, a clean checkout (no vitest cache) starts the largest files first.
const LONGEST_FIRST = [
  'test/worker/scale-out.test.ts',
  'test/worker/queue-faults.test.ts',
  'test/react/react-browser.test.ts',
  'test/consumer.test.ts',
  'test/cli/run-command.test.ts',
  'test/mcp/mcp-tools.test.ts',
  'test/cli/threads-command.test.ts',
  'test/worker/queue-server.test.ts',
  'test/studio/timeline-browser.test.ts',
  'test/serve-browser.test.ts',
  'test/docs-examples.test.ts',
];

class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification) => {
      const i = LONGEST_FIRST.findIndex((path) => spec.moduleId.endsWith(`/${path}`));
      return i === -1 ? LONGEST_FIRST.length : i;
    };
    return sorted
      .map((spec, i) => ({ spec, i }))
      .sort((a, b) => rank(a.spec) - rank(b.spec) || a.i - b.i)
      .map(({ spec }) => spec);
  }
}

// Tests import the public entry points by their package names; these aliases point them at the sources.
export default defineConfig({
  resolve: {
    alias: [
      { find: /^cubepi\/operators$/, replacement: here('./operators/index.ts') },
      { find: /^cubepi\/providers\/anthropic$/, replacement: here('./src/providers/anthropic.ts') },
      { find: /^cubepi\/providers\/openai$/, replacement: here('./src/providers/openai.ts') },
      { find: /^cubepi\/providers\/google$/, replacement: here('./src/providers/google.ts') },
      { find: /^cubepi\/providers\/bedrock$/, replacement: here('./src/providers/bedrock.ts') },
      { find: /^cubepi\/providers\/kit$/, replacement: here('./src/providers/kit.ts') },
      { find: /^cubepi\/checkpoint\/sqlite$/, replacement: here('./src/checkpoint/sqlite.ts') },
      { find: /^cubepi\/checkpoint\/postgres$/, replacement: here('./src/checkpoint/postgres.ts') },
      { find: /^cubepi\/blobs\/filesystem$/, replacement: here('./src/checkpoint/filesystem-blob-store.ts') },
      { find: /^cubepi\/tracing\/jsonl$/, replacement: here('./src/tracing/jsonl.ts') },
      { find: /^cubepi\/tracing$/, replacement: here('./src/tracing/index.ts') },
      { find: /^cubepi\/mcp$/, replacement: here('./src/mcp/index.ts') },
      { find: /^cubepi\/server$/, replacement: here('./src/server/index.ts') },
      { find: /^cubepi\/client$/, replacement: here('./src/client/index.ts') },
      { find: /^cubepi\/react$/, replacement: here('./src/react/index.ts') },
      { find: /^cubepi\/studio$/, replacement: here('./src/studio/index.ts') },
      { find: /^cubepi\/worker$/, replacement: here('./src/worker/index.ts') },
      { find: /^cubepi\/evals\/vitest$/, replacement: here('./src/evals/vitest.ts') },
      { find: /^cubepi\/evals$/, replacement: here('./src/evals/index.ts') },
      { find: /^cubepi\/testing$/, replacement: here('./src/testing/index.ts') },
      { find: /^cubepi$/, replacement: here('./src/index.ts') },
    ],
  },
  test: {
    testTimeout: 20_000,
    hookTimeout: 60_000,
    maxWorkers,
    sequence: { sequencer: LongestFirst },
    projects: [
      {
        extends: true,
        test: { name: 'unit', include: ALL, exclude: OWN_PROCESS, isolate: false },
      },
      {
        extends: true,
        // A test here starts processes, servers or a browser: its timeout is sized for a loaded 2-core runner.
        test: {
          name: 'isolated',
          include: OWN_PROCESS.map((p) => (p.endsWith('/**') ? `${p}/*.test.ts` : p)),
          testTimeout: 60_000,
        },
      },
    ],
  },
});
