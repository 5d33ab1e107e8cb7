#!/usr/bin/env python3
"""An outside verifier for Keyplane's transparency log, written from the C2SP specifications
(signed-note, tlog-checkpoint, tlog-tiles, tlog-cosignature) and RFC 6962 alone (no Keyplane code).

    verify_tlog.py BASE_URL RECEIPT_HASH LOG_VKEY [WITNESS_VKEY ...]

Fetches the receipt's tlog_index, the checkpoint note and the tiles it needs from BASE_URL; checks the
note's Ed25519 signature by LOG_VKEY, a cosignature by each WITNESS_VKEY, and the inclusion of the
receipt's tree key SHA-256("keyplane:receipt:v1" || hash) at tlog_index, its path computed from tiles
alone. Prints "ok" and exits 0 when all hold, else prints the reason and exits 1."""
import base64, hashlib, json, re, struct, sys, urllib.request

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey


def fail(reason):
    print(reason)
    sys.exit(1)


def sha(*parts):
    h = hashlib.sha256()
    for p in parts:
        h.update(p)
    return h.digest()


def get(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.read()


def parse_vkey(vkey):
    name, key_id, key = vkey.split('+', 2)
    raw = base64.b64decode(key, validate=True)
    if len(raw) != 33 or sha(name.encode(), b'\n', raw)[:4].hex() != key_id:
        fail('malformed verifier key ' + vkey)
    return name, raw[0], raw[1:]


def signatures(note):
    text, _, sigs = note.rpartition('\n\n')
    for line in sigs.rstrip('\n').split('\n'):
        m = re.fullmatch('\u2014 (\\S+) ([A-Za-z0-9+/=]+)', line)
        if not m:
            fail('malformed signature line')
        raw = base64.b64decode(m.group(2))
        yield m.group(1), raw[:4], raw[4:]


def signed_by(note, text, vkey, cosignature):
    name, kind, pub = parse_vkey(vkey)
    want = sha(name.encode(), b'\n', bytes([0x04 if cosignature else 0x01]), pub)[:4]
    key = Ed25519PublicKey.from_public_bytes(pub)
    for signer, key_id, sig in signatures(note):
        if signer != name or key_id != want:
            continue
        message = text.encode()
        if cosignature:
            if len(sig) != 72:
                continue
            message = b'cosignature/v1\ntime %d\n' % struct.unpack('>Q', sig[:8])[0] + message
            sig = sig[8:]
        try:
            key.verify(sig, message)
            return True
        except InvalidSignature:
            pass
    return False


class Tiles:
    """An RFC 6962 tree of `size` leaves read from C2SP tiles (256 hashes per tile, 8 levels each)."""

    def __init__(self, base, size):
        self.base, self.size, self.cache = base, size, {}

    def tile(self, level, n):
        count = self.size // 256 ** level
        width = min(256, count - n * 256)
        digits = '%03d' % (n % 1000)
        rest = n // 1000
        while rest:
            digits = 'x%03d/%s' % (rest % 1000, digits)
            rest //= 1000
        path = 'tile/%d/%s%s' % (level, digits, '' if width == 256 else '.p/%d' % width)
        if path not in self.cache:
            self.cache[path] = get(self.base + '/receipts/' + path)
            if len(self.cache[path]) != 32 * width:
                fail('tile %s has the wrong length' % path)
        return self.cache[path]

    def subtree(self, height, i):
        # The complete subtree of 2^height leaves starting at leaf i * 2^height.
        level, span = height // 8, 2 ** (height % 8)
        first = i * span
        t = self.tile(level, first // 256)
        hashes = [t[32 * (e % 256):32 * (e % 256) + 32] for e in range(first, first + span)]
        while len(hashes) > 1:
            hashes = [sha(b'\x01', hashes[j], hashes[j + 1]) for j in range(0, len(hashes), 2)]
        return hashes[0]

    def mth(self, start, end):
        n = end - start
        if n & (n - 1) == 0 and start % n == 0:
            return self.subtree(n.bit_length() - 1, start // n)
        k = 1 << ((n - 1).bit_length() - 1)
        return sha(b'\x01', self.mth(start, start + k), self.mth(start + k, end))

    def path(self, m, start, end):
        # RFC 6962 section 2.1.1 PATH(m, D[start:end])
        n = end - start
        if n <= 1:
            return []
        k = 1 << ((n - 1).bit_length() - 1)
        if m < k:
            return self.path(m, start, start + k) + [self.mth(start + k, end)]
        return self.path(m - k, start + k, end) + [self.mth(start, start + k)]


def main():
    if len(sys.argv) < 4:
        fail(__doc__)
    base, h, log_vkey, witnesses = sys.argv[1].rstrip('/'), sys.argv[2], sys.argv[3], sys.argv[4:]
    if not re.fullmatch('[0-9a-f]{64}', h):
        fail('malformed hash')
    found = json.loads(get(base + '/receipts/' + h))
    if not isinstance(found.get('tlog_index'), int):
        fail('the receipt is not in the transparency log yet')
    note = get(base + '/receipts/checkpoint').decode()
    text = note.rpartition('\n\n')[0] + '\n'
    if not signed_by(note, text, log_vkey, False):
        fail("the checkpoint is not signed by the log's key")
    for w in witnesses:
        if not signed_by(note, text, w, True):
            fail('no cosignature by ' + w.split('+')[0])
    origin, size, root = text.split('\n')[:3]
    size, root = int(size), base64.b64decode(root)
    index = found['tlog_index']
    if not 0 <= index < size:
        fail('tlog_index beyond the checkpoint')
    tiles = Tiles(base, size)
    # RFC 9162 section 2.1.3.2, with the path from tiles
    k = sha(b'keyplane:receipt:v1', bytes.fromhex(h))
    r, fn, sn = sha(b'\x00', k), index, size - 1
    for p in tiles.path(index, 0, size):
        if fn & 1 or fn == sn:
            r = sha(b'\x01', p, r)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            r = sha(b'\x01', r, p)
        fn >>= 1
        sn >>= 1
    if sn != 0 or r != root:
        fail('the receipt is not at its tlog_index under the checkpoint root')
    print('ok')


main()
