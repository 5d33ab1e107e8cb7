import { spawnSync } from 'node:child_process';

export type Availability = { run: true } | { run: false; reason: string };

/**
 * Whether a real-peer suite (nginx, Caddy) can run: `binary versionArgs…` must exit 0. Without
 * it the suite skips with a visible reason, except under KEYPLANE_REQUIRE_ALL=1 (CI), where a
 * missing peer is a failure.
 */
export function peerAvailability(binary: string, versionArgs: readonly string[], debianPackage: string): Availability {
  const probe = spawnSync(binary, versionArgs, { encoding: 'utf8' });
  if (probe.status === 0) return { run: true };
  const reason = `${binary} is not installed (Debian: ${debianPackage})`;
  if (process.env['KEYPLANE_REQUIRE_ALL'] === '1') throw new Error(`${reason}, and KEYPLANE_REQUIRE_ALL=1 requires it`);
  return { run: false, reason };
}
