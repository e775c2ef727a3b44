import { defineConfig, mergeConfig } from 'vitest/config';
import base from './vitest.config.js';

// `npm run test:quick`: the inner loop's tests — marbles and the in-process unit tests. Left out: what spawns
// processes or browsers, talks to PostgreSQL, packs or builds the package (they all run in `npm test`). The files
// share their worker's module cache (`isolate: false`): importing cubepi's sources once per worker rather than once
// per file is most of the difference (measured on 2 cores: 137 s isolated, 43 s shared, the same 1,482 tests passing).
// `npm test` keeps every file isolated.
export default mergeConfig(
  base,
  defineConfig({
    test: {
      isolate: false,
      include: ['marbles/**/*.test.ts', 'test/**/*.test.ts'],
      exclude: [
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
      ],
    },
  }),
);
