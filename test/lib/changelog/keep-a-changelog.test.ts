import t from 'tap';
import { readFileSync } from 'node:fs';
import { ChangelogFormatError, parseKeepAChangelog } from '#lib/changelog/keep-a-changelog.js';
import { findChangelog } from '../../../control-plane/src/changelog/changelog.js';

t.test('parses versions, dates, sections and wrapped bullets', async (t) => {
  const versions = parseKeepAChangelog(`# Changelog

Some preamble with - a dash.

## [Unreleased]
### Added
- New thing
  that wraps.

## [1.1.0] - 2026-02-03
Prose under a version is not a change.
### Fixed
* A fix with \`code\`.
+ Another
### Security
- Patched
continued without indent

## 1.0.0 - 2026-01-01
- Untyped bullet

[Unreleased]: https://example.com/compare/v1.1.0...HEAD
[1.1.0]: https://example.com/compare/v1.0.0...v1.1.0
`);
  t.same(versions, [
    { version: 'Unreleased', date: null, changes: [{ type: 'added', text: 'New thing that wraps.' }] },
    {
      version: '1.1.0',
      date: '2026-02-03',
      changes: [
        { type: 'fixed', text: 'A fix with `code`.' },
        { type: 'fixed', text: 'Another' },
        { type: 'security', text: 'Patched continued without indent' },
      ],
    },
    { version: '1.0.0', date: '2026-01-01', changes: [{ type: 'changed', text: 'Untyped bullet' }] },
  ]);
  t.same(parseKeepAChangelog('\uFEFF## [2.0.0] - 2026-03-04\r\n### Removed\r\n- Old\r\n'), [
    { version: '2.0.0', date: '2026-03-04', changes: [{ type: 'removed', text: 'Old' }] },
  ]);
});

t.test('refuses what is not Keep a Changelog, naming the line', async (t) => {
  const cases: Array<[string, RegExp]> = [
    ['## [1.0.0]\n- x', /line 1: version 1\.0\.0 has no date/],
    ['## [1.0.0] - 2026-13-45\n', /line 1: 2026-13-45 is not a date/],
    ['## [1.0.0] - 2026-01-01\n## [1.0.0] - 2026-01-02\n', /line 2: version 1\.0\.0 appears twice/],
    ['- orphan\n', /line 1: a change before the first version heading/],
    ['## Notes on things\n', /line 1: "## Notes on things" is not a version heading/],
  ];
  for (const [text, message] of cases)
    t.throws(() => parseKeepAChangelog(text), { name: 'ChangelogFormatError', message });
  t.ok(new ChangelogFormatError('x', 3) instanceof Error);
});

t.test('the repository CHANGELOG.md parses and is found from the sources and from dist/', async (t) => {
  const path = findChangelog();
  const versions = parseKeepAChangelog(readFileSync(path, 'utf8'));
  t.ok(versions.length >= 2);
  t.equal(
    findChangelog(new URL('../../../dist/control-plane/src/changelog', import.meta.url).pathname),
    path,
    'found from the build directory',
  );
  t.throws(() => findChangelog('/'), /CHANGELOG\.md not found/);
});
