import { fail, isKeyplaneError } from '#lib/errors/keyplane-error.js';
import { readClientId, type RawParams } from '#lib/oauth/authorization-request.js';
import { resolveClient } from '../../clients/client-id-documents.js';
import type { StoredClient } from '../../storage/interface.js';
import type { AuthorizeServices } from './request.js';

/** A Client ID Metadata Document that cannot be used: its reason on the refusal page, never a redirect. */
function metadataRefused(error: unknown): never {
  if (!isKeyplaneError(error) || error.reason !== 'invalid_client') throw error;
  throw fail('invalid_client', `The app's metadata document was refused. ${error.message}.`, {
    status: 400,
    cause: error,
  });
}

/** The request's client, or the refusal shown on a page (an unknown client has no redirect URI to trust). */
export async function loadClient(services: AuthorizeServices, params: RawParams): Promise<StoredClient> {
  const clientId = readClientId(params);
  const client = clientId ? await resolveClient(services, clientId).catch(metadataRefused) : null;
  if (client) return client;
  throw fail(
    'unknown_client',
    clientId ? 'The app (client_id) is not registered here.' : 'The request does not name an app (client_id).',
  );
}
