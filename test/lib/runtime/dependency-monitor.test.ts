import t from 'tap';
import { DependencyUnavailableError, type Dependency } from '../../../lib/errors/dependency-outage.js';
import { DependencyMonitor } from '../../../lib/runtime/dependency-monitor.js';
import { manualClock } from '../../helpers/build.js';

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
  const monitor = new DependencyMonitor(clock.now);
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
  const monitor = new DependencyMonitor(manualClock().now);
  const { heard } = listening(monitor);
  monitor.failure('redis', refused());
  monitor.succeeded('postgres');
  t.same(heard, ['down redis refused', 'failed redis'], 'PostgreSQL answering says nothing of Redis');
  t.ok(monitor.isDown('redis'));
  t.notOk(monitor.isDown('postgres'));
});

t.test('records nothing for an error that is no outage, and a classified one only once', async (t) => {
  const monitor = new DependencyMonitor(manualClock().now);
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
