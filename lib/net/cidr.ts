import { BlockList, isIP } from 'node:net';

/** Builds a matcher for a list of IPs and CIDR ranges (IPv4 and IPv6). Throws on a malformed entry. */
export function compileAddressList(entries: readonly string[]): (address: string) => boolean {
  const list = new BlockList();
  for (const entry of entries) {
    const [address, prefix] = entry.split('/');
    const family = isIP(address ?? '');
    if (!address || family === 0) throw new Error(`${entry} is not an IP address or CIDR range`);
    const type = family === 4 ? 'ipv4' : 'ipv6';
    if (prefix === undefined) list.addAddress(address, type);
    else {
      const bits = Number(prefix);
      if (!/^\d+$/.test(prefix) || bits > (family === 4 ? 32 : 128))
        throw new Error(`${entry} has an invalid prefix length`);
      list.addSubnet(address, bits, type);
    }
  }
  return (address: string) => {
    const mapped = address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
    const family = isIP(mapped);
    if (family === 0) return false;
    return list.check(mapped, family === 4 ? 'ipv4' : 'ipv6');
  };
}

export function isValidAddressEntry(entry: string): boolean {
  try {
    compileAddressList([entry]);
    return true;
  } catch {
    return false;
  }
}
