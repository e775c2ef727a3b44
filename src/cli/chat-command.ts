/**
 * `cubepi chat`: an interactive chat in the terminal. Tokens stream as they arrive; tool calls show with a spinner,
 * their progress and results; usage and cost end each turn. Ctrl-C during a run cancels it (by unsubscribing) and the
 * prompt comes back; Ctrl-C on an empty prompt exits (130); Ctrl-D or /exit exit (0). A line typed during a run is a
 * steering message, injected after the current tool batch. Slash commands: /new, /threads, /switch ID, /model NAME,
 * /system TEXT, /help, /exit.
 * @module
 */
import { createInterface, type Interface } from 'node:readline';
import type { Agent, ApprovalAnswer, ApprovalRequest } from '../index.js';
import { approvalAsker } from './approval-prompt.js';
import { createCliAgent, prepareAgentSetup, type AgentSetup } from './agent-setup.js';
import { EXIT, reportError } from './cli-error.js';
import type { Command, CommandContext } from './command.js';
import { runFailure, thrownFailure } from './describe-failure.js';
import { driveRun } from './drive-run.js';
import { AGENT_OPTIONS, parseCommandArgs } from './parse-options.js';
import { colorsFor, createStyle, type Style } from './style.js';
import { createTerminalView } from './terminal-view.js';
import { newThreadId } from './thread-id.js';

export const CHAT_HELP = `Usage: cubepi chat [options]

An interactive chat with the agent. Threads are stored (default .cubepi/threads.db) and can be resumed.

Options: the same as cubepi run (--thread, --system, --provider, --model, --db, --allow-write, --allow-shell, --yes,
--no-thinking, --delay, --debug), without --json.

In the chat:
  /new            start a new thread          /threads        list stored threads
  /switch <id>    continue another thread     /model <name>   use another model (same provider)
  /system <text>  set the system prompt       /system         show it
  /help           this list                   /exit           leave (so does Ctrl-D)
  Ctrl-C          cancel the run in progress; on an empty prompt, leave (exit code 130)
  typing during a run queues a steering message, injected after the current tool batch`;

const SLASH_HELP = CHAT_HELP.slice(CHAT_HELP.indexOf('In the chat:\n') + 13);

/** Runs `cubepi chat …`. */
export const chatCommand: Command = async (args, context) => {
  const { values } = parseCommandArgs('chat', args, AGENT_OPTIONS, false);
  if (values.help) {
    context.stdout.write(`${CHAT_HELP}\n`);
    return EXIT.ok;
  }
  const setup = await prepareAgentSetup(values, context);
  try {
    return await new ChatSession(setup, context, values.thread, !values['no-thinking'], values.debug === true).run();
  } finally {
    await setup.store.checkpointer.close?.();
  }
};

class ChatSession {
  private readonly style: Style;
  private readonly terminal: boolean;
  private readonly rl: Interface;
  private threadId: string;
  private model: string;
  private systemPrompt: string;
  private agent: Agent;
  /** The run in progress: aborting cancels it. */
  private running: AbortController | undefined;
  /** An approval question waiting for its line. */
  private answerLine: ((line: string | undefined) => void) | undefined;
  /** Lines are handled one after the other (a pipe delivers them all at once). */
  private queue: Promise<void> = Promise.resolve();
  private finish: (code: number) => void = () => {};
  private finished = false;

  constructor(
    private readonly setup: AgentSetup,
    private readonly context: CommandContext,
    thread: string | undefined,
    private readonly showThinking: boolean,
    private readonly debug: boolean,
  ) {
    this.style = createStyle(colorsFor(context.stdout, context.env));
    this.terminal = context.stdin.isTTY === true && context.stdout.isTTY === true;
    this.threadId = thread ?? newThreadId();
    this.model = setup.choice.model;
    this.systemPrompt = setup.systemPrompt;
    this.agent = this.createAgent();
    this.rl = createInterface({
      input: context.stdin,
      output: context.stdout,
      terminal: this.terminal,
      prompt: this.style.cyan('› '),
    });
  }

  async run(): Promise<number> {
    const done = new Promise<number>((resolve) => (this.finish = resolve));
    const { choice, store } = this.setup;
    if (choice.notice !== undefined) this.say(this.style.dim(choice.notice));
    this.say(
      `${this.style.bold('cubepi chat')} · ${this.model} (${choice.providerName}) · thread ${this.threadId} · ` +
        `${store.description}\n${this.style.dim('/help for commands · Ctrl-C cancels a run · Ctrl-C on an empty line exits')}`,
    );
    await this.agent.restore();
    const stored = this.agent.state.messages.length;
    if (stored > 0) this.say(this.style.dim(`(resumed: ${stored} messages in this thread)`));
    this.rl.on('line', (line) => this.onLine(line));
    this.rl.on('SIGINT', () => this.onInterrupt());
    const onSignal = () => this.onInterrupt();
    process.on('SIGINT', onSignal);
    this.rl.on('close', () => void this.queue.then(() => this.end(EXIT.ok)));
    this.rl.prompt();
    const code = await done;
    process.off('SIGINT', onSignal);
    return code;
  }

