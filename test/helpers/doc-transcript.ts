import { readFileSync, writeFileSync } from 'node:fs';
import type { Test } from 'tap';
import type { CliResult } from './cli.js';

/**
 * A guide's terminal blocks generated from a test run, so they cannot drift from what the commands
 * print. The test records each command it runs under a step name; the guide marks the block that
 * shows that step with `<!-- transcript: NAME -->` right before a console block. With
 * `KEYPLANE_WRITE_DOCS=1` the test writes the blocks; otherwise it fails where the guide and the
 * run differ (after masking what differs from run to run: hashes, ids, ages).
 */
export class Transcript {
  private readonly steps: Array<{ name: string; text: string }> = [];

  /** `display` turns run-specific text (temporary paths, free ports, secrets) into what the guide shows. */
  constructor(private readonly display: (text: string) => string) {}

  /** Command, its output (stdout, then stderr when it failed: the reason is there) and exit code. */
  record(name: string, command: string, result: CliResult): void {
    const output = [result.stdout.trimEnd(), result.code === 0 ? '' : result.stderr.trimEnd()].filter(Boolean);
    this.steps.push({ name, text: this.display([`$ ${command}`, ...output, `(exit ${result.code})`].join('\n')) });
  }

  /** Writes (KEYPLANE_WRITE_DOCS=1) or checks the guide's marked blocks, in the order they were run. */
  checkGuide(t: Test, file: string, mask: (text: string) => string): void {
    const guide = readFileSync(file, 'utf8');
    const marked = /<!-- transcript: (\S+) -->\n\n```console\n([\s\S]*?)\n```/g;
    const blocks = [...guide.matchAll(marked)].map((m) => ({ name: m[1]!, text: m[2]! }));
    t.same(
      blocks.map((block) => block.name),
      this.steps.map((step) => step.name),
      `${file} shows every step, in the order they ran`,
    );
    const byName = new Map(this.steps.map((step) => [step.name, step.text]));
    if (process.env['KEYPLANE_WRITE_DOCS'] === '1') {
      writeFileSync(
        file,
        guide.replace(marked, (block, name: string) =>
          byName.has(name) ? `<!-- transcript: ${name} -->\n\n\`\`\`console\n${byName.get(name)}\n\`\`\`` : block,
        ),
      );
      t.pass(`wrote ${file}`);
      return;
    }
    for (const block of blocks)
      t.equal(
        mask(block.text),
        mask(byName.get(block.name) ?? ''),
        `${file}: the "${block.name}" block is the real output`,
      );
  }
}
