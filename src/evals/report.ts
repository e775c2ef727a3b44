/**
 * Eval results as JSONL, read back, compared, and printed as tables. Pure (no `node:` import).
 * @module
 */
import { InvalidInputError } from '../types/errors.js';
import type { CaseResult, CaseScore, EvalProblem, EvalReport, EvalSummary } from './evaluate.js';

/**
 * The report as JSONL: a `problem` line per dataset problem, then per case a `case` line and one `score` line per
 * scorer, then one `summary` line. Keys in a fixed order and no wall-clock field (in replay every value is virtual),
 * so two replays of the same recordings are byte-equal.
 */
export function reportToJSONL(report: EvalReport): string {
  const lines: unknown[] = [];
  for (const p of report.problems) lines.push({ type: 'problem', ...p });
  for (const c of report.cases) {
    lines.push({
      type: 'case',
      caseId: c.caseId,
      pass: c.pass,
      ...(c.outcome === undefined ? {} : { outcome: c.outcome }),
      ...(c.error === undefined ? {} : { error: c.error }),
    });
    for (const s of c.scores) lines.push({ type: 'score', ...s });
  }
  lines.push({ type: 'summary', ...report.summary });
  return lines.map((line) => `${JSON.stringify(line)}\n`).join('');
}

/** Reads {@link reportToJSONL}'s output back; a line that is not one of its lines is an `InvalidInputError`. */
export function parseReport(text: string): EvalReport {
  const problems: EvalProblem[] = [];
  const cases: {
    caseId: string;
    pass: boolean;
    outcome?: CaseResult['outcome'];
    error?: CaseResult['error'];
    scores: CaseScore[];
  }[] = [];
  let summary: EvalSummary | undefined;
  text.split('\n').forEach((raw, i) => {
    if (raw.trim() === '') return;
    let value: Record<string, unknown>;
    try {
      value = JSON.parse(raw) as Record<string, unknown>;
    } catch {
      throw new InvalidInputError(`eval results line ${i + 1}: not valid JSON`);
    }
    const { type, ...rest } = value;
    if (type === 'problem') problems.push(rest as unknown as EvalProblem);
    else if (type === 'case') cases.push({ ...(rest as unknown as CaseResult), scores: [] });
    else if (type === 'score') {
      const owner = cases.findLast((c) => c.caseId === rest.caseId);
      if (owner === undefined) throw new InvalidInputError(`eval results line ${i + 1}: a score before its case`);
      owner.scores.push(rest as unknown as CaseScore);
    } else if (type === 'summary') summary = rest as unknown as EvalSummary;
    else throw new InvalidInputError(`eval results line ${i + 1}: unknown line type ${JSON.stringify(type)}`);
  });
  if (summary === undefined) throw new InvalidInputError('eval results: no summary line');
  return { cases, problems, summary };
}

/** One case × scorer across two runs. */
export interface ComparisonRow {
  readonly caseId: string;
  readonly scorer: string;
  readonly before?: number | undefined;
  readonly after?: number | undefined;
  /** `after - before`, when both ran. */
  readonly delta?: number | undefined;
  readonly status: 'improved' | 'regressed' | 'unchanged' | 'added' | 'removed';
}

/** What {@link compare} finds: every row, the changed ones, and the pass rates. */
export interface EvalComparison {
  readonly rows: readonly ComparisonRow[];
  /** The rows whose status is not `unchanged`. */
  readonly changed: readonly ComparisonRow[];
  readonly passRate: { readonly before: number; readonly after: number; readonly delta: number };
}

/**
 * Compares two runs case × scorer: `improved` / `regressed` when the score went up / down (or the pass flipped),
 * `added` / `removed` for a pair in one run only, else `unchanged`. Rows in `b`'s order, then `a`'s removed ones.
 */
