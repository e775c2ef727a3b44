/**
 * The agent `cubepi serve` serves and `cubepi worker` runs, for one thread: with the offline demo model, two demo tools
 * (`research` reports progress; `delete_notes` asks for approval) and a scripted model that streams slowly enough to
 * watch; with a real model, the command's read-only built-in tools confined to the working directory.
 * @module
 */
import { z } from 'zod';
import { Agent, defineTool, ToolGuard, type AnyAgentTool, type Checkpointer, type Message } from '../index.js';
import { FauxProvider, fauxMessage, fauxToolCall } from '../testing/index.js';
import type { ModelChoice } from './choose-model.js';
import { builtinTools } from './tools/builtin-tools.js';

/** A tool that reports progress three times, then answers; cancellable at any moment. */
const research = defineTool({
  name: 'research',
  description: 'Looks a topic up in the local notes',
  parameters: z.object({ topic: z.string() }),
  execute: async (_id, { topic }, { signal, onUpdate }) => {
    for (const step of ['searching', 'reading', 'summarising']) {
      onUpdate({ content: [{ type: 'text', text: `${step} ${topic}` }] });
      await sleep(150, signal);
    }
    return { content: [{ type: 'text', text: `Notes on ${topic}: three entries found.` }] };
  },
});

/** A tool that changes things: the page must approve each call. */
const deleteNotes = defineTool({
  name: 'delete_notes',
  description: 'Deletes the notes on a topic',
  parameters: z.object({ topic: z.string() }),
  execute: async (_id, { topic }, { signal }) => {
    await sleep(50, signal);
    return { content: [{ type: 'text', text: `Deleted the notes on ${topic}.` }] };
  },
});

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((done, fail) => {
    if (signal.aborted) return fail(signal.reason as Error);
    const onAbort = () => (clearTimeout(timer), fail(signal.reason as Error));
    const timer = setTimeout(() => (signal.removeEventListener('abort', onAbort), done()), ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** The last user prompt's text. */
function lastPrompt(messages: readonly Message[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i]!;
    if (message.role !== 'user') continue;
    return typeof message.content === 'string'
      ? message.content
      : message.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
  }
  return '';
}

/**
 * The demo model, whatever the prompt: a prompt mentioning "delete" calls the guarded `delete_notes`; any other calls
 * `research` on it, then streams a long answer (about 100 chunks, `delayMs` apart: time to press Stop or reload).
 */
function demoProvider(delayMs: number): FauxProvider {
  const script = (messages: readonly Message[]) => {
    const last = messages.at(-1);
    const prompt = lastPrompt(messages);
    const topic = prompt.slice(0, 40) || 'cubepi';
    if (last?.role === 'user') {
      const tool = /delete/i.test(prompt) ? 'delete_notes' : 'research';
      return fauxMessage([fauxToolCall(tool, { topic })]);
    }
    const result =
      last?.role === 'toolResult' ? last.content.map((b) => (b.type === 'text' ? b.text : '')).join('') : '';
    const paragraphs = Array.from(
      { length: 6 },
      (_, i) => `Point ${i + 1}: this is the scripted demo model answering "${topic}", one small chunk at a time.`,
    );
    return fauxMessage(`${result}\n\n${paragraphs.join('\n')}\n\nDone.`);
  };
  // Enough turns for a long conversation: each prompt takes two model calls.
  return new FauxProvider({ delayMs, chunkSize: 4, responses: Array.from({ length: 200 }, () => script) });
}

/**
 * A thread's agent: with the demo model, its two demo tools (`delete_notes` guarded); with a real model, the command's
 * read-only built-in tools confined to the working directory.
 */
export function serveAgent(
  choice: ModelChoice,
  checkpointer: Checkpointer,
  threadId: string,
  delayMs: number,
  cwd: string,
): Agent {
  const tools: AnyAgentTool[] = choice.demo ? [research, deleteNotes] : builtinTools({ dir: cwd });
  return new Agent({
    provider: choice.demo ? demoProvider(delayMs) : choice.provider,
    model: choice.demo ? 'faux' : choice.model,
    systemPrompt: choice.demo ? 'You are the cubepi demo assistant.' : `You help with the files in ${cwd}.`,
    tools,
    middleware: [new ToolGuard({ policy: ToolGuard.byName({ ask: ['delete_notes'] }) })],
    checkpointer,
    threadId,
  });
}
