/**
 * `cubepi mcp`: the weather example agent served over stdio as an MCP server until the client leaves, a fresh agent
 * (and, offline, a fresh scripted model) per call. stdout carries the protocol only. The MCP SDK is loaded here, and
 * only here.
 * @module
 */
import { Agent, type Provider } from '../index.js';
import { parseDelay } from './agent-setup.js';
import { EXIT } from './cli-error.js';
import { chooseModel } from './choose-model.js';
import type { Command } from './command.js';
import { weather, weatherDemoProvider } from './example-weather.js';
import { parseCommandArgs } from './parse-options.js';

export const MCP_HELP = `Usage: cubepi mcp [--provider <name>] [--model <id>] [--delay <ms>]

Serves an example agent over stdin/stdout as an MCP server (needs @modelcontextprotocol/sdk): a tool ask_agent
(a prompt in, the agent's answer out) and its weather tool. Without --provider, a scripted offline model answers.`;

/** Runs `cubepi mcp …`. */
export const mcpCommand: Command = async (args, context) => {
  const { values } = parseCommandArgs(
    'mcp',
    args,
    {
      provider: { type: 'string' },
      model: { type: 'string' },
      delay: { type: 'string' },
      debug: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    false,
  );
  if (values.help) {
    context.stdout.write(`${MCP_HELP}\n`);
    return EXIT.ok;
  }
  const delayMs = parseDelay(values.delay) ?? 12;
  const offline = values.provider === undefined || values.provider === 'faux';
  const chosen = offline
    ? undefined
    : await chooseModel({ provider: values.provider, model: values.model }, context.env);
  const agentFor = (): Agent => {
    // Offline, each call needs its own scripted model (a FauxProvider's script is used up by one run).
    const provider: Provider = chosen?.provider ?? weatherDemoProvider(delayMs);
    return new Agent({
      provider,
      model: chosen?.model ?? 'faux',
      systemPrompt: 'You are a concise weather assistant.',
      tools: [weather],
    });
  };
  const { serveMcp, stdioServerTransport } = await import('../mcp/index.js');
  return new Promise<number>((resolve) => {
    // cubepi's stdio transport, not the SDK's: it answers lines it cannot read (and over-long ones) with JSON-RPC
    // errors and keeps serving, where the SDK's stays silent, or closes and the command exits 0.
    const subscription = serveMcp(agentFor, stdioServerTransport({ stdin: context.stdin, stdout: context.stdout }), {
      name: 'cubepi',
      toolDescription: 'Asks a weather assistant; answers with its reply',
      tools: [weather],
    }).subscribe({
      error: (error: unknown) => {
        context.stderr.write(`cubepi mcp: ${error instanceof Error ? error.message : String(error)}\n`);
        resolve(EXIT.failed);
      },
      complete: () => resolve(EXIT.ok),
    });
    const stop = (code: number) => {
      subscription.unsubscribe();
      resolve(code);
    };
    // The client closing stdin ends the server; so does Ctrl-C.
    context.stdin.once('end', () => stop(EXIT.ok));
    process.once('SIGINT', () => stop(EXIT.ok));
  });
};
