/**
 * `cubepi threads list | show ID | rm ID | fork ID`: browse, inspect, delete and fork stored conversations in the
 * store `--db` / `CUBEPI_DB` / the configuration name (default `.cubepi/threads.db`).
 * @module
 */
import { isRecordOnly, textOf, type Message, type ThreadInfo } from '../index.js';
import { CliError, EXIT, usageError } from './cli-error.js';
import type { Command } from './command.js';
import { loadConfig } from './load-config.js';
import { openCheckpointer, storeSpec, type OpenedStore } from './open-checkpointer.js';
import { parseCommandArgs } from './parse-options.js';
import { clip } from './terminal-view.js';
import { newThreadId } from './thread-id.js';

export const THREADS_HELP = `Usage: cubepi threads list [--limit <n>] [--json]
       cubepi threads show <id> [--json]
       cubepi threads rm <id>
       cubepi threads fork <id> [--at <seq>] [--as <new id>]

list: the stored threads, newest first (id, messages, last update, first prompt). show: a thread's transcript.
rm: deletes a thread. fork: copies a thread (its first <seq> messages) into a new thread, when the store supports it.

Options:
  --db <store>   memory | <sqlite file> | postgres://… (default: CUBEPI_DB, else .cubepi/threads.db)
  --limit <n>    at most n threads (default 50)
  --json         machine-readable output
  --debug        on failure, also print the stack
  -h, --help     show this help`;

/** Runs `cubepi threads …`. */
export const threadsCommand: Command = async (args, context) => {
  const { values, positionals } = parseCommandArgs('threads', args, {
    db: { type: 'string' },
    limit: { type: 'string' },
    at: { type: 'string' },
    as: { type: 'string' },
    json: { type: 'boolean', default: false },
    debug: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  });
  if (values.help) {
    context.stdout.write(`${THREADS_HELP}\n`);
    return EXIT.ok;
  }
  const [action, id, ...extra] = positionals;
  const needsId = action === 'show' || action === 'rm' || action === 'fork';
  if (action === undefined || !(action === 'list' || needsId)) {
    throw usageError(
      `threads: ${action === undefined ? 'say what to do' : `unknown action "${action}"`}: list, show, rm or fork`,
    );
  }
  if (needsId && id === undefined) throw usageError(`threads ${action}: which thread? (cubepi threads ${action} <id>)`);
  if (extra.length > 0 || (action === 'list' && id !== undefined))
    throw usageError(`threads ${action}: too many arguments`);
  const limit = positiveInt(values.limit, '--limit') ?? 50;
  const atSeq = values.at === undefined ? undefined : nonNegativeInt(values.at, '--at');

  const { config } = await loadConfig(context.cwd);
  const store = await openCheckpointer(storeSpec(values.db, context.env, config.db), context.cwd);
  const out = (text: string) => void context.stdout.write(text);
  try {
    switch (action) {
      case 'list':
        return await list(store, limit, values.json, out);
      case 'show':
        return await show(store, id!, values.json, out);
      case 'rm':
        await loadOrFail(store, id!);
        await store.checkpointer.deleteThread(id!);
        out(`deleted thread ${id}\n`);
        return EXIT.ok;
      default:
        return await fork(store, id!, atSeq, values.as, out);
    }
  } finally {
    await store.checkpointer.close?.();
  }
};

async function list(store: OpenedStore, limit: number, json: boolean, out: (t: string) => void): Promise<number> {
  const threads: ThreadInfo[] = await store.checkpointer.listThreads({ limit });
  const rows = await Promise.all(
    threads.map(async (t) => ({
      ...t,
      firstPrompt: firstPrompt((await store.checkpointer.load(t.threadId))?.messages),
    })),
  );
  if (json) {
    for (const row of rows) out(`${JSON.stringify(row)}\n`);
    return EXIT.ok;
  }
  if (rows.length === 0) {
    out(`no threads in ${store.description} (cubepi run "…" or cubepi chat starts one)\n`);
    return EXIT.ok;
  }
  const width = Math.max(6, ...rows.map((r) => r.threadId.length));
  out(`${'THREAD'.padEnd(width)}  MSGS  UPDATED           FIRST PROMPT\n`);
  for (const r of rows) {
    const updated = new Date(r.updatedAt).toISOString().slice(0, 16).replace('T', ' ');
    out(`${r.threadId.padEnd(width)}  ${String(r.messageCount).padStart(4)}  ${updated}  ${clip(r.firstPrompt, 60)}\n`);
  }
  return EXIT.ok;
}

