/**
 * What a subcommand of `cubepi` is: a function of its arguments and the process's streams and environment, resolving
 * with the exit code (or throwing a `CliError`, which the dispatcher reports as one line). Adding a subcommand is one
 * line in `main.ts`'s table.
 * @module
 */

/** The process a subcommand runs in (injected, so a command is a plain function). */
export interface CommandContext {
  readonly stdin: NodeJS.ReadStream;
  readonly stdout: NodeJS.WriteStream;
  readonly stderr: NodeJS.WriteStream;
  readonly env: NodeJS.ProcessEnv;
  readonly cwd: string;
}

/** A subcommand: `args` are the arguments after its name. */
export type Command = (args: readonly string[], context: CommandContext) => Promise<number>;

/** A subcommand in the dispatcher's table: a one-line summary and its module, loaded only when it runs. */
export interface CommandEntry {
  readonly summary: string;
  readonly load: () => Promise<Command>;
}
