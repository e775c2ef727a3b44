// The code examples of README.md and docs/*.md type-check, as users get the package.
//
// Every ```ts (or ```typescript) block becomes a file of its own (its own module: `moduleDetection: 'force'`, so
// names never clash between blocks), and one TypeScript program checks them all with strict settings
// (`strict`, `noUncheckedIndexedAccess`, `exactOptionalPropertyTypes`, `verbatimModuleSyntax`), twice: with Node's
// types alone (`lib: ["ES2023"]`) and as a browser-and-Node app has them (`lib: ["ES2023", "DOM"]` + `@types/node`). `cubepi` and its subpaths resolve the way they do for
// a user: through the package's exports map to the built `.d.ts` files in `dist/` (the project is written under
// `.tmp/`, inside the package, so `cubepi` resolves as a self-reference and rxjs, zod and vitest from node_modules).
// `npm test` builds before vitest runs; run alone, this test builds when `dist/` is missing.
//
// The conventions, also stated in README.md (Documentation):
// - A block is complete: it imports what it uses, and declares what stands for the reader's own code in a line of its
//   own (`declare function lookUp(city: string, signal: AbortSignal): Promise<string>;`).
// - Five names need no declaration, because the docs use them everywhere for the reader's own objects: `agent`,
//   `provider`, `model`, `tools` and `checkpointer`. PREAMBLE below declares them for every block.
// - A block that is deliberately not compilable code (a signature, a listing of an exported type) is fenced
//   ```ts partial and skipped. Use it sparingly: a block that can be made complete should be.
//
// A failure names the Markdown file, the line in it and the compiler's error, and keeps the generated project (under
// `.tmp/docs-examples-*`, its path in the failure): `npx tsc -p <that directory>` reproduces the errors.
//
// `exactOptionalPropertyTypes` is on, as in cubepi itself: the public option types accept an explicit `undefined`
// (`listThreads({ limit, after })` with `after` a `string | undefined`), so a strict app can pass what it has.
import { execFile } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import ts from 'typescript';
import { beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = fileURLToPath(new URL('..', import.meta.url));

const PREAMBLE = `// Names the docs use for the reader's own objects (see test/docs-examples.test.ts).
declare const agent: import('cubepi').Agent;
declare const provider: import('cubepi').Provider;
declare const model: import('cubepi').Model;
declare const tools: readonly import('cubepi').AnyAgentTool[];
declare const checkpointer: import('cubepi').Checkpointer;
`;

const COMPILER_OPTIONS = {
  target: 'ES2022',
  lib: ['ES2023'],
  module: 'NodeNext',
  moduleResolution: 'NodeNext',
  types: ['node'],
  strict: true,
  noUncheckedIndexedAccess: true,
  exactOptionalPropertyTypes: true,
  verbatimModuleSyntax: true,
  moduleDetection: 'force',
  skipLibCheck: true,
  noEmit: true,
};

interface CodeBlock {
  /** The Markdown file, relative to the repository root. */
  readonly file: string;
  /** The 1-based line of the opening fence. */
  readonly fenceLine: number;
  readonly language: string;
  readonly flags: readonly string[];
  readonly code: string;
}

/** The fenced code blocks of a Markdown text (backtick and tilde fences, indented ones inside list items too). */
function codeBlocks(file: string, markdown: string): CodeBlock[] {
  const blocks: CodeBlock[] = [];
  let open: { indent: number; fence: string; fenceLine: number; info: string[]; lines: string[] } | undefined;
  for (const [index, line] of markdown.split(/\r?\n/).entries()) {
    if (open === undefined) {
      const [, indent, fence, info] = /^( *)(`{3,}|~{3,})([^`]*)$/.exec(line) ?? [];
      if (indent !== undefined && fence !== undefined && info !== undefined) {
        open = { indent: indent.length, fence, fenceLine: index + 1, info: info.trim().split(/\s+/), lines: [] };
      }
      continue;
    }
    const [, fence] = /^ *(`{3,}|~{3,}) *$/.exec(line) ?? [];
    if (fence !== undefined && fence[0] === open.fence[0] && fence.length >= open.fence.length) {
      const [language = '', ...flags] = open.info;
      blocks.push({ file, fenceLine: open.fenceLine, language, flags, code: open.lines.join('\n') + '\n' });
      open = undefined;
      continue;
    }
    // Content lines lose the fence's own indentation (a block inside a list item).
    open.lines.push(line.replace(new RegExp(`^ {0,${open.indent}}`), ''));
  }
  return blocks;
}

function markdownFiles(): string[] {
  const docs = readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`);
  return ['README.md', ...docs];
}

interface Diagnostic {
  /** The file the error is in, when it is in one. */
  readonly fileName?: string;
  /** 1-based. */
  readonly line: number;
  readonly column: number;
  /** `TSn: message`, its chained explanations on indented lines. */
  readonly text: string;
}

/** Type-checks the files of a tsconfig.json as one program, as `tsc -p` would. */
function typeCheck(tsconfigPath: string): { diagnostics: Diagnostic[]; sourceFiles: string[] } {
  const config = ts.getParsedCommandLineOfConfigFile(
    tsconfigPath,
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
      },
    },
  );
  if (config === undefined) throw new Error(`cannot read ${tsconfigPath}`);
  const program = ts.createProgram({ rootNames: config.fileNames, options: config.options });
  const diagnostics = [...config.errors, ...ts.getPreEmitDiagnostics(program)].map((d): Diagnostic => {
    const text = `TS${d.code}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n  ')}`;
    if (d.file === undefined || d.start === undefined) return { line: 0, column: 0, text };
    const { line, character } = d.file.getLineAndCharacterOfPosition(d.start);
    return { fileName: d.file.fileName, line: line + 1, column: character + 1, text };
  });
  return { diagnostics, sourceFiles: program.getSourceFiles().map((f) => f.fileName) };
}

