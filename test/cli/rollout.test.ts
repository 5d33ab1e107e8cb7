import t from 'tap';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli, startCli, type CliResult } from '../helpers/cli.js';
import { runInProcess } from '../helpers/cli-in-process.js';
import { tempDir, TEST_MASTER_KEY } from '../helpers/build.js';
import { Transcript } from '../helpers/doc-transcript.js';
import { docCommand } from '../helpers/doc-examples.js';
import { chromiumSkip, launchChromium } from '../helpers/browser.js';

/**
 * The whole rollout of a gateway-protected app, as an operator runs it: a fresh `keyplane
 * control-plane`, a real `keyplane gateway` process pulling its signed config and publishing
 * evidence, and every step through `keyplane rollout`: in-process through the CLI's program, with
 * the missing token and one verify (progress on stderr) as real processes. Then `/rollout` in Chromium.
 */

// Some twenty CLI runs and two server processes on a shared 2-core machine.
t.setTimeout(400_000);

const ADMIN = 'rollout-admin-token-0123456789abcdef0123456789';

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

function profileYaml(gatewayUrl: string): string {
  return `contract: project-trust-profile/v1
project: shop
exposure: public
principals:
  humans: true
  agents: false
environments:
  - name: local
    redirect_uris: [${gatewayUrl}/_gate/callback]
    resources: []
data_class: confidential
required_assurance: passkey
`;
}

