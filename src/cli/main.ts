#!/usr/bin/env node
/**
 * The `cubepi` command: runs an agent and streams what happens to the terminal. Offline by default (a scripted
 * FauxProvider), so it works on a fresh clone with no keys. Built on the public API only.
 * @module
 */
import { parseArgs } from 'node:util';
import { merge, share, tap, type Observable } from 'rxjs';
import { z } from 'zod';
import { Agent, defineTool, type Message, type Provider } from '../index.js';
import { ofType, textDeltas } from '../../operators/index.js';
import { FauxProvider, fauxMessage, fauxToolCall } from '../testing/index.js';
import { serveCommand } from './serve-command.js';
import { traceCommand } from './trace-command.js';

const HELP = `Usage: cubepi [prompt] [options]
       cubepi mcp [options]

Runs an agent and streams its answer, its tool calls and a summary. \`cubepi mcp\` serves the same agent as an MCP
server over stdin/stdout instead (a tool \`ask_agent\` taking a prompt, and its \`weather\` tool; needs
@modelcontextprotocol/sdk), for Claude Desktop, Cursor or another cubepi.

Options:
  --provider <p> anthropic | openai | openai-responses: a real model through its official SDK (the key from
                 ANTHROPIC_API_KEY / OPENAI_API_KEY); default: cubepi's scripted FauxProvider, no network, no keys
  --model <id>   the model id (default: claude-sonnet-4-5 / gpt-4.1)
  --events       print every agent event as a JSON line instead of the readable view
  --delay <ms>   pause between streamed chunks of the offline model (default 12)
  -h, --help     show this help

cubepi trace list | show ID [--file <path>] reads a local trace file (cubepi trace --help).
cubepi serve [--port 8787] [--db …] serves a chat page and the agent server (cubepi serve --help).`;

const CITIES: Record<string, { temperature: number; sky: string }> = {
  paris: { temperature: 18, sky: 'light rain' },
  oslo: { temperature: 7, sky: 'clear' },
};

/** A tool with a real schema, validation and cancellation, answering from a small table. */
const weather = defineTool({
  name: 'weather',
  description: 'Current weather for a city',
  parameters: z.object({ city: z.string().describe('City name, e.g. "Paris"') }),
  execute: async (_id, { city }, { signal }) => {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(resolve, 150);
      signal.addEventListener('abort', () => (clearTimeout(timer), reject(signal.reason as Error)), { once: true });
    });
    const known = CITIES[city.toLowerCase()];
    if (known === undefined) return { content: [{ type: 'text', text: `No weather data for ${city}` }], isError: true };
    return {
      content: [{ type: 'text', text: `${city}: ${known.temperature} °C, ${known.sky}` }],
      details: { city, ...known },
    };
  },
});

/** The offline model: asks for the weather of both cities at once, then answers from the results. */
function offlineProvider(delayMs: number): FauxProvider {
  return new FauxProvider({
    delayMs,
    responses: [
      fauxMessage([fauxToolCall('weather', { city: 'Paris' }), fauxToolCall('weather', { city: 'Oslo' })]),
      (messages: readonly Message[]) => {
        const results = messages
          .filter((m) => m.role === 'toolResult')
          .map((m) => m.content.map((b) => (b.type === 'text' ? b.text : '')).join(''));
        return fauxMessage(
          `Here is the weather you asked for:\n- ${results.join('\n- ')}\nPack an umbrella for Paris.`,
        );
      },
    ],
  });
}

/** The provider and model to run: offline by default; a real SDK-backed provider on request (loaded only then). */
async function chooseProvider(
  name: string | undefined,
  model: string | undefined,
  delayMs: number,
): Promise<{ provider: Provider; model: string } | string> {
  switch (name) {
    case undefined:
      return { provider: offlineProvider(delayMs), model: model ?? 'faux' };
    case 'anthropic': {
      const { AnthropicProvider } = await import('../providers/anthropic.js');
      return { provider: new AnthropicProvider(), model: model ?? 'claude-sonnet-4-5' };
    }
    case 'openai':
    case 'openai-responses': {
      const { OpenAIProvider, OpenAIResponsesProvider } = await import('../providers/openai.js');
      const provider = name === 'openai' ? new OpenAIProvider() : new OpenAIResponsesProvider();
      return { provider, model: model ?? 'gpt-4.1' };
    }
    default:
      return `unknown --provider ${JSON.stringify(name)} (anthropic, openai or openai-responses)`;
  }
}

