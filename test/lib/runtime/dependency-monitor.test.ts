import t from 'tap';
import { DependencyUnavailableError, type Dependency } from '#lib/errors/dependency-outage.js';
import { DependencyMonitor } from '#lib/runtime/dependency-monitor.js';
import { manualClock } from '../../helpers/build.js';
import { until } from '../../helpers/own-process.js';

const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });

function listening(monitor: DependencyMonitor) {
  const heard: string[] = [];
  const stop = monitor.listen({
    down: (dependency, failure) => heard.push(`down ${dependency} ${failure.kind}`),
    up: (dependency, downMs) => heard.push(`up ${dependency} ${downMs}`),
    failed: (dependency: Dependency) => heard.push(`failed ${dependency}`),
  });
  return { heard, stop };
}

t.test('announces an outage once when it begins and once when it ends, counting every failure', async (t) => {
  const clock = manualClock();
  const monitor = new DependencyMonitor({ now: clock.now, settleMs: 0 });
  const { heard } = listening(monitor);
  for (let i = 0; i < 3; i++) {
    const failure = monitor.failure('postgres', refused());
    t.type(failure, DependencyUnavailableError);
    clock.advance(1000);
  }
  t.ok(monitor.isDown('postgres'));
  monitor.succeeded('postgres');
  monitor.succeeded('postgres');
  t.same(heard, ['down postgres refused', 'failed postgres', 'failed postgres', 'failed postgres', 'up postgres 3000']);
  t.notOk(monitor.isDown('postgres'));
});

t.test('keeps each dependency apart', async (t) => {
  const monitor = new DependencyMonitor({ now: manualClock().now, settleMs: 0 });
  const { heard } = listening(monitor);
  monitor.failure('redis', refused());
  monitor.succeeded('postgres');
  t.same(heard, ['down redis refused', 'failed redis'], 'PostgreSQL answering says nothing of Redis');
  t.ok(monitor.isDown('redis'));
  t.notOk(monitor.isDown('postgres'));
});

t.test('records nothing for an error that is no outage, and a classified one only once', async (t) => {
  const monitor = new DependencyMonitor({ now: manualClock().now, settleMs: 0 });
  const { heard, stop } = listening(monitor);
  t.equal(monitor.failure('postgres', Object.assign(new Error('duplicate key'), { code: '23505' })), null);
  t.same(heard, []);
  const failure = monitor.failure('postgres', refused())!;
  t.equal(monitor.failure('postgres', failure), failure, 'passed up through a transaction: the same error');
  t.same(heard, ['down postgres refused', 'failed postgres']);
  monitor.record(new DependencyUnavailableError('postgres', 'timeout', 'slow'));
  t.same(heard.slice(2), ['failed postgres'], 'a failure made by the caller is counted, the outage already on');
  stop();
  monitor.succeeded('postgres');
  t.equal(heard.length, 3, 'a listener that stopped hears nothing more');
});

t.test('an outage is over only once the dependency answered for the settle period', async (t) => {
  const clock = manualClock();
  const monitor = new DependencyMonitor({ now: clock.now, settleMs: 30 });
  const { heard } = listening(monitor);
  monitor.failure('redis', refused());
  clock.advance(1000);
  monitor.succeeded('redis');
  clock.advance(500);
  monitor.failure('redis', refused());
  t.same(heard, ['down redis refused', 'failed redis', 'failed redis'], 'a failover that flaps is one outage');
  t.ok(monitor.isDown('redis'));
  clock.advance(2000);
  monitor.succeeded('redis');
  clock.advance(100);
  monitor.succeeded('redis');
  await until('the outage settles', async () => (monitor.isDown('redis') ? undefined : true));
  t.same(heard.slice(3), ['up redis 3500'], 'counted from the first failure to the answer that lasted');
});
