import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));

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
    include: ['marbles/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 20_000,
    hookTimeout: 60_000,
  },
});
