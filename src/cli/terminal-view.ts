/**
 * The readable view of a run: the answer streamed token by token, thinking dimmed, each tool call with its
 * arguments, a spinner while it runs (on a TTY; none while a held call waits for its approval), its progress and its
 * (clipped) result, approvals asked for, and usage and cost at the end. Shared by `cubepi run` (answer on stdout,
 * activity on stderr) and `cubepi chat` (both on the terminal).
 * @module
 */
import { textOf, usageOf, type AgentEvent, type AgentToolResult, type Message, type Usage } from '../index.js';
import { formatUsage, isPriced } from './format-usage.js';
import type { Style } from './style.js';

/** Where and how the view writes. */
export interface TerminalViewOptions {
  /** Receives the answer's text. */
  readonly text: (chunk: string) => void;
  /** Receives everything else (tool activity, thinking, usage). */
  readonly info: (chunk: string) => void;
  readonly style: Style;
  /** Show thinking (dimmed); `--no-thinking` turns it off. */
  readonly showThinking: boolean;
  /** Animate a spinner while tools run (only on a TTY). */
  readonly spinner: boolean;
  /**
   * The thread's messages (`agent.state.messages`), read when a run ends: when the thread spent more than the run
   * (earlier runs, or the run before an approval this one resumes), the usage line shows the thread's total and the
   * run's own beside it.
   */
  readonly thread?: () => readonly Message[];
}

/** A view: feed it every event of a run; `stop()` clears its spinner (call it when the run ends or is cancelled). */
export interface TerminalView {
  next(event: AgentEvent): void;
  stop(): void;
}

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/** Creates a {@link TerminalView}. */
export function createTerminalView(options: TerminalViewOptions): TerminalView {
  const { style } = options;
  let atLineStart = true;
  // The stream written last: a line of activity first ends the line that stream is in.
  let last = options.text;
  let inThinking = false;
  let usersSeen = 0;
  const running = new Map<string, string>();
  let timer: ReturnType<typeof setInterval> | undefined;
  let frame = 0;
  let spinnerShown = false;

  const clearSpinner = () => {
    if (spinnerShown) options.info('\r\u001b[K');
    spinnerShown = false;
  };
  const write = (to: (chunk: string) => void, chunk: string) => {
    clearSpinner();
    to(chunk);
    last = to;
    if (chunk !== '') atLineStart = chunk.endsWith('\n');
  };
  const text = (chunk: string) => write(options.text, chunk);
  const line = (chunk: string) => {
    clearSpinner();
    if (!atLineStart) last('\n');
    options.info(`${chunk}\n`);
    atLineStart = true;
  };
  const endThinking = () => {
    if (!inThinking) return;
    inThinking = false;
    if (!atLineStart) write(options.info, '\n');
  };
  const spin = () => {
    if (running.size === 0) return;
    clearSpinner();
    options.info(style.dim(`${FRAMES[frame++ % FRAMES.length]} ${[...running.values()].join(', ')} running…`));
    spinnerShown = true;
  };
  const updateSpinner = () => {
    if (!options.spinner) return;
    if (running.size > 0 && timer === undefined) {
      timer = setInterval(spin, 100);
      timer.unref();
    } else if (running.size === 0 && timer !== undefined) {
      clearInterval(timer);
      timer = undefined;
      clearSpinner();
    }
  };

  return {
    next(event) {
      switch (event.type) {
        case 'message_start':
          // A view follows one prompt (and the runs its approvals resume): the first user message is that prompt, later
          // ones are steering messages going in.
          if (event.message.role === 'user' && usersSeen++ > 0)
            line(style.dim(`↳ steering: ${clip(textOf(event.message), 200)}`));
          return;
        case 'message_update': {
          const stream = event.streamEvent;
          if (stream.type === 'text_delta') {
            endThinking();
            text(stream.delta);
          } else if (stream.type === 'thinking_delta' && options.showThinking) {
            if (!inThinking) {
              line(style.dim('thinking:'));
              inThinking = true;
            }
            write(options.info, style.dim(stream.delta));
          }
          return;
        }
        case 'message_end':
          endThinking();
          return;
        case 'tool_execution_start':
          line(`${style.cyan('⚙')} ${event.toolName}(${clip(JSON.stringify(event.args), 160)})`);
          running.set(event.toolCallId, event.toolName);
          updateSpinner();
          return;
        case 'tool_execution_update': {
          const last = resultText(event.partialResult).trimEnd().split('\n').at(-1) ?? '';
          line(style.dim(`  … ${clip(last, 120)}`));
          return;
        }
        case 'tool_execution_end': {
          running.delete(event.toolCallId);
          updateSpinner();
          const mark = event.isError ? style.red('✗') : style.green('✓');
          line(`${mark} ${event.toolName} → ${clip(resultText(event.result), 200)}`);
          return;
        }
        case 'approval_requested':
          // A held call is not running: it waits for the answer, and a spinner would draw over the question.
          running.delete(event.toolCallId);
          updateSpinner();
          line(style.yellow(`? ${event.toolName} asks to ${event.reason}`));
          return;
        case 'agent_end': {
          // Nothing runs once a run has ended (a suspended run's held calls start again when they are answered).
          running.clear();
          updateSpinner();
          // A run that failed before using anything: its error line (the command's) says it all.
          if (event.outcome === 'failed' && event.usage.totalTokens === 0) return;
          // A suspended run goes on once the approvals are answered; its usage is shown then.
          if (event.outcome === 'suspended') return;
          const suffix = event.outcome === 'completed' ? '' : ` · ${event.outcome}`;
          line(style.dim(`[${usageLine(event.usage, event.messages, options.thread?.())}${suffix}]`));
          return;
        }
        default:
          return;
      }
    },
    stop() {
      running.clear();
      updateSpinner();
      endThinking();
    },
  };
}

/** The run's usage, or the thread's total then the run's own when the thread spent more. */
function usageLine(usage: Usage, runMessages: readonly Message[], thread: readonly Message[] | undefined): string {
  const calls = (messages: readonly Message[]) => messages.filter((m) => m.role === 'assistant').length;
  const own = formatUsage(usage, calls(runMessages), isPriced(runMessages));
  if (thread === undefined) return own;
  const total = usageOf(thread);
  if (total.totalTokens === usage.totalTokens && calls(thread) === calls(runMessages)) return own;
  return `thread: ${formatUsage(total, calls(thread), isPriced(thread))}; this run: ${own}`;
}

function resultText(result: AgentToolResult): string {
  return result.content.map((block) => (block.type === 'text' ? block.text : `[${block.type}]`)).join('');
}

/** One line, at most `max` characters. */
export function clip(text: string, max: number): string {
  const one = text.replace(/\s+/g, ' ').trim();
  return one.length <= max ? one : `${one.slice(0, max - 1)}…`;
}
