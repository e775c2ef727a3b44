/**
 * The studio page's session: the token (from `#token=` at first load, then sessionStorage), the studio-api requests,
 * and the agent server's base URL.
 * @module
 */
import type { StudioConfig } from '../../src/studio/api.js';

const KEY = 'cubepi-studio-token';

/** Reads `token=` from the URL fragment (then removes it from the address bar) or from sessionStorage. */
export function takeToken(): string | undefined {
  const match = /(?:^#|[&?])token=([^&]*)/.exec(location.hash);
  if (match !== null) {
    const token = decodeURIComponent(match[1]!);
    try {
      sessionStorage.setItem(KEY, token);
    } catch {
      // A page without storage keeps the token in memory only.
    }
    const rest = location.hash.replace(match[0], match[0].startsWith('#') ? '#' : '');
    history.replaceState(null, '', rest === '#' || rest === '' ? '#/threads' : rest);
    return token;
  }
  try {
    return sessionStorage.getItem(KEY) ?? undefined;
  } catch {
    return undefined;
  }
}

/** A failed studio-api request, with the server's error code. */
export class StudioRequestError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'StudioRequestError';
  }
}

/** What every view is given. */
export interface Session {
  readonly token: string | undefined;
  readonly config: StudioConfig;
  /** The agent server's base URL (absolute), for cubepi/client. */
  readonly apiBase: string;
  /** `GET studio-api/<path>` as JSON; rejects with {@link StudioRequestError}. */
  get<T>(path: string, signal?: AbortSignal): Promise<T>;
  /** The client options (`{ token }`) of cubepi/client calls. */
  readonly client: { readonly token?: string };
}

/** The session of this page: the config read with `token`. */
export async function openSession(token: string | undefined): Promise<Session> {
  const studioBase = new URL('studio-api/', location.href);
  const get = async <T>(path: string, signal?: AbortSignal): Promise<T> => {
    const response = await fetch(new URL(path, studioBase), {
      headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
      ...(signal === undefined ? {} : { signal }),
    });
    if (!response.ok) {
      const body = (await response.json().catch(() => ({}))) as { error?: { code?: string; message?: string } };
      throw new StudioRequestError(
        response.status,
        body.error?.code ?? 'error',
        body.error?.message ?? `HTTP ${response.status}`,
      );
    }
    return (await response.json()) as T;
  };
  const config = await get<StudioConfig>('config');
  return {
    token,
    config,
    apiBase: new URL(config.apiBase === '' ? '/' : config.apiBase, location.origin).toString(),
    get,
    client: token === undefined ? {} : { token },
  };
}
