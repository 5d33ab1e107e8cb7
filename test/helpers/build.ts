import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { loadControlPlaneConfig } from '#config/load.js';
import type { ControlPlaneConfig } from '#config/types.js';
import type { SharedState } from '#lib/runtime/shared-state/types.js';
import type { Area } from '../../control-plane/src/app.js';
import type { RunningServices } from '../../control-plane/src/services.js';

export const TEST_ISSUER = 'http://localhost:4400';
export const TEST_MASTER_KEY = 'test-master-key-0123456789abcdef0123456789';

interface Tap {
  teardown(fn: () => unknown): void;
}

export function tempDir(t: Tap, prefix = 'keyplane-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export interface BuildOptions {
  /** Config overrides by dotted key path: `{ 'http.bodyLimit': 2048 }`. */
  config?: Record<string, unknown>;
  now?: () => number;
  state?: SharedState;
  /** Leave the app un-readied so a test can add routes first. */
  skipReady?: boolean;
  dataDir?: string;
  /**
   * Serialise log lines as usual but keep none (`logs` stays empty): a benchmark sends tens of
   * thousands of requests, and holding every line would grow the heap it is measuring.
   */
  discardLogs?: boolean;
  /**
   * Boot only these resource areas (with the shared infrastructure): a suite of one area skips
   * compiling every other route's schemas. Whole-app builds stay for what crosses areas.
   */
  areas?: readonly Area[];
}

export interface Built {
  app: FastifyInstance;
  services: RunningServices;
  config: ControlPlaneConfig & { issuer: string };
  logs: string[];
}

/**
 * Opens the control plane's services (storage, shared state, keys) on a temporary data dir, with no
 * HTTP app: for suites that call operations on the services. It skips loading the app's modules
 * (about 1 s of CPU) and building it (docs/platform.md#test-tiers). Closed when the test ends.
 */
export async function openServices(
  t: Tap,
  options: Omit<BuildOptions, 'skipReady' | 'discardLogs' | 'areas'> = {},
): Promise<Omit<Built, 'app' | 'logs'>> {
  const opened = await open({ ...options, dataDir: options.dataDir ?? tempDir(t) });
  t.teardown(() => opened.services.close());
  return opened;
}

async function open(options: BuildOptions & { dataDir: string }): Promise<Omit<Built, 'app' | 'logs'>> {
  const { openControlPlaneServices } = await import('../../control-plane/src/services.js');
  const config = loadControlPlaneConfig({
    env: {},
    overrides: {
      dataDir: options.dataDir,
      issuer: TEST_ISSUER,
      masterKey: TEST_MASTER_KEY,
      logLevel: 'info',
      ...options.config,
    },
  }) as ControlPlaneConfig & { issuer: string };
  const services = await openControlPlaneServices(config, {
    ...(options.now ? { now: options.now } : {}),
    ...(options.state ? { state: options.state } : {}),
  });
  return { services, config };
}

/** Builds a control plane on a temporary data dir; closed when the test ends. */
export async function build(t: Tap, options: BuildOptions = {}): Promise<Built> {
  // Loaded here, not at the top: the unit tier imports tempDir and manualClock from this file, and
  // the control plane costs about 2 s of CPU to load (docs/platform.md#test-tiers).
  const { buildControlPlane } = await import('../../control-plane/src/app.js');
  const { services, config } = await open({ ...options, dataDir: options.dataDir ?? tempDir(t) });
  const logs: string[] = [];
  const logStream = new Writable({
    write(chunk, _encoding, done) {
      if (!options.discardLogs) logs.push(String(chunk));
      done();
    },
  });
  const app = await buildControlPlane(services, { logStream, ...(options.areas ? { areas: options.areas } : {}) });
  t.teardown(async () => {
    await app.close();
    await services.close();
  });
  if (!options.skipReady) await app.ready();
  return { app, services, config, logs };
}

/** A clock tests move by hand instead of sleeping. */
export function manualClock(start = Date.parse('2026-11-22T12:00:00Z')): {
  now: () => number;
  advance: (ms: number) => void;
} {
  let current = start;
  return { now: () => current, advance: (ms) => (current += ms) };
}
