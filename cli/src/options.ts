import { coerce, leaves } from '../../config/load.js';
import { schemas, type ConfigKind } from '../../config/schema.js';

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
