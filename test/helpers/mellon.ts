import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { findFreePort, waitForPort } from '#lib/runtime/listen.js';

/**
 * Debian's Apache with mod_auth_mellon as a real SAML service provider: its own config in `dir`
 * (no system config), a key and certificate made by openssl, SP metadata written here, and a
 * CGI page under /protected that echoes what mellon learnt from the assertion.
 */
export const APACHE = '/usr/sbin/apache2';
export const MELLON_MODULE = '/usr/lib/apache2/modules/mod_auth_mellon.so';
export const mellonMissing = !existsSync(APACHE) || !existsSync(MELLON_MODULE);

export interface MellonOptions {
  dir: string;
  /** The IdP's metadata XML (Keyplane's /saml/metadata). */
  idpMetadata: string;
  /** SAML attribute name → env name mellon sets as MELLON_<name>. */
  attributes: Record<string, string>;
  /** Mellon's session cookie is `mellon-<variable>` (default `cookie`): two SPs on localhost need two. */
  cookieVariable?: string;
}

export interface RunningMellon {
  url: string;
  entityId: string;
  acsUrl: string;
  sloUrl: string;
  certificatePem: string;
  errorLog(): string;
  stop(): Promise<void>;
}

const MODULES = '/usr/lib/apache2/modules';
const ECHO_CGI = `#!/bin/sh
printf 'Content-Type: text/plain\\r\\n\\r\\n'
echo "NAME_ID=$MELLON_NAME_ID"
echo "ASSURANCE=$MELLON_assurance"
echo "USERNAME=$MELLON_username"
echo "REMOTE_USER=$REMOTE_USER"
`;

async function loopbackV6Free(port: number): Promise<boolean> {
  const { createServer } = await import('node:net');
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '::1', () => probe.close(() => resolve(true)));
  });
}

export async function startMellon({
  dir,
  idpMetadata,
  attributes,
  cookieVariable = 'cookie',
}: MellonOptions): Promise<RunningMellon> {
  const port = await findFreePort();
  // Named localhost like the control plane's issuer: same site, so mellon's SameSite=Lax cookie
  // comes back on the cross-origin POST to its ACS URL.
  const url = `http://localhost:${port}`;
  const entityId = `${url}/mellon/metadata`;
  const acsUrl = `${url}/mellon/postResponse`;
  const sloUrl = `${url}/mellon/logout`;
  // Worker processes drop to `nobody` when the suite runs as root: everything here must be readable.
  chmodSync(dir, 0o755);
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      join(dir, 'sp.key'),
      '-out',
      join(dir, 'sp.crt'),
      '-days',
      '2',
      '-subj',
      '/CN=mellon-test-sp',
    ],
    { stdio: 'pipe' },
  );
  chmodSync(join(dir, 'sp.key'), 0o644);
  const certificatePem = readFileSync(join(dir, 'sp.crt'), 'utf8');
  const certBody = certificatePem.replace(/-----(BEGIN|END) CERTIFICATE-----/g, '').replace(/\s+/g, '');
  writeFileSync(
    join(dir, 'sp-metadata.xml'),
    `<?xml version="1.0"?>
<EntityDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata" xmlns:ds="http://www.w3.org/2000/09/xmldsig#" entityID="${entityId}">
  <SPSSODescriptor AuthnRequestsSigned="true" WantAssertionsSigned="true" protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">
    <KeyDescriptor use="signing"><ds:KeyInfo><ds:X509Data><ds:X509Certificate>${certBody}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></KeyDescriptor>
    <SingleLogoutService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="${sloUrl}"/>
    <NameIDFormat>urn:oasis:names:tc:SAML:2.0:nameid-format:persistent</NameIDFormat>
    <AssertionConsumerService index="0" isDefault="true" Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="${acsUrl}"/>
  </SPSSODescriptor>
</EntityDescriptor>
`,
  );
  writeFileSync(join(dir, 'idp-metadata.xml'), idpMetadata);
  writeFileSync(join(dir, 'echo.cgi'), ECHO_CGI);
  chmodSync(join(dir, 'echo.cgi'), 0o755);
  const root = process.getuid?.() === 0;
  // Chromium may resolve localhost to ::1 first.
  const ipv6 = await loopbackV6Free(port);
  writeFileSync(
    join(dir, 'apache2.conf'),
    `
ServerRoot "${dir}"
DefaultRuntimeDir "${dir}"
PidFile "${dir}/apache2.pid"
Mutex file:${dir} default
Listen 127.0.0.1:${port}
${ipv6 ? `Listen [::1]:${port}\n` : ''}ServerName localhost
${root ? 'User nobody\nGroup nogroup' : ''}
ErrorLog "${dir}/error.log"
LogLevel warn auth_mellon:info
LoadModule mpm_prefork_module ${MODULES}/mod_mpm_prefork.so
LoadModule authn_core_module ${MODULES}/mod_authn_core.so
LoadModule authz_core_module ${MODULES}/mod_authz_core.so
LoadModule authz_user_module ${MODULES}/mod_authz_user.so
LoadModule alias_module ${MODULES}/mod_alias.so
LoadModule cgi_module ${MODULES}/mod_cgi.so
LoadModule headers_module ${MODULES}/mod_headers.so
LoadModule setenvif_module ${MODULES}/mod_setenvif.so
LoadModule auth_mellon_module ${MELLON_MODULE}
StartServers 1
MinSpareServers 1
MaxSpareServers 2
# Mellon marks its login test cookie SameSite=None, which browsers drop without Secure (plain
# http here); without the attribute the cookie is Lax, enough because IdP and SP are same-site.
SetEnvIf Request_URI "^" MELLON_DISABLE_SAMESITE=1
ScriptAlias /protected/echo "${dir}/echo.cgi"
<Directory "${dir}">
  Require all granted
</Directory>
<Location />
  MellonEnable info
  MellonEndpointPath /mellon
  MellonSPPrivateKeyFile "${dir}/sp.key"
  MellonSPCertFile "${dir}/sp.crt"
  MellonSPMetadataFile "${dir}/sp-metadata.xml"
  MellonIdPMetadataFile "${dir}/idp-metadata.xml"
  MellonSecureCookie Off
  MellonVariable "${cookieVariable}"
  MellonSessionLength 600
${Object.entries(attributes)
  .map(([saml, env]) => `  MellonSetEnv "${env}" "${saml}"`)
  .join('\n')}
</Location>
<Location /protected>
  AuthType Mellon
  MellonEnable auth
  Require valid-user
</Location>
`,
  );
  // Its own process group: on SIGTERM Apache signals its whole group, which would otherwise be ours.
  const child = spawn(APACHE, ['-f', join(dir, 'apache2.conf'), '-DFOREGROUND'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const errorLog = () => {
    try {
      return output + readFileSync(join(dir, 'error.log'), 'utf8');
    } catch {
      return output;
    }
  };
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  try {
    await waitForPort(port, '127.0.0.1', 20_000);
  } catch (error) {
    await stop();
    throw new Error(`apache2 did not start: ${(error as Error).message}\n${errorLog()}`, { cause: error });
  }
  return { url, entityId, acsUrl, sloUrl, certificatePem, errorLog, stop };
}
