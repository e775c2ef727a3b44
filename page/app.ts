// The chat page of `cubepi serve`: vanilla DOM over cubepi/client and cubepi/operators. Threads on the left; the
// transcript streams token by token; tool calls show live progress; guarded calls get Approve/Deny buttons; Stop
// cancels the run on the server; a reload mid-run picks the stream up where the thread's history ends; Continue asks
// again for an answer that failed, was stopped or was lost with its server (resumeThread). Files attach
// by the button, a drop on the form or a paste, and show in the user's message (page/attachments.ts).
import { Subscription, share, tap, type Observable } from 'rxjs';
import {
  cancelRun,
  fromAgentEvents,
  getThread,
  listThreads,
  respond,
  resumeThread,
  runEventsUrl,
  startRun,
  type SequencedEvent,
} from 'cubepi/client';
import { assembleMessages, toolActivity, type ToolActivity } from 'cubepi/operators';
import type { ApprovalAnswer, ApprovalRequest, AssistantMessage, Message } from 'cubepi';
// The command's own wording of a failed model call (what happened, what to do), so the page says what the CLI says.
import { describeProviderError } from '../src/cli/describe-provider-error.js';
import { blockCard, PendingFiles } from './attachments.js';

const base = new URL('api/', location.href).toString();
const hash = () => new URLSearchParams(location.hash.slice(1));
const token = hash().get('token') ?? undefined;
const options = token === undefined ? {} : { token };

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const transcript = $<HTMLDivElement>('transcript');
const toolsBox = $<HTMLDivElement>('tools');
const errorBox = $<HTMLDivElement>('error');
const statusBox = $<HTMLDivElement>('status');
const form = $<HTMLFormElement>('prompt-form');
const promptBox = $<HTMLTextAreaElement>('prompt');
const sendButton = $<HTMLButtonElement>('send');
const stopButton = $<HTMLButtonElement>('stop');
const continueButton = $<HTMLButtonElement>('continue');
const threadList = $<HTMLUListElement>('threads');
const attachButton = $<HTMLButtonElement>('attach');
const fileInput = $<HTMLInputElement>('file-input');
const pending = new PendingFiles($<HTMLDivElement>('attachments'));

let threadId = hash().get('thread') ?? newThreadId();
/** The messages shown before the current run's. */
let shown: readonly Message[] = [];
/** The run being shown: its subscription, its id once known, and whether this page started it. */
let running: { subscription: Subscription; runId: string | undefined; started: boolean } | undefined;

function newThreadId(): string {
  return `thread-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`;
}

function setHash(): void {
  const params = hash();
  params.set('thread', threadId);
  history.replaceState(null, '', `#${params.toString()}`);
}

function showError(error: unknown): void {
  errorBox.hidden = false;
  errorBox.textContent = error instanceof Error ? error.message : String(error);
}

// --- rendering -----------------------------------------------------------------------------------------------------

const rendered = new WeakMap<Message, HTMLElement>();

function renderTranscript(messages: readonly Message[]): void {
  transcript.replaceChildren(...messages.map(messageElement));
  transcript.scrollTop = transcript.scrollHeight;
}

function messageElement(message: Message): HTMLElement {
  const known = rendered.get(message);
  if (known !== undefined) return known;
  const element = document.createElement('div');
  element.className = `message ${message.role}`;
  element.dataset.role = message.role;
  const blocks =
    typeof message.content === 'string' ? [{ type: 'text', text: message.content } as const] : message.content;
  for (const block of blocks) {
    const attachment = blockCard(block);
    if (attachment !== undefined) {
      element.append(attachment);
      continue;
    }
    const span = document.createElement('div');
    if (block.type === 'text') span.textContent = block.text;
    else if (block.type === 'thinking') {
      span.className = 'thinking';
      span.textContent = block.thinking;
    } else if (block.type === 'toolCall') {
      span.className = 'tool-call';
      span.textContent = `→ ${block.name}(${JSON.stringify(block.arguments)})`;
    } else span.textContent = `[${block.type}]`;
    element.append(span);
  }
  if (message.role === 'assistant' && message.errorMessage !== undefined) {
    const note = document.createElement('div');
    note.className = message.stopReason === 'error' ? 'thinking failure' : 'thinking';
    note.textContent = message.stopReason === 'error' ? failureText(message) : message.errorMessage;
    note.title = message.errorMessage; // the provider's raw error, on hover
    element.append(note);
  }
  rendered.set(message, element);
  return element;
}

