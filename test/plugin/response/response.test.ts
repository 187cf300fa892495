// Response digests without compression: payload types, negotiation, Vary,
// status codes, 404s and errors. Every expected value is recomputed from the
// bytes the client received.
import { test } from 'tap'
import { generateKeyPairSync } from 'node:crypto'
import { Readable } from 'node:stream'
import { buildApp, crc32cField, sf, EMPTY_SHA256 } from '../../helpers'

const JSON_BODY = { hello: 'world' }

test('exchange 1: Want-Content-Digest picks the highest weight only', async (t) => {
  const app = await buildApp(t)
  app.get('/items/123', async () => JSON_BODY)
  const res = await app.inject({ url: '/items/123', headers: { 'want-content-digest': 'sha-256=1, sha-512=3' } })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['content-digest'], sf(res.rawPayload, 'sha-512'))
  t.equal(res.headers['repr-digest'], undefined, 'Repr-Digest was neither wanted nor configured')
  t.equal(res.headers.vary, 'Want-Content-Digest, Want-Repr-Digest, Want-Unencoded-Digest')
})

test('exchange 2: unsolicited Content-Digest and Repr-Digest are equal when uncompressed', async (t) => {
  const app = await buildApp(t, { contentDigest: true, reprDigest: true })
  app.get('/items/123', async () => JSON_BODY)
  const res = await app.inject('/items/123')
  t.equal(res.body, '{"hello":"world"}')
  t.equal(res.headers['content-digest'], sf(res.rawPayload))
  t.equal(res.headers['repr-digest'], res.headers['content-digest'])
})

test('exchange 3: HEAD carries Repr-Digest of the representation and Content-Digest of empty content', async (t) => {
  const app = await buildApp(t, { contentDigest: true, reprDigest: true })
  app.get('/items/123', async () => JSON_BODY)
  const get = await app.inject('/items/123')
  const head = await app.inject({ method: 'HEAD', url: '/items/123' })
  t.equal(head.statusCode, 200)
  t.equal(head.body, '')
  t.equal(head.headers['content-length'], String(get.rawPayload.length))
  t.equal(head.headers['content-digest'], EMPTY_SHA256)
  t.equal(head.headers['repr-digest'], sf(get.rawPayload))
})

test('payload types: string, Buffer, JSON, null, empty, streams, Response', async (t) => {
  const app = await buildApp(t, { contentDigest: true, reprDigest: ['sha-256', 'sha-512'] })
  const text = 'plain text ü'
  app.get('/string', async () => text)
  app.get('/buffer', async (_req, reply) => reply.type('application/octet-stream').send(Buffer.from([0, 1, 2, 255])))
  app.get('/uint8', async (_req, reply) => reply.type('application/octet-stream').send(new Uint8Array([9, 8, 7])))
  app.get('/json', async () => ({ a: [1, 2, 3] }))
  app.get('/null', async (_req, reply) => reply.type('application/json').send(null))
  app.get('/empty', async (_req, reply) => reply.send())
  app.get('/stream', async (_req, reply) => reply.type('text/plain').send(Readable.from(['ab', 'cd', 'ef'])))
  app.get('/web', async (_req, reply) => reply.type('text/plain').send(new Blob(['web ', 'stream']).stream()))
  app.get('/response', async () => new Response('from fetch', { status: 202, headers: { 'content-type': 'text/plain', 'x-r': '1' } }))
  app.get('/response-empty', async () => new Response(null, { status: 200 }))
  const expected: Record<string, string> = {
    '/string': text,
    '/buffer': '\u0000\u0001\u0002\u00ff',
    '/json': '{"a":[1,2,3]}',
    '/null': 'null',
    '/empty': '',
    '/stream': 'abcdef',
    '/web': 'web stream',
    '/response': 'from fetch',
    '/response-empty': ''
  }
  for (const url of Object.keys(expected).concat('/uint8')) {
    const res = await app.inject(url)
    const bytes = res.rawPayload
    if (url !== '/buffer' && url !== '/uint8') t.equal(res.body, expected[url], url)
    t.equal(res.headers['content-digest'], sf(bytes), `${url} Content-Digest`)
    t.equal(res.headers['repr-digest'], `${sf(bytes)}, ${sf(bytes, 'sha-512')}`, `${url} Repr-Digest`)
    t.equal(res.headers['content-length'], String(bytes.length), `${url} Content-Length`)
  }
  const r = await app.inject('/response')
  t.equal(r.statusCode, 202, 'a fetch Response keeps its status')
  t.equal(r.headers['x-r'], '1', 'and its headers')
})

