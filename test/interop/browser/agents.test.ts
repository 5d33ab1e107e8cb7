import t from 'tap';
import { Writable } from 'node:stream';
import { loadControlPlaneConfig } from '../../../config/load.js';
import { startControlPlane, type RunningControlPlane } from '../../../control-plane/src/server.js';
import { agentKey } from '../../helpers/agents.js';
import { chromiumSkip, launchChromium } from '../../helpers/browser.js';
import { tempDir, TEST_MASTER_KEY } from '../../helpers/build.js';

/** The owner approves an agent enrollment on /account/agents in Debian's Chromium, signed up with a CDP virtual authenticator. */
interface DomNode {
  textContent: string | null;
}
declare const document: { getElementById(id: string): DomNode | null };

const skip = chromiumSkip(t, 'browser agent approval suite');

t.test(
  'the owner types the owner code on /account/agents and the enrollment is approved',
  { skip, timeout: 120_000 },
  async (t) => {
    const config = loadControlPlaneConfig({
      env: {},
      overrides: { dataDir: tempDir(t), host: '127.0.0.1', port: 0, masterKey: TEST_MASTER_KEY, logLevel: 'warn' },
    });
    const server: RunningControlPlane = await startControlPlane(config, {
      logStream: new Writable({
        write(_c, _e, done) {
          done();
        },
      }),
    });
    t.teardown(() => server.close());
    const { page, problems, addAuthenticator } = await launchChromium(t);
    await addAuthenticator();
    await page.goto(`${server.url}/auth`);
    await page.fill('input[name="username"]', 'ada');
    await page.click('button[data-action="signup"]');
    await page.waitForURL(`${server.url}/account`, { timeout: 20_000 });

    const key = await agentKey();
    const begun = (await (
      await fetch(`${server.url}/auth/agents/proof/enroll/begin`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'Night bot', subjectKind: 'automation', publicJwk: key.jwk }),
      })
    ).json()) as { enrollment_id: string; owner_code: string };
    await page.goto(`${server.url}/account/agents?enrollment=${begun.enrollment_id}`);
    await page.fill('input[name="owner_code"]', begun.owner_code.toLowerCase());
    await page.click('button[data-action="approve"]');
    await page
      .waitForFunction(() => /approved/i.test(document.getElementById('status')?.textContent ?? ''), undefined, {
        timeout: 10_000,
      })
      .catch((e) => {
        throw new Error(`not approved: ${problems.join('; ')}; ${e}`);
      });
    const status = (await (
      await fetch(`${server.url}/auth/agents/proof/enroll/status`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ enrollment_id: begun.enrollment_id }),
      })
    ).json()) as { status: string };
    t.equal(status.status, 'approved');
    t.same(problems, []);
  },
);
