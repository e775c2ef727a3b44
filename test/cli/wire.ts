// Minimal provider responses in the Anthropic Messages and OpenAI Chat Completions wire formats (SSE bodies), for the
// CLI's tests: a text answer, or tool calls; `partial` variants stop mid-answer (for a stalled stream).
const frame = (event: string | undefined, data: unknown) =>
  `${event === undefined ? '' : `event: ${event}\n`}data: ${JSON.stringify(data)}\n\n`;

/** An OpenAI Chat Completions stream answering `text` (in pieces of 5 characters), or its start only (`partial`). */
export function openaiText(text: string, options: { partial?: boolean } = {}): string {
  const chunk = (delta: object, finish: string | null = null, usage?: object) =>
    frame(undefined, {
      id: 'chatcmpl-1',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'gpt-test',
      choices: [{ index: 0, delta, finish_reason: finish }],
      ...(usage === undefined ? {} : { usage }),
    });
  let body = chunk({ role: 'assistant', content: '' });
  for (let i = 0; i < text.length; i += 5) body += chunk({ content: text.slice(i, i + 5) });
  if (options.partial === true) return body;
  return `${body}${chunk({}, 'stop', { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 })}data: [DONE]\n\n`;
}

/** An OpenAI Chat Completions stream calling tools (`[name, args]` pairs), in the model's order (20 in, 5 out). */
export function openaiToolCalls(...calls: [string, Record<string, unknown>][]): string {
  const chunk = (delta: object, finish: string | null = null, usage?: object) =>
    frame(undefined, {
      id: 'chatcmpl-2',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'gpt-test',
      choices: [{ index: 0, delta, finish_reason: finish }],
      ...(usage === undefined ? {} : { usage }),
    });
  let body = chunk({ role: 'assistant', content: null });
  calls.forEach(([name, args], index) => {
    body += chunk({
      tool_calls: [
        { index, id: `call_${index}`, type: 'function', function: { name, arguments: JSON.stringify(args) } },
      ],
    });
  });
  const usage = { prompt_tokens: 20, completion_tokens: 5, total_tokens: 25 };
  return `${body}${chunk({}, 'tool_calls', usage)}data: [DONE]\n\n`;
}

/** An Anthropic Messages stream answering `text`, or its start only (`partial`). */
export function anthropicText(text: string, options: { partial?: boolean } = {}): string {
  let body = frame('message_start', {
    type: 'message_start',
    message: {
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      model: 'claude-test',
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 12, output_tokens: 1 },
    },
  });
  body += frame('content_block_start', {
    type: 'content_block_start',
    index: 0,
    content_block: { type: 'text', text: '' },
  });
  for (let i = 0; i < text.length; i += 5) {
    body += frame('content_block_delta', {
      type: 'content_block_delta',
      index: 0,
      delta: { type: 'text_delta', text: text.slice(i, i + 5) },
    });
  }
  if (options.partial === true) return body;
  return (
    body +
    frame('content_block_stop', { type: 'content_block_stop', index: 0 }) +
    frame('message_delta', {
      type: 'message_delta',
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: { output_tokens: 7 },
    }) +
    frame('message_stop', { type: 'message_stop' })
  );
}
