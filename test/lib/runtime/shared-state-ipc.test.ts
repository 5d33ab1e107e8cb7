import t from 'tap';
import { fork } from 'node:child_process';
import { EventEmitter, once } from 'node:events';
import { IpcSharedState, SharedStateHub, type IpcEndpoint } from '#lib/runtime/shared-state/ipc.js';
import { childEnv } from '../../helpers/cli.js';
import { sharedStateSuite } from '../../helpers/shared-state-conformance.js';

// A worker's shared state under `--workers N` without Redis: every operation runs in the primary
// process, reached over a real IPC channel (a forked child plays the primary).
sharedStateSuite('over IPC to the primary', async () => {
  const primary = fork(new URL('../../fixtures/processes/shared-state-hub.ts', import.meta.url), {
    execArgv: process.execArgv,
    env: childEnv(),
  });
  await once(primary, 'message');
  const state = new IpcSharedState(primary as unknown as IpcEndpoint);
  const close = state.close.bind(state);
  return Object.assign(state, {
    close: async () => {
      await close();
      primary.disconnect();
      await once(primary, 'exit');
    },
  });
});

t.test('a worker whose primary is gone gets an error, never a hang', async (t) => {
  const primary = fork(new URL('../../fixtures/processes/shared-state-hub.ts', import.meta.url), {
    execArgv: process.execArgv,
    env: childEnv(),
  });
  await once(primary, 'message');
  const state = new IpcSharedState(primary as unknown as IpcEndpoint);
  t.teardown(() => state.close());
  t.equal(await state.setIfAbsent('k', 'v', 10_000), true);
  primary.kill('SIGKILL');
  await once(primary, 'exit');
  await t.rejects(state.take('k'), /no primary process|did not answer/);
});

t.test("the primary's own publishes reach its workers, and theirs reach it", async (t) => {
  // Both ends in one process: a pair of endpoints wired back to back.
  const toWorker = new EventEmitter();
  const toPrimary = new EventEmitter();
  const endpoint = (inbox: EventEmitter, outbox: EventEmitter): IpcEndpoint => ({
    send: (message, callback) => {
      setImmediate(() => outbox.emit('message', structuredClone(message)));
      callback(null);
    },
    on: (event, listener) => inbox.on(event, listener),
    off: (event, listener) => inbox.off(event, listener),
  });
  const hub = new SharedStateHub();
  hub.attach(endpoint(toPrimary, toWorker));
  const worker = new IpcSharedState(endpoint(toWorker, toPrimary));
  t.teardown(async () => {
    await worker.close();
    await hub.close();
  });
  const heardByWorker: string[] = [];
  const heardByPrimary: string[] = [];
  await worker.subscribe('c', (m) => heardByWorker.push(m));
  await hub.subscribe('c', (m) => heardByPrimary.push(m));
  await hub.publish('c', 'from the primary');
  await worker.publish('c', 'from a worker');
  await new Promise((resolve) => setImmediate(resolve));
  t.same(heardByPrimary, ['from the primary', 'from a worker']);
  t.same(heardByWorker.sort(), ['from a worker', 'from the primary']);
});
