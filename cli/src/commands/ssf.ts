import type { Command } from 'commander';
import { adminApi, withJsonRefusals } from '../admin-api.js';
import { CliError, EXIT } from '../exit.js';
import { progress, say } from '../io.js';

interface Options {
  controlPlane?: string;
  json?: boolean;
}

type Stream = {
  streamId: string;
  clientId: string;
  status: string;
  delivery: string;
  counts: { subjects: number; pending: number; delivered: number; dead: number };
};

/** What each status command sets (`PATCH /admin/ssf/streams/{id}`). */
const STATUS_COMMANDS = { enable: 'enabled', pause: 'paused', disable: 'disabled' } as const;

function requireId(streamId: string): string {
  if (!/^[A-Za-z0-9_-]{1,100}$/.test(streamId)) throw new CliError('name the stream by its id', EXIT.usage);
  return streamId;
}

const line = (s: Stream) =>
  `${s.streamId}\t${s.clientId}\t${s.delivery}\t${s.status}\t${s.counts.subjects} subject(s), ${s.counts.pending} pending, ${s.counts.delivered} delivered, ${s.counts.dead} dead`;

/** `keyplane ssf streams list`: every receiver's streams, paging the admin API to the end. */
export async function listSsfStreams(options: Options): Promise<void> {
  const api = adminApi(options.controlPlane);
  progress(`listing Shared Signals streams at ${api.base}`);
  const streams: Stream[] = [];
  for (let after: string | null = null; ;) {
    const query: string = after === null ? '' : `&after=${encodeURIComponent(after)}`;
    const page = await api.call('GET', `/admin/ssf/streams?limit=200${query}`, 'cannot list streams');
    streams.push(...(page['streams'] as Stream[]));
    after = page['next'] as string | null;
    if (after === null) break;
  }
  if (options.json) return say(JSON.stringify({ ok: true, streams }));
  for (const s of streams) say(line(s));
  progress(`${streams.length} stream(s)`);
}

/** `keyplane ssf streams enable|pause|disable STREAM_ID`. */
export async function setSsfStreamStatus(
  streamId: string,
  command: keyof typeof STATUS_COMMANDS,
  options: Options,
): Promise<void> {
  const status = STATUS_COMMANDS[command];
  const api = adminApi(options.controlPlane);
  progress(`setting ${requireId(streamId)} ${status} at ${api.base}`);
  const done = await api.call('PATCH', `/admin/ssf/streams/${streamId}`, `cannot ${command} ${streamId}`, { status });
  if (options.json) return say(JSON.stringify(done));
  say(`${streamId} is ${String(done['status'])}, receipt ${String(done['receipt'])}`);
}

/** `keyplane ssf streams delete STREAM_ID`: the stream, its subjects and its undelivered events. */
export async function deleteSsfStream(streamId: string, options: Options): Promise<void> {
  const api = adminApi(options.controlPlane);
  progress(`deleting ${requireId(streamId)} at ${api.base}`);
  const done = await api.call('DELETE', `/admin/ssf/streams/${streamId}`, `cannot delete ${streamId}`);
  if (options.json) return say(JSON.stringify(done));
  say(`deleted ${streamId}, receipt ${String(done['receipt'])}`);
}

export function ssfCommands(program: Command): void {
  const streams = program
    .command('ssf')
    .description(
      "Shared Signals, as the operator, through a running control plane's admin API (token from KEYPLANE_ADMIN_TOKEN).",
    )
    .command('streams')
    .description(
      "List every receiver's streams, set one's status or delete it (docs/events.md#shared-signals-streams-the-operators-view).",
    );
  const common = (command: Command) =>
    command
      .option('--control-plane <url>', 'base URL (issuer) of the control plane')
      .option('--json', 'print the result (or the refusal) as one JSON object');
  common(
    streams
      .command('list')
      .description(
        'One tab-separated line per stream: id, receiver client, delivery, status, counts. Exit 0 done, 1 refused, 2 usage or network error.',
      ),
  ).action((options: Options) => withJsonRefusals(options.json, () => listSsfStreams(options), say));
  for (const [command, status] of Object.entries(STATUS_COMMANDS) as Array<[keyof typeof STATUS_COMMANDS, string]>)
    common(
      streams
        .command(command)
        .description(
          `Set the stream ${status} (409 conflict when it is already). Exit 0 done, 1 refused, 2 usage or network error.`,
        )
        .argument('<streamId>', 'the stream id'),
    ).action((streamId: string, options: Options) =>
      withJsonRefusals(options.json, () => setSsfStreamStatus(streamId, command, options), say),
    );
  common(
    streams
      .command('delete')
      .description(
        'Delete the stream with its subjects and undelivered events. Exit 0 done, 1 refused, 2 usage or network error.',
      )
      .argument('<streamId>', 'the stream id'),
  ).action((streamId: string, options: Options) =>
    withJsonRefusals(options.json, () => deleteSsfStream(streamId, options), say),
  );
}