/** A failed call, as the CLI says it: the server is `cubepi serve`'s, named by the provider that answered. */
function failureText(message: AssistantMessage): string {
  const vendor = message.provider.startsWith('anthropic') ? 'anthropic' : 'openai';
  const endpoint = `the ${vendor === 'anthropic' ? 'Anthropic' : 'OpenAI'} server cubepi serve uses`;
  return describeProviderError(message, { vendor, responsesApi: false, endpoint, model: message.model });
}

function renderTools(calls: readonly ToolActivity[]): void {
  toolsBox.replaceChildren(
    ...calls.map((call) => {
      const element = document.createElement('div');
      element.className = 'tool';
      element.dataset.status = call.status;
      element.textContent = `${call.toolName}(${JSON.stringify(call.args)}) `;
      if (call.status === 'running') {
        const progress = document.createElement('span');
        progress.className = 'progress';
        const text = call.progress?.content.map((c) => (c.type === 'text' ? c.text : '')).join('') ?? '';
        progress.textContent = text === '' ? '… running' : `… ${text}`;
        element.append(progress);
      } else if (call.approval !== undefined) {
        const { requestId, reason } = call.approval;
        element.append(`— ${reason}`);
        element.append(approvalButton('Approve', requestId, { approve: true }));
        element.append(approvalButton('Deny', requestId, { deny: 'The user denied this call' }));
      }
      return element;
    }),
  );
}

function approvalButton(label: string, requestId: string, answer: ApprovalAnswer): HTMLButtonElement {
  const button = document.createElement('button');
  button.type = 'button';
  button.textContent = label;
  button.onclick = () => show(respond(base, threadId, requestId, answer, options), true);
  return button;
}

/** Pending approvals of a suspended thread, shown like held calls. */
function pendingAsActivity(pending: readonly ApprovalRequest[]): ToolActivity[] {
  return pending.map((request) => ({
    runId: '',
    toolCallId: request.toolCallId,
    toolName: request.toolName,
    args: request.args,
    status: 'awaiting_approval',
    approval: { requestId: request.requestId, reason: request.reason },
  }));
}

/** The run whose taking over the status box shows. */
let recovering: string | undefined;

/**
 * The run's state when it is not plain streaming: a worker lost and its run taken over (`run_recovering`), shown until
 * the new attempt streams (its first delta replaces the text the lost attempt left, see assembleMessages) or ends.
 */
function showStatus(event: SequencedEvent | undefined): void {
  if (event?.type === 'run_recovering') {
    recovering = event.runId;
    statusBox.hidden = false;
    statusBox.textContent = `The worker running this answer was lost; another one is taking over (attempt ${event.attempt})…`;
    return;
  }
  if (event !== undefined && event.runId !== recovering) return;
  const streams = event?.type === 'message_update' && event.streamEvent.type.endsWith('_delta');
  if (event === undefined || streams || event.type === 'message_end' || event.type === 'agent_end') {
    recovering = undefined;
    statusBox.hidden = true;
  }
}

function setRunning(on: boolean): void {
  sendButton.disabled = on;
  stopButton.hidden = !on;
  continueButton.hidden = on || !endsRecordOnly(shown);
  for (const item of threadList.querySelectorAll('li')) item.classList.toggle('disabled', on);
  document.body.dataset.running = String(on);
}

/**
 * Whether the thread ends with an answer the model never sees (failed, stopped, blocked, or closed as lost with its
 * server: `isRecordOnly`), which Continue asks for again.
 */
function endsRecordOnly(messages: readonly Message[]): boolean {
  const last = messages.at(-1);
  return (
    last?.role === 'assistant' &&
    (last.stopReason === 'error' || last.stopReason === 'aborted' || last.stopReason === 'blocked')
  );
}

// --- runs ----------------------------------------------------------------------------------------------------------

/** Shows a run's events on top of `shown`: the transcript, the tool calls; `started`: this page started it. */
function show(events: Observable<SequencedEvent>, started: boolean): void {
  errorBox.hidden = true;
  const shared = events.pipe(share());
  const subscription = new Subscription();
  const run: NonNullable<typeof running> = { subscription, runId: undefined, started };
  running = run;
  setRunning(true);
  let latest = shown;
  subscription.add(
    shared.subscribe({
      next: (event) => {
        run.runId ??= event.runId;
        showStatus(event);
      },
      error: (error: unknown) => {
        showError(error);
        void finished(run);
      },
      complete: () => void finished(run),
    }),
  );
  subscription.add(shared.pipe(assembleMessages(shown)).subscribe((list) => renderTranscript((latest = list))));
  subscription.add(shared.pipe(toolActivity()).subscribe(renderTools));
  subscription.add(() => (shown = latest));
}

