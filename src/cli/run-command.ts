/**
 * `cubepi run "prompt"`: one run, streamed. The answer goes to stdout, tool activity, usage and errors to stderr; with
 * `--json` every event is one JSON line on stdout and the result the last line. Ctrl-C cancels the run (exit 130).
 * @module
 */
import { usageOf } from '../index.js';
import { approvalAsker, lineAsker, ttyAsker, type AskLine } from './approval-prompt.js';
import { createCliAgent, prepareAgentSetup } from './agent-setup.js';
import { EXIT } from './cli-error.js';
import type { Command } from './command.js';
import { runFailure, thrownFailure } from './describe-failure.js';
import { driveRun } from './drive-run.js';
import { jsonResult, writeJsonEvent } from './json-lines.js';
import { AGENT_OPTIONS, parseCommandArgs } from './parse-options.js';
import { describeAttachment, fileArguments, promptWithFiles, readAttachments } from './attach-files.js';
import { readPrompt } from './read-prompt.js';
import { colorsFor, createStyle } from './style.js';
import { createTerminalView } from './terminal-view.js';
import { newThreadId } from './thread-id.js';

export const RUN_HELP = `Usage: cubepi run "prompt" [options]
       cubepi run - [options]          (the prompt from stdin; so is a pipe: cat task.md | cubepi run)
       cubepi run --prompt-file <path> [options]
       cubepi run --file report.pdf "Summarise it" [options]

Runs the agent once. The answer streams to stdout; tool calls, thinking, usage and errors go to stderr.

Options:
  --json               every agent event as one JSON line on stdout, then a {"type":"result",…} line
  --prompt-file <path> read the prompt from a file
  --file <path>        attach a file to the prompt (repeatable): pdf png jpg gif webp wav mp3 txt md csv json
                       html docx xlsx by extension; checked before the run (its bytes must be its type)
  --file-type <mime>   the type of the --file before it, for another extension (--file data.bin --file-type …)
  --thread <id>        continue (or start) this thread; default: a new one, named at the end
  --system <text>      the system prompt (default: the configuration's, or cubepi's own)
  --provider <name>    anthropic | openai | openai-responses | faux (default: from the environment)
  --model <id>         the model (default: the provider's current default, see docs/cli.md#models)
  --db <store>         memory | <sqlite file> | postgres://… (default: CUBEPI_DB, else .cubepi/threads.db)
  --allow-write        offer the write_file tool (each call asks for confirmation)
  --allow-shell        offer the run_command tool (each call asks for confirmation)
  -y, --yes            do not ask: allow every write_file / run_command call
  --no-thinking        do not show the model's thinking
  --delay <ms>         the demo model's pause between streamed chunks (default 8)
  --debug              on failure, also print the stack and the provider's raw error
  -h, --help           show this help

Exit codes: 0 done, 1 failed (provider, network, store), 2 bad usage, 130 cancelled (Ctrl-C).`;

const RUN_OPTIONS = {
  ...AGENT_OPTIONS,
  json: { type: 'boolean', default: false },
  'prompt-file': { type: 'string' },
  file: { type: 'string', multiple: true },
  'file-type': { type: 'string', multiple: true },
} as const;

/** Runs `cubepi run …`. */
export const runCommand: Command = async (args, context) => {
  const { values, positionals } = parseCommandArgs('run', args, RUN_OPTIONS);
  if (values.help) {
    context.stdout.write(`${RUN_HELP}\n`);
    return EXIT.ok;
  }
  const { stdout, stderr } = context;
  // The files first: a missing or mistyped one is a usage error before a prompt is read from stdin.
  const files = fileArguments(args, RUN_OPTIONS);
  const attached = await readAttachments(files);
  const { prompt, fromStdin } = await readPrompt(positionals, values['prompt-file'], context.stdin);
  const setup = await prepareAgentSetup(values, context);
  const style = createStyle(colorsFor(stderr, context.env));
  const info = (text: string) => void stderr.write(text);
  if (setup.choice.notice !== undefined) info(`${style.dim(setup.choice.notice)}\n`);
  attached.forEach((block, i) => info(`${style.dim(`attached ${describeAttachment(block, files[i]!.path)}`)}\n`));

  const threadId = values.thread ?? newThreadId();
  const agent = createCliAgent(setup, threadId);
  const view = values.json
    ? {
        next: (event: Parameters<typeof writeJsonEvent>[1]) => writeJsonEvent((l) => stdout.write(l), event),
        stop() {},
      }
    : createTerminalView({
        text: (text) => void stdout.write(text),
        info,
        style,
        showThinking: !values['no-thinking'],
        spinner: stderr.isTTY === true && !values.json,
        thread: () => agent.state.messages,
      });
  const asker: (AskLine & { close(): void }) | undefined = fromStdin
    ? ttyAsker(stderr)
    : lineAsker(context.stdin, stderr);
  const cancel = new AbortController();
  const onSigint = () => {
    // A second Ctrl-C while the first one's cancellation settles: leave at once.
    if (cancel.signal.aborted) process.exit(EXIT.interrupted);
    cancel.abort();
  };
  process.on('SIGINT', onSigint);
  try {
    const result = await driveRun(agent, agent.prompt$(promptWithFiles(prompt, attached)), {
      onEvent: (event) => view.next(event),
      ask: approvalAsker(asker ?? (() => Promise.resolve(undefined)), style),
      cancel: cancel.signal,
    });
    view.stop();
    // After a cancellation the agent still closes the run (the aborted message is stored): wait for it.
    await agent.waitForIdle();
    const json = (r: ReturnType<typeof jsonResult>) =>
      values.json && stdout.write(`${JSON.stringify({ ...r, threadUsage: usageOf(agent.state.messages) })}\n`);
    if (result.kind === 'cancelled') {
      json(jsonResult(threadId, undefined, 'cancelled', 'cancelled (Ctrl-C)'));
      info(`cubepi: cancelled (Ctrl-C); thread ${threadId} keeps the conversation so far (--thread ${threadId})\n`);
      return EXIT.interrupted;
    }
    const failure =
      result.kind === 'error'
        ? thrownFailure(result.error, setup.store.description)
        : runFailure(result.end, setup.choice, setup.choice.model);
    if (failure !== undefined) {
      json(jsonResult(threadId, result.kind === 'ended' ? result.end : undefined, 'error', failure.message));
      throw failure;
    }
    const end = result.kind === 'ended' ? result.end : undefined;
    json(jsonResult(threadId, end, end?.outcome ?? 'completed'));
    if (setup.store.persistent) {
      info(style.dim(`thread ${threadId} (${setup.store.description}): continue with --thread ${threadId}\n`));
    }
    return EXIT.ok;
  } finally {
    process.off('SIGINT', onSigint);
    asker?.close();
    await setup.store.checkpointer.close?.();
  }
};
