// The provider-boundary fuzz at scale (issue 36, item 5): the property of
// test/properties/provider-boundary.property.test.ts on 10,000 seeded cases (npm test runs 1,000), counting the
// failing cases by category (uncaught, rejected, grammar, stored, unanswered, undetected, poisoned, hang) instead of
// stopping at the first. Prints the cases, the failures and the time; exits 1 if any case failed.
//
//   node scripts/fuzz-provider-boundary.mjs [--cases 10000] [--seed 3538949] [--hang-ms 10000]
//
// It runs the test file under vitest (the cases import the sources, as the tests do); the same run by hand is
// `FUZZ_PROVIDER_CASES=10000 npx vitest run test/properties/provider-boundary.property.test.ts`.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1] : fallback;
};
const env = {
  ...process.env,
  FUZZ_PROVIDER_CASES: opt('--cases', '10000'),
  ...(opt('--seed') === undefined ? {} : { FUZZ_PROVIDER_SEED: opt('--seed') }),
  ...(opt('--hang-ms') === undefined ? {} : { FUZZ_PROVIDER_HANG_MS: opt('--hang-ms') }),
};
const root = fileURLToPath(new URL('..', import.meta.url));
const started = Date.now();
const run = spawnSync('npx', ['vitest', 'run', 'test/properties/provider-boundary.property.test.ts'], {
  cwd: root,
  env,
  stdio: 'inherit',
});
console.log(`fuzz-provider-boundary: ${((Date.now() - started) / 1000).toFixed(1)} s in all (vitest start included)`);
process.exit(run.status ?? 1);