t.test(
  'a gateway-protected app rolls out from a fresh control plane to attest through the CLI',
  { timeout: 380_000 },
  async (t) => {
    const dir = tempDir(t);
    const env = { KEYPLANE_ADMIN_TOKEN: ADMIN };
    const controlPlane = await startCli(
      ['control-plane', '--port', '0', '--data', join(dir, 'cp')],
      { ...env, KEYPLANE_MASTER_KEY: TEST_MASTER_KEY },
      60_000,
    );
    t.teardown(() => controlPlane.stop('SIGKILL'));
    const cp = controlPlane.url;
    const upstream = createServer((_req, res) => res.end('hello from the shop'));
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    t.teardown(
      () =>
        new Promise<void>((resolve) => {
          upstream.closeAllConnections();
          upstream.close(() => resolve());
        }),
    );
    const gatewayPort = await freePort();
    const gatewayUrl = `http://localhost:${gatewayPort}`;
    const profileFile = join(dir, 'shop.yaml');
    writeFileSync(profileFile, profileYaml(gatewayUrl));
    // What docs/rollout.md shows: the default ports, file names without the temporary directory, secrets shortened.
    const transcript = new Transcript((text) =>
      text
        .replaceAll(`${dir}/`, '')
        .replace(/http:\/\/localhost:\d+/g, (url) =>
          url === cp ? 'http://localhost:4400' : url === gatewayUrl ? 'http://localhost:4480' : url,
        )
        .replace(/(\(shown once\): \S{8})\S+/g, '$1…'),
    );
    const rollout = async (step: string, args: string[], run = runInProcess): Promise<CliResult> => {
      const result = await run(['rollout', ...args, '--control-plane', cp], env);
      transcript.record(step, `keyplane rollout ${args.join(' ')} --control-plane ${cp}`, result);
      return result;
    };

    const usage = await runCli(['rollout', 'status', '--control-plane', cp], {});
    t.equal(usage.code, 2, 'no operator token: usage');
    t.match(usage.stderr, /KEYPLANE_ADMIN_TOKEN/);
    const unreachable = await runInProcess(['rollout', 'status', '--control-plane', 'http://127.0.0.1:9'], env);
    t.equal(unreachable.code, 2, 'network trouble: 2');

    const classified = await rollout('classify', ['classify', profileFile, '--out', join(dir, 'shop.jwt')]);
    t.equal(classified.code, 0, classified.stderr);
    t.match(classified.stdout, /^signed trust profile shop version 1 \(sha-256 [0-9a-f]{16}…\)/m);
    t.match(classified.stdout, /^next: keyplane rollout register --project shop/m);
    const again = await rollout('classify-again', ['classify', profileFile]);
    t.match(again.stdout, /^unchanged: trust profile shop version 1/m, 'classify is idempotent');

    const tampered = join(dir, 'tampered.jwt');
    const [h, p] = (await import('node:fs')).readFileSync(join(dir, 'shop.jwt'), 'utf8').trim().split('.');
    writeFileSync(tampered, `${h}.${p}.${Buffer.alloc(64, 1).toString('base64url')}`);
    const resigned = await rollout('register-tampered', ['register', '--project', 'shop', '--profile', tampered]);
    t.equal(resigned.code, 1, 'a profile not signed here is refused');
    t.match(resigned.stderr, /profile_signature_invalid/);

    const earlyAttest = await rollout('attest-unregistered', ['attest', '--project', 'shop']);
    t.equal(earlyAttest.code, 1);
    t.match(earlyAttest.stderr, /project_not_registered/);

    const registered = await rollout('register', ['register', '--project', 'shop', '--profile', join(dir, 'shop.jwt')]);
    t.equal(registered.code, 0, registered.stderr);
    const client = {
      client_id: /^registered client (cl_\S+) for shop/m.exec(registered.stdout)?.[1],
      client_secret: /^ {2}client secret \(shown once\): (\S+)$/m.exec(registered.stdout)?.[1],
    };
    t.ok(client.client_id && client.client_secret, 'the client and its secret are printed once');
    t.match(registered.stdout, /^next: start the gateway \(.*keyplane gateway --client-id/m);
    const registeredAgain = await rollout('register-again', ['register', '--project', 'shop']);
    t.match(registeredAgain.stdout, /^unchanged: shop is registered already as client/m);
    t.notMatch(registeredAgain.stdout, /secret \(shown once\)/);

    const beforeVerify = await rollout('attest-unverified', ['attest', '--project', 'shop']);
    t.equal(beforeVerify.code, 1, 'attest before verify is refused');
    t.match(beforeVerify.stderr, /verification_required/);
    const noGateway = await rollout('verify-no-gateway', ['verify', '--project', 'shop', '--wait', '1']);
    t.equal(noGateway.code, 1, 'verify fails while no gateway reports');
    t.match(noGateway.stdout, /FAIL evidence: no gateway has reported evidence yet/);
    t.match(noGateway.stdout, /ok {3}pkce: an authorization request without S256 PKCE is refused/);

    // The gateway as the guide starts it.
    const gatewayCommand = docCommand(
      'docs/rollout.md',
      "keyplane gateway --port 4480 --client-id <the client id> --control-plane http://localhost:4400 --upstream http://127.0.0.1:<the app's port>",
      {
        '4480': String(gatewayPort),
        '<the secret>': client.client_secret!,
        '<the client id>': client.client_id!,
        'http://localhost:4400': cp,
        "<the app's port>": String((upstream.address() as AddressInfo).port),
      },
    );
    const gateway = await startCli(
      gatewayCommand.args,
      { ...gatewayCommand.env, KEYPLANE_DATA_DIR: join(dir, 'gw') },
      60_000,
    );
    t.teardown(() => gateway.stop('SIGKILL'));
    t.equal(gateway.url, gatewayUrl);

    const verified = await rollout('verify', ['verify', '--project', 'shop'], runCli);
    t.equal(verified.code, 0, `${verified.stdout}\n${verified.stderr}`);
    t.match(verified.stdout, /^verified shop/m);
    for (const check of ['discovery', `redirect_uri:${gatewayUrl}/_gate/callback`, 'pkce', 'registration', 'evidence'])
      t.match(verified.stdout, new RegExp(`^  ok   ${check.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}:`, 'm'));
    t.match(verified.stderr, /checking discovery/, 'progress goes to stderr');

    const tooMuch = await rollout('canary-out-of-range', ['canary', '--project', 'shop', '--percent', '150']);
    t.equal(tooMuch.code, 2, 'canary 150 is a usage error');
    t.match(tooMuch.stderr, /--percent must be an integer from 0 to 100/);

    const canary = await rollout('canary', ['canary', '--project', 'shop', '--percent', '10']);
    t.equal(canary.code, 0, canary.stderr);
    t.match(canary.stdout, /^gateway policy of shop: canary 10 % \(registration revision 2\)/m);
    t.match(canary.stdout, /status unverified \(canary\)/, 'the gateway reported the canary config');
    const stale = await rollout('canary-stale', ['canary', '--project', 'shop', '--percent', '20', '--revision', '1']);
    t.equal(stale.code, 1, 'a stale revision is reported');
    t.match(stale.stderr, /stale_revision/);
    const repeat = await rollout('canary-again', ['canary', '--project', 'shop', '--percent', '10']);
    t.match(repeat.stdout, /^unchanged: shop is at canary 10 % already/m);

    const attested = await rollout('attest', ['attest', '--project', 'shop']);
    t.equal(attested.code, 0, attested.stderr);
    t.match(attested.stdout, /^attested shop: the gateway policy is now enforce/m);
    t.match(attested.stdout, /status: enforced \(enforcing_declared_config\)/);
    const attestedAgain = await rollout('attest-again', ['attest', '--project', 'shop']);
    t.match(attestedAgain.stdout, /^unchanged: shop is attested already/m);

    const status = await rollout('status', ['status']);
    t.equal(status.code, 0);
    t.match(status.stdout, /^PROJECT\s+STAGE\s+PROFILE\s+POLICY \(declared\)\s+EVIDENCE \(observed\)\s+STATUS/m);
    t.match(status.stdout, /^shop\s+attested\s+v1 passkey\s+enforce\s+1\/1 fresh, \d+ s\s+enforced/m);

    // The gateway now enforces the profile's floor: an anonymous browser is sent to sign in.
    const protectedPage = await fetch(`${gatewayUrl}/`, { redirect: 'manual', headers: { accept: 'text/html' } });
    t.equal(protectedPage.status, 302);

    transcript.checkGuide(t, 'docs/rollout.md', (text) =>
      text
        .replace(/\b[0-9a-f]{16}…/g, '<hash>')
        .replace(/\bcl_[\w-]+/g, '<client>')
        .replace(/\(shown once\): \S+/g, '(shown once): <secret>')
        .replace(/\b\d+ s\b/g, '<n> s')
        .replace(/^(waiting for .*)(\n\1)+$/gm, '$1'),
    );

    t.test(
      '/rollout shows the table in Chromium, colour only on the enforced status',
      { skip: chromiumSkip(t, 'rollout page') },
      async (t) => {
        const session = await launchChromium(t);
        await session.context.setExtraHTTPHeaders({ authorization: `Bearer ${ADMIN}` });
        const response = await session.page.goto(`${cp}/rollout`);
        t.equal(response?.status(), 200);
        const row = session.page.locator('tr[data-project="shop"]');
        await row.waitFor({ timeout: 20_000 });
        t.equal(await session.page.locator('table[data-rollout] caption').textContent(), 'Projects (1)');
        t.match(await row.locator('th[scope="row"]').textContent(), /shop/);
        const cell = row.locator('td[data-status]');
        t.equal(await cell.getAttribute('data-status'), 'enforced');
        const colour = await cell.evaluate((element) => (globalThis as any).getComputedStyle(element).color);
        const plain = await row
          .locator('td')
          .first()
          .evaluate((element) => (globalThis as any).getComputedStyle(element).color);
        t.not(colour, plain, 'the verified state is coloured');
        t.same(await session.page.locator('th[scope="col"]').allTextContents(), [
          'Project',
          'Stage',
          'Declared: profile',
          'Declared: policy',
          'Observed: evidence',
          'Observed: config',
          'Status',
        ]);
        t.same(session.problems, [], 'no CSP violation or page error');
      },
    );
  },
);
