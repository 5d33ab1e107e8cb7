import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';

// A part written by hand where a well-kept library could stand keeps a section in
// docs/architecture.md#hand-written-on-purpose with its measurement, and its own tests.
const PARTS: Array<{ module: string; tests: string[] }> = [
  { module: 'control-plane/src/storage/sql.ts', tests: ['test/control-plane/storage/sql.test.ts'] },
  { module: 'lib/runtime/log-destination.ts', tests: ['test/lib/runtime/log-destination.test.ts'] },
  { module: 'lib/metrics/route-metrics.ts', tests: ['test/lib/metrics/route-metrics.test.ts'] },
  { module: 'test/tiers/', tests: ['test/tiers/tiers.test.ts'] },
  { module: 'test/loader/', tests: ['test/loader/hooks.test.ts'] },
];

t.test('each hand-written part has its section, a measurement and its tests', async (t) => {
  const doc = readFileSync('docs/architecture.md', 'utf8');
  const start = doc.indexOf('\n## Hand-written, on purpose\n');
  t.ok(start >= 0, 'the section exists');
  const section = doc.slice(start, doc.indexOf('\n## ', start + 1));
  for (const part of PARTS) {
    const entry = section.split('\n- ').find((item) => item.includes(part.module.replace(/^control-plane\/src\//, '')));
    t.ok(entry, `${part.module} has an entry`);
    t.match(entry ?? '', /\d+(\.\d+)? (µs|s|statements|exchanges)/, `${part.module}'s entry gives its measurement`);
    for (const test of part.tests) {
      t.ok(existsSync(test), `${test} exists`);
      t.ok(entry?.includes(test), `${part.module}'s entry names ${test}`);
    }
  }
});
