import t from 'tap';
import { reasonOf } from '../../helpers/reason-of.js';
import { checkResourceOwnership, findForeignGatewayResource } from '#lib/oauth/resource-ownership.js';

const gateways = [
  { clientId: 'cl_gw', ownerId: null, redirectUris: ['https://gw.example.com/_gate/callback'] },
  { clientId: 'cl_olive', ownerId: 'usr_olive', redirectUris: ['https://olive.example.org/_gate/callback'] },
];

t.test("a resource on a gateway's origin belongs to that gateway's owner", async (t) => {
  const mallory = { admin: false as const, ownerId: 'usr_mallory' };
  t.equal(findForeignGatewayResource(['https://gw.example.com'], gateways, mallory), 'https://gw.example.com');
  t.equal(
    findForeignGatewayResource(['https://api.example.net', 'https://gw.example.com/api'], gateways, mallory),
    'https://gw.example.com/api',
    'any path on the origin',
  );
  t.equal(findForeignGatewayResource(['https://olive.example.org'], gateways, mallory), 'https://olive.example.org');
  t.equal(
    findForeignGatewayResource(['https://olive.example.org'], gateways, { admin: false, ownerId: 'usr_olive' }),
    null,
    'the owner',
  );
  t.equal(findForeignGatewayResource(['https://gw.example.com'], gateways, { admin: true }), null, 'the operator');
  t.equal(
    findForeignGatewayResource(['https://gw.example.com:8443', 'http://gw.example.com'], gateways, mallory),
    null,
    'another origin',
  );
  t.equal(findForeignGatewayResource(['not a url'], gateways, mallory), null);
  t.equal(
    reasonOf(() => checkResourceOwnership(['https://gw.example.com'], gateways, mallory)),
    'invalid_target',
  );
  t.doesNotThrow(() => checkResourceOwnership([], gateways, mallory));
});
