/**
 * The transparency log's costs, for bench:ledger: the sealer's added time per checkpoint for the
 * tiles and the signed note, and for a round of cosignatures from a witness (a second control
 * plane over loopback HTTP); and tiles served per second over HTTP.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { randomBytes } from 'node:crypto';
import { loadControlPlaneConfig } from '#config/load.js';
import type { ControlPlaneConfig } from '#config/types.js';
import { buildControlPlane } from '../control-plane/src/app.js';
import { openControlPlaneServices, type RunningServices } from '../control-plane/src/services.js';

const EPOCHS = Number(process.env['LEDGER_TLOG_EPOCHS'] ?? 100);
const RECEIPTS_PER_EPOCH = 100;
const TILE_SECONDS = Number(process.env['LEDGER_TILE_SECONDS'] ?? 5);
const log = (line: string) => process.stderr.write(`${line}\n`);
const ms = (ns: bigint) => Number(ns) / 1e6;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function open(issuer: string, config: Record<string, unknown>, dataDir: string) {
  const loaded = loadControlPlaneConfig({
    env: {},
    overrides: { dataDir, issuer, masterKey: 'bench-master-key-0123456789abcdef012345', logLevel: 'silent', ...config },
  }) as ControlPlaneConfig & { issuer: string };
  const services = await openControlPlaneServices(loaded);
  const app = await buildControlPlane(services, {
    logStream: new Writable({ write: (_c, _e, done) => done() }),
    areas: ['receipts'],
  });
  return {
    services,
    app,
    async close() {
      await app.close();
      await services.close();
    },
  };
}

async function record(services: RunningServices, n: number): Promise<void> {
  for (let i = 0; i < n; i++)
    await services.storage.transaction((tx) =>
      services.events.record(tx, {
        type: 'keys.rotated',
        at: services.now(),
        outcome: 'success',
        kid: `k-${randomBytes(4).toString('hex')}`,
        retired: null,
      }),
    );
}

/** Seals `EPOCHS` epochs of `RECEIPTS_PER_EPOCH`; per checkpoint: seal time (with tiles and note), and the cosignature round. */
async function sealTimes(services: RunningServices): Promise<{ seal: number[]; cosign: number[] }> {
  const seal: number[] = [];
  const cosign: number[] = [];
  for (let e = 0; e < EPOCHS; e++) {
    await record(services, RECEIPTS_PER_EPOCH);
    const t0 = process.hrtime.bigint();
    await services.ledger.sealNow();
    const t1 = process.hrtime.bigint();
    await services.ledger.transparency!.settle();
    seal.push(ms(t1 - t0));
    cosign.push(ms(process.hrtime.bigint() - t1));
  }
  return { seal, cosign };
}

/** Times the same epochs sealed with the log's tiles and note taken out (what the sealer did before). */
async function sealTimesWithoutLog(services: RunningServices): Promise<number[]> {
  const ledger = services.ledger as unknown as { options: { log?: unknown } };
  const kept = ledger.options.log;
  delete ledger.options.log;
  try {
    const seal: number[] = [];
    for (let e = 0; e < EPOCHS; e++) {
      await record(services, RECEIPTS_PER_EPOCH);
      const t0 = process.hrtime.bigint();
      await services.ledger.sealNow();
      seal.push(ms(process.hrtime.bigint() - t0));
    }
    return seal;
  } finally {
    ledger.options.log = kept;
  }
}

async function tilesPerSecond(
  base: string,
  size: number,
): Promise<{ rate: number; perCpuSecond: number; requests: number }> {
  const full = Math.floor(size / 256);
  const paths = Array.from({ length: Math.max(1, full) }, (_, n) =>
    full > 0 ? `tile/0/${String(n).padStart(3, '0')}` : `tile/0/000.p/${size}`,
  );
  let requests = 0;
  const deadline = Date.now() + TILE_SECONDS * 1000;
  const worker = async () => {
    while (Date.now() < deadline) {
      const res = await fetch(`${base}/receipts/${paths[requests % paths.length]}`);
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`tile answered ${res.status}`);
      requests++;
    }
  };
  const t0 = process.hrtime.bigint();
  const cpu0 = process.cpuUsage();
  await Promise.all(Array.from({ length: 32 }, worker));
  const cpu = process.cpuUsage(cpu0);
  return {
    rate: requests / (Number(process.hrtime.bigint() - t0) / 1e9),
    // Server and client share this process: per CPU-second counts both, a floor for the server alone.
    perCpuSecond: requests / ((cpu.user + cpu.system) / 1e6),
    requests,
  };
}

