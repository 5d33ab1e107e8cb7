#!/usr/bin/env python3
"""An outside verifier for Keyplane receipts, written from docs/ledger.md, RFC 8785, RFC 9162 and
RFC 7515 alone (no Keyplane code). Reads {hash, receipt, proof, checkpoint, jwks} as JSON on stdin;
prints "ok" and exits 0 when the receipt verifies, else prints the reason and exits 1."""
import base64, hashlib, json, re, sys

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature


def b64u(s):
    return base64.urlsafe_b64decode(s + '=' * (-len(s) % 4))


def jcs(v):
    # RFC 8785 for the values receipts hold: objects, arrays, strings, integers, booleans, null.
    if isinstance(v, dict):
        keys = sorted(v.keys(), key=lambda k: k.encode('utf-16-be'))
        return '{' + ','.join(json.dumps(k, ensure_ascii=False) + ':' + jcs(v[k]) for k in keys) + '}'
    if isinstance(v, list):
        return '[' + ','.join(jcs(x) for x in v) + ']'
    if isinstance(v, float):
        raise ValueError('non-integer numbers are not expected in receipts')
    return json.dumps(v, ensure_ascii=False)


def sha(*parts):
    h = hashlib.sha256()
    for p in parts:
        h.update(p)
    return h.digest()


def fail(reason):
    print(reason)
    sys.exit(1)


def main():
    data = json.load(sys.stdin)
    h = data['hash']
    if not re.fullmatch('[0-9a-f]{64}', h):
        fail('malformed hash')
    if hashlib.sha256(jcs(data['receipt']).encode('utf-8')).hexdigest() != h:
        fail('receipt does not hash to the address')

    header_b64, payload_b64, sig_b64 = data['checkpoint'].split('.')
    header = json.loads(b64u(header_b64))
    if header.get('alg') != 'ES256' or header.get('typ') != 'keyplane-checkpoint+jwt':
        fail('unexpected checkpoint header')
    jwk = next((k for k in data['jwks']['keys'] if k.get('kid') == header.get('kid')), None)
    if jwk is None:
        fail('kid not in the JWKS')
    key = ec.EllipticCurvePublicNumbers(
        int.from_bytes(b64u(jwk['x']), 'big'), int.from_bytes(b64u(jwk['y']), 'big'), ec.SECP256R1()
    ).public_key()
    raw = b64u(sig_b64)
    if len(raw) != 64:
        fail('bad signature length')
    der = encode_dss_signature(int.from_bytes(raw[:32], 'big'), int.from_bytes(raw[32:], 'big'))
    try:
        key.verify(der, (header_b64 + '.' + payload_b64).encode('ascii'), ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        fail('checkpoint signature does not verify')
    cp = json.loads(b64u(payload_b64))
    if sorted(cp.keys()) != ['at', 'epoch', 'prev', 'root', 'size']:
        fail('unexpected checkpoint payload')

    proof = data['proof']
    if proof['epoch'] != cp['epoch'] or proof['size'] != cp['size']:
        fail('proof and checkpoint disagree')
    k = sha(b'keyplane:receipt:v1', bytes.fromhex(h))
    # RFC 9162 section 2.1.3.2
    fn, sn = proof['index'], proof['size'] - 1
    if fn > sn:
        fail('index out of range')
    r = sha(b'\x00', k)
    for p_hex in proof['path']:
        p = bytes.fromhex(p_hex)
        if sn == 0:
            fail('path too long')
        if fn & 1 or fn == sn:
            r = sha(b'\x01', p, r)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            r = sha(b'\x01', r, p)
        fn >>= 1
        sn >>= 1
    if sn != 0 or r.hex() != cp['root']:
        fail('audit path does not lead to the root')
    print('ok')


main()
