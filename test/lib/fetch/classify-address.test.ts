import t from 'tap';
import { classifyAddress } from '#lib/fetch/classify-address.js';

t.test('finds every non-public IPv4 class', async (t) => {
  const cases: Record<string, string> = {
    '127.0.0.1': 'loopback',
    '127.255.0.9': 'loopback',
    '10.1.2.3': 'private',
    '172.16.0.1': 'private',
    '172.31.255.254': 'private',
    '192.168.1.1': 'private',
    '169.254.1.1': 'link_local',
    '169.254.169.254': 'metadata',
    '100.100.100.200': 'metadata',
    '192.0.0.192': 'metadata',
    '100.64.0.1': 'shared',
    '100.127.255.254': 'shared',
    '224.0.0.1': 'multicast',
    '239.255.255.250': 'multicast',
    '0.0.0.0': 'unspecified',
    '0.1.2.3': 'unspecified',
    '255.255.255.255': 'reserved',
    '240.0.0.1': 'reserved',
    '192.0.2.10': 'reserved',
    '198.18.0.1': 'reserved',
    '203.0.113.7': 'reserved',
  };
  for (const [address, expected] of Object.entries(cases)) t.equal(classifyAddress(address), expected, address);
});

t.test('finds every non-public IPv6 class, including forms that carry an IPv4 address', async (t) => {
  const cases: Record<string, string> = {
    '::1': 'loopback',
    '[::1]': 'loopback',
    '::': 'unspecified',
    'fc00::1': 'private',
    'fd12:3456::1': 'private',
    'fd00:ec2::254': 'metadata',
    'fe80::1': 'link_local',
    'fe80::1%eth0': 'link_local',
    'fec0::1': 'private',
    'ff02::1': 'multicast',
    '::ffff:127.0.0.1': 'loopback',
    '::ffff:7f00:1': 'loopback',
    '::FFFF:10.0.0.1': 'private',
    '::ffff:169.254.169.254': 'metadata',
    '64:ff9b::a9fe:a9fe': 'metadata',
    '64:ff9b::10.0.0.1': 'private',
    '64:ff9b:1::1': 'private',
    '2002:7f00:1::1': 'loopback',
    '2002:c0a8:101::': 'private',
    '::127.0.0.1': 'reserved',
    '2001:db8::1': 'reserved',
    '2001::1': 'reserved',
    '100::1': 'reserved',
    '4000::1': 'reserved',
  };
  for (const [address, expected] of Object.entries(cases)) t.equal(classifyAddress(address), expected, address);
});

t.test('lets public unicast addresses through', async (t) => {
  for (const address of [
    '93.184.215.14',
    '8.8.8.8',
    '172.32.0.1',
    '100.128.0.1',
    '2606:4700::6810:85e5',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
    '2002:808:808::1',
  ]) {
    t.equal(classifyAddress(address), null, address);
  }
});

t.test('calls anything that is not an IP address invalid', async (t) => {
  t.equal(classifyAddress('localhost'), 'invalid');
  t.equal(classifyAddress('example.com'), 'invalid');
});
