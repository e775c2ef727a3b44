/**
 * Terminal styling: ANSI colours only on a TTY and never with `NO_COLOR` (https://no-color.org).
 * @module
 */

/** Styling functions; each returns its text unchanged when colours are off. */
export interface Style {
  readonly enabled: boolean;
  readonly dim: (text: string) => string;
  readonly bold: (text: string) => string;
  readonly red: (text: string) => string;
  readonly green: (text: string) => string;
  readonly cyan: (text: string) => string;
  readonly yellow: (text: string) => string;
}

/** Whether to colour output written to `stream` under `env`. */
export function colorsFor(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv): boolean {
  return stream.isTTY === true && (env.NO_COLOR ?? '') === '' && env.TERM !== 'dumb';
}

/** A {@link Style} with colours `enabled` or not. */
export function createStyle(enabled: boolean): Style {
  const wrap = (open: number, close: number) => (text: string) =>
    enabled ? `\u001b[${open}m${text}\u001b[${close}m` : text;
  return {
    enabled,
    dim: wrap(2, 22),
    bold: wrap(1, 22),
    red: wrap(31, 39),
    green: wrap(32, 39),
    cyan: wrap(36, 39),
    yellow: wrap(33, 39),
  };
}
