import { readFileSync } from 'node:fs';

export interface CodeBlock {
  lang: string;
  text: string;
}

const ROOT = new URL('../../', import.meta.url);

/**
 * The fenced code blocks of a Markdown file under one heading (up to the next heading of the same
 * or a higher level), in order: what a reader of that section copies, so a test can run exactly it.
 */
export function codeBlocksUnder(file: string, heading: string): CodeBlock[] {
  const lines = readFileSync(new URL(file, ROOT), 'utf8').split('\n');
  const start = lines.findIndex((line) => /^#+ /.test(line) && line.replace(/^#+ /, '') === heading);
  if (start < 0) throw new Error(`${file} has no heading "${heading}"`);
  const level = /^#+/.exec(lines[start]!)![0].length;
  const blocks: CodeBlock[] = [];
  let open: CodeBlock | undefined;
  for (const line of lines.slice(start + 1)) {
    if (open) {
      if (line.startsWith('```')) {
        blocks.push(open);
        open = undefined;
      } else open.text += `${line}\n`;
      continue;
    }
    const heading = /^(#+) /.exec(line);
    if (heading && heading[1]!.length <= level) break;
    if (line.startsWith('```')) open = { lang: line.slice(3).trim(), text: '' };
  }
  return blocks;
}
