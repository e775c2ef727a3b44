/**
 * A Gemini request refused before it is sent: the typed error event it becomes.
 * @module
 */
import type { ProviderErrorKind } from '../types/messages.js';

/**
 * Thrown by the Gemini request builder for a request Gemini would refuse, or that cubepi cannot translate faithfully:
 * the provider turns it into the terminal `error` event of kind `kind` without sending anything (never the Observable
 * error channel). `model_incapable`: a file kind or source the API cannot take, an unresolved blob `ref`, native
 * output with function declarations on a model before Gemini 3. `bad_request`: a `responseJsonSchema` keyword Gemini
 * cannot express (the message names its JSON path).
 */
export class GoogleRequestRefusal extends Error {
  constructor(
    readonly kind: Extract<ProviderErrorKind, 'model_incapable' | 'bad_request'>,
    message: string,
  ) {
    super(message);
    this.name = 'GoogleRequestRefusal';
  }
}

/**
 * The Gemini generation of a model id (`gemini-2.5-pro` → 2.5, `gemini-3-flash-preview` → 3, a `models/` prefix
 * allowed); `undefined` for an id that names none (`gemini-flash-latest`, a tuned model).
 */
export function geminiGeneration(modelId: string): number | undefined {
  const match = /^(?:models\/)?gemini-(\d+(?:\.\d+)?)(?:-|$)/.exec(modelId);
  return match ? Number(match[1]) : undefined;
}
