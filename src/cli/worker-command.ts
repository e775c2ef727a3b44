/**
 * `cubepi worker`: runs the agent of `cubepi serve` for runs queued on PostgreSQL (`cubepi/worker`'s `startWorker`),
 * so any number of `cubepi serve --queue` API nodes and workers share one database. The model is chosen like `cubepi
 * serve`'s; threads are kept in the queue's database. SIGTERM or SIGINT drains: no new run is taken, running ones get
 * `--grace-ms` to finish, the rest are cancelled, and the command exits 0.
 * @module
 */
import type { RunWorker } from '../worker/index.js';
import { parseDelay } from './agent-setup.js';
import { chooseModel } from './choose-model.js';
import { EXIT, usageError } from './cli-error.js';
import type { Command } from './command.js';
import { openQueue, queueSpec } from './open-queue.js';
import { parseCommandArgs } from './parse-options.js';
import { serveAgent } from './serve-agent.js';

const HELP = `Usage: cubepi worker [options]

Takes runs queued on PostgreSQL (by cubepi serve --queue, or any API node on the same queue) and runs them on the
agent cubepi serve serves, streaming their events back through the database. Run as many workers as you like.

Options:
  --queue <url>         postgres://… (also CUBEPI_QUEUE, else DATABASE_URL); ?schema=<name> keeps the queue and
                        the threads in that schema (pg-boss's tables in <name>_boss)
  --agent <name>        the agent name runs are queued for (default "default"; cubepi serve --agent); the worker
                        takes only those runs: runs for other agents wait for a worker that has them
  --concurrency <n>     runs at once in this process (default 4)
  --grace-ms <ms>       on SIGTERM or SIGINT, how long running runs may finish before they are cancelled
                        (default 30000); then the command exits 0
  --provider <p>        anthropic | openai | openai-responses | faux (default: from the environment, else the demo)
  --model <id>          the model id (default: the provider's current one)
  --delay <ms>          pause between streamed chunks of the offline demo model (default 25)
  -h, --help            show this help`;

/** `cubepi worker`: resolves with 0 once a signal drained it. */
export const workerCommand: Command = async (args, context) => {
  const { values } = parseCommandArgs(
    'worker',
    args,
    {
      queue: { type: 'string' },
      agent: { type: 'string', default: 'default' },
      concurrency: { type: 'string', default: '4' },
      'grace-ms': { type: 'string', default: '30000' },
      provider: { type: 'string' },
      model: { type: 'string' },
      delay: { type: 'string' },
      debug: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    false,
  );
  if (values.help) {
    context.stdout.write(`${HELP}\n`);
    return EXIT.ok;
  }
  const concurrency = Number(values.concurrency);
  if (!Number.isSafeInteger(concurrency) || concurrency < 1) {
    throw usageError(`worker: --concurrency must be a positive integer, got ${values.concurrency}`);
  }
  const graceMs = Number(values['grace-ms']);
  if (values['grace-ms'].trim() === '' || !Number.isFinite(graceMs) || graceMs < 0) {
    throw usageError(`worker: --grace-ms must be a number of milliseconds, got ${values['grace-ms']}`);
  }
  if (values.agent === '') throw usageError('worker: --agent must not be empty');
  const spec = queueSpec(values.queue, context.env, true);
  if (spec === undefined) {
    throw usageError('worker: no queue: pass --queue postgres://… (or set CUBEPI_QUEUE or DATABASE_URL)');
  }
  const delayMs = parseDelay(values.delay) ?? 25;
  const choice = await chooseModel({ provider: values.provider, model: values.model, delayMs }, context.env);
  const opened = await openQueue('worker', spec, context.cwd);
  const checkpointer = opened.store.checkpointer;
  let worker: RunWorker;
  try {
    const { startWorker } = await import('../worker/index.js');
    worker = await startWorker({
      queue: opened.queue,
      concurrency,
      agents: { [values.agent]: (threadId) => serveAgent(choice, checkpointer, threadId, delayMs, context.cwd) },
      onError: (error) => context.stderr.write(`cubepi worker: ${String(error)}\n`),
    });
  } catch (error) {
    await opened.close();
    throw error;
  }
  if (choice.notice !== undefined) context.stderr.write(`${choice.notice}\n`);
  context.stdout.write(
    `cubepi worker: running "${values.agent}" runs from ${opened.description} ` +
      `(model: ${choice.demo ? 'the offline demo' : `${choice.providerName} ${choice.model}`}; ` +
      `concurrency ${concurrency})\n`,
  );
  return new Promise<number>((done) => {
    let stopping = false;
    const stop = () => {
      if (stopping) return;
      stopping = true;
      context.stdout.write(`cubepi worker: stopping (running runs get ${graceMs} ms to finish)\n`);
      void worker
        .stop({ graceMs })
        .then(() => opened.close())
        .then(
          () => {
            context.stdout.write('cubepi worker: stopped\n');
            done(EXIT.ok);
          },
          (error: unknown) => {
            context.stderr.write(`cubepi worker: stopping failed: ${String(error)}\n`);
            done(EXIT.failed);
          },
        );
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
};
