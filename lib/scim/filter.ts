import { parse, type Filter } from 'scim2-parse-filter';
import { fail } from '../errors/keyplane-error.js';
import { getIgnoringCase, isObject, type ResourceShape } from './attribute-path.js';

/**
 * SCIM filters (RFC 7644 §3.4.2.2): parsed by scim2-parse-filter (precedence: `not`, then `and`,
 * then `or`; parentheses), evaluated here with the RFC 7643 rules the parser leaves out: attribute
 * names ignore case, strings compare without case unless the attribute is `caseExact`, and
 * `dateTime` attributes (`meta.created`, `meta.lastModified`) compare as instants.
 */

export type { Filter };

const DATE_TIMES = new Set(['meta.created', 'meta.lastmodified']);

/** Parses a filter, checking that every attribute it names belongs to the resource type. */
export function parseScimFilter(text: string, resource: ResourceShape): Filter {
  let filter: Filter;
  try {
    filter = parse(text);
  } catch {
    throw fail('scim_invalid_filter', 'the filter does not parse (RFC 7644 §3.4.2.2)');
  }
  checkAttributes(filter, resource, null);
  return filter;
}

function checkAttributes(filter: Filter, resource: ResourceShape, inside: string | null): void {
  switch (filter.op) {
    case 'and':
    case 'or':
      for (const f of (filter as { filters: Filter[] }).filters) checkAttributes(f, resource, inside);
      return;
    case 'not':
      checkAttributes((filter as { filter: Filter }).filter, resource, inside);
      return;
    case '[]': {
      const { attrPath, valFilter } = filter as { attrPath: string; valFilter: Filter };
      checkAttributes({ op: 'pr', attrPath } as Filter, resource, inside);
      checkAttributes(valFilter, resource, attrPath);
      return;
    }
    default: {
      const { attrPath, compValue } = filter as { attrPath: string; compValue?: unknown };
      if (inside) return;
      const lower = attrPath.toLowerCase();
      const extension = resource.extensions.find((urn) => lower.startsWith(urn.toLowerCase()));
      const root = extension ? null : attrPath.replace(new RegExp(`^${resource.core}:`, 'i'), '').split('.')[0]!;
      if (!extension && !resource.attributes.has(root!.toLowerCase()))
        throw fail('scim_invalid_filter', `this server cannot filter on ${JSON.stringify(attrPath)}`);
      if (typeof compValue === 'boolean' && !['eq', 'ne'].includes(filter.op))
        throw fail('scim_invalid_filter', `${filter.op} does not compare booleans`);
    }
  }
}

/** The values at a dotted path, flattened across multi-valued attributes. */
function valuesAt(resource: Record<string, unknown>, path: string, shape: ResourceShape | null): unknown[] {
  let current: unknown[] = [resource];
  let rest = path;
  if (shape) {
    const lower = path.toLowerCase();
    const extension = shape.extensions.find((urn) => lower.startsWith(urn.toLowerCase()));
    if (extension) {
      current = [getIgnoringCase(resource, extension)];
      rest = path.slice(extension.length).replace(/^:/, '');
    } else rest = path.replace(new RegExp(`^${shape.core}:`, 'i'), '');
  }
  for (const part of rest.split('.').filter((p) => p !== '')) {
    current = current
      .flatMap((v) => (Array.isArray(v) ? v : [v]))
      .filter(isObject)
      .map((v) => getIgnoringCase(v, part));
  }
  return current.flatMap((v) => (Array.isArray(v) ? v : [v])).filter((v) => v !== undefined && v !== null);
}