test('negotiation per docs/design.md', async (t) => {
  const app = await buildApp(t, { algorithms: ['sha-256', 'sha-512', 'md5', 'crc32c'], contentDigest: true })
  app.get('/', async () => 'negotiate me')
  const body = Buffer.from('negotiate me')
  const cases: Array<[Record<string, string>, string | undefined, string | undefined, string]> = [
    [{}, sf(body), undefined, 'unsolicited: the first algorithm'],
    [{ 'want-content-digest': 'sha-512=1' }, sf(body, 'sha-512'), undefined, 'a Want replaces the unsolicited default'],
    [{ 'want-content-digest': 'sha-256=5, sha-512=5' }, sf(body), undefined, 'ties: server order'],
    [{ 'want-content-digest': 'sha-512=5, sha-256=5' }, sf(body), undefined, 'ties: server order, not the client\'s'],
    [{ 'want-content-digest': 'sha-256=0' }, sf(body, 'sha-512'), undefined, 'weight 0 refuses the unsolicited algorithm: the next enabled one instead'],
    [{ 'want-content-digest': 'sha-256=0, sha-512=0' }, sf(body, 'md5'), undefined, 'weight 0 for two: the next enabled one, deprecated or not'],
    [{ 'want-content-digest': 'sha-256=0, sha-512=0, md5=0, crc32c=0' }, undefined, undefined, 'every enabled algorithm refused: no field'],
    [{ 'want-content-digest': 'md5=10' }, sf(body, 'md5'), undefined, 'deprecated algorithms when enabled'],
    [{ 'want-content-digest': 'crc32c=2' }, crc32cField(body), undefined, 'crc32c as a Byte Sequence'],
    [{ 'want-content-digest': 'sha=10, unixsum=3' }, sf(body), undefined, 'only non-enabled algorithms wanted: unsolicited default'],
    [{ 'want-content-digest': 'foo=10' }, sf(body), undefined, 'unknown algorithms are ignored'],
    [{ 'want-content-digest': 'sha-512=11' }, sf(body), undefined, 'out-of-range weight: the whole field is ignored'],
    [{ 'want-content-digest': 'sha-512=1.5' }, sf(body), undefined, 'decimal weight: ignored'],
    [{ 'want-content-digest': 'sha-512' }, sf(body), undefined, 'boolean member: ignored'],
    [{ 'want-content-digest': 'SHA-512=3' }, sf(body), undefined, 'invalid syntax: ignored'],
    [{ 'want-repr-digest': 'sha-512=5' }, sf(body, 'sha-512'), sf(body, 'sha-512'), 'Want-Repr-Digest picks for Content-Digest too, which has no Want-* of its own (exchange 5)'],
    [{ 'want-repr-digest': 'md5=1', 'want-content-digest': 'sha-256=1' }, sf(body), sf(body, 'md5'), 'each field follows its own Want']
  ]
  for (const [headers, cd, rd, name] of cases) {
    const res = await app.inject({ url: '/', headers })
    t.equal(res.statusCode, 200, name)
    t.equal(res.headers['content-digest'], cd, name)
    t.equal(res.headers['repr-digest'], rd, `${name} (Repr-Digest)`)
  }
})

