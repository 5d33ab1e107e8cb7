import { chmodSync, linkSync, lstatSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { CliError, EXIT } from './exit.js';

/**
 * Refuses an output path that exists in any form, a symbolic link (dangling or not) included:
 * a file holding every secret hash and sealed key is never written through a link or over a file.
 */
export function assertNewPath(path: string): void {
  let kind: 'link' | 'other' | null = null;
  try {
    kind = lstatSync(path).isSymbolicLink() ? 'link' : 'other';
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  if (kind === 'link')
    throw new CliError(`${path} is a symbolic link; choose a new file (links are never followed)`, EXIT.usage);
  if (kind === 'other') throw new CliError(`${path} exists; choose a new file (nothing is overwritten)`, EXIT.usage);
}

/**
 * Writes `path` privately: `write` fills a file in a new directory of mode 0700 beside it, which
 * is made 0600 and then hard-linked to `path`. link(2) fails on any existing name, a dangling link
 * too, so the file can never land elsewhere or replace one. A missing parent directory is created
 * (mode 0700); the answer says whether it was.
 */
export async function writePrivateFile(
  path: string,
  write: (temporary: string) => Promise<void>,
): Promise<{ createdDir: string | null }> {
  assertNewPath(path);
  const parent = dirname(path);
  const createdDir = mkdirSync(parent, { recursive: true, mode: 0o700 }) ?? null;
  const staging = mkdtempSync(join(parent, '.keyplane-'));
  try {
    const temporary = join(staging, 'file');
    await write(temporary);
    chmodSync(temporary, 0o600);
    try {
      linkSync(temporary, path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') assertNewPath(path);
      throw error;
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  return { createdDir };
}
