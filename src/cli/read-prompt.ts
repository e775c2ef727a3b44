/**
 * Where `cubepi run` gets its prompt: the arguments, `-` or a pipe (stdin, read whole: no argument-length limit), or
 * `--prompt-file`.
 * @module
 */
import { readFile } from 'node:fs/promises';
import { CliError, usageError } from './cli-error.js';

/** The prompt and whether stdin was used for it (then stdin cannot answer approvals). */
export interface ReadPrompt {
  readonly prompt: string;
  readonly fromStdin: boolean;
}

/**
 * The prompt from `positionals` (joined by spaces), `-` (stdin), `file`, or stdin when it is not a TTY and nothing
 * else was given. An empty prompt or none at all is a usage error (exit code 2); an unreadable file exits 1.
 */
export async function readPrompt(
  positionals: readonly string[],
  file: string | undefined,
  stdin: NodeJS.ReadStream,
): Promise<ReadPrompt> {
  const dash = positionals.length === 1 && positionals[0] === '-';
  if (file !== undefined && positionals.length > 0)
    throw usageError('run: give the prompt as an argument or --prompt-file, not both');
  let prompt: string;
  let fromStdin = false;
  if (file !== undefined) {
    try {
      prompt = await readFile(file, 'utf8');
    } catch (error) {
      throw new CliError(`cannot read the prompt file ${file}: ${(error as Error).message}`, 1, { cause: error });
    }
  } else if (dash || (positionals.length === 0 && stdin.isTTY !== true)) {
    prompt = await readAll(stdin);
    fromStdin = true;
  } else if (positionals.length === 0) {
    throw usageError(
      'run: no prompt: cubepi run "your prompt", or pipe it in (… | cubepi run -), or --prompt-file <path> ' +
        '(--file attaches a file to the prompt)',
    );
  } else {
    prompt = positionals.join(' ');
  }
  if (prompt.trim() === '') throw usageError('run: the prompt is empty');
  return { prompt, fromStdin };
}

async function readAll(stream: NodeJS.ReadStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}
