// A fastify app whose /notes route needs a Keyplane sign-in and /admin a step-up.
// Run: KEYPLANE_ISSUER=… CLIENT_ID=… CLIENT_SECRET=… COOKIE_SECRET=… npx tsx sdk/examples/fastify.ts
import Fastify from 'fastify';
import { createClient, keyplaneFastify } from '@keyplane/sdk';

const client = createClient({
  issuer: process.env.KEYPLANE_ISSUER!,
  clientId: process.env.CLIENT_ID!,
  clientSecret: process.env.CLIENT_SECRET!,
  redirectUri: 'http://127.0.0.1:3000/callback',
});
const kp = keyplaneFastify(client, { cookieSecrets: [process.env.COOKIE_SECRET!] });

const app = Fastify();
await app.register(kp.plugin);
app.get('/notes', { preHandler: kp.requireAuth }, async (req) => ({ hello: req.keyplane!.sub }));
app.get('/admin', { preHandler: kp.requireAssurance('sensitive') }, async () => ({ admin: true }));
await app.listen({ port: 3000, host: '127.0.0.1' });
