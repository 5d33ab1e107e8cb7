import { fail } from '../errors/keyplane-error.js';
import {
  deleteIgnoringCase,
  getIgnoringCase,
  isObject,
  parseAttributePath,
  setIgnoringCase,
  type AttributePath,
  type ResourceShape,
} from './attribute-path.js';
import { matchesFilter } from './filter.js';
import { parse, type Filter } from 'scim2-parse-filter';

/**
 * SCIM PATCH (RFC 7644 §3.5.2) on a resource as a JSON object, with the forms Microsoft Entra ID
 * and Okta send besides the RFC's: op names in any case (`Replace`, `Add`), a path-less `replace`
 * or `add` whose value object has paths as keys (`"name.givenName"`, the enterprise URN with its
 * attribute), `remove` of `members` with a value list, and a filtered path whose element does
 * not exist yet (`emails[type eq "work"].value`), which adds it.
 */

export const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';

export interface PatchOperation {
  op: 'add' | 'remove' | 'replace';
  path: string | null;
  value: unknown;
}

type Resource = Record<string, unknown>;

/** Reads the PatchOp message: `schemas` and `Operations` checked, op names folded to lower case. */
export function readPatchRequest(body: unknown): PatchOperation[] {
  if (!isObject(body)) throw fail('scim_invalid_syntax', 'the body must be a PatchOp message');
  const schemas = getIgnoringCase(body, 'schemas');
  if (!Array.isArray(schemas) || !schemas.includes(PATCH_OP))
    throw fail('scim_invalid_syntax', `schemas must name ${PATCH_OP}`);
  const operations = getIgnoringCase(body, 'Operations');
  if (!Array.isArray(operations) || operations.length === 0)
    throw fail('scim_invalid_syntax', 'Operations must be a non-empty array');
  return operations.map((raw) => {
    if (!isObject(raw)) throw fail('scim_invalid_syntax', 'each operation must be an object');
    const op = String(getIgnoringCase(raw, 'op') ?? '').toLowerCase();
    if (op !== 'add' && op !== 'remove' && op !== 'replace')
      throw fail('scim_invalid_syntax', `unknown operation ${JSON.stringify(getIgnoringCase(raw, 'op'))}`);
    const path = getIgnoringCase(raw, 'path');
    if (path !== undefined && path !== null && typeof path !== 'string')
      throw fail('scim_invalid_path', 'path must be a string');
    return {
      op,
      path: typeof path === 'string' && path.trim() !== '' ? path : null,
      value: getIgnoringCase(raw, 'value'),
    };
  });
}

const asList = (value: unknown): unknown[] => (Array.isArray(value) ? value : [value]);

/** Elements are the same when their `value` is (members, emails), else when equal as JSON. */
function sameElement(a: unknown, b: unknown): boolean {
  if (isObject(a) && isObject(b) && 'value' in a && 'value' in b) return a.value === b.value;
  return JSON.stringify(a) === JSON.stringify(b);
}

function container(resource: Resource, path: AttributePath): { holder: Resource; key: string } {
  if (path.extensionAttribute === null) return { holder: resource, key: path.attribute };
  let holder = getIgnoringCase(resource, path.attribute);
  if (!isObject(holder)) {
    holder = {};
    setIgnoringCase(resource, path.attribute, holder);
  }
  return { holder: holder as Resource, key: path.extensionAttribute };
}

function valueFilter(path: AttributePath): Filter {
  try {
    return parse(path.filter!);
  } catch {
    throw fail('scim_invalid_path', `the value filter ${JSON.stringify(path.filter)} does not parse`);
  }
}

/** The element an Entra-style filtered replace creates when none matches: `type eq "work"` gives `{type: "work"}`. */
function elementFrom(filter: Filter): Resource | null {
  if (filter.op === 'eq') {
    const { attrPath, compValue } = filter as { attrPath: string; compValue: unknown };
    return { [attrPath]: compValue };
  }
  if (filter.op === 'and') {
    const parts = (filter as { filters: Filter[] }).filters.map(elementFrom);
    return parts.every((p) => p !== null) ? Object.assign({}, ...parts) : null;
  }
  return null;
}

