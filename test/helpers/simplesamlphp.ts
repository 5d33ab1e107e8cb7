import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { freePort } from './free-port.js';
import { spawnOwn } from './own-process.js';
import { until } from './until.js';

/**
 * SimpleSAMLphp (Debian `simplesamlphp`) as the upstream SAML 2.0 IdP of a connection, under PHP's
 * built-in server on http://localhost:<port>, with its own configuration in `dir` (the system's
 * /etc/simplesamlphp is left alone): users of its `exampleauth:UserPass` source, a persistent
 * NameID made from `uid`, the Response and the assertion signed (RSA-SHA256), and service
 * providers added from their metadata while the test runs.
 */
export const SSP_WWW = '/usr/share/simplesamlphp/www';
export const simpleSamlMissing = !existsSync(SSP_WWW) || !existsSync('/usr/bin/php');

export interface SimpleSamlUser {
  password: string;
  attributes: Record<string, string[]>;
}

export interface RunningSimpleSaml {
  base: string;
  metadataUrl: string;
  metadataXml(): Promise<string>;
  /** Registers a service provider from its metadata XML (its ACS, SingleLogoutService, signing certificates). */
  addServiceProvider(xml: string): void;
  stop(): Promise<void>;
}

/** PHP literal of a JSON-like value. */
function php(value: unknown): string {
  if (typeof value === 'string') return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
  if (Array.isArray(value)) return `[${value.map(php).join(', ')}]`;
  if (value !== null && typeof value === 'object')
    return `[${Object.entries(value)
      .map(([k, v]) => `${php(k)} => ${php(v)}`)
      .join(', ')}]`;
  return JSON.stringify(value);
}

const attr = (tag: string, name: string) => new RegExp(`\\b${name}="([^"]*)"`).exec(tag)?.[1];