async function finished(run: NonNullable<typeof running>): Promise<void> {
  if (running !== run) return;
  running = undefined;
  showStatus(undefined);
  run.subscription.unsubscribe();
  await openThread(threadId);
}

async function stop(): Promise<void> {
  const run = running;
  if (run === undefined) return;
  running = undefined;
  showStatus(undefined);
  // A run this page started is cancelled by unsubscribing from it; a run it only watches, by asking the server.
  run.subscription.unsubscribe();
  if (!run.started && run.runId !== undefined) await cancelRun(base, run.runId, options);
  // Show how it closed: the server stores the cancelled run's closing messages.
  await openThread(threadId);
}

async function openThread(id: string): Promise<void> {
  threadId = id;
  setHash();
  const thread = await getThread(base, id, options);
  if (running !== undefined) return;
  shown = thread.messages;
  renderTranscript(shown);
  renderTools(pendingAsActivity(thread.pending));
  setRunning(false);
  await refreshThreads();
  // A run still going (a reload mid-run): replay it from its first event on top of the history before it.
  if (thread.activeRunId !== null) show(fromAgentEvents(runEventsUrl(base, thread.activeRunId), options), false);
}

async function refreshThreads(): Promise<void> {
  const threads = await listThreads(base, options);
  const ids = threads.map((t) => t.threadId);
  if (!ids.includes(threadId)) ids.unshift(threadId);
  threadList.replaceChildren(
    ...ids.map((id) => {
      const item = document.createElement('li');
      item.textContent = id;
      item.classList.toggle('current', id === threadId);
      item.onclick = () => {
        if (running === undefined) void openThread(id).catch(showError);
      };
      return item;
    }),
  );
}

form.onsubmit = (event) => {
  event.preventDefault();
  const text = promptBox.value.trim();
  if ((text === '' && pending.count === 0) || running !== undefined) return;
  promptBox.value = '';
  if (pending.count === 0) {
    show(startRun(base, threadId, text, options), true);
    return;
  }
  // With files, one user message: the text first, then each file as the block the server checks. The files stay
  // attached (and the text comes back) until the server takes them: a refused file can be removed and the rest sent.
  void pending
    .read()
    .then((files) => {
      const content = text === '' ? files : [{ type: 'text' as const, text }, ...files];
      let taken = false;
      const run$ = startRun(base, threadId, { role: 'user', content, timestamp: Date.now() }, options).pipe(
        tap({
          next: () => {
            if (!taken) pending.clear();
            taken = true;
          },
          error: () => {
            if (!taken && promptBox.value === '') promptBox.value = text;
          },
        }),
      );
      show(run$, true);
    })
    .catch(showError);
};
attachButton.onclick = () => fileInput.click();
fileInput.onchange = () => {
  pending.add(fileInput.files ?? []);
  fileInput.value = ''; // the same file can be chosen again
};
// The form is the drop zone; a pasted file (a screenshot) attaches too.
form.ondragover = (event) => {
  if (!event.dataTransfer?.types.includes('Files')) return;
  event.preventDefault();
  form.classList.add('dragging');
};
form.ondragleave = () => form.classList.remove('dragging');
form.ondrop = (event) => {
  event.preventDefault();
  form.classList.remove('dragging');
  pending.add(event.dataTransfer?.files ?? []);
};
promptBox.onpaste = (event) => {
  const files = event.clipboardData?.files;
  if (files !== undefined && files.length > 0) {
    event.preventDefault();
    pending.add(files);
  }
};
promptBox.onkeydown = (event) => {
  if (event.key === 'Enter' && !event.shiftKey) form.requestSubmit();
};
stopButton.onclick = () => void stop().catch(showError);
continueButton.onclick = () => {
  if (running === undefined) show(resumeThread(base, threadId, options), true);
};
$<HTMLButtonElement>('new-thread').onclick = () => {
  if (running === undefined) void openThread(newThreadId()).catch(showError);
};

void openThread(threadId).catch(showError);
