import t from 'tap';
import { checkRequestOrigin, originRefusal } from '#lib/http/check-request-origin.js';
import { reasonOf } from '../../helpers/reason-of.js';

const ours = 'https://id.example.com';
const signedIn = { expectedOrigin: ours, originRequired: true };
const signIn = { expectedOrigin: ours, originRequired: false };

t.test('Fetch Metadata decides first: same-origin and none pass whatever Origin says', async (t) => {
  for (const origin of [undefined, 'null', ours])
    for (const site of ['same-origin', 'none', 'Same-Origin'])
      t.equal(originRefusal({ secFetchSite: site, origin }, signedIn), null, `${site} with Origin ${origin}`);
});

t.test('same-site and cross-site fail even with our Origin', async (t) => {
  for (const site of ['same-site', 'cross-site', 'something-new'])
    for (const rule of [signedIn, signIn])
      t.equal(
        reasonOf(() => checkRequestOrigin({ secFetchSite: site, origin: ours }, rule)),
        'origin_mismatch',
        site,
      );
});

t.test('without Fetch Metadata, Origin must be ours when present; null counts as foreign', async (t) => {
  t.equal(originRefusal({ secFetchSite: undefined, origin: ours }, signedIn), null);
  t.equal(
    reasonOf(() => checkRequestOrigin({ secFetchSite: undefined, origin: 'https://evil.example' }, signIn)),
    'origin_mismatch',
  );
  t.equal(
    reasonOf(() => checkRequestOrigin({ secFetchSite: undefined, origin: 'null' }, signIn)),
    'origin_mismatch',
  );
});

t.test('neither header: a signed-in request fails, a sign-in API call passes', async (t) => {
  t.equal(
    reasonOf(() => checkRequestOrigin({ secFetchSite: undefined, origin: undefined }, signedIn)),
    'origin_mismatch',
  );
  t.equal(originRefusal({ secFetchSite: undefined, origin: undefined }, signIn), null);
});
