// Files on the page of `cubepi serve`, driven in a headless Chromium: a PDF and an image attached with the button and
// a CSV dropped on the form are sent with the prompt, shown in the user's message (name, type, size; the image as a
// thumbnail), stored in the thread as checked blocks, and shown again when the thread is opened anew. A file whose
// bytes are not its type is refused by the server, and the page says which. Screenshots under test-output/.
import { spawn, type ChildProcess } from 'node:child_process';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { deflateSync } from 'node:zlib';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haveChromium, launchChromium, requireChromium } from './chromium.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const output = join(root, 'test-output');

requireChromium('the cubepi serve files browser test');

const PDF = Buffer.from('%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n');

/** A `size`×`size` PNG of one colour: a thumbnail big enough to see in the screenshot. */
function png(size: number, [r, g, b]: readonly [number, number, number]): Buffer {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (bytes: Buffer) => {
    let c = 0xffffffff;
    for (const byte of bytes) c = crcTable[(c ^ byte) & 0xff]! ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const check = Buffer.alloc(4);
    check.writeUInt32BE(crc(body));
    return Buffer.concat([length, body, check]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(size, 0);
  header.writeUInt32BE(size, 4);
  header.set([8, 2, 0, 0, 0], 8); // 8-bit RGB
  const row = Buffer.concat([Buffer.from([0]), Buffer.from(Array.from({ length: size }, () => [r, g, b]).flat())]);
  const pixels = deflateSync(Buffer.concat(Array.from({ length: size }, () => row)));
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', pixels),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

const PNG = png(48, [220, 60, 40]);

describe.skipIf(!haveChromium)('files on the cubepi serve page, in a headless Chromium', () => {
  let serve: ChildProcess;
  let origin = '';
  let token = '';
  let context: BrowserContext;
  let dir = '';

  beforeAll(async () => {
    if (!existsSync(join(root, 'dist/page/app.js'))) {
      await promisify(execFile)('npm', ['run', 'build'], { cwd: root });
    }
    dir = mkdtempSync(join(tmpdir(), 'cubepi-serve-files-'));
    mkdirSync(output, { recursive: true });
    const clean = { ...process.env };
    for (const name of ['ANTHROPIC_API_KEY', 'ANTHROPIC_BASE_URL', 'OPENAI_API_KEY', 'OPENAI_BASE_URL']) {
      delete clean[name];
    }
    serve = spawn(
      process.execPath,
      ['dist/src/cli/main.js', 'serve', '--port', '0', '--delay', '0', '--db', join(dir, 'threads.db')],
      { cwd: root, env: clean, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    [origin, token] = await new Promise<[string, string]>((resolve, reject) => {
      let text = '';
      serve.stdout!.on('data', (chunk: Buffer) => {
        text += chunk.toString();
        const match = /(http:\/\/127\.0\.0\.1:\d+)\/#token=([\w-]+) /.exec(text);
        if (match !== null) resolve([match[1]!, match[2]!]);
      });
      serve.stderr!.on('data', (chunk: Buffer) => (text += chunk.toString()));
      serve.once('exit', (code) => reject(new Error(`cubepi serve exited (${code}): ${text}`)));
    });
    context = await launchChromium(join(dir, 'chromium'));
  }, 180_000);

  afterAll(async () => {
    await context?.close();
    if (serve !== undefined && serve.exitCode === null) {
      const exited = new Promise((resolve) => serve.once('exit', resolve));
      serve.kill('SIGTERM');
      await exited;
    }
    if (dir !== '') rmSync(dir, { recursive: true, force: true });
  });

  async function open(thread: string): Promise<{ page: Page; problems: string[] }> {
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
    page.on('response', (response) => {
      if (response.status() >= 400) problems.push(`${response.status()} ${response.url()}`);
    });
    await page.goto(`${origin}/#token=${token}&thread=${thread}`);
    await page.waitForSelector('body[data-running="false"]');
    return { page, problems };
  }

  const stored = async (thread: string) =>
    (
      (await (
        await fetch(`${origin}/api/threads/${thread}`, { headers: { authorization: `Bearer ${token}` } })
      ).json()) as { messages: { role: string; content: unknown }[] }
    ).messages;

  /** The cards of the user's message: each card's label and whether it shows a loaded thumbnail. */
  const userCards = (page: Page) =>
    page.evaluate<{ label: string; thumbnail: boolean }[]>(`[...document.querySelectorAll('.message.user .attachment')]
      .map((card) => {
        const img = card.querySelector('img');
        return { label: card.querySelector('.attachment-label').textContent, thumbnail: img !== null && img.naturalWidth > 0 };
      })`);

  it(
    'attaches by button and by drop, shows the files in the message, stores them, and shows them restored',
    { timeout: 120_000 },
    async () => {
      const { page, problems } = await open('files-1');
      await page.setInputFiles('#file-input', [
        { name: 'report.pdf', mimeType: 'application/pdf', buffer: PDF },
        { name: 'red.png', mimeType: 'image/png', buffer: PNG },
      ]);
      // Dropped on the form: a CSV the browser gives no type (the page types it by its extension).
      const dropped = await page.evaluateHandle(`(() => {
        const transfer = new DataTransfer();
        transfer.items.add(new File(['city,temp\\nParis,21\\n'], 'temps.csv', { type: '' }));
        return transfer;
      })()`);
      await page.dispatchEvent('#prompt-form', 'dragover', { dataTransfer: dropped });
      await page.dispatchEvent('#prompt-form', 'drop', { dataTransfer: dropped });
      await page.waitForFunction(`document.querySelectorAll('#attachments .attachment').length === 3`);
      expect(await page.locator('#attachments .attachment-label').allInnerTexts()).toEqual([
        `report.pdf · application/pdf · ${PDF.length} B`,
        `red.png · image/png · ${PNG.length} B`,
        'temps.csv · text/csv · 19 B',
      ]);
      await page.screenshot({ path: join(output, 'serve-files-pending.png') });
      await page.fill('#prompt', 'What is in these?');
      await page.click('#send');
      await page.waitForSelector('body[data-running="true"]');
      await page.waitForSelector('body[data-running="false"]', { timeout: 60_000 });
      expect(await page.locator('#attachments .attachment').count()).toBe(0);
      const expectedCards = [
        { label: `report.pdf · application/pdf · ${PDF.length} B`, thumbnail: false },
        { label: `image · image/png · ${PNG.length} B`, thumbnail: true },
        { label: 'temps.csv · text/csv · 19 B', thumbnail: false },
      ];
      expect(await userCards(page)).toEqual(expectedCards);
      expect(await page.locator('.message.user').innerText()).toContain('What is in these?');
      await page.screenshot({ path: join(output, 'serve-files-sent.png') });
      const messages = await stored('files-1');
      expect(messages[0]).toMatchObject({
        role: 'user',
        content: [
          { type: 'text', text: 'What is in these?' },
          { type: 'file', mimeType: 'application/pdf', name: 'report.pdf', data: PDF.toString('base64') },
          { type: 'image', mimeType: 'image/png', data: PNG.toString('base64') },
          { type: 'file', mimeType: 'text/csv', name: 'temps.csv', size: 19 },
        ],
      });
      // The thread opened anew (a fresh page: from the stored thread only) shows the same cards.
      const again = await open('files-1');
      await again.page.waitForSelector('.message.user .attachment');
      expect(await userCards(again.page)).toEqual(expectedCards);
      await again.page.screenshot({ path: join(output, 'serve-files-restored.png') });
      expect([...problems, ...again.problems]).toEqual([]);
    },
  );

  it(
    'a file whose bytes are not its type is refused, and the page names it; nothing is stored',
    { timeout: 60_000 },
    async () => {
      const { page, problems } = await open('files-2');
      await page.setInputFiles('#file-input', [
        { name: 'fake.pdf', mimeType: 'application/pdf', buffer: Buffer.from('<html>not a pdf</html>') },
      ]);
      await page.fill('#prompt', 'Read it');
      await page.click('#send');
      await page.waitForSelector('#error:not([hidden])');
      expect(await page.locator('#error').innerText()).toContain(
        'input.content[1]: the bytes of a file block declared application/pdf are not a PDF',
      );
      // The refused file stays attached and the prompt comes back, to fix and send again.
      expect(await page.locator('#attachments .attachment-label').allInnerTexts()).toEqual([
        'fake.pdf · application/pdf · 22 B',
      ]);
      expect(await page.inputValue('#prompt')).toBe('Read it');
      expect(problems).toEqual([expect.stringMatching(/^400 .*\/api\/threads\/files-2\/runs$/)]);
      expect(await stored('files-2')).toEqual([]);
    },
  );
});