// docs/design.md, "Negotiation": a field with a Want-* of its own follows it
// (RFC 9530 §4); a field sent unsolicited without one follows the other
// field's, so exchanges 1 and 5 read alike.
test('a Want-* field picks its own field\'s algorithm, and the other field\'s when that one has no Want-*', async (t) => {
  const app = await buildApp(t, { contentDigest: true, reprDigest: true })
  app.get('/', async () => 'one field each')
  const body = 'one field each'
  for (const [field, own, other] of [
    ['want-content-digest', 'content-digest', 'repr-digest'],
    ['want-repr-digest', 'repr-digest', 'content-digest']
  ] as const) {
    const res = await app.inject({ url: '/', headers: { [field]: 'sha-512=10' } })
    t.equal(res.headers[own], sf(body, 'sha-512'), `${field}: its own field`)
    t.equal(res.headers[other], sf(body, 'sha-512'), `${field}: the other field, which has no Want-*, follows it`)
  }
  const both = await app.inject({ url: '/', headers: { 'want-content-digest': 'sha-512=10', 'want-repr-digest': 'sha-256=1' } })
  t.equal(both.headers['content-digest'], sf(body, 'sha-512'), 'both asked: each its own')
  t.equal(both.headers['repr-digest'], sf(body), 'both asked: each its own')
  // A field not sent unsolicited does not appear for the other field's Want-*.
  const one = await buildApp(t, { contentDigest: true })
  one.get('/', async () => body)
  const res = await one.inject({ url: '/', headers: { 'want-content-digest': 'sha-512=10' } })
  t.equal(res.headers['content-digest'], sf(body, 'sha-512'))
  t.equal(res.headers['repr-digest'], undefined, 'Repr-Digest stays off')
})

// RFC 9530 §4: weight 0 means "not acceptable" for that algorithm, not "send
// no field": an unsolicited field falls back to an enabled algorithm the
// client did not refuse.
test('an unsolicited field whose algorithms the client refused: the next enabled one', async (t) => {
  const app = await buildApp(t, { algorithms: ['sha-256', 'sha-512'] })
  const body = 'refused'
  app.get('/true', { digest: { contentDigest: true, reprDigest: true } }, async () => body)
  app.get('/one', { digest: { contentDigest: 'sha-256', reprDigest: 'sha-256' } }, async () => body)
  app.get('/both', { digest: { contentDigest: ['sha-256', 'sha-512'] } }, async () => body)
  for (const url of ['/true', '/one']) {
    const res = await app.inject({ url, headers: { 'want-content-digest': 'sha-256=0' } })
    t.equal(res.headers['content-digest'], sf(body, 'sha-512'), `${url}: sha-256 refused, sha-512 instead`)
    t.equal(res.headers['repr-digest'], sf(body, 'sha-512'), `${url}: Repr-Digest, without a Want-* of its own, follows it`)
    const repr = await app.inject({ url, headers: { 'want-repr-digest': 'sha-256=0' } })
    t.equal(repr.headers['repr-digest'], sf(body, 'sha-512'), `${url}: the same for Repr-Digest`)
    const none = await app.inject({ url, headers: { 'want-content-digest': 'sha-256=0, sha-512=0' } })
    t.equal(none.headers['content-digest'], undefined, `${url}: every enabled algorithm refused, no field`)
  }
  const both = await app.inject({ url: '/both', headers: { 'want-content-digest': 'sha-256=0' } })
  t.equal(both.headers['content-digest'], sf(body, 'sha-512'), 'the configured ones not refused')
})

