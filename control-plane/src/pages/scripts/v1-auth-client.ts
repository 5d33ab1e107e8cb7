/**
 * The deprecated v1 script (`GET /auth-client.js`), loaded by a relying party's own page with
 * `<script src="<issuer>/auth-client.js" data-return="<its registered v1 return URL>">`. It wires
 * clicks on `[data-signin]`, `[data-signup]` and `[data-recover]` to full-page navigations to the
 * issuer; it reads nothing from the page and sends nothing anywhere else. Classic script (not a
 * module): v1 pages load it that way.
 */
export const V1_AUTH_CLIENT_JS = `(function () {
  'use strict';
  var script = document.currentScript;
  if (!script || !script.src) return;
  var issuer = script.src.replace(/\\/auth-client\\.js(?:[?#].*)?$/, '');
  var back = script.getAttribute('data-return') || (location.origin + location.pathname);
  if (typeof console !== 'undefined') console.warn('Keyplane auth-client.js (v1) is deprecated: see ' + issuer + '/auth/v1/migrate');
  var targets = {
    'data-signin': issuer + '/auth?return=' + encodeURIComponent(back),
    'data-signup': issuer + '/auth?return=' + encodeURIComponent(back),
    'data-recover': issuer + '/auth/recovery'
  };
  document.addEventListener('click', function (event) {
    var node = event.target;
    while (node && node.nodeType === 1) {
      for (var attribute in targets) {
        if (node.hasAttribute(attribute)) {
          event.preventDefault();
          location.assign(targets[attribute]);
          return;
        }
      }
      node = node.parentNode;
    }
  });
})();
`;
