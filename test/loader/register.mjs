// Loaded by every test process (node-arg in .taprc): TypeScript through swc, see ./hooks.mjs.
import { register } from 'node:module';

register('./hooks.mjs', import.meta.url);

// The tier runner (test/tiers/run.mjs) names the tier; the unit tier refuses processes and sockets.
if (process.env['KEYPLANE_TEST_TIER'] === 'unit') await import('../tiers/unit-guard.mjs');
