/**
 * The errors the `cubepi` command reports: one line on stderr saying what happened and what to do, and an exit code.
 * @module
 */

/** Exit codes of the `cubepi` command (docs/cli.md). */
export const EXIT = Object.freeze({ ok: 0, failed: 1, usage: 2, interrupted: 130 });

/**
 * A failure the command reports as one actionable line (`cubepi: <message>`) and ends with `exitCode`: 1 for a run or
 * an environment that failed (no key, unreachable database), 2 for bad usage (an unknown option, a bad value).
 * `debug` is extra detail printed only with `--debug` (the provider's raw error).
 */
export class CliError extends Error {
  override readonly name = 'CliError';
  constructor(
    message: string,
    readonly exitCode: number = EXIT.failed,
    options?: { cause?: unknown; debug?: string },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.debug = options?.debug;
  }
  readonly debug: string | undefined;
}

/** A usage error (exit code 2): an unknown option, a missing or malformed value. */
export function usageError(message: string): CliError {
  return new CliError(message, EXIT.usage);
}

/**
 * Writes `error` as one line on stderr (`cubepi: …`) and returns its exit code. With `debug`, the stack, the cause
 * chain and the raw detail follow on later lines.
 */
export function reportError(error: unknown, write: (text: string) => void, debug: boolean): number {
  const message = error instanceof Error ? error.message : String(error);
  write(`cubepi: ${message.replace(/\s*\n\s*/g, ' ')}\n`);
  if (debug) {
    if (error instanceof CliError && error.debug !== undefined) write(`${error.debug}\n`);
    for (let e: unknown = error; e !== undefined; e = e instanceof Error ? e.cause : undefined) {
      if (!(e instanceof Error)) {
        write(`${JSON.stringify(e) ?? typeof e}\n`);
        break;
      }
      write(`${e.stack ?? e.message}\n`);
    }
  }
  return error instanceof CliError ? error.exitCode : EXIT.failed;
}
