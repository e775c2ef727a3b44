// Regenerates src/providers/models.generated.ts (the model table's rows) from the pinned snapshot
// scripts/models-source/snapshot.json and the hand-kept scripts/models-source/overrides.mjs. Plain data out: the
// generated file loads nothing. docs/providers.md ("Models and capabilities") says where the snapshot comes from.
//
//   node scripts/generate-models.mjs                       # regenerate from the pinned snapshot
//   node scripts/generate-models.mjs --refresh models.json # re-pin the snapshot from a newer catalog first
//   node scripts/generate-models.mjs --check               # exit 1 when the checked-in file is not what it generates
//
// To refresh: `npm pack @oh-my-pi/pi-catalog@<version>`, untar it, pass its `package/src/models.json` to --refresh,
// and set `--version <version>` so the snapshot names what it was taken from. Review the diff of both files.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { EXTRA_ROWS, PATCHES, PROVIDERS, RULES } from './models-source/overrides.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const snapshotPath = `${root}scripts/models-source/snapshot.json`;
const outPath = `${root}src/providers/models.generated.ts`;
const args = process.argv.slice(2);
const option = (name) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);

// The fields the table reads; the catalog has many more (wire quirks of its own runtime), left out of the snapshot.
// `revision` is the catalog's `identity.revision` (the model's version, `4.5.0`), which orders the table.
const FIELDS = ['id', 'name', 'reasoning', 'input', 'cost', 'contextWindow', 'maxTokens', 'thinking', 'kind'];

const refresh = option('--refresh');
if (refresh !== undefined) {
  const catalog = JSON.parse(readFileSync(refresh, 'utf8'));
  const providers = {};
  for (const { from } of Object.values(PROVIDERS)) {
    providers[from] = Object.values(catalog[from] ?? {})
      .map((m) => ({
        ...Object.fromEntries(FIELDS.filter((f) => m[f] !== undefined).map((f) => [f, m[f]])),
        ...(m.identity?.revision ? { revision: m.identity.revision } : {}),
      }))
      .sort((a, b) => a.id.localeCompare(b.id));
  }
  const source = {
    package: '@oh-my-pi/pi-catalog',
    version: option('--version') ?? 'unknown',
    file: 'src/models.json',
  };
  writeFileSync(snapshotPath, `${JSON.stringify({ source, providers }, null, 1)}\n`);
}

const snapshot = JSON.parse(readFileSync(snapshotPath, 'utf8'));
const DATED = /-(\d{8}|\d{4}-\d{2}-\d{2})$/;
const REGION = /^(us|eu|apac|au|ca|jp|in|global|us-gov)\./;

/** The first rule's value for `field` that matches, evaluated against the row. */
function rule(provider, row, field) {
  for (const r of RULES) {
    if (r[field] === undefined || !r.match(provider, row.id)) continue;
    return typeof r[field] === 'function' ? r[field](row) : r[field];
  }
  return undefined;
}

function thinkingOf(provider, row) {
  const t = row.thinking;
  if (!row.reasoning || t === undefined) return '';
  const byBudget = t.mode === 'budget' || t.mode === 'anthropic-budget-effort';
  const byEffort = t.mode !== 'budget';
  const budget = byBudget ? rule(provider, row, 'budget') : undefined;
  const efforts = byEffort ? (t.efforts ?? []).join(',') : '';
  // Gemini 2.5 Pro's budget starts above 0 and cannot be 0: it always thinks, whatever the snapshot says.
  const canDisable = t.requiresEffort !== true && !(budget !== undefined && budget.min > 0 && provider === 'google');
  if (efforts === '' && budget === undefined) return ''; // reasons, but how it is controlled is not known
  return `${canDisable ? 'off' : ''}|${efforts}|${budget ? `${budget.min}-${budget.max}` : ''}`;
}

const INPUT_LETTERS = { text: 't', image: 'i', pdf: 'p', audio: 'a', video: 'v', file: 'f' };

function encode(provider, row, aliases) {
  const patched = { ...row, ...PATCHES[provider]?.[row.id] };
  const input = [...new Set([...patched.input, ...(rule(provider, patched, 'input') ?? [])])];
  const tools = rule(provider, patched, 'tools') ?? true;
  const flags =
    (patched.reasoning ? 'R' : '') +
    (tools ? 'T' : '') +
    (tools && rule(provider, patched, 'parallelTools') ? 'P' : '') +
    ({ json_schema: 'S', json_mode: 'J' }[rule(provider, patched, 'structuredOutput')] ?? '') +
    ({ explicit: 'C', automatic: 'A' }[rule(provider, patched, 'promptCaching')] ?? '');
  const { input: ci, output, cacheRead, cacheWrite } = patched.cost;
  return [
    provider,
    patched.id,
    patched.name,
    patched.contextWindow,
    patched.maxTokens,
    Object.keys(INPUT_LETTERS)
      .filter((k) => input.includes(k))
      .map((k) => INPUT_LETTERS[k])
      .join(''),
    flags,
    [ci, output, cacheRead, cacheWrite],
    thinkingOf(provider, patched),
    aliases,
  ];
}

const sameFacts = (a, b) =>
  a.contextWindow === b.contextWindow && a.maxTokens === b.maxTokens && a.reasoning === b.reasoning;