beforeAll(async () => {
  const built = join(root, 'dist/src/index.d.ts');
  // `npm test` builds first; a lone `vitest run` builds here.
  if (!existsSync(built)) {
    await run('npm', ['run', 'build'], { cwd: root });
    return;
  }
  const newest = (dir: string): number =>
    Math.max(
      0,
      ...readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })
        .filter((path) => path.endsWith('.ts'))
        .map((path) => statSync(join(root, dir, path)).mtimeMs),
    );
  if (Math.max(newest('src'), newest('operators')) > statSync(built).mtimeMs) {
    console.warn(
      'docs examples: dist/ is older than src/ — the examples are checked against stale types; run `npm run build`',
    );
  }
}, 120_000);

describe('docs examples', () => {
  const blocks = markdownFiles().flatMap((file) => codeBlocks(file, readFileSync(join(root, file), 'utf8')));
  const typescript = blocks.filter((b) => b.language === 'ts' || b.language === 'typescript');
  const checked = typescript.filter((b) => !b.flags.includes('partial'));

  it('reads fences as Markdown does: info string flags, tildes, longer fences, indented in a list item', () => {
    const markdown = [
      '```ts partial', // line 1
      'a(b?): c;',
      '```',
      '1. step', // line 4
      '   ~~~~typescript',
      '   const x = 1;',
      '   ```',
      '   ~~~~',
      '````',
      '```ts',
      '````',
    ].join('\n');
    expect(codeBlocks('x.md', markdown)).toEqual([
      { file: 'x.md', fenceLine: 1, language: 'ts', flags: ['partial'], code: 'a(b?): c;\n' },
      { file: 'x.md', fenceLine: 5, language: 'typescript', flags: [], code: 'const x = 1;\n```\n' },
      { file: 'x.md', fenceLine: 9, language: '', flags: [], code: '```ts\n' },
    ]);
  });

  it('finds the TypeScript blocks of README.md and docs/*.md', () => {
    expect(checked.length).toBeGreaterThan(0);
    expect(new Set(checked.map((b) => b.file))).toContain('README.md');
  });

  // Node.js alone, and a browser-and-Node app (the DOM library next to @types/node: their streams and `fetch` types
  // differ, and a block must compile with both).
  it.each([
    ['Node.js (lib ES2023)', ['ES2023']],
    ['a browser-and-Node app (lib ES2023 + DOM)', ['ES2023', 'DOM']],
  ])(
    'type-checks every block not marked partial, against the built package types: %s',
    (_name, lib) => {
      mkdirSync(join(root, '.tmp'), { recursive: true });
      const dir = mkdtempSync(join(root, '.tmp', 'docs-examples-'));
      const byPath = new Map<string, CodeBlock>();
      for (const block of checked) {
        const path = join(dir, `${block.file.replace(/[^\w.-]/g, '_')}-L${block.fenceLine}.ts`);
        writeFileSync(path, block.code);
        byPath.set(path, block);
      }
      writeFileSync(join(dir, 'preamble.d.ts'), PREAMBLE);
      const files = ['preamble.d.ts', ...[...byPath.keys()].map((path) => relative(dir, path))];
      const compilerOptions = { ...COMPILER_OPTIONS, lib };
      writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, files }, null, 2));

      const { diagnostics, sourceFiles } = typeCheck(join(dir, 'tsconfig.json'));

      // Each error as `docs/x.md:<line>:<column> (block at line <fence>) TSn: …`.
      const errors = diagnostics.map(({ fileName, line, column, text }) => {
        const block = fileName === undefined ? undefined : byPath.get(fileName);
        if (block === undefined) return `${fileName ?? ''}(${line},${column}): ${text}`;
        return `${block.file}:${block.fenceLine + line}:${column} (block at line ${block.fenceLine}) ${text}`;
      });
      expect(errors, `the generated project is kept in ${dir}`).toEqual([]);
      // `cubepi` resolved as users get it: the built declarations, not the sources.
      expect(sourceFiles).toContain(join(root, 'dist/src/index.d.ts'));
      expect(sourceFiles.filter((f) => f.startsWith(join(root, 'src/')))).toEqual([]);
      rmSync(dir, { recursive: true, force: true });
    },
    120_000,
  );
});
