import t from 'tap';
import { readFileSync } from 'node:fs';
import { renderConfigurationDoc, renderErrorsDoc } from '#config/render-docs.js';

t.test('docs/configuration.md lists every key with its default, as the schema says', async (t) => {
  t.equal(
    readFileSync('docs/configuration.md', 'utf8'),
    renderConfigurationDoc(),
    'run `npm run docs` after changing config/schema.ts',
  );
});

t.test('docs/errors.md lists every reason with its status', async (t) => {
  t.equal(
    readFileSync('docs/errors.md', 'utf8'),
    renderErrorsDoc(),
    'run `npm run docs` after changing lib/errors/reasons.ts',
  );
});
