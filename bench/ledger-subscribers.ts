/**
 * bench:ledger, the subscribers' share: the cost per receipt with the ledger's followers idle (no
 * webhook, no Shared Signals stream: "before") and busy (an operator webhook taking every receipt
 * and a push stream whose receiver holds a grant to the receipts' account, so each receipt queues
 * one delivery row and one signed SET beside it: "after"), in alternating rounds of one run, on
 * SQLite and PostgreSQL. The followers are the ones control-plane/src/services.ts attaches.
 */
import { randomBytes, type webcrypto } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateKeyPair } from 'jose';
import pg from 'pg';
import { validateClientMetadata } from '#lib/oauth/client-metadata.js';
import { SSF_EVENTS } from '#lib/ssf/security-event.js';
import type { ControlPlaneServices } from '../control-plane/src/context.js';
import { Ledger } from '../control-plane/src/ledger/ledger.js';
import { SsfTargets, ssfFollower } from '../control-plane/src/ssf/outbox.js';
import { openPostgresStorage } from '../control-plane/src/storage/postgres/index.js';
import { openSqliteStorage } from '../control-plane/src/storage/sqlite/index.js';
import type { Storage, StoredSsfStream, StoredWebhook } from '../control-plane/src/storage/interface.js';
import { WebhookTargets, webhookFollower } from '../control-plane/src/webhooks/outbox.js';

const log = (line: string) => process.stderr.write(`${line}\n`);
const CONCURRENCY = Number(process.env['LEDGER_CONCURRENCY'] ?? 32);
/** Rounds of each kind, alternating (off, on, off, on, …), and receipts per round. */
const ROUNDS = Number(process.env['LEDGER_SUBSCRIBER_ROUNDS'] ?? 3);
const PER_ROUND = Number(process.env['LEDGER_SUBSCRIBER_RECEIPTS'] ?? 4000);

const ACCOUNT = 'usr_bench_subject';
const RECEIVER = 'cl_bench_receiver';
const ISSUER = 'https://id.bench.example';

function sessionRevoked() {
  return {
    type: 'session.revoked' as const,
    at: Date.now(),
    outcome: 'success' as const,
    actor: { type: 'system' as const },
    identityId: ACCOUNT,
    sessionId: `ses_${randomBytes(16).toString('base64url')}`,
    by: 'system',
  };
}

/** The account, the receiver's client with a live grant to it, the stream with the account as subject, the webhook. */
async function subscribers(storage: Storage): Promise<{ webhook: StoredWebhook; stream: StoredSsfStream }> {
  const now = Date.now();
  await storage.identities.create({
    identityId: ACCOUNT,
    username: 'bench-subject',
    displayName: '',
    preferences: {},
    founder: false,
    createdAt: now,
    updatedAt: now,
  });
  await storage.clients.insert({
    clientId: RECEIVER,
    type: 'confidential',
    metadata: validateClientMetadata({ redirect_uris: ['https://rx.bench.example/cb'] }),
    secretHash: 'a'.repeat(64),
    secretIssuedAt: now,
    ownerId: null,
    registrationTokenHash: 'b'.repeat(64),
    revision: 1,
    createdAt: now,
    updatedAt: now,
  });
  await storage.oidc.insertGrant({
    grantId: 'gr_bench',
    clientId: RECEIVER,
    identityId: ACCOUNT,
    sessionId: 'ses_bench',
    scope: 'openid',
    resource: null,
    assurance: 'passkey',
    amr: ['pop'],
    authTime: now,
    createdAt: now,
    expiresAt: now + 86_400_000,
    revokedAt: null,
    offline: false,
  });
  const stream: StoredSsfStream = {
    streamId: 'sst_bench',
    clientId: RECEIVER,
    delivery: 'push',
    endpointUrl: 'https://rx.bench.example/events',
    authorizationSealed: null,
    eventsRequested: [SSF_EVENTS.sessionRevoked],
    description: null,
    status: 'disabled',
    statusReason: null,
    createdAt: now,
    updatedAt: now,
  };
  await storage.ssf.insertStream(stream);
  await storage.ssf.addSubject(stream.streamId, ACCOUNT, now);
  const webhook: StoredWebhook = {
    webhookId: 'wh_bench',
    orgId: null,
    url: 'https://hooks.bench.example/in',
    events: ['*'],
    description: null,
    secretSealed: randomBytes(48),
    previousSecretSealed: null,
    previousSecretUntil: null,
    state: 'disabled',
    failingSince: null,
    createdAt: now,
    updatedAt: now,
  };
  await storage.webhooks.insert(webhook);
  return { webhook, stream };
}

interface Round {
  on: boolean;
  rate: number;
  cpuUsPerReceipt: number;
}

