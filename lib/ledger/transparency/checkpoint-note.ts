import { NoteFormatError } from './signed-note.js';

/**
 * C2SP tlog-checkpoint (https://c2sp.org/tlog-checkpoint): the note text `<origin>\n<tree
 * size>\n<base64 root hash>\n` followed by optional extension lines.
 */
export interface LogCheckpoint {
  origin: string;
  size: number;
  /** 32 bytes. */
  root: Buffer;
  extensions: string[];
}

export function formatCheckpoint(checkpoint: { origin: string; size: number; root: Uint8Array }): string {
  if (!Number.isSafeInteger(checkpoint.size) || checkpoint.size < 0)
    throw new RangeError('a tree size is a non-negative integer');
  if (checkpoint.root.length !== 32) throw new RangeError('a root hash is 32 bytes');
  return `${checkpoint.origin}\n${checkpoint.size}\n${Buffer.from(checkpoint.root).toString('base64')}\n`;
}

/** Reads a checkpoint's text (the note text, signatures already split off). */
export function parseCheckpoint(text: string): LogCheckpoint {
  const lines = text.split('\n');
  if (lines.pop() !== '' || lines.length < 3)
    throw new NoteFormatError('a checkpoint has an origin, size and root line');
  const [origin, sizeLine, rootLine, ...extensions] = lines as [string, string, string, ...string[]];
  if (origin === '') throw new NoteFormatError('the origin line is empty');
  if (!/^(0|[1-9][0-9]{0,15})$/.test(sizeLine) || !Number.isSafeInteger(Number(sizeLine)))
    throw new NoteFormatError('the size is a decimal without leading zeros');
  const root = Buffer.from(rootLine, 'base64');
  if (root.length !== 32 || root.toString('base64') !== rootLine)
    throw new NoteFormatError('the root is base64 of 32 bytes');
  if (extensions.some((line) => line === '')) throw new NoteFormatError('an extension line is empty');
  return { origin, size: Number(sizeLine), root, extensions };
}