// RFC 8941 §3.3.1, §4.2.4: `10.0` is a Decimal, not an Integer, so a Want-*
// field holding one does not parse and is ignored as a whole, also next to
// valid members. `sha-256=0, sha-512=10.0` tells the three readings apart:
// honoured as 10 → sha-512; only the member dropped → sha-256 refused, the
// next enabled sha-512; the field ignored → the unsolicited sha-256.
test('a Want-* weight written as a Decimal, even 10.0, makes the field ignored as a whole', async (t) => {
  const app = await buildApp(t, { contentDigest: true, reprDigest: true })
  app.get('/', async () => 'weights')
  const unsolicited = sf('weights')
  for (const field of ['want-content-digest', 'want-repr-digest'] as const) {
    const own = field === 'want-content-digest' ? 'content-digest' : 'repr-digest'
    const honoured = await app.inject({ url: '/', headers: { [field]: 'sha-512=10' } })
    t.equal(honoured.headers[own], sf('weights', 'sha-512'), `${field}: an Integer weight is honoured`)
    for (const value of ['sha-512=10.0', 'sha-256=1, sha-512=10.0', 'sha-256=0, sha-512=10.0', 'sha-512=1.000']) {
      const res = await app.inject({ url: '/', headers: { [field]: value } })
      t.equal(res.statusCode, 200)
      t.equal(res.headers['content-digest'], unsolicited, `${field}: ${value}: Content-Digest as if absent`)
      t.equal(res.headers['repr-digest'], unsolicited, `${field}: ${value}: Repr-Digest as if absent`)
    }
    const lines = await app.inject({ url: '/', headers: { [field]: ['sha-256=0', 'sha-512=10.0'] } })
    t.equal(lines.headers[own], unsolicited, `${field}: a Decimal in another field line`)
  }
})

test('nothing configured: Want-* alone decides, and only positive weights count', async (t) => {
  const app = await buildApp(t)
  app.get('/', async () => 'x')
  let res = await app.inject('/')
  t.equal(res.headers['content-digest'], undefined)
  t.equal(res.headers['repr-digest'], undefined)
  res = await app.inject({ url: '/', headers: { 'want-repr-digest': 'sha-256=0, sha-512=0' } })
  t.equal(res.headers['repr-digest'], undefined)
  res = await app.inject({ url: '/', headers: { 'want-repr-digest': 'md5=9' } })
  t.equal(res.headers['repr-digest'], undefined, 'md5 is not enabled: never computed')
  res = await app.inject({ url: '/', headers: { 'want-repr-digest': 'sha-512=1', 'want-content-digest': 'sha-256=2' } })
  t.equal(res.headers['repr-digest'], sf('x', 'sha-512'))
  t.equal(res.headers['content-digest'], sf('x'))
})

test('Vary is appended to, never clobbered', async (t) => {
  const app = await buildApp(t)
  app.get('/accept', async (_req, reply) => reply.header('vary', 'Accept').send('a'))
  app.get('/star', async (_req, reply) => reply.header('vary', '*').send('a'))
  app.get('/has', async (_req, reply) => reply.header('vary', 'want-repr-digest').send('a'))
  app.get('/empty', async (_req, reply) => reply.header('vary', '').send('a'))
  t.equal((await app.inject('/accept')).headers.vary, 'Accept, Want-Content-Digest, Want-Repr-Digest, Want-Unencoded-Digest')
  t.equal((await app.inject('/star')).headers.vary, '*')
  t.equal((await app.inject('/has')).headers.vary, 'want-repr-digest, Want-Content-Digest, Want-Unencoded-Digest')
  t.equal((await app.inject('/empty')).headers.vary, 'Want-Content-Digest, Want-Repr-Digest, Want-Unencoded-Digest')
})

