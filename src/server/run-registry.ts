/**
 * The runs a server serves: each started run's log, which thread it belongs to, how to cancel it, and the agent of
 * each thread. Runs are keyed by the run id of their `agent_start`.
 * @module
 */
import type { Observable, Subscription } from 'rxjs';
import type { Agent } from '../agent/agent.js';
import type { Checkpointer } from '../checkpoint/checkpointer.js';
import type { Message } from '../types/messages.js';
import type { RunOptions } from '../agent/agent-options.js';
import { numberEvents } from '../../operators/number-events.js';
import { throttleDeltas } from '../../operators/throttle-deltas.js';
import { AgentBusyError } from '../types/errors.js';
import type { RunBudget } from '../types/limits.js';
import type { Principal } from '../types/principal.js';
import type { AgentEvent } from '../types/agent-events.js';
import { toWireError, type WireError } from '../wire/frames.js';
import { saveHead, storedHead } from './chat-head.js';
import { closeLostRun, findLostRun } from './lost-run.js';
import { RunLog } from './run-log.js';

/** What the registry needs from the server's options. */
export interface RunRegistryOptions {
  readonly agent: (threadId: string, principal: Principal) => Agent | Promise<Agent>;
  readonly flushMs: number;
  readonly maxFrames: number;
  readonly retentionMs: number;
  readonly maxAgents: number;
  /** Ended runs kept for resumes at most (the oldest forgotten first). */
  readonly maxRetainedRuns: number;
  /** Frame bytes of ended runs kept at most (the oldest forgotten first; the latest run is always kept). */
  readonly maxRetainedBytes: number;
  /**
   * The agents' checkpointer: a thread is checked for a run lost with a previous process (and closed) before its agent
   * is created. Without it, nothing is repaired and no run is ever `run_lost`.
   */
  readonly checkpointer?: Checkpointer | undefined;
}

/** A run this process does not have, found lost in its thread's checkpoint. */
export interface LostRunInfo {
  readonly runId: string;
  readonly threadId: string;
  /** The run's stored messages: its user message, what it stored, and the closing messages. */
  readonly messages: readonly Message[];
}

interface ServedRun {
  readonly log: RunLog;
  readonly controller: AbortController;
  /** How many messages the thread had when the run started: the run's own messages come after. */
  readonly baseCount: number;
  /** The thread's owner when the run started: the run is theirs. */
  readonly owner: string | null;
}

interface LiveRun {
  subscription?: Subscription;
  closed: boolean;
  readonly budget: RunBudget | undefined;
}

/** @internal */
export class RunRegistry {
  private readonly runs = new Map<string, ServedRun>();
  private readonly activeByThread = new Map<string, string>();
  private readonly agents = new Map<string, Promise<Agent>>();
  /**
   * The fork each served thread id now names, when a run moved its agent to one (`retryFrom`: a regenerate): an agent
   * made again for the thread (after eviction) is made for the fork, so the id keeps serving the newest branch. With a
   * checkpointer the mapping is also stored with the original thread (`saveHead`) and read back when its agent is
   * made, so a new process on the same checkpointer serves the fork too.
   */
  private readonly heads = new Map<string, string>();
  /** The ended runs still retained, oldest first, with their forget timer and size. */
  private readonly retained = new Map<string, { timer: ReturnType<typeof setTimeout>; bytes: number }>();
  private retainedBytes = 0;
  /** The subscriptions of live runs (unsubscribed by `close`). */
  private readonly live = new Set<LiveRun>();
  /** Runs found lost when their thread was opened, with their thread (so a resume needs no thread hint). */
  private readonly lostThreads = new Map<string, string>();
  private closed = false;

  constructor(private readonly options: RunRegistryOptions) {}

  /** The agent of `threadId`, created once (then kept while the cache has room; see `maxAgents`). */
  agentFor(threadId: string, principal: Principal): Promise<Agent> {
    let agent = this.agents.get(threadId);
    if (agent === undefined) {
      const known = this.heads.get(threadId);
      agent = Promise.resolve(known ?? this.loadHead(threadId)).then(async (head) => {
        await this.closeLostRun(head);
        return this.options.agent(head, principal);
      });
      // A factory that failed is asked again next time.
      agent.catch(() => this.agents.delete(threadId));
      this.agents.set(threadId, agent);
      this.evictIdleAgents();
    } else {
      // Most recently used last.
      this.agents.delete(threadId);
      this.agents.set(threadId, agent);
    }
    return agent;
  }

  /** The thread `threadId` serves: the fork stored with it by a regenerate of an earlier process, else itself. */
  private async loadHead(threadId: string): Promise<string> {
    const checkpointer = this.options.checkpointer;
    if (checkpointer === undefined) return threadId;
    const data = await checkpointer.load(threadId);
    const stored = data === null ? undefined : storedHead(threadId, data.extra);
    // A run of this process may have moved the thread meanwhile: the newer mapping wins.
    if (stored !== undefined && !this.heads.has(threadId)) this.heads.set(threadId, stored);
    return this.heads.get(threadId) ?? threadId;
  }

