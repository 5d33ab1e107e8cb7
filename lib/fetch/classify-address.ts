import { BlockList, isIP } from 'node:net';

/** Why an address is not a public internet address; `null` from {@link classifyAddress} means public. */
export type AddressClass =
  'loopback' | 'private' | 'link_local' | 'metadata' | 'shared' | 'multicast' | 'unspecified' | 'reserved' | 'invalid';

type Range = readonly [string, number, AddressClass];

// Cloud instance-metadata endpoints answer on these exact addresses (AWS, GCP, Azure on
// 169.254.169.254; AWS IPv6 on fd00:ec2::254; Alibaba on 100.100.100.200; Oracle on 192.0.0.192).
const METADATA_V4 = ['169.254.169.254', '100.100.100.200', '192.0.0.192'];
const METADATA_V6 = 'fd00:ec2::254';

// IANA IPv4 Special-Purpose Address Registry (RFC 6890 and its updates).
const V4_RANGES: Range[] = [
  ['0.0.0.0', 8, 'unspecified'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'shared'], // RFC 6598 carrier-grade NAT
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link_local'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'reserved'],
  ['192.0.2.0', 24, 'reserved'],
  ['192.88.99.0', 24, 'reserved'],
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'reserved'],
  ['198.51.100.0', 24, 'reserved'],
  ['203.0.113.0', 24, 'reserved'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'], // includes 255.255.255.255
];

// IANA IPv6 Special-Purpose Address Registry; the forms that embed an IPv4 address are handled
// before these ranges are consulted.
const V6_RANGES: Range[] = [
  ['::', 128, 'unspecified'],
  ['::1', 128, 'loopback'],
  ['::', 96, 'reserved'], // deprecated IPv4-compatible addresses
  ['64:ff9b:1::', 48, 'private'], // RFC 8215 local-use NAT64
  ['100::', 64, 'reserved'], // RFC 6666 discard
  ['2001::', 23, 'reserved'], // IETF protocol assignments, Teredo included
  ['2001:db8::', 32, 'reserved'], // documentation
  ['fc00::', 7, 'private'], // RFC 4193 unique local
  ['fe80::', 10, 'link_local'],
  ['fec0::', 10, 'private'], // deprecated site-local
  ['ff00::', 8, 'multicast'],
];

function listOf(ranges: Range[], type: 'ipv4' | 'ipv6'): Array<[BlockList, AddressClass]> {
  return ranges.map(([network, prefix, kind]) => {
    const list = new BlockList();
    list.addSubnet(network, prefix, type);
    return [list, kind];
  });
}

const v4Lists = listOf(V4_RANGES, 'ipv4');
const v6Lists = listOf(V6_RANGES, 'ipv6');
const globalUnicast = new BlockList();
globalUnicast.addSubnet('2000::', 3, 'ipv6');

/** The 16 bytes of an IPv6 address (with or without a trailing dotted IPv4 part). */
function ipv6Bytes(address: string): number[] {
  let text = address;
  const tail: number[] = [];
  const lastColon = text.lastIndexOf(':');
  if (text.slice(lastColon + 1).includes('.')) {
    tail.push(
      ...text
        .slice(lastColon + 1)
        .split('.')
        .map(Number),
    );
    text = `${text.slice(0, lastColon + 1)}0:0`;
  }
  const [head, rest] = text.includes('::') ? (text.split('::') as [string, string]) : [text, undefined];
  const groups = (part: string | undefined) => (part ? part.split(':').map((group) => parseInt(group, 16)) : []);
  const before = groups(head);
  const after = groups(rest);
  const words =
    rest === undefined ? before : [...before, ...new Array<number>(8 - before.length - after.length).fill(0), ...after];
  const bytes = words.flatMap((word) => [word >> 8, word & 0xff]);
  if (tail.length === 4) bytes.splice(12, 4, ...tail);
  return bytes;
}

const metadataV6Bytes = ipv6Bytes(METADATA_V6).join();

function classifyV4(address: string): AddressClass | null {
  if (METADATA_V4.includes(address)) return 'metadata';
  for (const [list, kind] of v4Lists) if (list.check(address, 'ipv4')) return kind;
  return null;
}

/**
 * Says whether an IP address may be the target of a server-side fetch: `null` for a public
 * unicast address, else the class that makes it off limits. IPv6 forms that carry an IPv4
 * address (IPv4-mapped `::ffff:a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) are judged
 * by the IPv4 address they reach. Host names are not addresses: resolve them first.
 */
export function classifyAddress(input: string): AddressClass | null {
  const address = input
    .replace(/^\[|\]$/g, '')
    .replace(/%.*$/, '')
    .toLowerCase();
  const family = isIP(address);
  if (family === 4) return classifyV4(address);
  if (family !== 6) return 'invalid';
  const bytes = ipv6Bytes(address);
  const embedded = (offset: number) => bytes.slice(offset, offset + 4).join('.');
  const zeros = (from: number, to: number) => bytes.slice(from, to).every((byte) => byte === 0);
  // RFC 4291 §2.5.5.2 IPv4-mapped.
  if (zeros(0, 10) && bytes[10] === 0xff && bytes[11] === 0xff) return classifyV4(embedded(12));
  // RFC 6052 well-known NAT64 prefix 64:ff9b::/96.
  if (bytes[0] === 0 && bytes[1] === 0x64 && bytes[2] === 0xff && bytes[3] === 0x9b && zeros(4, 12))
    return classifyV4(embedded(12));
  // RFC 3056 6to4: 2002:AABB:CCDD::/48 routes to AA.BB.CC.DD.
  if (bytes[0] === 0x20 && bytes[1] === 0x02) return classifyV4(embedded(2)) ?? null;
  if (bytes.join() === metadataV6Bytes) return 'metadata';
  for (const [list, kind] of v6Lists) if (list.check(address, 'ipv6')) return kind;
  // Everything outside 2000::/3 is unassigned or special (RFC 4291 §2.4).
  return globalUnicast.check(address, 'ipv6') ? null : 'reserved';
}
