import { z } from 'zod';
import { defineTool } from '../../index.js';

/** `calculator`: evaluates an arithmetic expression (no code is run: a small parser). */
export function calculatorTool() {
  return defineTool({
    name: 'calculator',
    description: 'Evaluate an arithmetic expression: numbers, + - * / % ^, parentheses, sqrt(), abs(), pi.',
    parameters: z.object({ expression: z.string().min(1).max(1000).describe('e.g. "(2 + 3) * 4 ^ 2"') }),
    execute: (_id, { expression }) => {
      const value = evaluate(expression);
      return Promise.resolve({ content: [{ type: 'text', text: String(value) }], details: { value } });
    },
  });
}

const FUNCTIONS: Record<string, (x: number) => number> = {
  sqrt: Math.sqrt,
  abs: Math.abs,
  round: Math.round,
  floor: Math.floor,
  ceil: Math.ceil,
  ln: Math.log,
  log10: Math.log10,
};

/** Evaluates `expression` by recursive descent; throws an `Error` naming the position of a syntax error. */
export function evaluate(expression: string): number {
  const tokens = expression.match(/\d+(?:\.\d+)?(?:e[+-]?\d+)?|[a-z]+|\S/gi) ?? [];
  let i = 0;
  const peek = () => tokens[i];
  const take = (expected?: string) => {
    const token = tokens[i++];
    if (token === undefined || (expected !== undefined && token !== expected)) {
      throw new Error(`syntax error in "${expression}": expected ${expected ?? 'more'} at token ${i}`);
    }
    return token;
  };
  const sum = (): number => {
    let value = product();
    while (peek() === '+' || peek() === '-') value = take() === '+' ? value + product() : value - product();
    return value;
  };
  const product = (): number => {
    let value = power();
    while (peek() === '*' || peek() === '/' || peek() === '%') {
      const op = take();
      const right = power();
      value = op === '*' ? value * right : op === '/' ? value / right : value % right;
    }
    return value;
  };
  const power = (): number => {
    const base = unary();
    return peek() === '^' ? (take(), base ** power()) : base;
  };
  const unary = (): number => (peek() === '-' ? (take(), -unary()) : peek() === '+' ? (take(), unary()) : atom());
  const atom = (): number => {
    const token = take();
    if (token === '(') {
      const value = sum();
      take(')');
      return value;
    }
    if (/^\d/.test(token)) return Number(token);
    if (token.toLowerCase() === 'pi') return Math.PI;
    const fn = FUNCTIONS[token.toLowerCase()];
    if (fn === undefined) throw new Error(`unknown name "${token}" in "${expression}"`);
    take('(');
    const value = sum();
    take(')');
    return fn(value);
  };
  const value = sum();
  if (i < tokens.length) throw new Error(`syntax error in "${expression}": unexpected "${tokens[i]}"`);
  return value;
}
