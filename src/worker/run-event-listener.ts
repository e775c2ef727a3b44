/**
 * The one LISTEN connection of a run-event log: every reader of the process follows its run's channel through it.
 * @module
 */
import type pg from 'pg';

/** What the listener tells one reader. @internal */
export interface ChannelFollower {
  /**
   * The channel's LISTEN is in effect (acknowledged by the server): the first time, the reader may query; again after
   * the listener reconnected, the reader must query `seq > last` (a NOTIFY may have been missed meanwhile).
   */
  listening(): void;
  /** A NOTIFY on the channel: something was appended. */
  notify(): void;
  /** The listener is gone for good (it could not reconnect, or the log was closed); the follower was dropped. */
  fail(error: Error): void;
}

/** How the listener connects and how long it waits. @internal */
export interface RunEventListenerOptions {
  /** Makes a new, unconnected client (never one of the pool's: a listener must not take a connection from appends). */
  readonly client: () => pg.Client;
  /** How long the connection stays open once no reader follows any channel (0: closed at once). */
  readonly idleMillis: number;
  /**
   * After the connection is lost while followed, it reconnects at once; if that fails, it keeps trying for this long
   * before failing every follower (0: the one attempt).
   */
  readonly reconnectMillis: number;
}

/** The pause before each attempt after a failed one (the last repeats). */
const BACKOFF = [50, 100, 250, 500, 1000];

/** What the listener's session is doing, for tests: its backend pid and `pg_listening_channels()`. @internal */
export interface ListenerSession {
  readonly pid: number;
  readonly channels: string[];
}

/**
 * One dedicated connection that LISTENs on the channel of every run some reader follows, and dispatches each NOTIFY
 * to that channel's followers.
 *
 * A channel is LISTENed while it has at least one follower and UNLISTENed when its last follower leaves. One loop
 * (`#sync`) alone sends LISTEN and UNLISTEN, one statement at a time, each reflecting the followers at that moment,
 * so a LISTEN and an UNLISTEN of one channel never race, and a follower is told `listening()` only once a LISTEN sent
 * while it followed was acknowledged. The connection opens on the first follower, closes `idleMillis` after the last
 * left, and when lost while followed it is reopened (every channel LISTENed again, every follower told `listening()`
 * so it queries what it missed) for up to `reconnectMillis`, after which every follower is failed.
 * @internal
 */
export class RunEventListener {
  readonly #options: RunEventListenerOptions;
  readonly #channels = new Map<string, Set<ChannelFollower>>();
  /** The channels whose LISTEN was acknowledged on the current connection (and not UNLISTENed since). */
  readonly #listened = new Set<string>();
  /** The channels of the statement in flight that UNLISTENs: still listened, but not for a new follower. */
  #unlistening = new Set<string>();
  #client: pg.Client | undefined;
  #syncing = false;
  #idle: ReturnType<typeof setTimeout> | undefined;
  #closed = false;

  constructor(options: RunEventListenerOptions) {
    this.#options = options;
  }

