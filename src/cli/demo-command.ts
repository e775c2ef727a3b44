/**
 * `cubepi demo`: what `npm start` runs. Says what cubepi is, then runs an agent offline with the demo model (no key,
 * no network, nothing stored) so a fresh clone shows an agent at work, and says where to go next.
 * @module
 */
import { EXIT } from './cli-error.js';
import type { Command } from './command.js';
import { parseCommandArgs } from './parse-options.js';
import { runCommand } from './run-command.js';
import { colorsFor, createStyle } from './style.js';

export const DEMO_HELP = `Usage: cubepi demo [--delay <ms>] [--json] [--no-thinking]

Runs an agent offline with cubepi's demo model (scripted, no key, no network, nothing stored) and shows its answer,
tool calls, results and usage. \`npm start\` runs this.`;

const PROMPT = 'Show me around this directory.';

/** Runs `cubepi demo …`. */
export const demoCommand: Command = async (args, context) => {
  const { values } = parseCommandArgs(
    'demo',
    args,
    {
      delay: { type: 'string' },
      json: { type: 'boolean', default: false },
      'no-thinking': { type: 'boolean', default: false },
      debug: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    false,
  );
  if (values.help) {
    context.stdout.write(`${DEMO_HELP}\n`);
    return EXIT.ok;
  }
  const style = createStyle(colorsFor(context.stderr, context.env));
  const say = (text: string) => void (values.json ? context.stderr : context.stdout).write(text);
  say(
    `${style.bold('cubepi')}: an LLM agent runtime for TypeScript built on RxJS, and this is its command.\n` +
      `Demo: an agent with the offline demo model (scripted: no key, no network) and the built-in tools.\n` +
      `> cubepi run "${PROMPT}" --provider faux --db memory\n\n`,
  );
  const forwarded = args.filter((arg) => arg !== '--debug');
  const code = await runCommand(['--provider', 'faux', '--db', 'memory', ...forwarded, PROMPT], context);
  if (code === EXIT.ok) {
    say(
      `\nNext: ${style.cyan('cubepi chat')} (interactive), ${style.cyan('cubepi run "…"')}, ` +
        `${style.cyan('cubepi threads list')}, ${style.cyan('cubepi --help')}. ` +
        'With ANTHROPIC_API_KEY or OPENAI_API_KEY set they use a real model.\n',
    );
  }
  return code;
};