test('the usual response (fields written in one step) carries what the full stages write', async (t) => {
  // A route without other onSend hooks takes the one-step path for a plain
  // GET; a no-op onSend hook of the route's own forces the full stages.
  const noop = (_req: unknown, _reply: unknown, payload: unknown, done: (err: null, p: unknown) => void): void => done(null, payload)
  const configs = [
    {},
    { contentDigest: true, reprDigest: true },
    { contentDigest: ['sha-512', 'sha-256'], reprDigest: ['sha-256', 'sha-512'] },
    { contentDigest: 'sha-512' },
    { reprDigest: true, strict: true },
    { algorithms: ['unixsum', 'sha-256'], contentDigest: 'unixsum', reprDigest: 'unixsum' },
    { algorithms: ['unixsum', 'sha-256'], contentDigest: 'unixsum', reprDigest: 'unixsum', strict: true },
    { algorithms: ['sha-256', 'crc32c'], contentDigest: ['sha-256', 'crc32c'], reprDigest: ['sha-256', 'crc32c'] },
    // Different sets for the two fields: always the full stages.
    { contentDigest: 'sha-256', reprDigest: 'sha-512' }
  ] as const
  for (const opts of configs) {
    const app = await buildApp(t, opts as Parameters<typeof buildApp>[1])
    const routes: Record<string, (req: unknown, reply: import('fastify').FastifyReply) => unknown> = {
      json: async () => JSON_BODY,
      buffer: async () => Buffer.from('bytes'),
      empty: async () => '',
      error: async (_req, reply) => reply.code(500).send({ error: 'x' }),
      vary: async (_req, reply) => reply.header('vary', 'Accept').send('a')
    }
    for (const [name, handler] of Object.entries(routes)) {
      app.get(`/usual/${name}`, handler)
      app.get(`/full/${name}`, { onSend: noop }, handler)
    }
    for (const name of Object.keys(routes)) {
      const usual = await app.inject(`/usual/${name}`)
      const full = await app.inject(`/full/${name}`)
      const label = `${JSON.stringify(opts)} ${name}`
      t.equal(usual.body, full.body, label)
      for (const field of ['content-digest', 'repr-digest', 'vary', 'content-length']) {
        t.equal(usual.headers[field], full.headers[field], `${label} ${field}`)
      }
      if ('contentDigest' in opts && opts.contentDigest === true) t.equal(usual.headers['content-digest'], sf(usual.rawPayload), `${label}: the received bytes' digest`)
    }
  }
})

test('204, 304 and 1xx: no Content-Digest; Repr-Digest only when declared', async (t) => {
  const app = await buildApp(t, { contentDigest: true, reprDigest: true })
  const declared = Buffer.alloc(32, 7)
  app.get('/204', async (_req, reply) => reply.code(204).send('ignored body'))
  app.get('/204-declared', async (_req, reply) => reply.code(204).setReprDigest({ 'sha-256': declared }).send())
  app.get('/304', async (_req, reply) => reply.code(304).setReprDigest({ 'sha-256': declared }).send())
  app.get('/304-plain', async (_req, reply) => reply.code(304).send())
  for (const url of ['/204', '/304-plain']) {
    const res = await app.inject(url)
    t.equal(res.headers['content-digest'], undefined, url)
    t.equal(res.headers['repr-digest'], undefined, url)
  }
  for (const url of ['/204-declared', '/304']) {
    const res = await app.inject(url)
    t.equal(res.headers['content-digest'], undefined, url)
    t.equal(res.headers['repr-digest'], `sha-256=:${declared.toString('base64')}:`, url)
  }
})

test('404 and error responses get digests of their own bodies (RFC 9530 B.10)', async (t) => {
  const app = await buildApp(t, { contentDigest: true, reprDigest: true })
  app.get('/boom', async () => { throw new Error('boom') })
  app.get('/teapot', async (_req, reply) => reply.code(418).send({ short: 'and stout' }))
  for (const url of ['/missing', '/boom', '/teapot']) {
    const res = await app.inject({ url, headers: { 'want-repr-digest': 'sha-512=1' } })
    t.ok(res.statusCode >= 400, url)
    t.equal(res.headers['content-digest'], sf(res.rawPayload, 'sha-512'), `${url} Content-Digest, without a Want-* of its own, follows Want-Repr-Digest`)
    t.equal(res.headers['repr-digest'], sf(res.rawPayload, 'sha-512'), `${url} Repr-Digest`)
    t.equal(res.headers.vary, 'Want-Content-Digest, Want-Repr-Digest, Want-Unencoded-Digest', url)
  }
})

