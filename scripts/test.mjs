// `npm test` after the build: the type check and the lint run beside the test files rather than before them. Most of
// the test files wait (child processes, PostgreSQL, pg-boss's heartbeats, a browser), so the checks' CPU fits in
// those waits. The checks' output is held and printed after the tests' own, under a heading; the exit code is
// non-zero when either lane failed. Arguments are passed to vitest (`npm test -- test/agent`).
import { spawn } from 'node:child_process';

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const children = new Set();

/** Runs a command; resolves its exit code. `capture`: hold stdout and stderr (interleaved) in `out`. */
function run(command, args, out) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: out ? ['ignore', 'pipe', 'pipe'] : 'inherit' });
    children.add(child);
    if (out) {
      child.stdout.on('data', (chunk) => out.push(chunk));
      child.stderr.on('data', (chunk) => out.push(chunk));
    }
    child.on('error', (error) => {
      out?.push(Buffer.from(`${command}: ${error.message}\n`));
      resolve(1);
    });
    child.on('close', (code, signal) => {
      children.delete(child);
      resolve(code ?? (signal ? 1 : 0));
    });
  });
}

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    for (const child of children) child.kill(signal);
    process.exit(1);
  });
}

const checksOut = [];
const checks = (async () => {
  const typecheck = await run(npm, ['run', '--silent', 'typecheck'], checksOut);
  if (typecheck !== 0) return { name: 'typecheck', code: typecheck };
  const lint = await run(npm, ['run', '--silent', 'lint'], checksOut);
  return { name: 'lint', code: lint };
})();
const tests = run(npm, ['exec', '--', 'vitest', 'run', ...process.argv.slice(2)]);

const [checked, tested] = await Promise.all([checks, tests]);
process.stdout.write(`\n── typecheck and lint (${checked.code === 0 ? 'passed' : `${checked.name} failed`}) ──\n`);
process.stdout.write(Buffer.concat(checksOut));
if (checked.code !== 0 || tested !== 0) {
  process.stdout.write(
    `\nnpm test failed:${checked.code !== 0 ? ` ${checked.name}` : ''}${tested !== 0 ? ' vitest' : ''}\n`,
  );
  process.exit(1);
}
