import type { Command } from 'commander';
import { coerce, leaves } from '#config/schema-leaves.js';
import { schemas, type ConfigKind } from '#config/schema.js';

/**
 * Commander hands flags over as strings keyed by camel-cased flag name; the schema says which
 * config key each flag sets and of what type it is.
 */
export function flagsToConfig(kind: ConfigKind, options: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (typeof options['config'] === 'string') out['config'] = options['config'];
  for (const [path, leaf] of leaves(schemas[kind])) {
    if (!leaf.flag) continue;
    const name = leaf.flag.replace(/^--/, '').replace(/-([a-z])/g, (_m, c: string) => c.toUpperCase());
    const raw = options[name];
    if (raw === undefined) continue;
    out[path] = typeof raw === 'string' ? (coerce(raw, leaf) ?? raw) : raw;
  }
  return out;
}

/**
 * The options every server command takes: `--config`, `--host`, `--port` (its default from the
 * schema), `--workers`, `--tls-cert`/`--tls-key`, then the command's own.
 */
export function serverOptions(command: Command, kind: ConfigKind): Command {
  const defaultPort = (schemas[kind].properties['port'] as { default?: unknown }).default;
  return command
    .option('--config <file>', 'YAML config file (also KEYPLANE_CONFIG)')
    .option('--host <host>', 'address to listen on (default 127.0.0.1)')
    .option('--port <port>', `port to listen on; 0 picks a free one (default ${defaultPort})`)
    .option('--workers <n>', 'processes serving the port: a number or auto, one per core (default 1)')
    .option('--tls-cert <file>', 'serve HTTPS with this PEM certificate chain (with --tls-key; reread on SIGHUP)')
    .option('--tls-key <file>', 'the PEM private key of --tls-cert');
}

/** The options of a command that works offline on a control plane's storage (`keys`, `ledger`, `migrate`, `backup`). */
export function dataDirOptions(command: Command): Command {
  return command
    .option('--config <file>', 'YAML config file')
    .option('--data <dir>', 'data directory (default ./data)')
    .option('--database <url>', 'PostgreSQL URL (also KEYPLANE_DATABASE_URL); unset uses SQLite in the data directory');
}
