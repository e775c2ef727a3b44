/**
 * The directory the built-in tools may touch, and the check that keeps them in it: a path is resolved against the
 * directory, then its real location (symlinks followed, for a new file its nearest existing parent) must still be
 * inside. `..`, absolute paths and symlinks pointing out are refused with a message the model can act on.
 * @module
 */
import { realpathSync } from 'node:fs';
import { realpath } from 'node:fs/promises';
import { dirname, isAbsolute, relative, resolve, sep } from 'node:path';

/** A directory the tools are confined to. */
export class Workspace {
  /** The directory's real path (symlinks resolved). */
  readonly root: string;

  constructor(dir: string) {
    this.root = realpathSync(dir);
  }

  /**
   * The real absolute path of `path` (relative to the root, or absolute), checked to be inside the root. Throws an
   * `Error` saying the path is outside the working directory when it, or what a symlink on its way points to, is not.
   * A path that does not exist is resolved through its nearest existing parent (so `write_file` can create it).
   */
  async resolve(path: string): Promise<string> {
    const lexical = resolve(this.root, path);
    if (!this.contains(lexical)) throw outside(path, this.root);
    const real = await realpathOfNearest(lexical);
    if (!this.contains(real)) throw outside(path, this.root, real);
    return real;
  }

  /** `absolute` relative to the root, `.` for the root itself (for display). */
  display(absolute: string): string {
    return relative(this.root, absolute) || '.';
  }

  private contains(absolute: string): boolean {
    const rel = relative(this.root, absolute);
    return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
  }
}

async function realpathOfNearest(path: string): Promise<string> {
  try {
    return await realpath(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    const parent = dirname(path);
    if (parent === path) return path;
    return resolve(await realpathOfNearest(parent), relative(parent, path));
  }
}

function outside(path: string, root: string, real?: string): Error {
  const via = real === undefined ? '' : ` (it leads to ${real})`;
  return new Error(
    `${JSON.stringify(path)} is outside the working directory ${root}${via}: only paths inside it can be used`,
  );
}
