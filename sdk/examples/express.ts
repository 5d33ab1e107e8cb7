// An Express app whose /notes route needs a Keyplane sign-in and /admin a step-up.
// Run: KEYPLANE_ISSUER=… CLIENT_ID=… CLIENT_SECRET=… COOKIE_SECRET=… npx tsx sdk/examples/express.ts
import express from 'express';
import { createClient, keyplaneExpress, type KeyplaneRequest } from '@keyplane/sdk';

const client = createClient({
  issuer: process.env.KEYPLANE_ISSUER!,
  clientId: process.env.CLIENT_ID!,
  clientSecret: process.env.CLIENT_SECRET!,
  redirectUri: 'http://127.0.0.1:3000/callback',
});
const kp = keyplaneExpress(client, { cookieSecrets: [process.env.COOKIE_SECRET!] });

const app = express();
app.use(kp.middleware);
app.get('/notes', kp.requireAuth, (req, res) => {
  res.json({ hello: (req as KeyplaneRequest).keyplane!.sub });
});
app.get('/admin', kp.requireAssurance('sensitive'), (_req, res) => {
  res.json({ admin: true });
});
app.listen(3000, '127.0.0.1');
