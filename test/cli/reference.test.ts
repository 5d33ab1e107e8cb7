import t from 'tap';
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { buildProgram } from '../../cli/src/program.js';

/**
 * The command reference (docs/cli.md) is checked against the commander definitions: every command
 * a person can type has a section whose heading names it, that section names every one of its
 * flags, and every command a heading names exists. README's command overview names only commands
 * that exist.
 */
interface Leaf {
  path: string;
  flags: string[];
}

function commandsOf(command: Command, prefix: string[] = []): Leaf[] {
  return command.commands.flatMap((sub) => {
    const path = [...prefix, sub.name()];
    const own = { path: path.join(' '), flags: sub.options.map((option) => option.long!).filter(Boolean) };
    const below = commandsOf(sub, path);
    // A group (`keys`, `clients`) is no command of its own; a command with subcommands and an action (`gateway`) is.
    const runnable = sub.commands.length === 0 || (sub as unknown as { _actionHandler: unknown })._actionHandler;
    return runnable ? [own, ...below] : below;
  });
}

/** The reference's sections: each heading's commands (`keyplane a b|c` names `a b` and `a c`) and its text. */
function sections(markdown: string): { commands: string[]; text: string }[] {
  const parts = markdown.split(/^### /m).slice(1);
  return parts.map((part) => {
    const [heading, ...rest] = part.split('\n');
    const commands = [...heading!.matchAll(/`keyplane ([^`]+)`/g)].flatMap((match) => {
      const words = match[1]!.split(' ');
      const last = words.pop()!;
      return last.split('|').map((alternative) => [...words, alternative].join(' '));
    });
    return { commands, text: rest.join('\n') };
  });
}

const leaves = commandsOf(buildProgram());
const reference = sections(readFileSync('docs/cli.md', 'utf8'));

t.test('every command has a section in docs/cli.md naming each of its flags', async (t) => {
  for (const leaf of leaves) {
    const section = reference.find((s) => s.commands.includes(leaf.path));
    if (!section) {
      t.fail(`keyplane ${leaf.path} has no section in docs/cli.md`);
      continue;
    }
    const missing = leaf.flags.filter((flag) => !new RegExp(`${flag}(?![a-z-])`).test(section.text));
    t.same(missing, [], `keyplane ${leaf.path}: flags the reference does not name`);
  }
});

t.test('every command docs/cli.md names exists', async (t) => {
  const known = new Set(leaves.map((leaf) => leaf.path));
  const named = reference.flatMap((s) => s.commands);
  t.ok(named.length > 30, `${named.length} commands named`);
  t.same(
    named.filter((command) => !known.has(command)),
    [],
    'commands in the reference that the CLI does not have',
  );
});

/** README's command table: each row's commands (`keyplane a b \\| c` names `a b` and `a c`) and the flags it shows. */
function readmeRows(): { cell: string; commands: string[]; flags: string[] }[] {
  const readme = readFileSync('README.md', 'utf8');
  const start = readme.indexOf('## Commands');
  const table = readme.slice(start, readme.indexOf('\n\n', readme.indexOf('| ---', start)));
  return [...table.matchAll(/^\| `keyplane (.+?)` +\|/gm)].map((match) => {
    const cell = match[1]!.replace(/\\\|/g, '|');
    const words = cell
      .split(' ')
      .filter((word) => !word.startsWith('-') && !word.startsWith('[') && /^[a-z|-]+$/.test(word));
    // `orgs teams list | create` names `orgs teams list` and `orgs teams create`: the words before the
    // first alternative are the prefix of every one.
    const [head, ...alternatives] = words
      .join(' ')
      .split('|')
      .map((part) => part.trim())
      .filter(Boolean);
    const prefix = head!.split(' ').slice(0, -1);
    const commands = [head!, ...alternatives.map((sub) => [...prefix, sub].join(' '))];
    return { cell, commands, flags: [...cell.matchAll(/--[a-z-]+/g)].map((m) => m[0]) };
  });
}

t.test("README's command table names every command, and only flags those commands take", async (t) => {
  const rows = readmeRows();
  const byPath = new Map(leaves.map((leaf) => [leaf.path, leaf]));
  for (const row of rows) {
    const flags = new Set(
      row.commands.flatMap((command) => {
        // A subcommand also takes the flags of the command it belongs to (`gateway explain --client-id`).
        const parent = byPath.get(command.split(' ')[0]!);
        return [...(byPath.get(command)?.flags ?? []), ...(parent?.flags ?? [])];
      }),
    );
    for (const command of row.commands) t.ok(byPath.has(command), `README: keyplane ${command} exists`);
    t.same(
      row.flags.filter((flag) => !flags.has(flag)),
      [],
      `README: flags of keyplane ${row.commands.join(' | ')} that it does not take`,
    );
  }
  const listed = new Set(rows.flatMap((row) => row.commands));
  t.same(
    leaves.map((leaf) => leaf.path).filter((path) => !listed.has(path)),
    [],
    "commands missing from README's table",
  );
});