export async function transparencyCosts(): Promise<string[]> {
  const dirs = [0, 1].map(() => mkdtempSync(join(tmpdir(), 'keyplane-bench-tlog-')));
  const [logDir, witnessDir] = dirs as [string, string];
  try {
    // The log's note key is made at its first start; the witness is configured with it.
    const first = await open('http://localhost:4401', {}, logDir);
    const logKey = first.services.ledger.transparency!.noteKeys.logVerifierKeys()[0]!;
    const origin = first.services.ledger.transparency!.origin;
    await first.close();
    const witness = await open(
      'http://localhost:4402',
      { 'ledger.witness.logs': [{ origin, key: logKey }] },
      witnessDir,
    );
    const witnessUrl = await witness.app.listen({ port: 0, host: '127.0.0.1' });
    const witnessKey = witness.services.ledger.transparency!.noteKeys.witness().vkey;
    const logged = await open(
      'http://localhost:4401',
      {
        'ledger.sealIntervalMs': 60_000,
        'ledger.witnesses': [
          { name: witnessKey.slice(0, witnessKey.indexOf('+')), url: `${witnessUrl}/receipts`, key: witnessKey },
        ],
      },
      logDir,
    );
    try {
      log(`sealing ${EPOCHS} epochs of ${RECEIPTS_PER_EPOCH} receipts with the transparency log and a witness`);
      const withLog = await sealTimes(logged.services);
      log(`sealing ${EPOCHS} epochs of ${RECEIPTS_PER_EPOCH} receipts without the transparency log`);
      const withoutLog = await sealTimesWithoutLog(logged.services);
      const base = await logged.app.listen({ port: 0, host: '127.0.0.1' });
      const size = (await logged.services.storage.tlog.head())!.treeSize;
      log(`serving level-0 tiles for ${TILE_SECONDS} s, 32 requests in flight`);
      const tiles = await tilesPerSecond(base, size);
      const cosigned = (await logged.services.ledger.transparency!.checkpoint())!
        .split('\n')
        .filter((l) => l.startsWith(`\u2014 ${witnessKey.slice(0, witnessKey.indexOf('+'))} `)).length;
      log(
        `  seal p50 ${median(withLog.seal).toFixed(1)} ms with the log, ${median(withoutLog).toFixed(1)} ms without; cosignature round p50 ${median(withLog.cosign).toFixed(1)} ms; ${Math.round(tiles.rate)} tiles/s`,
      );
      return [
        `| sealer's time per checkpoint, ${RECEIPTS_PER_EPOCH}-receipt epochs, ${EPOCHS} each way (SQLite) | p50 ${median(withLog.seal).toFixed(1)} ms with tiles and the signed note, ${median(withoutLog).toFixed(1)} ms without: **+${(median(withLog.seal) - median(withoutLog)).toFixed(1)} ms per checkpoint** |`,
        `| a round of cosignatures per checkpoint (one witness, a second control plane over loopback HTTP: consistency proof from tiles, witness checks, conditional update, cosignature stored) | p50 ${median(withLog.cosign).toFixed(1)} ms, after the seal (it does not hold the sealing lock)${cosigned ? '' : ' — the last checkpoint carried no cosignature!'} |`,
        `| tiles served (\`GET /receipts/tile/0/N\`, full 8 KiB tiles, 32 requests in flight, ${TILE_SECONDS} s, log of ${size.toLocaleString('en')} leaves) | **${Math.round(tiles.rate)} tiles/s**, ${Math.round(tiles.perCpuSecond)} per CPU-second of server and client together (${tiles.requests} requests) |`,
      ];
    } finally {
      await logged.close();
      await witness.close();
    }
  } finally {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  }
}
