// Files on the chat page: the ones waiting to be sent (attached by the button, dropped on the form or pasted into the
// prompt), read as base64 content blocks the server checks (docs/files-surfaces.md), and every image or file block of
// a message shown as a card: name, type, size, and a thumbnail for an image whose bytes the page has.
import type { FileContent, ImageContent, UserContent } from 'cubepi';
import { MIME_BY_EXTENSION } from '../src/cli/mime-by-extension.js';

/** The image types sent as image blocks, as the server and the CLI send them. */
const IMAGE_BLOCK_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

/** A file's MIME type: the browser's, else by its extension (browsers leave `.md` and often `.csv` untyped). */
export function mimeTypeOf(file: File): string {
  if (file.type !== '') return file.type;
  const dot = file.name.lastIndexOf('.');
  return (dot < 0 ? undefined : MIME_BY_EXTENSION[file.name.slice(dot).toLowerCase()]) ?? 'application/octet-stream';
}

/** `68 B`, `12.3 KB`, `4.0 MB`. */
export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1_048_576) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1_048_576).toFixed(1)} MB`;
}

/** The decoded length of base64 `data`. */
function base64Size(data: string): number {
  return Math.floor((data.length * 3) / 4) - (data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0);
}

/** `file` as the content block the page sends: an image block for PNG, JPEG, GIF and WebP, else a file block. */
export async function toBlock(file: File): Promise<FileContent | ImageContent> {
  const url = await new Promise<string>((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result as string);
    reader.onerror = () => reject(reader.error ?? new Error(`cannot read ${file.name}`));
    reader.readAsDataURL(file);
  });
  const data = url.slice(url.indexOf(',') + 1);
  const mimeType = mimeTypeOf(file);
  if (IMAGE_BLOCK_TYPES.has(mimeType)) return { type: 'image', mimeType, data };
  return { type: 'file', mimeType, name: file.name, data, size: file.size };
}

/** What a card shows of a block: its name, type, size, and the image it can show (a `data:` or object URL). */
interface Shown {
  readonly name: string;
  readonly mimeType: string;
  readonly size: number | undefined;
  readonly image: string | undefined;
  readonly link: string | undefined;
}

/** A card: a thumbnail when there is an image, then `name · type · size`. */
function card(shown: Shown): HTMLElement {
  const element = document.createElement('div');
  element.className = 'attachment';
  element.dataset.name = shown.name;
  element.dataset.mimeType = shown.mimeType;
  if (shown.image !== undefined) {
    const img = document.createElement('img');
    img.src = shown.image;
    img.alt = shown.name;
    element.append(img);
  }
  const label = document.createElement(shown.link === undefined ? 'span' : 'a');
  label.className = 'attachment-label';
  if (shown.link !== undefined) {
    (label as HTMLAnchorElement).href = shown.link;
    (label as HTMLAnchorElement).target = '_blank';
    (label as HTMLAnchorElement).rel = 'noopener noreferrer';
  }
  label.textContent = [shown.name, shown.mimeType, shown.size === undefined ? undefined : formatSize(shown.size)]
    .filter((part) => part !== undefined)
    .join(' · ');
  element.append(label);
  return element;
}

/** The card of an image or file block in a message; `undefined` for any other block. */
export function blockCard(block: UserContent | { type: string }): HTMLElement | undefined {
  if (block.type === 'image') {
    const image = block as ImageContent;
    return card({
      name: 'image',
      mimeType: image.mimeType,
      size: base64Size(image.data),
      image: `data:${image.mimeType};base64,${image.data}`,
      link: undefined,
    });
  }
  if (block.type !== 'file') return undefined;
  const file = block as FileContent;
  const size = file.size ?? (file.data === undefined ? undefined : base64Size(file.data));
  const image =
    file.data !== undefined && file.mimeType.startsWith('image/')
      ? `data:${file.mimeType};base64,${file.data}`
      : undefined;
  // A stored-by-reference file (`ref`) shows what is known without its bytes; a vendor file id, its id.
  const name = file.name ?? (file.url === undefined ? (file.fileId ?? 'file') : file.url.split('/').pop() || file.url);
  const link = file.url !== undefined && /^https?:/.test(file.url) ? file.url : undefined;
  return card({ name, mimeType: file.mimeType, size, image, link });
}

/** The files waiting to be sent, shown in `box` with a remove button each. */
export class PendingFiles {
  private files: { file: File; preview: string | undefined }[] = [];

  constructor(private readonly box: HTMLElement) {}

  get count(): number {
    return this.files.length;
  }

  add(files: Iterable<File>): void {
    for (const file of files) {
      const preview = mimeTypeOf(file).startsWith('image/') ? URL.createObjectURL(file) : undefined;
      this.files.push({ file, preview });
    }
    this.render();
  }

  /** The files as content blocks (the list is kept: {@link clear} it once the server took them). */
  read(): Promise<(FileContent | ImageContent)[]> {
    return Promise.all(this.files.map(({ file }) => toBlock(file)));
  }

  clear(): void {
    for (const { preview } of this.files) if (preview !== undefined) URL.revokeObjectURL(preview);
    this.files = [];
    this.render();
  }

  private render(): void {
    this.box.hidden = this.files.length === 0;
    this.box.replaceChildren(
      ...this.files.map((entry, index) => {
        const element = card({
          name: entry.file.name,
          mimeType: mimeTypeOf(entry.file),
          size: entry.file.size,
          image: entry.preview,
          link: undefined,
        });
        const remove = document.createElement('button');
        remove.type = 'button';
        remove.className = 'remove';
        remove.title = `Remove ${entry.file.name}`;
        remove.textContent = '×';
        remove.onclick = () => {
          if (entry.preview !== undefined) URL.revokeObjectURL(entry.preview);
          this.files.splice(index, 1);
          this.render();
        };
        element.append(remove);
        return element;
      }),
    );
  }
}
