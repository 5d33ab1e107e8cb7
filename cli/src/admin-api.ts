import { readAdminToken } from '#config/env.js';
import { CliError, EXIT } from './exit.js';

const TIMEOUT_MS = 10_000;

export interface Answer {
  status: number;
  body: Record<string, unknown>;
}

/** The server refused: the envelope goes to stdout (as JSON with --json) and the exit code is 1. */
export class Refused extends CliError {
  constructor(
    readonly answer: Answer,
    what: string,
  ) {
    super(
      `${what}: ${String(answer.body['reason'] ?? `HTTP ${answer.status}`)}${answer.body['message'] ? ` (${String(answer.body['message'])})` : ''}`,
      EXIT.failed,
    );
  }
}

/** `--control-plane` as a base URL without a trailing slash; a missing or non-http(s) URL is a usage error. */
export function baseUrl(value: string | undefined): string {
  if (!value) throw new CliError('--control-plane URL is required', EXIT.usage);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new CliError('--control-plane must be a URL', EXIT.usage);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new CliError('--control-plane must be an http(s) URL', EXIT.usage);
  return url.toString().replace(/\/+$/, '');
}

/** One JSON request; network failures and non-JSON answers are usage errors (exit 2), any JSON object is returned. */
export async function requestJson(
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
  url: string,
  options: { token?: string; body?: unknown; signal?: AbortSignal } = {},
): Promise<Answer> {
  let response: Response;
  const signal = options.signal
    ? AbortSignal.any([options.signal, AbortSignal.timeout(TIMEOUT_MS)])
    : AbortSignal.timeout(TIMEOUT_MS);
  try {
    response = await fetch(url, {
      method,
      signal,
      redirect: 'error',
      headers: {
        accept: 'application/json',
        ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
        ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
    });
  } catch (error) {
    if (options.signal?.aborted) throw error;
    throw new CliError(`cannot reach ${url}: ${(error as Error).message}`, EXIT.usage);
  }
  let body: unknown;
  try {
    body = await response.json();
  } catch {
    throw new CliError(`${url} answered ${response.status} without JSON`, EXIT.usage);
  }
  if (!body || typeof body !== 'object' || Array.isArray(body))
    throw new CliError(`${url} answered ${response.status} with something other than a JSON object`, EXIT.usage);
  return { status: response.status, body: body as Record<string, unknown> };
}

/** A client of one control plane's admin API, with the operator token from KEYPLANE_ADMIN_TOKEN. */
export interface AdminApi {
  base: string;
  /** Calls the admin API; a refusal (`ok` not true) throws `Refused` naming `what`. */
  call(
    method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
    path: string,
    what: string,
    body?: unknown,
  ): Promise<Record<string, unknown>>;
}

export function adminApi(controlPlane: string | undefined): AdminApi {
  const base = baseUrl(controlPlane);
  const token = readAdminToken();
  if (!token) throw new CliError("set KEYPLANE_ADMIN_TOKEN to the control plane's admin token", EXIT.usage);
  return {
    base,
    async call(method, path, what, body) {
      const answer = await requestJson(method, `${base}${path}`, { token, ...(body !== undefined ? { body } : {}) });
      if (answer.body['ok'] !== true) throw new Refused(answer, what);
      return answer.body;
    },
  };
}

/** Runs a command body; with --json a refusal's envelope is printed on stdout before the exit code 1. */
export async function withJsonRefusals(
  json: boolean | undefined,
  run: () => Promise<void>,
  print: (line: string) => void,
): Promise<void> {
  try {
    await run();
  } catch (error) {
    if (error instanceof Refused && json) print(JSON.stringify(error.answer.body));
    throw error;
  }
}
