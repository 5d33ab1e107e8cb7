// Loaded into each unit-tier test process (test/loader/register.mjs, when KEYPLANE_TEST_TIER=unit):
// the unit tier promises no child processes, no servers and no sockets, so what would start one
// throws instead, naming the rule. A file that needs one is placed in a later tier by its imports
// (test/tiers/tiers.mjs); this catches what the import rules cannot see.
import childProcess from 'node:child_process';
import dgram from 'node:dgram';
import { syncBuiltinESMExports } from 'node:module';
import net from 'node:net';

const refuse = (what) => () => {
  throw new Error(
    `the unit tier runs no ${what} (docs/platform.md#test-tiers); this file belongs in the integration or e2e tier: see test/tiers/tiers.mjs`,
  );
};

for (const name of ['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork'])
  childProcess[name] = refuse('child processes');
net.Server.prototype.listen = refuse('servers');
net.Socket.prototype.connect = refuse('network connections');
dgram.createSocket = refuse('sockets');
syncBuiltinESMExports();
