import { test } from 'tap'
import { normalizeDeclared } from '../../lib/plugin/response/declared'
import { FST_DIGEST_INVALID_DECLARED_DIGEST } from '../../lib/core/errors'

test('normalizeDeclared validates what a route declares', async (t) => {
  const sha = Buffer.alloc(32, 1)
  const map = normalizeDeclared({ 'sha-256': sha, unixsum: 6405, unixcksum: 4013623040, adler: new Uint8Array([0x39, 0x99, 0x06, 0x17]) })
  t.same([...map.keys()], ['sha-256', 'unixsum', 'unixcksum', 'adler'])
  t.same(map.get('unixsum'), Buffer.from([0x19, 0x05]))
  t.same(map.get('unixcksum'), Buffer.from([0xef, 0x3b, 0x07, 0x00]))
  t.ok(Buffer.isBuffer(map.get('adler')))
  t.not(map.get('sha-256'), sha, 'copied, so later changes to the caller\'s buffer do not leak in')
  const bad: Array<[unknown, RegExp]> = [
    [null, /expected an object/],
    ['sha-256', /expected an object/],
    [{ md4: Buffer.alloc(16) }, /unknown algorithm "md4"/],
    [{ 'sha-256': Buffer.alloc(31) }, /sha-256 must be 32 octets, got 31/],
    [{ 'sha-256': 'base64string' }, /sha-256 must be a Buffer of 32 octets/],
    [{ 'sha-256': 5 }, /sha-256 cannot be the number 5/],
    [{ unixsum: 65536 }, /unixsum cannot be the number 65536/],
    [{ unixsum: -1 }, /cannot be the number -1/],
    [{ unixcksum: 1.5 }, /cannot be the number 1.5/]
  ]
  t.ok(new FST_DIGEST_INVALID_DECLARED_DIGEST('x') instanceof TypeError)
  for (const [value, message] of bad) {
    t.throws(() => normalizeDeclared(value as never), { code: 'FST_DIGEST_INVALID_DECLARED_DIGEST', message }, String(message))
  }
})