function applyAt(resource: Resource, op: PatchOperation, path: AttributePath, shape: ResourceShape): void {
  const { holder, key } = container(resource, path);
  const multi = path.extensionAttribute === null && shape.multiValued.has(path.attribute);
  if (path.filter !== null) {
    if (!multi) throw fail('scim_invalid_path', `${path.attribute} is not multi-valued`);
    const filter = valueFilter(path);
    const list = asList(getIgnoringCase(holder, key) ?? []).filter((e) => e !== null);
    const hits = list.filter((e) => isObject(e) && matchesFilter(e, filter, null));
    if (op.op === 'remove') {
      if (hits.length === 0) return;
      if (path.sub === null)
        setIgnoringCase(
          holder,
          key,
          list.filter((e) => !hits.includes(e)),
        );
      else for (const e of hits) deleteIgnoringCase(e as Resource, path.sub);
      return;
    }
    if (hits.length === 0) {
      const created = elementFrom(filter);
      if (!created) throw fail('scim_no_target', `no ${path.attribute} element matches ${path.filter}`);
      if (path.sub !== null) created[path.sub] = op.value;
      else if (isObject(op.value)) Object.assign(created, op.value);
      setIgnoringCase(holder, key, [...list, created]);
      return;
    }
    for (const e of hits) {
      if (path.sub !== null) setIgnoringCase(e as Resource, path.sub, op.value);
      else if (isObject(op.value)) Object.assign(e as Resource, op.value);
    }
    return;
  }
  if (path.sub !== null) {
    if (multi) {
      // `emails.value` without a filter: every element (RFC 7644 §3.5.2.3).
      for (const e of asList(getIgnoringCase(holder, key) ?? []).filter(isObject)) {
        if (op.op === 'remove') deleteIgnoringCase(e, path.sub);
        else setIgnoringCase(e, path.sub, op.value);
      }
      return;
    }
    let complex = getIgnoringCase(holder, key);
    if (op.op === 'remove') {
      if (isObject(complex)) deleteIgnoringCase(complex, path.sub);
      return;
    }
    if (!isObject(complex)) {
      complex = {};
      setIgnoringCase(holder, key, complex);
    }
    setIgnoringCase(complex as Resource, path.sub, op.value);
    return;
  }
  if (op.op === 'remove') {
    if (multi && op.value !== undefined && op.value !== null) {
      // Entra and Okta remove members as `{"path": "members", "value": [{"value": "<id>"}]}`.
      const gone = asList(op.value);
      const list = asList(getIgnoringCase(holder, key) ?? []);
      setIgnoringCase(
        holder,
        key,
        list.filter((e) => !gone.some((g) => sameElement(e, g))),
      );
    } else deleteIgnoringCase(holder, key);
    return;
  }
  if (multi) {
    const incoming = asList(op.value).filter((e) => e !== null);
    if (op.op === 'replace') setIgnoringCase(holder, key, incoming);
    else {
      const list = asList(getIgnoringCase(holder, key) ?? []).filter((e) => e !== null);
      for (const e of incoming) if (!list.some((x) => sameElement(x, e))) list.push(e);
      setIgnoringCase(holder, key, list);
    }
    return;
  }
  const current = getIgnoringCase(holder, key);
  if (op.op === 'add' && isObject(current) && isObject(op.value)) Object.assign(current, op.value);
  else setIgnoringCase(holder, key, op.value);
}

/**
 * Applies the operations to a copy of the resource and returns it; the caller validates the
 * result as a whole (types, uniqueness), so an operation list applies entirely or not at all.
 */
export function applyPatch(resource: Resource, operations: PatchOperation[], shape: ResourceShape): Resource {
  const next = structuredClone(resource);
  for (const op of operations) {
    if (op.path === null) {
      if (op.op === 'remove') throw fail('scim_no_target', 'remove needs a path (RFC 7644 §3.5.2.2)');
      if (!isObject(op.value)) throw fail('scim_invalid_value', `a path-less ${op.op} needs an object value`);
      for (const [key, value] of Object.entries(op.value)) {
        if (key.toLowerCase() === 'schemas') continue;
        const extension = shape.extensions.find((urn) => urn.toLowerCase() === key.toLowerCase());
        if (extension && isObject(value)) {
          for (const [inner, v] of Object.entries(value))
            applyAt(next, { ...op, value: v }, parseAttributePath(`${extension}:${inner}`, shape), shape);
          continue;
        }
        applyAt(next, { ...op, value }, parseAttributePath(key, shape), shape);
      }
      continue;
    }
    const path = parseAttributePath(op.path, shape);
    if (path.attribute === 'id' || path.attribute === 'meta')
      throw fail('scim_mutability', `${path.attribute} is read-only`);
    applyAt(next, op, path, shape);
  }
  return next;
}

/**
 * What a write makes of the stored resource: a PUT replaces it with the resource as sent (what it
 * leaves out is cleared), a PATCH applies its operations to it.
 */
export function readChange(
  method: 'PUT' | 'PATCH',
  body: unknown,
  shape: ResourceShape,
): (current: Resource) => Resource {
  if (method === 'PATCH') {
    const operations = readPatchRequest(body);
    return (current) => applyPatch(current, operations, shape);
  }
  if (!isObject(body)) throw fail('scim_invalid_syntax', 'the body must be a resource');
  return () => body;
}