  /**
   * Before a thread's agent exists in this process: when the thread's last server run started and never ended (the
   * process that ran it stopped), its closing messages are appended (`closeLostRun`), so the agent restores a
   * well-formed transcript and the next prompt follows a closed turn. The run is remembered as lost.
   */
  private async closeLostRun(threadId: string): Promise<void> {
    const checkpointer = this.options.checkpointer;
    if (checkpointer === undefined) return;
    const data = await checkpointer.load(threadId);
    if (data === null) return;
    const lost = findLostRun(data.messages, data.extra);
    if (lost === undefined) return;
    if (lost.open) {
      await checkpointer.append(threadId, closeLostRun(data.messages, lost.runId), { expectedSeq: data.seq });
    }
    this.lostThreads.set(lost.runId, threadId);
  }

  /**
   * A run this process does not have but the checkpoint shows started and never ended (closed since as lost): its
   * thread (the one it was found in, else `threadHint`) and stored messages. `undefined` for a run unknown there too.
   * Opens the thread's agent first (which closes a lost run).
   */
  async lostRun(runId: string, threadHint: string | undefined, principal: Principal): Promise<LostRunInfo | undefined> {
    const checkpointer = this.options.checkpointer;
    const threadId = this.lostThreads.get(runId) ?? threadHint;
    if (checkpointer === undefined || threadId === undefined || this.runs.has(runId)) return undefined;
    await this.agentFor(threadId, principal);
    // Opening the thread found the run lost on the fork it serves, if it was there.
    const thread = this.lostThreads.get(runId) ?? threadId;
    const data = await checkpointer.load(thread);
    const lost = data === null ? undefined : findLostRun(data.messages, data.extra, runId);
    if (data === null || lost === undefined || lost.open) return undefined;
    return { runId, threadId: thread, messages: data.messages.slice(lost.from, lost.to) };
  }

  /** The run's thread and owner (live, or ended and still retained). */
  runInfo(
    runId: string,
  ): { readonly runId: string; readonly threadId: string; readonly owner: string | null } | undefined {
    const served = this.runs.get(runId);
    return served === undefined ? undefined : { runId, threadId: served.log.threadId, owner: served.owner };
  }

  /** The log of a run (live, or ended and still retained). */
  log(runId: string): RunLog | undefined {
    return this.runs.get(runId)?.log;
  }

  /** The thread's active run, if any: its id and how many messages the thread had when it started. */
  activeRun(threadId: string): { readonly runId: string; readonly baseCount: number } | undefined {
    const runId = this.activeByThread.get(threadId);
    const served = runId === undefined ? undefined : this.runs.get(runId);
    return served === undefined ? undefined : { runId: served.log.runId, baseCount: served.baseCount };
  }

  /** Thread ids with an agent in the cache. */
  cachedThreads(): string[] {
    return [...this.agents.keys()];
  }

  /**
   * Starts the run `start` opens on the thread's agent for `principal` (in its run options), coalesced and numbered,
   * and resolves with its run id once its first event is logged — or with `null` when the Observable completes with no event (an approval that was not the
   * last of its batch). Rejects with the run's error when it fails before its first event (a busy agent, bad input).
   * With a `budget` (the principal's limits), the run is opened with its `limits` and the budget is released when the
   * run ends, or when it never started.
   */
  async start(
    threadId: string,
    principal: Principal,
    owner: string | null,
    open: (agent: Agent, options: RunOptions) => Observable<AgentEvent>,
    budget?: RunBudget,
  ): Promise<string | null> {
    try {
      return await this.startRun(threadId, principal, owner, open, budget);
    } catch (error) {
      void budget?.release();
      throw error;
    }
  }

