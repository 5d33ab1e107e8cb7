import type { FastifyInstance } from 'fastify';
import { fail } from '#lib/errors/keyplane-error.js';
import { errorResponses } from '../../http/schemas.js';
import type { TransparencyLog } from '../../ledger/transparency-log.js';
import { addCheckpoint, logWitness } from '../../ledger/witness.js';

/** tlog-witness: a request is a few lines, at most 63 proof hashes and a checkpoint with its signatures. */
const ADD_CHECKPOINT_BODY_LIMIT = 16 * 1024;
const text = { type: 'string' } as const;
const binary = { type: 'string', format: 'binary' } as const;

/**
 * The ledger in the C2SP formats (docs/ledger.md#verifying-with-transparency-tools): the checkpoint
 * as a signed note, the tree as tlog-tiles, and this instance as a tlog-witness of other logs.
 */
export default async function transparencyRoutes(app: FastifyInstance, options: { log: TransparencyLog }) {
  const { log } = options;
  // Read once: a malformed `ledger.witness.logs` key stops the start.
  const witness = logWitness(app.kp, log.noteKeys);

  app.addContentTypeParser(
    'text/plain',
    { parseAs: 'string', bodyLimit: ADD_CHECKPOINT_BODY_LIMIT },
    (_r, body, done) => done(null, body),
  );

  app.get(
    '/receipts/checkpoint',
    {
      schema: {
        tags: ['receipts'],
        summary:
          'The latest checkpoint as a C2SP signed note (tlog-checkpoint), with the cosignatures of the configured witnesses',
        produces: ['text/plain'],
        response: { 200: text, ...errorResponses },
      },
    },
    async (_request, reply) => {
      const note = await log.checkpoint();
      if (!note) throw fail('unknown_epoch', 'no epoch has been sealed yet');
      return reply.type('text/plain; charset=utf-8').send(note);
    },
  );

  app.get(
    '/receipts/checkpoint/key',
    {
      config: {
        cache: 'public, max-age=300',
        discovery: { metadata: { keyplane_ledger_note_verifier_key: () => log.noteKeys.logVerifierKeys()[0] } },
      },
      schema: {
        tags: ['receipts'],
        summary: "The log's note verifier keys (C2SP vkey), newest first, one a line: two while a rotation overlaps",
        produces: ['text/plain'],
        response: { 200: text, ...errorResponses },
      },
    },
    async (_request, reply) =>
      reply.type('text/plain; charset=utf-8').send(
        log.noteKeys
          .logVerifierKeys()
          .map((k) => `${k}\n`)
          .join(''),
      ),
  );

  app.get(
    '/receipts/witness/key',
    {
      config: { cache: 'public, max-age=300' },
      schema: {
        tags: ['receipts'],
        summary: "This instance's witness verifier key (C2SP vkey, cosignature/v1), apart from the log's note key",
        produces: ['text/plain'],
        response: { 200: text, ...errorResponses },
      },
    },
    async (_request, reply) => reply.type('text/plain; charset=utf-8').send(`${log.noteKeys.witness().vkey}\n`),
  );

  app.get<{ Params: { '*': string } }>(
    '/receipts/tile/*',
    {
      schema: {
        tags: ['receipts'],
        summary:
          'The tree as C2SP tlog-tiles: `tile/<L>/<N>[.p/<W>]` hashes, `tile/entries/<N>[.p/<W>]` the tree keys (never receipt hashes)',
        produces: ['application/octet-stream'],
        response: { 200: binary, ...errorResponses },
      },
    },
    async (request, reply) => {
      const { body, full } = await log.tile(`tile/${request.params['*']}`);
      // tlog-tiles: a full tile never changes; a partial one is replaced by a wider one soon.
      reply.header('cache-control', full ? 'public, max-age=31536000, immutable' : 'public, max-age=60');
      return reply.type('application/octet-stream').send(body);
    },
  );

  app.post<{ Body: string }>(
    '/receipts/add-checkpoint',
    {
      bodyLimit: ADD_CHECKPOINT_BODY_LIMIT,
      schema: {
        tags: ['receipts'],
        summary:
          "C2SP tlog-witness: cosigns another log's checkpoint when it extends the last one cosigned (`ledger.witness.logs`)",
        consumes: ['text/plain'],
        produces: ['text/plain', 'text/x.tlog.size'],
        response: { 200: text, 409: {}, ...errorResponses },
      },
    },
    async (request, reply) => {
      if (typeof request.body !== 'string') throw fail('unsupported_media_type', 'the body is text/plain');
      const answer = await addCheckpoint(witness, request.body);
      if ('heldSize' in answer) return reply.code(409).type('text/x.tlog.size').send(`${answer.heldSize}\n`);
      return reply.type('text/plain; charset=utf-8').send(answer.cosignature);
    },
  );
}
