/** Caps a tool's text output so one call cannot flood the model's context; says what was cut. */
export function clipOutput(text: string, max = 50_000): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max)}\n… (${text.length - max} more characters cut)`;
}
