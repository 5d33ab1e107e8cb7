import dns2 from 'dns2';
import type { AddressInfo } from 'node:net';

interface Tap {
  teardown(fn: () => unknown): void;
}

/**
 * A local authoritative DNS server (dns2) on a free UDP port of 127.0.0.1, answering TXT
 * queries from `records` (name → list of records, each a list of character-strings).
 */
export async function startTxtServer(t: Tap, records: Map<string, string[][]>): Promise<{ address: string }> {
  const { Packet } = dns2;
  const server = dns2.createServer({
    udp: true,
    handle: (request, send) => {
      const response = Packet.createResponseFromRequest(request);
      const [question] = request.questions;
      if (!question) return send(response);
      for (const data of records.get(String(question.name).toLowerCase()) ?? []) {
        // dns2's Resource type has no TXT data member; the packet encoder takes a list of strings.
        response.answers.push({
          name: question!.name,
          type: Packet.TYPE.TXT,
          class: Packet.CLASS.IN,
          ttl: 1,
          data,
        } as never);
      }
      send(response);
    },
  });
  const listening = await server.listen({ udp: { port: 0, address: '127.0.0.1' } });
  t.teardown(() => server.close());
  const port = (listening.udp as AddressInfo).port;
  return { address: `127.0.0.1:${port}` };
}