async function show(store: OpenedStore, id: string, json: boolean, out: (t: string) => void): Promise<number> {
  const data = await loadOrFail(store, id);
  if (json) {
    out(`${JSON.stringify({ threadId: id, seq: data.seq, messages: data.messages })}\n`);
    return EXIT.ok;
  }
  out(`thread ${id}: ${data.seq} messages (${store.description})\n`);
  for (const message of data.messages) out(`${describe(message)}\n`);
  return EXIT.ok;
}

async function fork(
  store: OpenedStore,
  id: string,
  atSeq: number | undefined,
  as: string | undefined,
  out: (t: string) => void,
): Promise<number> {
  const checkpointer = store.checkpointer;
  if (checkpointer.fork === undefined) {
    throw new CliError(`threads fork: the store (${store.description}) cannot fork threads`);
  }
  const data = await loadOrFail(store, id);
  if (atSeq !== undefined && atSeq > data.seq) {
    throw usageError(`threads fork: --at ${atSeq} is past the end of thread ${id} (${data.seq} messages)`);
  }
  const target = as ?? newThreadId();
  await checkpointer.fork(id, { atSeq: atSeq ?? data.seq, newThreadId: target });
  out(`forked thread ${id}${atSeq === undefined ? '' : ` at message ${atSeq}`} into ${target}\n`);
  return EXIT.ok;
}

async function loadOrFail(store: OpenedStore, id: string) {
  const data = await store.checkpointer.load(id);
  if (data === null) {
    throw new CliError(`no thread "${id}" in ${store.description}: cubepi threads list shows the stored threads`);
  }
  return data;
}

function firstPrompt(messages: readonly Message[] | undefined): string {
  const first = messages?.find((m) => m.role === 'user');
  return first === undefined ? '' : textOf(first);
}

function describe(message: Message): string {
  switch (message.role) {
    case 'user': {
      // Each attached file on a line of its own: name (or what holds its bytes), type, size.
      const files = typeof message.content === 'string' ? [] : message.content.filter((b) => b.type !== 'text');
      const lines = files.map((block) => {
        if (block.type === 'image') return `  [image · ${block.mimeType} · ${byteSize(block.data)} B]`;
        const name = block.name ?? block.url ?? block.fileId ?? 'file';
        const size = block.size ?? (block.data === undefined ? undefined : byteSize(block.data));
        return `  [${name} · ${block.mimeType}${size === undefined ? '' : ` · ${size} B`}]`;
      });
      return [`> ${textOf(message)}`, ...lines].join('\n');
    }
    case 'toolResult':
      return `  ${message.isError ? '✗' : '✓'} ${message.toolName} → ${clip(textOf(message), 200)}`;
    case 'assistant': {
      const parts = message.content.map((block) =>
        block.type === 'text'
          ? block.text
          : block.type === 'toolCall'
            ? `  ⚙ ${block.name}(${clip(JSON.stringify(block.arguments), 160)})`
            : `  (thinking: ${clip(block.thinking, 80)})`,
      );
      if (isRecordOnly(message)) {
        const why = message.errorMessage ?? message.blockReason;
        parts.push(`  [${message.stopReason}${why === undefined ? '' : `: ${clip(why, 160)}`}]`);
      }
      return parts.join('\n');
    }
  }
}

/** The decoded length of base64 `data`. */
function byteSize(data: string): number {
  return Math.floor((data.length * 3) / 4) - (data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0);
}

function positiveInt(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw usageError(`${name} must be a positive integer, got "${value}"`);
  return n;
}

function nonNegativeInt(value: string, name: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw usageError(`${name} must be a whole number, got "${value}"`);
  return n;
}
