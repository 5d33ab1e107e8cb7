import type { Node } from './schema.js';

/** Turns a flag or env string into the type its key declares; undefined when it cannot. */
export function coerce(raw: string, leaf: { type: string | string[] }): unknown {
  // A number or a word (`--workers 2|auto`): digits are the number.
  if (Array.isArray(leaf.type)) return leaf.type.includes('integer') && /^\d+$/.test(raw) ? Number(raw) : raw;
  switch (leaf.type) {
    case 'integer':
      return /^-?\d+$/.test(raw) ? Number(raw) : undefined;
    case 'number':
      return raw.trim() !== '' && Number.isFinite(Number(raw)) ? Number(raw) : undefined;
    case 'boolean':
      return raw === 'true' ? true : raw === 'false' ? false : undefined;
    case 'object':
      return keyValuePairs(raw);
    case 'array':
      return raw
        .split(',')
        .map((item) => item.trim())
        .filter(Boolean);
    default:
      return raw;
  }
}

/**
 * `name=value,name2=value2`, each part percent-decoded: how OpenTelemetry writes a mapping in one
 * variable (`OTEL_EXPORTER_OTLP_HEADERS`); undefined when a pair has no name.
 */
function keyValuePairs(raw: string): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  for (const pair of raw.split(',')) {
    if (pair.trim() === '') continue;
    const eq = pair.indexOf('=');
    const name = eq > 0 ? pair.slice(0, eq).trim() : '';
    if (!name) return undefined;
    try {
      out[decodeURIComponent(name)] = decodeURIComponent(pair.slice(eq + 1).trim());
    } catch {
      return undefined;
    }
  }
  return out;
}

export function isGroup(node: Node): node is Extract<Node, { properties: Record<string, Node> }> {
  return node.type === 'object' && typeof (node as { properties?: unknown }).properties === 'object';
}

export type Leafish = { type: string | string[]; env?: string; flag?: string; default?: unknown };

/** Every leaf key of a schema with its dotted path. */
export function leaves(node: Node, prefix = ''): Array<[string, Leafish & Record<string, unknown>]> {
  if (isGroup(node)) {
    return Object.entries(node.properties).flatMap(([key, child]) => leaves(child, prefix ? `${prefix}.${key}` : key));
  }
  return [[prefix, node as Leafish & Record<string, unknown>]];
}
