import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseKeepAChangelog, type ChangelogVersion } from '#lib/changelog/keep-a-changelog.js';

export const CHANGELOG_FILE = 'CHANGELOG.md';

/**
 * The repository's CHANGELOG.md, found by walking up from this module: the sources sit three
 * directories below the root and the build (dist/…) four, so neither hard-codes the depth.
 */
export function findChangelog(from: string = dirname(fileURLToPath(import.meta.url))): string {
  let dir = from;
  for (let depth = 0; depth < 8; depth++) {
    const candidate = join(dir, CHANGELOG_FILE);
    if (existsSync(candidate)) return candidate;
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  throw new Error(`${CHANGELOG_FILE} not found above ${from}`);
}

let cached: { path: string; versions: ChangelogVersion[] } | undefined;

/** The release history, newest first, parsed once per process (the file ships with the code). */
export function loadChangelog(path: string = findChangelog()): ChangelogVersion[] {
  if (cached?.path === path) return cached.versions;
  const versions = parseKeepAChangelog(readFileSync(path, 'utf8'));
  cached = { path, versions };
  return versions;
}