  private onLine(line: string): void {
    if (this.answerLine !== undefined) {
      const answer = this.answerLine;
      this.answerLine = undefined;
      answer(line);
      return;
    }
    if (this.running !== undefined && this.terminal) {
      if (line.trim() === '') return;
      this.agent.steer(line);
      this.say(this.style.dim(`(queued: it goes in after the current tool batch)`));
      return;
    }
    this.queue = this.queue.then(() => this.handle(line)).catch((error: unknown) => this.report(error));
  }

  private onInterrupt(): void {
    if (this.answerLine !== undefined) {
      const answer = this.answerLine;
      this.answerLine = undefined;
      answer(undefined);
    } else if (this.running !== undefined) {
      this.running.abort();
    } else if (this.rl.line === '') {
      this.say('');
      this.end(EXIT.interrupted);
    } else {
      this.rl.write(null, { ctrl: true, name: 'u' });
    }
  }

  private end(code: number): void {
    if (this.finished) return;
    this.finished = true;
    this.running?.abort();
    this.rl.close();
    void this.agent.waitForIdle().then(() => this.finish(code));
  }

  private async handle(line: string): Promise<void> {
    if (this.finished) return;
    const text = line.trim();
    if (text === '') return this.prompt();
    if (text.startsWith('/')) await this.slash(text);
    else await this.send(line);
    this.prompt();
  }

  private prompt(): void {
    if (!this.finished) this.rl.prompt();
  }

  private async send(text: string): Promise<void> {
    const cancel = new AbortController();
    this.running = cancel;
    const write = (chunk: string) => void this.context.stdout.write(chunk);
    const view = createTerminalView({
      text: write,
      info: write,
      style: this.style,
      showThinking: this.showThinking,
      spinner: this.terminal,
      thread: () => this.agent.state.messages,
    });
    const ask = approvalAsker((question) => this.askLine(question), this.style);
    try {
      const result = await driveRun(this.agent, this.agent.prompt$(text), {
        onEvent: (event) => view.next(event),
        ask: (request: ApprovalRequest): Promise<ApprovalAnswer> => ask(request),
        cancel: cancel.signal,
      });
      view.stop();
      await this.agent.waitForIdle();
      if (result.kind === 'cancelled') this.say(this.style.dim('(cancelled: what was said so far is kept)'));
      else if (result.kind === 'error') this.report(thrownFailure(result.error, this.setup.store.description));
      else {
        const failure = runFailure(result.end, this.setup.choice, this.model);
        if (failure !== undefined) this.report(failure);
      }
    } finally {
      this.running = undefined;
    }
  }

  private askLine(question: string): Promise<string | undefined> {
    if (this.finished) return Promise.resolve(undefined);
    this.context.stdout.write(question);
    return new Promise((resolve) => (this.answerLine = resolve));
  }

  private async slash(text: string): Promise<void> {
    const space = text.indexOf(' ');
    const name = space < 0 ? text : text.slice(0, space);
    const arg = space < 0 ? '' : text.slice(space + 1).trim();
    switch (name) {
      case '/exit':
      case '/quit':
        return this.end(EXIT.ok);
      case '/help':
        return this.say(SLASH_HELP);
      case '/new':
        this.threadId = newThreadId();
        this.agent = this.createAgent();
        return this.say(this.style.dim(`(new thread ${this.threadId})`));
      case '/threads': {
        const threads = await this.setup.store.checkpointer.listThreads({ limit: 20 });
        if (threads.length === 0) return this.say(this.style.dim('(no stored threads yet)'));
        for (const t of threads) {
          const mark = t.threadId === this.threadId ? '*' : ' ';
          const updated = new Date(t.updatedAt).toISOString().slice(0, 16).replace('T', ' ');
          this.say(`${mark} ${t.threadId}  ${t.messageCount} messages  ${updated}`);
        }
        return;
      }
      case '/switch': {
        if (arg === '') return this.say('usage: /switch <thread id> (/threads lists them)');
        const data = await this.setup.store.checkpointer.load(arg);
        if (data === null) return this.say(`no thread "${arg}" (/threads lists them; /new starts one)`);
        this.threadId = arg;
        this.agent = this.createAgent();
        return this.say(this.style.dim(`(thread ${arg}: ${data.seq} messages)`));
      }
      case '/model':
        if (arg === '') return this.say(`model: ${this.model} (${this.setup.choice.providerName})`);
        this.model = arg;
        this.agent = this.createAgent();
        return this.say(this.style.dim(`(model ${arg} from the next message on)`));
      case '/system':
        if (arg === '') return this.say(`system prompt: ${this.systemPrompt}`);
        this.systemPrompt = arg;
        this.agent = this.createAgent();
        return this.say(this.style.dim('(system prompt set)'));
      default:
        return this.say(`unknown command ${name} (/help lists them)`);
    }
  }

  private createAgent(): Agent {
    return createCliAgent(this.setup, this.threadId, { model: this.model, systemPrompt: this.systemPrompt });
  }

  private say(line: string): void {
    this.context.stdout.write(`${line}\n`);
  }

  private report(error: unknown): void {
    reportError(error, (text) => void this.context.stderr.write(text), this.debug);
  }
}
