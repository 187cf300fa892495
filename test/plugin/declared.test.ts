import { test } from 'tap'
import { buildApp } from '../helpers'

test('reply.setReprDigest validates what a route declares', async (t) => {
  const algorithms = ['sha-256', 'unixsum', 'unixcksum', 'adler'] as const
  const app = await buildApp(t, { algorithms, reprDigest: algorithms })
  app.get('/good', async (_req, reply) => {
    const sha = Buffer.alloc(32, 1)
    reply.setReprDigest({ 'sha-256': sha, unixsum: 6405, unixcksum: 4013623040, adler: new Uint8Array([0x39, 0x99, 0x06, 0x17]) })
    // Copied: later changes to the caller's buffer do not leak in.
    sha.fill(2)
    return 'x'
  })
  app.post('/bad', async (req, reply) => {
    try {
      reply.setReprDigest(JSON.parse(req.body as string, (_k, v) => typeof v === 'object' && v?.length !== undefined ? Buffer.alloc(v.length) : v))
    } catch (err) {
      const { code, message } = err as { code: string, message: string }
      return { code, message, typeError: err instanceof TypeError }
    }
    return null
  })
  const good = await app.inject('/good')
  t.equal(good.headers['repr-digest'], `sha-256=:${Buffer.alloc(32, 1).toString('base64')}:, unixsum=6405, unixcksum=4013623040, adler=:OZkGFw==:`)
  // A Buffer of n octets is sent as { length: n }.
  const bad: Array<[unknown, RegExp]> = [
    [null, /expected an object/],
    ['sha-256', /expected an object/],
    [{ md4: { length: 16 } }, /unknown algorithm "md4"/],
    [{ 'sha-256': { length: 31 } }, /sha-256 must be 32 octets, got 31/],
    [{ 'sha-256': 'base64string' }, /sha-256 must be a Buffer of 32 octets/],
    [{ 'sha-256': 5 }, /sha-256 cannot be the number 5/],
    [{ unixsum: 65536 }, /unixsum cannot be the number 65536/],
    [{ unixsum: -1 }, /cannot be the number -1/],
    [{ unixcksum: 1.5 }, /cannot be the number 1.5/]
  ]
  for (const [value, message] of bad) {
    const res = await app.inject({ method: 'POST', url: '/bad', headers: { 'content-type': 'text/plain' }, payload: JSON.stringify(value) })
    t.match(res.json(), { code: 'FST_DIGEST_INVALID_DECLARED_DIGEST', message, typeError: true }, String(message))
  }
})
