import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, normalize, sep } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { fail } from '#lib/errors/keyplane-error.js';
import { FAVICON_SVG } from '#lib/html/favicon.js';
import { ACCOUNT_JS } from '../../pages/scripts/account.js';
import { AGENTS_JS } from '../../pages/scripts/agents.js';
import { AUTH_JS } from '../../pages/scripts/auth.js';
import { PAGE_HELPERS_JS } from '../../pages/scripts/page-helpers.js';
import { COPY_JS } from '../../pages/scripts/copy.js';
import { STEP_UP_JS } from '../../pages/scripts/step-up.js';
import { CONSOLE_JS } from '../../pages/scripts/console.js';
import { ENROL_JS } from '../../pages/scripts/enrol.js';
import { FEDERATION_LINK_JS } from '../../pages/scripts/federation-link.js';

const JS = 'text/javascript; charset=utf-8';

/** The ESM build of @simplewebauthn/browser, straight from node_modules (no build step). */
function simpleWebAuthnEsmDir(): string {
  const main = createRequire(import.meta.url).resolve('@simplewebauthn/browser'); // <pkg>/script/index.js
  return join(dirname(dirname(main)), 'esm');
}

/** Module scripts of the account pages, loaded with the page's CSP nonce. */
export default async function assetRoutes(app: FastifyInstance): Promise<void> {
  const scripts: Record<string, string> = {
    '/assets/common.js': PAGE_HELPERS_JS,
    '/assets/auth.js': AUTH_JS,
    '/assets/account.js': ACCOUNT_JS,
    '/assets/agents.js': AGENTS_JS,
    '/assets/step-up.js': STEP_UP_JS,
    '/assets/console.js': CONSOLE_JS,
    '/assets/copy.js': COPY_JS,
    '/assets/enrol.js': ENROL_JS,
    '/assets/federation-link.js': FEDERATION_LINK_JS,
  };
  for (const [path, source] of Object.entries(scripts)) {
    app.get(
      path,
      {
        config: { cache: 'no-cache' },
        schema: { tags: ['pages'], summary: 'Page script (ES module)', produces: ['text/javascript'] },
      },
      async (_request, reply) => {
        reply.type(JS);
        return source;
      },
    );
  }

  // Pages link /favicon.svg; browsers still ask for /favicon.ico on their own (JSON pages, older ones).
  for (const path of ['/favicon.svg', '/favicon.ico']) {
    app.get(
      path,
      {
        config: { cache: 'public, max-age=86400' },
        schema: { tags: ['pages'], summary: 'The Keyplane icon (SVG)', produces: ['image/svg+xml'] },
      },
      async (_request, reply) => {
        reply.type('image/svg+xml');
        return FAVICON_SVG;
      },
    );
  }

  const root = simpleWebAuthnEsmDir();
  const cache = new Map<string, string>();
  app.get(
    '/assets/simplewebauthn/*',
    {
      config: { cache: 'public, max-age=86400' },
      schema: {
        tags: ['pages'],
        summary: '@simplewebauthn/browser (ESM build, served from the package)',
        produces: ['text/javascript'],
      },
    },
    async (request, reply) => {
      const rest = (request.params as { '*': string })['*'];
      if (!/^[A-Za-z0-9_/-]+\.js$/.test(rest) || rest.includes('..')) throw fail('not_found', 'no such asset');
      const file = normalize(join(root, rest));
      if (!file.startsWith(root + sep)) throw fail('not_found', 'no such asset');
      let source = cache.get(file);
      if (source === undefined) {
        try {
          source = await readFile(file, 'utf8');
        } catch {
          throw fail('not_found', 'no such asset');
        }
        cache.set(file, source);
      }
      reply.type(JS);
      return source;
    },
  );
}