/** Alternating rounds on one store and one ledger: the followers attached throughout, as in the control plane. */
async function alternate(storage: Storage, backend: string): Promise<Round[]> {
  const { privateKey } = (await generateKeyPair('ES256')) as unknown as { privateKey: webcrypto.CryptoKey };
  const key = { kid: 'bench', alg: 'ES256' as const, privateKey };
  const ledger = new Ledger({
    storage,
    signingKey: () => key,
    now: Date.now,
    sealIntervalMs: 1000,
    sealMaxReceipts: 10_000,
  });
  const config = { issuer: ISSUER } as ControlPlaneServices['config'];
  const webhookTargets = new WebhookTargets(storage);
  const ssfTargets = new SsfTargets(storage);
  ledger.follow(webhookFollower({ config, now: Date.now }, webhookTargets, () => undefined));
  ledger.follow(ssfFollower({ config, now: Date.now }, ssfTargets, () => undefined));
  const { webhook, stream } = await subscribers(storage);
  const rounds: Round[] = [];
  try {
    await ledger.start();
    for (let i = 0; i < 2 * ROUNDS; i++) {
      const on = i % 2 === 1;
      await storage.webhooks.update({ ...webhook, state: on ? 'active' : 'disabled' });
      await storage.ssf.updateStream({ ...stream, status: on ? 'enabled' : 'disabled' });
      await webhookTargets.refresh();
      await ssfTargets.refresh();
      const queuedBefore = await queued(storage);
      let next = 0;
      const caller = async () => {
        while (next < PER_ROUND) {
          next++;
          await storage.transaction((tx) => ledger.record(tx, sessionRevoked()));
          if (next % 50 === 49) await new Promise((resolve) => setImmediate(resolve));
        }
      };
      const start = process.hrtime.bigint();
      const cpuStart = process.cpuUsage();
      await Promise.all(Array.from({ length: CONCURRENCY }, caller));
      await ledger.sealNow();
      const seconds = Number(process.hrtime.bigint() - start) / 1e9;
      const cpu = process.cpuUsage(cpuStart);
      const rows = (await queued(storage)) - queuedBefore;
      if (rows !== (on ? 2 * PER_ROUND : 0))
        throw new Error(`${rows} outbox rows queued in a round ${on ? 'on' : 'off'}`);
      const round = { on, rate: PER_ROUND / seconds, cpuUsPerReceipt: (cpu.user + cpu.system) / PER_ROUND };
      log(
        `  ${backend} ${on ? 'on ' : 'off'}: ${Math.round(round.rate)} receipts/s, ${round.cpuUsPerReceipt.toFixed(0)} µs CPU each, ${rows} outbox rows`,
      );
      rounds.push(round);
    }
  } finally {
    await ledger.close();
  }
  return rounds;
}

/** Webhook deliveries and SETs queued so far. */
async function queued(storage: Storage): Promise<number> {
  const { pending } = await storage.webhooks.backlog();
  const { pending: sets } = await storage.ssf.backlog();
  return pending + sets;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
};

function rows(backend: string, rounds: Round[]): string[] {
  const off = rounds.filter((round) => !round.on);
  const on = rounds.filter((round) => round.on);
  const offRate = median(off.map((round) => round.rate));
  const onRate = median(on.map((round) => round.rate));
  const offCpu = median(off.map((round) => round.cpuUsPerReceipt));
  const onCpu = median(on.map((round) => round.cpuUsPerReceipt));
  const each = (list: Round[]) => list.map((round) => Math.round(round.rate)).join(', ');
  return [
    `| ${backend}: subscribers off (no webhook, no stream), ${CONCURRENCY} callers, sealer on, ${ROUNDS} rounds of ${PER_ROUND} | median **${Math.round(offRate)} receipts/s** (${each(off)}); ${offCpu.toFixed(0)} µs CPU per receipt |`,
    `| ${backend}: subscribers on (an operator webhook and a push stream queue a row each per receipt), alternating with the above | median **${Math.round(onRate)} receipts/s** (${each(on)}); ${onCpu.toFixed(0)} µs CPU per receipt |`,
    `| ${backend}: on ÷ off | **${((onRate / offRate) * 100).toFixed(0)} %** of the rate; ${((onCpu / offCpu) * 100).toFixed(0)} % of the CPU per receipt |`,
  ];
}

/** The before-and-after rows for SQLite and, when it answers, PostgreSQL. */
export async function subscriberCosts(): Promise<string[]> {
  log(`subscribers off and on, alternating: ${ROUNDS} rounds each of ${PER_ROUND} receipts, ${CONCURRENCY} callers`);
  const dir = mkdtempSync(join(tmpdir(), 'keyplane-bench-subscribers-'));
  const sqlite = openSqliteStorage(dir);
  const found: string[] = [];
  try {
    found.push(...rows('SQLite', await alternate(sqlite, 'SQLite')));
  } finally {
    await sqlite.close();
    rmSync(dir, { recursive: true, force: true });
  }
  const url = process.env['KEYPLANE_BENCH_POSTGRES_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const admin = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await admin.connect();
  } catch (error) {
    log(`  PostgreSQL at ${url} does not answer (${(error as Error).message}): skipped`);
    return [...found, `| PostgreSQL: subscribers off and on | skipped: no server at ${url} |`];
  }
  const name = `kp_bench_sub_${process.pid}_${randomBytes(4).toString('hex')}`;
  await admin.query(`CREATE DATABASE ${name}`);
  const dbUrl = new URL(url);
  dbUrl.pathname = `/${name}`;
  const postgres = await openPostgresStorage(dbUrl.toString());
  try {
    found.push(...rows('PostgreSQL', await alternate(postgres, 'PostgreSQL')));
  } finally {
    await postgres.close();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
  return found;
}
