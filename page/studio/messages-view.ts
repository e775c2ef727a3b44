/**
 * A thread's messages as rows: user, assistant (text, thinking collapsed, tool calls with their arguments) and tool
 * results, with the markers between them (fork points, a compaction) and the actions of each row (retry, edit). No
 * listener per row: the view that holds them delegates clicks on `[data-action]`.
 * @module
 */
import type { Message } from '../../src/types/messages.js';
import { h, route } from './dom.js';

/** Where forks branch off and a compaction summarised, by seq. */
export interface Markers {
  /** Forks by the seq they branch before (they keep the messages `[0, atSeq)`). */
  readonly forks: ReadonlyMap<number, readonly string[]>;
  /** The thread the markers are on (for compare links). */
  readonly threadId: string;
  /** A stored compaction: the messages `[0, throughSeq)` were summarised. */
  readonly compaction?: { readonly throughSeq: number; readonly summary: string; readonly model?: string } | undefined;
}

/** Options of a row. */
export interface RowOptions {
  /** Whether the row gets "Retry from here" / "Edit & retry" buttons (a live studio). */
  readonly actions: boolean;
}

/** The row of message `seq`. */
export function messageRow(message: Message, seq: number, options: RowOptions): HTMLElement {
  const row = h('div.msg', { dataset: { seq: String(seq), role: message.role } });
  const label =
    message.role === 'toolResult'
      ? `tool result · ${message.toolName}${message.isError ? ' · error' : ''}`
      : message.role === 'assistant'
        ? `assistant · ${message.model}${message.stopReason === 'stop' || message.stopReason === 'toolUse' ? '' : ` · ${message.stopReason}`}`
        : 'user';
  const head = h('div.msg-head', null, h('span.seq', null, `#${seq}`), h('span.role', null, label));
  if (options.actions && (message.role === 'user' || message.role === 'assistant')) {
    head.append(
      h('button.link', { type: 'button', dataset: { action: 'retry', seq: String(seq) } }, 'Retry from here'),
    );
    if (message.role === 'user') {
      head.append(h('button.link', { type: 'button', dataset: { action: 'edit', seq: String(seq) } }, 'Edit & retry'));
    }
  }
  row.append(head);
  const body = h('div.msg-body');
  if (message.role === 'toolResult') {
    row.dataset.toolCallId = message.toolCallId;
    body.append(h('pre.result', null, textOf(message.content)));
  } else if (typeof message.content === 'string') {
    body.append(h('div.text', null, message.content));
  } else {
    for (const block of message.content) {
      if (block.type === 'text') body.append(h('div.text', null, block.text));
      else if (block.type === 'thinking') {
        body.append(
          h(
            'details.thinking',
            null,
            h('summary', null, block.redacted === true ? 'thinking (redacted)' : 'thinking'),
            h('div', null, block.thinking),
          ),
        );
      } else if (block.type === 'toolCall') {
        body.append(
          h(
            'div.tool-call',
            { dataset: { toolCallId: block.id } },
            h('span.tool-name', null, `→ ${block.name}`),
            h('pre.args', null, JSON.stringify(block.arguments, null, 2)),
          ),
        );
      } else if (block.type === 'image') body.append(h('div.text', null, `[image ${block.mimeType}]`));
    }
  }
  if (message.role === 'assistant' && message.errorMessage !== undefined) {
    body.append(h('div.error-note', null, message.errorMessage));
  }
  row.append(body);
  return row;
}

/** The markers to show before message `seq` (fork points, the end of a compacted stretch). */
export function markersBefore(seq: number, markers: Markers): HTMLElement[] {
  const out: HTMLElement[] = [];
  const compaction = markers.compaction;
  if (compaction !== undefined && compaction.throughSeq === seq) {
    out.push(
      h(
        'div.marker.compaction',
        { dataset: { marker: 'compaction' } },
        h('strong', null, `Compacted: messages 0–${seq - 1} summarised`),
        compaction.model === undefined ? null : h('span.muted', null, ` by ${compaction.model}`),
        h('details', null, h('summary', null, 'summary'), h('div', null, compaction.summary)),
      ),
    );
  }
  for (const fork of markers.forks.get(seq) ?? []) {
    out.push(
      h(
        'div.marker.fork',
        { dataset: { marker: 'fork', fork } },
        h('span', null, '↳ fork '),
        h('a', { href: route('threads', fork) }, fork),
        h('span', null, ` branches here (keeps messages 0–${seq - 1}) · `),
        h('a', { href: route('compare', markers.threadId, fork) }, 'compare'),
      ),
    );
  }
  return out;
}

/** The text of content blocks. */
export function textOf(content: string | readonly { type: string; text?: string }[]): string {
  if (typeof content === 'string') return content;
  return content.map((block) => (block.type === 'text' ? (block.text ?? '') : `[${block.type}]`)).join('');
}

/** The markers of a thread from its forks and `extra` (`cubepi:state` → values → `cubepi:compaction`). */
export function markersOf(
  threadId: string,
  forks: readonly { readonly threadId: string; readonly atSeq: number }[],
  extra: Readonly<Record<string, unknown>>,
): Markers {
  const bySeq = new Map<number, string[]>();
  for (const fork of forks) bySeq.set(fork.atSeq, [...(bySeq.get(fork.atSeq) ?? []), fork.threadId]);
  const state = extra['cubepi:state'] as { values?: Record<string, unknown> } | undefined;
  const entry = state?.values?.['cubepi:compaction'] as
    { throughSeq?: unknown; summary?: unknown; model?: unknown } | undefined;
  const compaction =
    typeof entry?.throughSeq === 'number' && typeof entry.summary === 'string'
      ? {
          throughSeq: entry.throughSeq,
          summary: entry.summary,
          ...(typeof entry.model === 'string' ? { model: entry.model } : {}),
        }
      : undefined;
  return { forks: bySeq, threadId, compaction };
}

/** The state patches recorded in `extra`: per key, who set it last and at which version. */
export function stateChanges(
  extra: Readonly<Record<string, unknown>>,
): { key: string; producer: string; version: number; value: unknown }[] {
  const state = extra['cubepi:state'] as
    | { values?: Record<string, unknown>; changedBy?: Record<string, { producer?: unknown; version?: unknown }> }
    | undefined;
  const changes = Object.entries(state?.changedBy ?? {}).map(([key, change]) => ({
    key,
    producer: typeof change.producer === 'string' ? change.producer : '?',
    version: typeof change.version === 'number' ? change.version : 0,
    value: state?.values?.[key],
  }));
  return changes.sort((a, b) => a.version - b.version);
}