  private async startRun(
    threadId: string,
    principal: Principal,
    owner: string | null,
    open: (agent: Agent, options: RunOptions) => Observable<AgentEvent>,
    budget: RunBudget | undefined,
  ): Promise<string | null> {
    if (this.closed) throw new AgentBusyError('the server is closing');
    const active = this.activeByThread.get(threadId);
    if (active !== undefined)
      throw new AgentBusyError(`thread ${JSON.stringify(threadId)} has an active run: ${active}`);
    const agent = await this.agentFor(threadId, principal);
    // Restored first, so the count of messages before the run is known (GET /threads/:id serves the history up to it).
    await agent.restore();
    const baseCount = agent.state.messages.length;
    const controller = new AbortController();
    const { flushMs, maxFrames } = this.options;
    return new Promise<string | null>((resolve, reject) => {
      let served: ServedRun | undefined;
      let seq = 0;
      const holder: LiveRun = { closed: false, budget };
      const finish = (frame: { kind: 'end' } | { kind: 'error'; error: WireError }) => {
        holder.closed = true;
        this.live.delete(holder);
        const head = agent.threadId !== undefined && agent.threadId !== threadId ? agent.threadId : undefined;
        const moved = head !== undefined && this.heads.get(threadId) !== head;
        if (head !== undefined) this.heads.set(threadId, head);
        void budget?.release();
        const end = () => {
          if (served === undefined || this.closed) return;
          served.log.append({ ...frame, seq: seq + 1, runId: served.log.runId });
          this.release(threadId, served.log.runId);
        };
        // A run that moved the thread to a fork ends once the move is stored: a client that saw it end and asks
        // another process gets the fork. A failed write leaves the mapping in this process's memory only.
        const checkpointer = this.options.checkpointer;
        if (!moved || checkpointer === undefined) end();
        else void saveHead(checkpointer, threadId, head).then(end, end);
      };
      const base: RunOptions = { signal: controller.signal, principal };
      const runOptions: RunOptions = budget === undefined ? base : { ...base, limits: budget.limits };
      const subscription = open(agent, runOptions)
        .pipe(throttleDeltas(flushMs), numberEvents())
        .subscribe({
          next: (event) => {
            seq = event.seq;
            if (served === undefined) {
              served = { log: new RunLog(event.runId, threadId, { maxFrames }), controller, baseCount, owner };
              this.runs.set(event.runId, served);
              this.activeByThread.set(threadId, event.runId);
              resolve(event.runId);
            }
            served.log.append({ kind: 'event', seq: event.seq, event });
          },
          error: (error: unknown) => {
            if (served === undefined) reject(error);
            finish({ kind: 'error', error: toWireError(error) });
          },
          complete: () => {
            if (served === undefined) resolve(null);
            finish({ kind: 'end' });
          },
        });
      if (!holder.closed) {
        holder.subscription = subscription;
        this.live.add(holder);
      }
    });
  }

  /**
   * Cancels a live run the way `RunOptions.signal` does: the run closes itself (its provider request aborted, its
   * tools' signals fired) and its closing events still reach the log. Returns false for an unknown or ended run.
   */
  cancel(runId: string, reason = 'cancelled by a client'): boolean {
    const served = this.runs.get(runId);
    if (served === undefined || served.log.ended) return false;
    served.controller.abort(new Error(reason));
    return true;
  }

  /** Stops every live run by unsubscribing from it, forgets every log and agent, and wakes waiting readers. */
  close(): void {
    this.closed = true;
    for (const { timer } of this.retained.values()) clearTimeout(timer);
    this.retained.clear();
    this.retainedBytes = 0;
    for (const holder of this.live) {
      holder.subscription?.unsubscribe();
      void holder.budget?.release();
    }
    this.live.clear();
    for (const served of this.runs.values()) served.log.abandon();
    this.runs.clear();
    this.activeByThread.clear();
    this.agents.clear();
    this.heads.clear();
  }

  private release(threadId: string, runId: string): void {
    if (this.activeByThread.get(threadId) === runId) this.activeByThread.delete(threadId);
    if (this.closed) return;
    const timer = setTimeout(() => this.forget(runId), this.options.retentionMs);
    (timer as { unref?: () => void }).unref?.();
    const bytes = this.runs.get(runId)?.log.bytes ?? 0;
    this.retained.set(runId, { timer, bytes });
    this.retainedBytes += bytes;
    // Bounded by count and size, not only by time: many runs (or a few huge prompts) ending within the retention
    // window would otherwise hold the heap. The oldest go first; the run that just ended stays.
    const { maxRetainedRuns, maxRetainedBytes } = this.options;
    for (const oldest of this.retained.keys()) {
      if (this.retained.size <= maxRetainedRuns && (this.retainedBytes <= maxRetainedBytes || oldest === runId)) break;
      this.forget(oldest);
    }
    this.evictIdleAgents();
  }

  /** Forgets an ended run: its log goes (readers already reading it finish), a later resume gets 404. */
  private forget(runId: string): void {
    const entry = this.retained.get(runId);
    if (entry === undefined) return;
    clearTimeout(entry.timer);
    this.retained.delete(runId);
    this.retainedBytes -= entry.bytes;
    this.runs.delete(runId);
  }

  /** Drops the least recently used agents of threads with no active run while the cache is over `maxAgents`. */
  private evictIdleAgents(): void {
    if (this.agents.size <= this.options.maxAgents) return;
    for (const threadId of this.agents.keys()) {
      if (this.agents.size <= this.options.maxAgents) return;
      if (!this.activeByThread.has(threadId)) this.agents.delete(threadId);
    }
  }
}