export async function startSimpleSaml(dir: string, users: Record<string, SimpleSamlUser>): Promise<RunningSimpleSaml> {
  const port = await freePort();
  const base = `http://localhost:${port}`;
  for (const sub of ['config', 'metadata', 'cert', 'data', 'tmp', 'log', 'sessions']) mkdirSync(join(dir, sub));
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '30', '-subj', '/CN=simplesamlphp-idp'].concat([
      '-keyout',
      join(dir, 'cert', 'idp.key'),
      '-out',
      join(dir, 'cert', 'idp.crt'),
    ]),
    { stdio: 'pipe' },
  );
  writeFileSync(
    join(dir, 'config', 'config.php'),
    `<?php
$config = ${php({
      baseurlpath: `${base}/`,
      certdir: `${dir}/cert/`,
      loggingdir: `${dir}/log/`,
      datadir: `${dir}/data/`,
      tempdir: `${dir}/tmp/`,
      metadatadir: `${dir}/metadata/`,
      technicalcontact_name: 'Keyplane tests',
      technicalcontact_email: 'tests@example.invalid',
      secretsalt: randomBytes(16).toString('hex'),
      'auth.adminpassword': randomBytes(8).toString('hex'),
      timezone: 'UTC',
      'logging.handler': 'file',
      'logging.logfile': 'simplesamlphp.log',
      'enable.saml20-idp': true,
      'module.enable': { exampleauth: true, core: true, saml: true },
      'session.cookie.name': `SSPSession${port}`,
      'session.phpsession.cookiename': `SSPPHPSESSID${port}`,
      'session.authtoken.cookiename': `SSPAuthToken${port}`,
      'session.cookie.secure': false,
      'session.phpsession.savepath': `${dir}/sessions`,
      'store.type': 'phpsession',
      'language.default': 'en',
    })};
$config['logging.level'] = SimpleSAML\\Logger::WARNING;
$config['session.cookie.samesite'] = null;
`,
  );
  const userpass: Record<string, Record<string, string[]>> = {};
  for (const [name, user] of Object.entries(users))
    userpass[`${name}:${user.password}`] = { uid: [name], ...user.attributes };
  writeFileSync(
    join(dir, 'config', 'authsources.php'),
    `<?php\n$config = ['example-userpass' => array_merge(['exampleauth:UserPass'], ${php(userpass)})];\n`,
  );
  writeFileSync(
    join(dir, 'metadata', 'saml20-idp-hosted.php'),
    `<?php
$metadata['__DYNAMIC:1__'] = ${php({
      host: '__DEFAULT__',
      privatekey: 'idp.key',
      certificate: 'idp.crt',
      auth: 'example-userpass',
      'saml20.sign.response': true,
      'saml20.sign.assertion': true,
      'signature.algorithm': 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256',
      NameIDFormat: ['urn:oasis:names:tc:SAML:2.0:nameid-format:persistent'],
      'attributes.NameFormat': 'urn:oasis:names:tc:SAML:2.0:attrname-format:basic',
      authproc: {
        10: {
          class: 'saml:AttributeNameID',
          attribute: 'uid',
          Format: 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent',
        },
      },
    })};
`,
  );
  writeFileSync(join(dir, 'metadata', 'saml20-sp-remote.php'), '<?php\n');
  // PHP's built-in server: SimpleSAMLphp's www/ with PATH_INFO for module.php/… and saml2/idp/….php.
  writeFileSync(
    join(dir, 'router.php'),
    `<?php
$path = parse_url($_SERVER['REQUEST_URI'], PHP_URL_PATH);
if (preg_match('#^(/.*?\\.php)(/.*)?$#', $path, $m) && is_file('${SSP_WWW}' . $m[1])) {
  $_SERVER['SCRIPT_NAME'] = $m[1]; $_SERVER['PHP_SELF'] = $path; $_SERVER['SCRIPT_FILENAME'] = '${SSP_WWW}' . $m[1];
  if (isset($m[2])) { $_SERVER['PATH_INFO'] = $m[2]; } else { unset($_SERVER['PATH_INFO']); }
  chdir(dirname('${SSP_WWW}' . $m[1]));
  require '${SSP_WWW}' . $m[1];
  return true;
}
return false;
`,
  );
  const server = spawnOwn('env', [
    `SIMPLESAMLPHP_CONFIG_DIR=${join(dir, 'config')}`,
    'php',
    '-S',
    `127.0.0.1:${port}`,
    '-t',
    SSP_WWW,
    join(dir, 'router.php'),
  ]);
  const metadataUrl = `${base}/saml2/idp/metadata.php`;
  const metadataXml = async () => (await fetch(metadataUrl)).text();
  try {
    await until(
      'SimpleSAMLphp to serve its metadata',
      async () => ((await metadataXml()).includes('EntityDescriptor') ? true : undefined),
      15_000,
    );
  } catch (error) {
    await server.stop();
    throw new Error(`${(error as Error).message}: ${server.output()}`, { cause: error });
  }
  return {
    base,
    metadataUrl,
    metadataXml,
    addServiceProvider(xml) {
      const entityId = /entityID="([^"]+)"/.exec(xml)![1]!;
      const acs = [...xml.matchAll(/<(?:\w+:)?AssertionConsumerService\b[^>]*>/g)].map((m, index) => ({
        Binding: attr(m[0], 'Binding'),
        Location: attr(m[0], 'Location'),
        index,
      }));
      const slo = [...xml.matchAll(/<(?:\w+:)?SingleLogoutService\b[^>]*>/g)].map((m) => ({
        Binding: attr(m[0], 'Binding'),
        Location: attr(m[0], 'Location'),
      }));
      const keys = [...xml.matchAll(/<(?:\w+:)?X509Certificate>([^<]+)</g)].map((m) => ({
        encryption: false,
        signing: true,
        type: 'X509Certificate',
        X509Certificate: m[1]!.replace(/\s+/g, ''),
      }));
      const entry = {
        entityid: entityId,
        AssertionConsumerService: acs,
        SingleLogoutService: slo,
        keys,
        'validate.authnrequest': /AuthnRequestsSigned="true"/.test(xml),
        NameIDFormat: 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent',
      };
      const file = join(dir, 'metadata', 'saml20-sp-remote.php');
      writeFileSync(file, `${readFileSync(file, 'utf8')}$metadata[${php(entityId)}] = ${php(entry)};\n`);
    },
    stop: () => server.stop('SIGTERM'),
  };
}
