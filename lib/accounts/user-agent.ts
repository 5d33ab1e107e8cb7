import Bowser from 'bowser';

/** The longest User-Agent kept: real ones are a few hundred characters; anything longer is noise. */
export const USER_AGENT_MAX = 512;

export interface DeviceDescription {
  /** "Chrome 139", or null when the User-Agent names no browser we know. */
  browser: string | null;
  /** "macOS", "Android", "Linux", or null (no version: browsers freeze it in the User-Agent). */
  os: string | null;
  /** What a person reads: "Chrome 139 on macOS", "Firefox on Linux", or "Unknown browser". */
  label: string;
}

/** The User-Agent worth keeping: trimmed, capped, or null when there is none. */
export function keptUserAgent(header: string | string[] | undefined): string | null {
  const value = (Array.isArray(header) ? header[0] : header)?.trim();
  return value ? value.slice(0, USER_AGENT_MAX) : null;
}

const majorOf = (version: string | undefined) => version?.split('.')[0];

/**
 * Names a browser the way GitHub's and Google's device lists do, through bowser (a maintained
 * User-Agent parser): the browser with its major version, and the operating system without its
 * version, which browsers now freeze in the User-Agent (UA reduction).
 */
export function describeUserAgent(userAgent: string | null): DeviceDescription {
  if (!userAgent) return { browser: null, os: null, label: 'Unknown browser' };
  const parsed = Bowser.parse(userAgent);
  // bowser's fallback for a User-Agent it does not know is its first token: "Mozilla" names nothing.
  const known = parsed.browser.name && parsed.browser.name !== 'Mozilla' ? parsed.browser.name : null;
  const name = known?.replace(/^Headless /, '') || null;
  const major = majorOf(parsed.browser.version);
  // Not a browser bowser knows (curl, an SDK): its first product token, "curl 8".
  const product = /^(?!Mozilla\/)([A-Za-z][\w.-]{0,40})\/(\d+)/.exec(userAgent);
  const browser = name ? `${name}${major ? ` ${major}` : ''}` : product ? `${product[1]} ${product[2]}` : null;
  const os = parsed.os.name || null;
  const label = `${browser ?? 'Unknown browser'}${os ? ` on ${os}` : ''}`;
  return { browser, os, label };
}