async function main(argv: readonly string[]): Promise<number> {
  if (argv[0] === 'serve') return serveCommand(argv.slice(1));
  if (argv[0] === 'trace') {
    return traceCommand(argv.slice(1), {
      out: (text) => void process.stdout.write(text),
      err: (text) => void process.stderr.write(text),
    });
  }
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: {
      events: { type: 'boolean', default: false },
      delay: { type: 'string', default: '12' },
      provider: { type: 'string' },
      model: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(`${HELP}\n`);
    return 0;
  }
  const delayMs = Number(values.delay);
  if (!Number.isFinite(delayMs) || delayMs < 0) {
    process.stderr.write(`cubepi: --delay must be a number of milliseconds, got ${values.delay}\n`);
    return 2;
  }
  if (positionals[0] === 'mcp') return serve(values.provider, values.model, delayMs);
  const prompt = positionals.join(' ') || 'What is the weather in Paris and Oslo?';
  const chosen = await chooseProvider(values.provider, values.model, delayMs);
  if (typeof chosen === 'string') {
    process.stderr.write(`cubepi: ${chosen}\n`);
    return 2;
  }
  const agent = exampleAgent(chosen);

  // Cold until subscribed; share() lets the views below watch one run (each subscription would otherwise start one).
  const run$ = agent.prompt$(prompt).pipe(share());
  const out = process.stdout;
  const view$: Observable<unknown> = values.events
    ? run$.pipe(
        tap((event) =>
          out.write(
            `${JSON.stringify(event.type === 'message_update' ? { type: event.type, streamEvent: event.streamEvent.type } : event)}\n`,
          ),
        ),
      )
    : merge(
        run$.pipe(
          textDeltas(),
          tap((text) => out.write(text)),
        ),
        run$.pipe(
          ofType('tool_execution_start'),
          tap((e) => out.write(`\n→ ${e.toolName}(${JSON.stringify(e.args)})\n`)),
        ),
        run$.pipe(
          ofType('tool_execution_end'),
          tap((e) =>
            out.write(`← ${e.toolName}: ${e.result.content.map((b) => ('text' in b ? b.text : '')).join('')}\n`),
          ),
        ),
        run$.pipe(
          ofType('agent_end'),
          tap((e) => summarize(e.messages)),
        ),
      );

  out.write(`> ${prompt}\n`);
  const stop = () => subscription.unsubscribe(); // Ctrl-C cancels the run: the request is aborted, tools signalled
  const subscription = view$.subscribe({ error: (error: unknown) => out.write(`\nerror: ${String(error)}\n`) });
  process.once('SIGINT', stop);
  await agent.waitForIdle();
  process.off('SIGINT', stop);
  return agent.state.errorMessage === undefined ? 0 : 1;

  function summarize(messages: readonly Message[]): void {
    const assistants = messages.filter((m) => m.role === 'assistant');
    const tokens = assistants.reduce((sum, m) => sum + (m.role === 'assistant' ? m.usage.totalTokens : 0), 0);
    out.write(`\n\n[${messages.length} messages, ${assistants.length} model calls, ~${tokens} tokens]\n`);
  }
}

function exampleAgent(chosen: { provider: Provider; model: string }): Agent {
  return new Agent({
    provider: chosen.provider,
    model: chosen.model,
    systemPrompt: 'You are a concise weather assistant.',
    tools: [weather],
  });
}

/**
 * `cubepi mcp`: the example agent served over stdio until the client leaves, a fresh agent (and, offline, a fresh
 * scripted model) per call. stdout carries the protocol only. The MCP SDK is loaded here, and only here.
 */
async function serve(providerName: string | undefined, model: string | undefined, delayMs: number): Promise<number> {
  const chosen = await chooseProvider(providerName, model, delayMs);
  if (typeof chosen === 'string') {
    process.stderr.write(`cubepi: ${chosen}\n`);
    return 2;
  }
  const { serveMcp } = await import('../mcp/index.js');
  const { StdioServerTransport } = await import('@modelcontextprotocol/sdk/server/stdio.js');
  // Offline, each call needs its own scripted model (a FauxProvider's script is used up by one run).
  const agentFor = () =>
    providerName === undefined ? exampleAgent({ ...chosen, provider: offlineProvider(delayMs) }) : exampleAgent(chosen);
  return new Promise<number>((resolve) => {
    const subscription = serveMcp(agentFor, new StdioServerTransport(), {
      name: 'cubepi',
      toolDescription: 'Asks a weather assistant; answers with its reply',
      tools: [weather],
    }).subscribe({
      error: (error: unknown) => {
        process.stderr.write(`cubepi mcp: ${error instanceof Error ? error.message : String(error)}\n`);
        resolve(1);
      },
      complete: () => resolve(0),
    });
    // The client closing stdin ends the server; so does Ctrl-C.
    process.stdin.once('end', () => (subscription.unsubscribe(), resolve(0)));
    process.once('SIGINT', () => (subscription.unsubscribe(), resolve(0)));
  });
}

// A closed pipe (`cubepi --events | head`) is the reader leaving, not an error.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(0);
  throw error;
});

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`cubepi: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
