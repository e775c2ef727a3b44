// `cubepi run --file`, spawned as a user runs it, with the offline demo model: the files reach the agent in the user
// message (read back from the --json events: the transcript's user message), typed by extension or --file-type;
// a missing, unknown, mistyped or oversized file is a usage error (exit 2) naming it, before any run.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, runCli, workdir } from './cli-harness.js';

beforeAll(ensureBuilt, 120_000);

const PDF = Buffer.from('%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\n%%EOF\n');
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);

/** The content of the user message the run stored, from its --json events. */
function userContent(stdout: string): unknown {
  const events = stdout
    .trimEnd()
    .split('\n')
    .map((line) => JSON.parse(line) as { type: string; message?: { role: string; content: unknown } });
  const end = events.find((e) => e.type === 'message_end' && e.message?.role === 'user');
  return end?.message?.content;
}

describe('cubepi run --file', () => {
  it('attaches each --file to the prompt, typed by its extension; an image as an image block', async () => {
    const cwd = workdir();
    writeFileSync(join(cwd, 'report.pdf'), PDF);
    writeFileSync(join(cwd, 'dot.png'), PNG);
    writeFileSync(join(cwd, 'notes.md'), '# Notes\n');
    const { code, stdout, stderr } = await runCli(
      ['run', '--json', '--delay', '0', '--file', 'report.pdf', '--file', 'dot.png', '--file', 'notes.md', 'Summarise'],
      { cwd },
    );
    expect(stderr).toContain(`attached report.pdf (application/pdf, ${PDF.length} B)`);
    expect(code).toBe(0);
    expect(userContent(stdout)).toEqual([
      { type: 'text', text: 'Summarise' },
      { type: 'file', mimeType: 'application/pdf', name: 'report.pdf', data: PDF.toString('base64'), size: PDF.length },
      { type: 'image', mimeType: 'image/png', data: PNG.toString('base64') },
      {
        type: 'file',
        mimeType: 'text/markdown',
        name: 'notes.md',
        data: Buffer.from('# Notes\n').toString('base64'),
        size: 8,
      },
    ]);
    expect(stdout.trimEnd().split('\n').at(-1)).toContain('"outcome":"completed"');
  });

  it('stores the files with the prompt: cubepi threads show lists them under it', async () => {
    const cwd = workdir();
    writeFileSync(join(cwd, 'report.pdf'), PDF);
    writeFileSync(join(cwd, 'dot.png'), PNG);
    const run = await runCli(
      ['run', '--delay', '0', '--thread', 'with-files', '--file', 'report.pdf', '--file', 'dot.png', 'Read'],
      {
        cwd,
      },
    );
    expect(run.code).toBe(0);
    const shown = await runCli(['threads', 'show', 'with-files'], { cwd });
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain(
      `> Read\n  [report.pdf · application/pdf · ${PDF.length} B]\n  [image · image/png · ${PNG.length} B]\n`,
    );
  });

  it('--file-type gives the type of the --file before it; --prompt-file still reads the prompt', async () => {
    const cwd = workdir();
    writeFileSync(join(cwd, 'scan.bin'), PDF);
    writeFileSync(join(cwd, 'task.txt'), 'What is in the scan?');
    const { code, stdout } = await runCli(
      [
        'run',
        '--json',
        '--delay',
        '0',
        '--file',
        'scan.bin',
        '--file-type',
        'application/pdf',
        '--prompt-file',
        'task.txt',
      ],
      { cwd },
    );
    expect(code).toBe(0);
    expect(userContent(stdout)).toEqual([
      { type: 'text', text: 'What is in the scan?' },
      { type: 'file', mimeType: 'application/pdf', name: 'scan.bin', data: PDF.toString('base64'), size: PDF.length },
    ]);
  });

  it.each([
    [['--file', 'missing.pdf', 'hi'], /^cubepi: run: cannot read --file missing\.pdf: no such file\n$/],
    [
      ['--file', 'data.bin', 'hi'],
      /^cubepi: run: cannot tell the type of --file data\.bin from its extension: add --file-type <mime> after it/,
    ],
    [
      ['--file', 'fake.pdf', 'hi'],
      /^cubepi: run: --file fake\.pdf: its bytes are not a PDF \(application\/pdf\) \(add --file-type <mime> after it if it is another type\)\n$/,
    ],
    [
      ['--file', 'fake.pdf', '--file-type', 'image/png', 'hi'],
      /^cubepi: run: --file fake\.pdf: its bytes are not a PNG image \(image\/png\)\n$/,
    ],
    [['--file', 'dir.pdf', 'hi'], /^cubepi: run: --file dir\.pdf is a directory\n$/],
    [['--file', 'empty.txt', 'hi'], /^cubepi: run: --file empty\.txt: the file is empty\n$/],
    [
      ['--file-type', 'text/plain', '--file', 'notes.txt', 'hi'],
      /^cubepi: run: --file-type names the type of the --file before it/,
    ],
    [['--file', 'notes.txt'], /^cubepi: run: the prompt is empty\n$/],
  ])('cubepi run %j is a usage error naming the file (exit 2), and nothing runs', async (args, message) => {
    const cwd = workdir();
    writeFileSync(join(cwd, 'data.bin'), 'bytes');
    writeFileSync(join(cwd, 'fake.pdf'), '<html>not a pdf</html>');
    writeFileSync(join(cwd, 'empty.txt'), '');
    writeFileSync(join(cwd, 'notes.txt'), 'notes');
    mkdirSync(join(cwd, 'dir.pdf'));
    const { code, stdout, stderr } = await runCli(['run', '--delay', '0', '--db', 'memory', ...args], { cwd });
    expect(stderr).toMatch(message);
    expect(code).toBe(2);
    expect(stdout).toBe('');
  });
});
