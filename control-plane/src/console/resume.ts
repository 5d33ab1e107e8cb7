import { randomToken } from '#lib/crypto/random.js';
import type { ControlPlaneServices } from '../context.js';
import type { ConsoleSessionView } from './console-session.js';

/**
 * A console form sent without a fresh step-up is kept here, bound to the console session, while
 * the person steps up; the form page then comes back filled in from it and waits for their click.
 * Nothing is ever replayed from it: it only fills fields (docs/console.md#changes-and-step-up).
 */
const RESUME_TTL_MS = 10 * 60_000;
const keyOf = (id: string) => `console:resume:${id}`;

export type ResumeServices = Pick<ControlPlaneServices, 'state'>;

/** Keeps the form's fields; returns the resume id for the page's URL. */
export async function keepFormForStepUp(
  services: ResumeServices,
  session: ConsoleSessionView,
  fields: Record<string, string>,
): Promise<string> {
  const id = randomToken(16);
  await services.state.set(keyOf(id), JSON.stringify({ session: session.id, fields }), RESUME_TTL_MS);
  return id;
}

/** The kept fields, once (taken atomically), and only for the console session that kept them. */
export async function takeKeptForm(
  services: ResumeServices,
  session: ConsoleSessionView,
  id: unknown,
): Promise<Record<string, string>> {
  if (typeof id !== 'string' || !/^[A-Za-z0-9_-]{22}$/.test(id)) return {};
  const raw = await services.state.take(keyOf(id));
  if (raw === null) return {};
  const kept = JSON.parse(raw) as { session: string; fields: Record<string, string> };
  return kept.session === session.id ? kept.fields : {};
}

/** A form body as text fields only (arrays and other shapes are dropped), each capped. */
export function formFields(body: unknown): Record<string, string> {
  const fields: Record<string, string> = {};
  if (body === null || typeof body !== 'object') return fields;
  for (const [name, value] of Object.entries(body as Record<string, unknown>).slice(0, 32))
    if (typeof value === 'string') fields[name.slice(0, 64)] = value.slice(0, 8192);
  return fields;
}