function compare(op: string, actual: unknown, expected: unknown, path: string, shape: ResourceShape | null): boolean {
  if (typeof expected === 'boolean' || typeof actual === 'boolean') {
    const same = actual === expected;
    return op === 'eq' ? same : op === 'ne' ? !same : false;
  }
  if (expected === null) return op === 'ne';
  let a: string | number;
  let b: string | number;
  const leaf = path.split('.').pop()!;
  if (DATE_TIMES.has(path.toLowerCase())) {
    a = Date.parse(String(actual));
    b = Date.parse(String(expected));
    if (Number.isNaN(b)) throw fail('scim_invalid_filter', `${JSON.stringify(expected)} is not a dateTime`);
  } else if (typeof actual === 'number' && typeof expected === 'number') {
    a = actual;
    b = expected;
  } else {
    const exact = shape?.caseExact.has(leaf) ?? false;
    a = exact ? String(actual) : String(actual).toLowerCase();
    b = exact ? String(expected) : String(expected).toLowerCase();
  }
  switch (op) {
    case 'eq':
      return a === b;
    case 'ne':
      return a !== b;
    case 'co':
      return String(a).includes(String(b));
    case 'sw':
      return String(a).startsWith(String(b));
    case 'ew':
      return String(a).endsWith(String(b));
    case 'gt':
      return a > b;
    case 'ge':
      return a >= b;
    case 'lt':
      return a < b;
    case 'le':
      return a <= b;
    default:
      return false;
  }
}

/**
 * Whether the resource matches. `shape` is the resource type (null inside a value filter, where
 * paths are relative to one element of a multi-valued attribute).
 */
export function matchesFilter(resource: Record<string, unknown>, filter: Filter, shape: ResourceShape | null): boolean {
  switch (filter.op) {
    case 'and': {
      const filters = (filter as { filters: Filter[] }).filters;
      // `emails[type eq "work"].value eq "x"` comes from the parser as `emails[type eq "work"] and
      // emails.value eq "x"`: both must hold for the same element.
      for (let i = 0; i < filters.length; i++) {
        const here = filters[i]!;
        const next = filters[i + 1] as { attrPath?: string } | undefined;
        if (here.op === '[]' && next?.attrPath?.toLowerCase().startsWith(`${here.attrPath.toLowerCase()}.`)) {
          const sub = { ...next, attrPath: next.attrPath.slice(here.attrPath.length + 1) } as Filter;
          const elements = valuesAt(resource, here.attrPath, shape).filter(isObject);
          if (!elements.some((e) => matchesFilter(e, here.valFilter, null) && matchesFilter(e, sub, null)))
            return false;
          i++;
        } else if (!matchesFilter(resource, here, shape)) return false;
      }
      return true;
    }
    case 'or':
      return (filter as { filters: Filter[] }).filters.some((f) => matchesFilter(resource, f, shape));
    case 'not':
      return !matchesFilter(resource, (filter as { filter: Filter }).filter, shape);
    case '[]': {
      const { attrPath, valFilter } = filter as { attrPath: string; valFilter: Filter };
      return valuesAt(resource, attrPath, shape)
        .filter(isObject)
        .some((e) => matchesFilter(e, valFilter, null));
    }
    case 'pr':
      return valuesAt(resource, filter.attrPath, shape).some((v) => v !== '' && !(Array.isArray(v) && v.length === 0));
    default: {
      const { attrPath, compValue } = filter as { attrPath: string; compValue: unknown };
      const values = valuesAt(resource, attrPath, shape);
      // A multi-valued attribute without a sub-attribute compares its elements' `value`.
      const flat = values.map((v) => (isObject(v) && 'value' in v ? v.value : v));
      if (filter.op === 'ne')
        return flat.length === 0 || flat.every((v) => compare('ne', v, compValue, attrPath, shape));
      return flat.some((v) => compare(filter.op, v, compValue, attrPath, shape));
    }
  }
}

/**
 * The `attr eq "value"` at the top of a filter, when that is all it is: served by an index look-up
 * (`userName`, `externalId`) instead of a scan.
 */
export function equalityOn(filter: Filter, attribute: string): string | null {
  if (filter.op !== 'eq') return null;
  const { attrPath, compValue } = filter as { attrPath: string; compValue: unknown };
  return attrPath.toLowerCase() === attribute.toLowerCase() && typeof compValue === 'string' ? compValue : null;
}
