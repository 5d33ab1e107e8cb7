import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';

/**
 * The one place that loads the SQLite driver; everything else imports `Database` from here
 * (a lint rule keeps it so).
 *
 * better-sqlite3 12 wraps its objects in `node::ObjectWrap`. From Node 24.19 that header registers
 * an environment cleanup hook per object and removes it in the destructor, which asserts that a
 * V8 context is entered; a garbage-collected `Statement` is destroyed with none, so the process
 * aborts (`Assertion failed: (env) != nullptr` in `RemoveEnvironmentCleanupHook`). No close order
 * avoids it: any statement the collector frees triggers it. better-sqlite3 13 moved to Node-API and
 * ships prebuilt binaries, but it asks for Node-API 10, which Node 20 never had (it crashes there).
 * So Node-API 10 runtimes (Node 22.14 and later, 24) load 13, and older ones (Node 20) load 12,
 * installed as the optional dependency `better-sqlite3-node20`. Both are optional, so that npm on
 * each runtime installs the one it can load without a warning. See docs/platform.md#nodejs-versions.
 */
const require = createRequire(import.meta.url);

/** The Node-API version a runtime must offer to load better-sqlite3 13. */
export const NAPI_FOR_CURRENT_DRIVER = 10;

export function driverPackage(napiVersion: number = Number(process.versions.napi)): string {
  return napiVersion >= NAPI_FOR_CURRENT_DRIVER ? 'better-sqlite3' : 'better-sqlite3-node20';
}

/** Loads the driver, saying what to do when the one this runtime needs is not installed. */
export function loadDriver(name: string, load: (id: string) => unknown = require): typeof BetterSqlite3 {
  try {
    return load(name) as typeof BetterSqlite3;
  } catch (error) {
    if ((error as { code?: unknown }).code !== 'MODULE_NOT_FOUND') throw error;
    throw new Error(
      name === 'better-sqlite3'
        ? `Node.js ${process.versions.node} needs the optional dependency better-sqlite3 13, which npm installs ` +
            'only on Node.js 22.14 or later: these packages were installed by an older Node.js; run npm ci again with this one'
        : `Node.js ${process.versions.node} needs the optional dependency ${name} (better-sqlite3 12, built by npm ci), ` +
            'which is not installed: install a C++ toolchain and run npm ci again, or use Node.js 22.14 or later',
      { cause: error },
    );
  }
}

export const Database = loadDriver(driverPackage());
export type Database = BetterSqlite3.Database;
export type Statement = BetterSqlite3.Statement;
