import { writeFileSync } from 'node:fs';
import { renderConfigurationDoc, renderErrorsDoc } from './render-docs.js';

writeFileSync(new URL('../docs/configuration.md', import.meta.url), renderConfigurationDoc());
writeFileSync(new URL('../docs/errors.md', import.meta.url), renderErrorsDoc());
process.stdout.write('wrote docs/configuration.md and docs/errors.md\n');