export function compare(a: EvalReport, b: EvalReport): EvalComparison {
  const key = (s: CaseScore) => `${s.caseId}\u0000${s.scorer}`;
  const before = new Map(a.cases.flatMap((c) => c.scores.map((s) => [key(s), s] as const)));
  const after = new Map(b.cases.flatMap((c) => c.scores.map((s) => [key(s), s] as const)));
  const rows: ComparisonRow[] = [];
  for (const [k, s] of after) {
    const old = before.get(k);
    if (old === undefined) {
      rows.push({ caseId: s.caseId, scorer: s.scorer, after: s.score, status: 'added' });
      continue;
    }
    const delta = s.score - old.score;
    const status =
      delta > 0 || (s.pass && !old.pass) ? 'improved' : delta < 0 || (!s.pass && old.pass) ? 'regressed' : 'unchanged';
    rows.push({ caseId: s.caseId, scorer: s.scorer, before: old.score, after: s.score, delta, status });
  }
  for (const [k, s] of before)
    if (!after.has(k)) rows.push({ caseId: s.caseId, scorer: s.scorer, before: s.score, status: 'removed' });
  return {
    rows,
    changed: rows.filter((r) => r.status !== 'unchanged'),
    passRate: { before: a.summary.passRate, after: b.summary.passRate, delta: b.summary.passRate - a.summary.passRate },
  };
}

/** Columns padded to their widest cell; `right[i]` right-aligns column i. */
export function formatTable(rows: readonly (readonly string[])[], right: readonly boolean[] = []): string {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  return rows
    .map((r) =>
      r
        .map((cell, i) => (right[i] === true ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')
    .concat('\n');
}

const num = (n: number | undefined): string =>
  n === undefined ? '-' : Number.isInteger(n) ? String(n) : n.toFixed(Math.abs(n) < 0.01 ? 6 : 3);

/** The report as a table: a row per case (pass, outcome, each scorer's score, the error), then per-scorer means. */
export function formatReport(report: EvalReport): string {
  const scorers = Object.keys(report.summary.scorers);
  const rows: string[][] = [['CASE', 'PASS', 'OUTCOME', ...scorers.map((s) => s.toUpperCase()), 'ERROR']];
  for (const c of report.cases) {
    rows.push([
      c.caseId,
      c.pass ? 'yes' : 'NO',
      c.outcome ?? '-',
      ...scorers.map((name) => {
        const s = c.scores.find((x) => x.scorer === name);
        if (s === undefined) return '-';
        if (s.error !== undefined) return 'error';
        return s.value === undefined ? num(s.score) : `${num(s.value)}${s.pass ? '' : '!'}`;
      }),
      c.error?.message ?? c.scores.find((s) => s.error !== undefined)?.error?.message ?? '',
    ]);
  }
  rows.push([
    'mean',
    `${report.summary.passed}/${report.summary.cases}`,
    '',
    ...scorers.map((s) => num(report.summary.scorers[s]!.mean)),
    '',
  ]);
  const right = rows[0]!.map((_, i) => i >= 3 && i < 3 + scorers.length);
  const problems = report.problems.map((p) => `problem: ${p.message}\n`).join('');
  return `${formatTable(rows, right)}${problems}pass rate ${num(report.summary.passRate)} (${report.summary.mode})\n`;
}

/** The comparison as a table of the changed rows (all rows with `all`), then the pass rates. */
export function formatComparison(comparison: EvalComparison, options: { all?: boolean } = {}): string {
  const shown = options.all === true ? comparison.rows : comparison.changed;
  const rows = [['CASE', 'SCORER', 'BEFORE', 'AFTER', 'DELTA', 'STATUS']];
  for (const r of shown) {
    const delta = r.delta === undefined ? '-' : `${r.delta > 0 ? '+' : ''}${num(r.delta)}`;
    rows.push([r.caseId, r.scorer, num(r.before), num(r.after), delta, r.status]);
  }
  const { before, after, delta } = comparison.passRate;
  const head = shown.length === 0 ? 'no case changed\n' : formatTable(rows, [false, false, true, true, true, false]);
  return `${head}pass rate ${num(before)} -> ${num(after)} (${delta > 0 ? '+' : ''}${num(delta)})\n`;
}
