import t from 'tap';
import { auditEveryPage } from '../../helpers/a11y-walk.js';
import { chromiumSkip } from '../../helpers/browser.js';

/**
 * Every page, audited by axe-core in English (test/helpers/a11y-walk.ts). Every page is
 * audited in English and in Arabic, one file each so that the two walks run in parallel.
 */

const skip = chromiumSkip(t, 'accessibility (axe-core) suite');
// One walk through about fifty pages: more than the suite's default 120 s on a loaded machine.
t.setTimeout(300_000);

t.test('every page has no serious or critical WCAG 2.2 A/AA violation (axe-core)', { skip, timeout: 300_000 }, (t) =>
  auditEveryPage(t, ['en']),
);