const round = (x) => Math.round(x * 1e6) / 1e6;

/** A price factor when every price of `b` is `a`'s times one factor (Bedrock's regional profiles), else undefined. */
function priceFactor(a, b) {
  if (!(a.cost.input > 0)) return undefined;
  const f = round(b.cost.input / a.cost.input);
  for (const k of ['output', 'cacheRead', 'cacheWrite'])
    if (round(a.cost[k] * f) !== round(b.cost[k])) return undefined;
  return f;
}

const rows = [];
for (const [provider, { from, keep }] of Object.entries(PROVIDERS)) {
  const all = [...snapshot.providers[from], ...(EXTRA_ROWS[provider] ?? [])].filter(keep);
  // One row per model: a dated snapshot of a model with an undated id (Anthropic `claude-sonnet-4-5-20250929`) and a
  // Bedrock regional profile (`eu.anthropic.claude-opus-4-7`) are aliases of it, a profile's price as a factor.
  const groups = new Map();
  for (const m of all) {
    // Anthropic and OpenAI: a dated id joins the undated one (`claude-sonnet-4-5-20250929`), and so does an id
    // the vendor gives the same name (`claude-opus-4-0` and `claude-opus-4-20250514`: "Claude Opus 4").
    const key =
      provider === 'bedrock'
        ? m.id.replace(REGION, '')
        : ([...groups.entries()].find(([, ms]) => ms.some((o) => o.name === m.name))?.[0] ??
          m.id.replace(DATED, '').replace(/-0$/, ''));
    groups.set(key, [...(groups.get(key) ?? []), m]);
  }
  const encoded = [];
  for (const [key, members] of groups) {
    const canonical =
      provider === 'bedrock'
        ? (members.find((m) => m.id === key) ?? members.find((m) => m.id.startsWith('global.')) ?? members[0])
        : members.reduce((best, m) =>
            !DATED.test(m.id) && (DATED.test(best.id) || m.id.length < best.id.length) ? m : best,
          );
    const aliases = [];
    for (const m of members) {
      if (m === canonical) continue;
      // A dated id is the same model as its undated one: the undated row's facts stand for it (the catalog sometimes
      // lags on the dated row, e.g. no reasoning for `claude-opus-4-1-20250805`). A regional profile must match.
      const factor = provider !== 'bedrock' || sameFacts(canonical, m) ? priceFactor(canonical, m) : undefined;
      if (factor === 1) aliases.push(m.id);
      else if (factor !== undefined) aliases.push(`${m.id}*${factor}`);
      else encoded.push({ row: m, aliases: [] });
    }
    encoded.push({ row: canonical, aliases: aliases.sort() });
  }
  // Newest first within a provider (the CLI's default model is the first of its family): by the model's version,
  // then by id.
  const version = (row) => (row.revision ?? '0').split('.').map(Number);
  const newer = (a, b) => {
    const [va, vb] = [version(a), version(b)];
    for (let i = 0; i < Math.max(va.length, vb.length); i++)
      if ((va[i] ?? 0) !== (vb[i] ?? 0)) return (vb[i] ?? 0) - (va[i] ?? 0);
    return a.id.localeCompare(b.id, 'en', { numeric: true });
  };
  encoded.sort((a, b) => newer(a.row, b.row));
  for (const { row, aliases } of encoded) rows.push(encode(provider, row, aliases));
}

const header = `// Generated by scripts/generate-models.mjs from ${snapshot.source.package}@${snapshot.source.version}
// (${snapshot.source.file}, MIT) and scripts/models-source/overrides.mjs. Do not edit: change the overrides and run
// \`node scripts/generate-models.mjs\`.
/**
 * The model table's rows, compact (model-table.ts decodes them): provider, id, name, context window, largest output,
 * input kinds (t text, i image, p pdf, a audio, v video, f file), flags (R reasoning, T tools, P parallel tools,
 * S json_schema / J json_mode structured output, C explicit / A automatic prompt caching), prices per million tokens
 * [input, output, cache read, cache write], thinking ("off" when it can be turned off | effort levels | budget
 * min-max; empty when the model does not reason), aliases (an alias \`id*1.1\` costs 1.1 times the row's prices).
 * @module
 */
`;
const body = rows.map((r) => `  ${JSON.stringify(r)},`).join('\n');
const generated = `${header}export type ModelRow = readonly [\n  provider: string,\n  id: string,\n  name: string,\n  contextWindow: number,\n  maxTokens: number,\n  input: string,\n  flags: string,\n  cost: readonly [number, number, number, number],\n  thinking: string,\n  aliases: readonly string[],\n];\n\n/** Every built-in model, newest first per provider. */\n// prettier-ignore\nexport const MODEL_ROWS: readonly ModelRow[] = [\n${body}\n];\n`;
if (args.includes('--check')) {
  const current = readFileSync(outPath, 'utf8');
  if (current !== generated) {
    console.error(`${outPath} is not what the snapshot and overrides generate: run node scripts/generate-models.mjs`);
    process.exit(1);
  }
  console.log(`${outPath} is up to date (${rows.length} models)`);
  process.exit(0);
}
writeFileSync(outPath, generated);
console.log(`${rows.length} models written to ${outPath}`);
