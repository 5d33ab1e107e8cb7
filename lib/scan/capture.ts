/**
 * What a scan captured, the only input of the posture tests: every test is a pure function over
 * it, so grading is tested (and re-run when the rules change) without a network.
 */

/** One HTTP response as it came off the wire; headers keep their order and duplicates. */
export interface CapturedResponse {
  url: string;
  status: number;
  headers: Array<[name: string, value: string]>;
  /** The body as text, already capped by the fetcher; absent when not read (redirects). */
  body?: string;
  /** False when the TLS certificate did not verify (the fetcher then retried without verification). */
  verified: boolean;
}

export interface Capture {
  /** The URL that was asked for (https). */
  url: string;
  /** The chain that started at `http://host/path`, first request first; null when nothing answered on http. */
  http: CapturedResponse[] | null;
  /** The chain that started at the https URL; null when https did not answer. */
  https: CapturedResponse[] | null;
  /** The answer to a CORS preflight (`OPTIONS` with `Origin: corsOrigin`) at the final URL. */
  cors: CapturedResponse | null;
  corsOrigin: string;
  /** `/crossdomain.xml` and `/clientaccesspolicy.xml` at the final origin, when they answered 200. */
  crossdomain: CapturedResponse | null;
  clientaccesspolicy: CapturedResponse | null;
}

/** Whether a host name is on the browsers' HSTS preload list (and with includeSubDomains). */
export type PreloadLookup = (host: string) => { includeSubDomains: boolean } | null;

export const noPreloadList: PreloadLookup = () => null;

/** All values of a header, in order; names compare case-insensitively. */
export function getHeaders(response: CapturedResponse | null | undefined, name: string): string[] {
  if (!response) return [];
  const lower = name.toLowerCase();
  return response.headers.filter(([n]) => n.toLowerCase() === lower).map(([, v]) => v);
}

export function getFirstHeader(response: CapturedResponse | null | undefined, name: string): string | null {
  return getHeaders(response, name)[0] ?? null;
}

/** The response the header tests read: the final https response when https answered, else the final http one. */
export function autoResponse(capture: Capture): CapturedResponse | null {
  return capture.https?.at(-1) ?? capture.http?.at(-1) ?? null;
}

/** The URL of the response the header tests read. */
export function autoUrl(capture: Capture): URL | null {
  const response = autoResponse(capture);
  if (!response) return null;
  try {
    return new URL(response.url);
  } catch {
    return null;
  }
}
