import type { Node } from './schema.js';

/** Turns a flag or env string into the type its key declares; undefined when it cannot. */
export function coerce(raw: string, leaf: { type: string | string[] }): unknown {
  switch (leaf.type) {
    case 'integer':
      return /^-?\d+$/.test(raw) ? Number(raw) : undefined;
    case 'boolean':
      return raw === 'true' ? true : raw === 'false' ? false : undefined;
    case 'array':
      return raw
        .split(',')
        .map((item) => item.trim())
        .filter(Boolean);
    default:
      return raw;
  }
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
