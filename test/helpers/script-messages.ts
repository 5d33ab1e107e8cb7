/** The translated lines a page hands its scripts (layout.ts `scriptMessages`, docs/i18n.md): its JSON block. */
export function scriptMessages(body: string): Record<string, any> {
  const match = /<script type="application\/json" id="kp-messages" nonce="[^"]+">([^<]*)<\/script>/.exec(body);
  if (!match) throw new Error('no kp-messages block');
  return JSON.parse(match[1]!);
}
