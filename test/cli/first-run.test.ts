import t from 'tap';
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { childEnv } from '../helpers/cli.js';
import { codeBlocksUnder } from '../helpers/doc-blocks.js';

/**
 * The README's first run: `npm ci` builds once, and nothing the README or a guide tells a person
 * to type builds again. `npx keyplane` would (npm links no package's own bin, so npx installs and
 * builds the checkout anew), so the commands are `npm start` and `npm run keyplane -- …`.
 */
const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as {
  bin: Record<string, string>;
  scripts: Record<string, string>;
};

t.test("the README's start commands run the build npm ci made", async (t) => {
  const [start] = codeBlocksUnder('README.md', 'Start');
  t.equal(start!.text, 'npm ci\nnpm start\n');
  t.ok(pkg.scripts['prepare']!.startsWith('tsc -p tsconfig.build.json'), 'npm ci builds dist/ (prepare)');
  t.equal(pkg.scripts['start'], `node ${pkg.bin['keyplane']} up`, 'npm start runs the build, building nothing');
  t.equal(pkg.scripts['keyplane'], `node ${pkg.bin['keyplane']}`, 'npm run keyplane -- runs the build');
  const readme = readFileSync('README.md', 'utf8');
  t.match(readme, 'npm run keyplane -- <command>');
  t.match(readme, /--foreground-scripts/, 'says how to watch the first install');
  t.notMatch(readme, /FIRST_INSTALL_/, 'the measured durations are filled in');
});

t.test('no page tells a person to run npx keyplane', async (t) => {
  const pages = [
    'README.md',
    'deploy/README.md',
    'sdk/README.md',
    ...readdirSync('docs')
      .filter((name) => name.endsWith('.md'))
      .map((name) => join('docs', name)),
  ];
  for (const page of pages) {
    const text = readFileSync(page, 'utf8');
    t.notMatch(text, /^\s*(\$ )?npx keyplane/m, `${page}: no command line starts with npx keyplane`);
    t.notMatch(text, /(run it as|works)[^.]*`npx keyplane|`npx keyplane[^`]*` works/, `${page}: no prose offers it`);
  }
});

t.test(
  'npm run keyplane -- answers from dist/ without a build',
  { skip: existsSync(pkg.bin['keyplane']!) ? false : 'no dist/ yet (npm test builds it first)' },
  async (t) => {
    const run = await promisify(execFile)('npm', ['run', '--silent', 'keyplane', '--', '--help'], {
      env: childEnv(),
    });
    t.match(run.stdout, /^Usage: keyplane /m);
    t.notMatch(run.stdout + run.stderr, /tsc|prepare/, 'nothing was built');
  },
);