  /** Follows `channel` until the returned function is called (idempotent; a failed follower is already dropped). */
  follow(channel: string, follower: ChannelFollower): () => void {
    if (this.#closed) {
      follower.fail(new Error('the run-event log is closed'));
      return () => {};
    }
    this.#cancelIdle();
    let followers = this.#channels.get(channel);
    if (followers === undefined) {
      followers = new Set();
      this.#channels.set(channel, followers);
    }
    followers.add(follower);
    if (this.#listened.has(channel) && !this.#unlistening.has(channel)) follower.listening();
    else void this.#sync();
    return () => {
      const current = this.#channels.get(channel);
      if (current === undefined || !current.delete(follower) || current.size > 0) return;
      this.#channels.delete(channel);
      void this.#sync();
    };
  }

  /** Ends the connection; the followers left fail. Later followers fail at once. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#cancelIdle();
    this.#failAll(new Error('the run-event log is closed'));
    await this.#disconnect();
  }

  /** The session's pid and listened channels, asked of the server; undefined when no connection is open. @internal */
  async session(): Promise<ListenerSession | undefined> {
    const client = this.#client;
    if (client === undefined) return undefined;
    const { rows } = await client.query<{ pid: number; channels: string[] }>(
      'SELECT pg_backend_pid() AS pid, ARRAY(SELECT pg_listening_channels() ORDER BY 1) AS channels',
    );
    return rows[0];
  }

  // Brings the connection's LISTENs to the followed channels. One run at a time; loops until nothing differs.
  async #sync(): Promise<void> {
    if (this.#syncing) return;
    this.#syncing = true;
    let failedAt: number | undefined;
    let failures = 0;
    try {
      while (!this.#closed && this.#pending() !== undefined) {
        try {
          if (failures > 0) await sleep(BACKOFF[Math.min(failures, BACKOFF.length) - 1]!);
          if (this.#closed) break;
          const client = this.#client ?? (await this.#connect());
          // Read after connecting: followers may have come or gone meanwhile.
          const pending = this.#pending();
          if (pending === undefined) break;
          const { listen, unlisten } = pending;
          this.#unlistening = new Set(unlisten);
          const statements = [...unlisten.map((c) => `UNLISTEN "${c}"`), ...listen.map((c) => `LISTEN "${c}"`)];
          await client.query(statements.join('; '));
          this.#unlistening = new Set();
          for (const channel of unlisten) this.#listened.delete(channel);
          for (const channel of listen) this.#listened.add(channel);
          failedAt = undefined;
          failures = 0;
          // Followers that joined after the statement was sent are told too: it took effect before its answer.
          for (const channel of listen) for (const follower of this.#followersOf(channel)) follower.listening();
        } catch (error) {
          this.#unlistening = new Set();
          await this.#disconnect();
          failedAt ??= Date.now();
          failures++;
          if (Date.now() - failedAt >= this.#options.reconnectMillis) {
            const message = error instanceof Error ? error.message : String(error);
            this.#failAll(new Error(`the run-event log's LISTEN connection failed: ${message}`, { cause: error }));
            failedAt = undefined;
            failures = 0;
          }
        }
      }
    } finally {
      this.#syncing = false;
    }
    if (this.#channels.size === 0) this.#scheduleIdle();
  }

  /** The channels to LISTEN (followed, not listened) and to UNLISTEN (listened, not followed); undefined if none. */
  #pending(): { listen: string[]; unlisten: string[] } | undefined {
    const listen = [...this.#channels.keys()].filter((channel) => !this.#listened.has(channel));
    const unlisten = [...this.#listened].filter((channel) => !this.#channels.has(channel));
    return listen.length === 0 && unlisten.length === 0 ? undefined : { listen, unlisten };
  }

  async #connect(): Promise<pg.Client> {
    const client = this.#options.client();
    // Errors of a client we dropped (its socket closing) must not become unhandled 'error' events.
    client.on('error', (error: Error) => this.#lost(client, error));
    client.on('end', () => this.#lost(client, new Error('the listener connection ended')));
    client.on('notification', (message: pg.Notification) => {
      if (client !== this.#client) return;
      for (const follower of this.#followersOf(message.channel)) follower.notify();
    });
    try {
      await client.connect();
    } catch (error) {
      await client.end().catch(() => {});
      throw error;
    }
    if (this.#closed) {
      await client.end().catch(() => {});
      throw new Error('the run-event log is closed');
    }
    this.#client = client;
    return client;
  }

  // The connection broke while idle (between statements): listen again on a new one, if anyone follows.
  #lost(client: pg.Client, _error: Error): void {
    if (client !== this.#client) return;
    this.#client = undefined;
    this.#listened.clear();
    void client.end().catch(() => {});
    void this.#sync();
  }

  async #disconnect(): Promise<void> {
    const client = this.#client;
    this.#client = undefined;
    this.#listened.clear();
    if (client !== undefined) await client.end().catch(() => {});
  }

  #followersOf(channel: string): ChannelFollower[] {
    return [...(this.#channels.get(channel) ?? [])];
  }

  #failAll(error: Error): void {
    const followers = [...this.#channels.values()].flatMap((set) => [...set]);
    this.#channels.clear();
    for (const follower of followers) follower.fail(error);
  }

  #scheduleIdle(): void {
    if (this.#client === undefined || this.#closed || this.#idle !== undefined) return;
    if (this.#options.idleMillis === 0) {
      void this.#disconnect();
      return;
    }
    this.#idle = setTimeout(() => {
      this.#idle = undefined;
      if (this.#channels.size === 0 && !this.#syncing) void this.#disconnect();
    }, this.#options.idleMillis);
    this.#idle.unref();
  }

  #cancelIdle(): void {
    if (this.#idle !== undefined) clearTimeout(this.#idle);
    this.#idle = undefined;
  }
}

function sleep(ms: number): Promise<void> {
  return ms === 0 ? Promise.resolve() : new Promise((resolve) => setTimeout(resolve, ms));
}
