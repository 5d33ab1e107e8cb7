import { createHmac } from 'node:crypto';
import type { ControlPlaneServices } from '../context.js';

/** A keyed hash of an upstream subject: what links and receipts hold, never the subject itself. */
export function subjectHash(
  services: Pick<ControlPlaneServices, 'secrets'>,
  connectionId: string,
  subject: string,
): string {
  return createHmac('sha256', services.secrets.macKey('federation-subject'))
    .update(`${connectionId}\n${subject}`)
    .digest('hex');
}
