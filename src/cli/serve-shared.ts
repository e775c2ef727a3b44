/**
 * What `cubepi serve` and `cubepi studio` share: their common options, the token (given, random, or none on loopback),
 * listening, the printed URL, and stopping on a signal.
 * @module
 */
import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EXIT, usageError } from './cli-error.js';
import type { CommandContext } from './command.js';

/** The options both commands take (`parseCommandArgs` specs). */
export const SERVING_OPTIONS = {
  port: { type: 'string', default: '8787' },
  host: { type: 'string', default: '127.0.0.1' },
  db: { type: 'string' },
  provider: { type: 'string' },
  model: { type: 'string' },
  'auth-token': { type: 'string' },
  'no-auth': { type: 'boolean', default: false },
  delay: { type: 'string' },
} as const;

/** The port, host and token a command serves with. */
export interface Serving {
  readonly port: number;
  /** The token every request needs; `undefined` with `--no-auth`. */
  readonly token: string | undefined;
  /** True when the token was made at start (then printed in the URL). */
  readonly generated: boolean;
}

/**
 * The port and token of `command`: `--auth-token` (or `CUBEPI_AUTH_TOKEN`), else a random one, unless `--no-auth`
 * (loopback only). Usage errors for a bad port, a short token, contradicting flags, or `--no-auth` off loopback.
 */
export function resolveServingFlags(
  command: string,
  values: { readonly port: string; readonly host: string; readonly 'auth-token'?: string; readonly 'no-auth': boolean },
  env: CommandContext['env'],
): Serving {
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw usageError(`${command}: --port must be 0-65535, got ${values.port}`);
  }
  const given = values['auth-token'] ?? (env.CUBEPI_AUTH_TOKEN || undefined);
  if (given !== undefined && given.length < 16) {
    throw usageError(`${command}: --auth-token must be at least 16 characters`);
  }
  if (values['no-auth'] && given !== undefined) throw usageError(`${command}: --no-auth and --auth-token contradict`);
  if (values['no-auth'] && !isLoopback(values.host)) {
    throw usageError(
      `${command}: binding ${values.host} exposes the agent to the network: --no-auth is for loopback only; ` +
        'set --auth-token (16+ characters) or leave it out for a random one',
    );
  }
  // Like Jupyter: a token made at start, printed in the page's URL, so no other program or user of this machine can
  // drive the agent. The page reads it from the URL's fragment, which never reaches a server log or a Referer.
  const generated = given === undefined && !values['no-auth'];
  return { port, token: generated ? randomBytes(24).toString('base64url') : given, generated };
}

/** Whether `host` is a loopback address or name. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** Listens on `host:port`; resolves with the page's origin (`http://host:bound`). */
export async function listen(http: Server, host: string, port: number): Promise<string> {
  await new Promise<void>((ready, fail) => {
    http.once('error', (error) => fail(new Error(`cannot listen on ${host}:${port}: ${error.message}`)));
    http.listen(port, host, ready);
  });
  const { port: bound } = http.address() as AddressInfo;
  return `http://${host.includes(':') ? `[${host}]` : host}:${bound}`;
}

/** The URL fragment that hands the page its token (`#token=…`; a given token is not printed). */
export function tokenFragment(serving: Serving): string {
  return serving.token === undefined ? '' : serving.generated ? `#token=${serving.token}` : '#token=<your token>';
}

/** The warning printed with `--no-auth`. */
export function noAuthWarning(command: string): string {
  return (
    `cubepi ${command}: --no-auth: any program or user on this machine can run the agent, read every thread and ` +
    'answer its approvals (web pages still cannot: their Origin and Host are refused)\n'
  );
}

/** Resolves with the exit code once SIGINT (130) or SIGTERM (0) arrived and `stop` finished. */
export function untilSignal(stop: () => Promise<void>): Promise<number> {
  return new Promise<number>((done) => {
    const on = (code: number) => () => void stop().then(() => done(code));
    process.once('SIGINT', on(EXIT.interrupted));
    process.once('SIGTERM', on(EXIT.ok));
  });
}