test('a custom 404 handler and routes declared before the plugin', async (t) => {
  const app = await buildApp(t, { contentDigest: true }, {}, async (app) => {
    app.get('/early', async () => 'early')
  })
  app.setNotFoundHandler(async (_req, reply) => reply.code(404).send('nothing here'))
  const early = await app.inject('/early')
  t.equal(early.headers['content-digest'], undefined, 'routes declared before registration are left alone')
  const missing = await app.inject('/nope')
  t.equal(missing.body, 'nothing here')
  t.equal(missing.headers['content-digest'], sf('nothing here'))
  const nothing = await app.inject({ url: '/nope', headers: { 'want-content-digest': 'sha-256=0, sha-512=0' } })
  t.equal(nothing.headers['content-digest'], undefined)
  t.equal(nothing.headers.vary, 'Want-Content-Digest, Want-Repr-Digest, Want-Unencoded-Digest')
})

test('reply.setReprDigest: declared digests are used instead of hashing', async (t) => {
  const app = await buildApp(t, { algorithms: ['sha-256', 'unixsum'], reprDigest: ['sha-256', 'unixsum'], contentDigest: true })
  const stored = Buffer.alloc(32, 1)
  app.get('/declared', async (_req, reply) => reply.setReprDigest({ 'sha-256': stored }).setReprDigest({ unixsum: 6405 }).send('body'))
  app.get('/bad', async (_req, reply) => reply.setReprDigest({ 'sha-256': Buffer.alloc(3) }).send('x'))
  const res = await app.inject('/declared')
  t.equal(res.headers['repr-digest'], `sha-256=:${stored.toString('base64')}:, unixsum=6405`)
  t.equal(res.headers['content-digest'], sf('body'), 'Content-Digest is still computed from the bytes')
  const bad = await app.inject('/bad')
  t.equal(bad.statusCode, 500)
  t.equal(bad.json().code, 'FST_DIGEST_INVALID_DECLARED_DIGEST')
})

for (const strict of [false, true]) {
  test(`a route that sends its own 206 (strict: ${strict}): Content-Digest of the part, Repr-Digest only when declared`, async (t) => {
    const app = await buildApp(t, { contentDigest: true, reprDigest: true, strict })
    const whole = 'abcdefghijklmnopqrstuvwxyz'
    const wholeDigest = Buffer.from(sf(whole).slice(9, -1), 'base64')
    const part = (reply: import('fastify').FastifyReply): import('fastify').FastifyReply =>
      reply.code(206).header('content-range', `bytes 2-5/${whole.length}`).type('text/plain')
    app.get('/part', async (_req, reply) => part(reply).send(whole.slice(2, 6)))
    app.get('/part-declared', async (_req, reply) => part(reply).setReprDigest({ 'sha-256': wholeDigest }).send(whole.slice(2, 6)))
    app.get('/part-stream', async (_req, reply) => part(reply).send(Readable.from([whole.slice(2, 4), whole.slice(4, 6)])))
    app.get('/part-stream-declared', async (_req, reply) => part(reply).setReprDigest({ 'sha-256': wholeDigest }).send(Readable.from([whole.slice(2, 6)])))
    for (const te of [{}, { te: 'trailers' }]) {
      for (const url of ['/part', '/part-stream']) {
        const res = await app.inject({ url, headers: te })
        t.equal(res.statusCode, 206)
        t.equal(res.body, 'cdef')
        const fields = { ...res.headers, ...res.trailers }
        t.equal(fields['content-digest'], sf('cdef'), `${url} ${JSON.stringify(te)}`)
        t.equal(fields['repr-digest'], undefined, 'never computed over the part')
      }
      for (const url of ['/part-declared', '/part-stream-declared']) {
        const res = await app.inject({ url, headers: te })
        const fields = { ...res.headers, ...res.trailers }
        t.equal(fields['content-digest'], sf('cdef'), `${url} ${JSON.stringify(te)}`)
        t.equal(fields['repr-digest'], sf(whole), `${url}: the declared whole-representation digest`)
      }
    }
    const stale = await app.inject({ url: '/part-declared', headers: { 'repr-digest': sf('old') } })
    t.equal(stale.statusCode, 406, 'a 206 is answered 406 when the client names another representation')
    const fresh = await app.inject({ url: '/part-declared', headers: { 'repr-digest': sf(whole) } })
    t.equal(fresh.statusCode, 206)
  })
}

