// Loaded by every test process (node-arg in .taprc): TypeScript through swc, see ./hooks.mjs.
import { register } from 'node:module';

register('./hooks.mjs', import.meta.url);