test('explicit HEAD routes: the representation is unknown unless declared', async (t) => {
  const app = await buildApp(t, { contentDigest: true, reprDigest: true })
  const declared = Buffer.alloc(32, 9)
  app.head('/bare', async (_req, reply) => reply.header('content-length', 1234).send())
  app.head('/declared', async (_req, reply) => reply.setReprDigest({ 'sha-256': declared }).send())
  app.head('/body', async (_req, reply) => reply.header('content-length', 999).send('not the real body'))
  const bare = await app.inject({ method: 'HEAD', url: '/bare' })
  t.equal(bare.headers['content-digest'], EMPTY_SHA256)
  t.equal(bare.headers['repr-digest'], undefined)
  const dec = await app.inject({ method: 'HEAD', url: '/declared' })
  t.equal(dec.headers['repr-digest'], `sha-256=:${declared.toString('base64')}:`)
  const cond = await app.inject({ method: 'HEAD', url: '/declared', headers: { 'repr-digest': sf('x', 'sha-512') } })
  t.equal(cond.statusCode, 200, 'a conditional on an algorithm the representation has no digest for is not evaluated')
  const body = await app.inject({ method: 'HEAD', url: '/body' })
  t.equal(body.headers['repr-digest'], undefined, 'Content-Length disagrees with what was hashed: omitted')
})

test('odd header shapes', async (t) => {
  const app = await buildApp(t)
  app.get('/vary-array', async (_req, reply) => reply.header('vary', ['Accept', 'Origin']).send('a'))
  app.get('/', async () => 'a')
  t.equal((await app.inject('/vary-array')).headers.vary, 'Accept, Origin, Want-Content-Digest, Want-Repr-Digest, Want-Unencoded-Digest')
  const empty = await app.inject({ url: '/', headers: { 'repr-digest': '' } })
  t.equal(empty.statusCode, 200, 'an empty Repr-Digest is no conditional')
})

// The route's usual plans (lib/plugin/response/hooks.ts) are cached: a request whose Want-* fields change the plan
// never gets a cached one.
test('a route\'s cached plans never answer a request whose Want-* changes the plan', async (t) => {
  const key = generateKeyPairSync('ed25519')
  const keyid = key.publicKey.export({ format: 'der', type: 'spki' }).subarray(-32).toString('base64')
  const ask = `sig0=("unencoded-digest";sf);keyid="${keyid}";tag="ed25519-integrity"`
  const app = await buildApp(t, { contentDigest: true, reprDigest: true, integrityKeys: key.privateKey })
  app.get('/', async () => 'cached')
  const cases: Array<[Record<string, string>, string]> = [
    [{}, 'sha-256'],
    [{ 'want-repr-digest': 'sha-512=5' }, 'sha-512'],
    [{}, 'sha-256'],
    [{ 'want-content-digest': 'sha-512=5' }, 'sha-512'],
    [{ 'want-repr-digest': 'sha-256=0' }, 'sha-512'],
    [{ 'accept-signature': ask }, 'sha-256'],
    [{ 'accept-signature': ask, 'want-repr-digest': 'sha-512=5' }, 'sha-512'],
    [{ 'accept-signature': ask }, 'sha-256'],
    [{ 'accept-signature': ask, 'want-content-digest': 'sha-512=5' }, 'sha-512']
  ]
  // Twice: every case also follows the one the list ends with.
  for (const round of [1, 2]) {
    for (const [headers, algorithm] of cases) {
      const res = await app.inject({ url: '/', headers })
      const name = `round ${round}: ${JSON.stringify(headers)}`
      t.equal(res.headers['content-digest'], sf('cached', algorithm), `${name} Content-Digest`)
      t.equal(res.headers['repr-digest'], sf('cached', algorithm), `${name} Repr-Digest`)
    }
  }
})
