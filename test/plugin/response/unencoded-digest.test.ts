// Unencoded-Digest and Want-Unencoded-Digest in responses
// (draft-ietf-httpbis-unencoded-digest): the digest of the representation with
// no content coding, in both modes, with the real @fastify/compress (every
// coding it uses here, zstd where node:zlib has it), for strings, Buffers,
// JSON and streams, HEAD, 206, 204/304, declared digests, trailers and the
// 406 rule. Every value is recomputed from the bytes the client received,
// decoded.
import { test } from 'tap'
import { Readable } from 'node:stream'
import { gzipSync } from 'node:zlib'
import compress from '@fastify/compress'
import type { FastifyInstance } from 'fastify'
import type { FastifyDigestFieldsOptions } from '../../../types/index'
import { computeDigest } from '../../../lib/core/algorithms'
import { buildApp, decode, sf, zstd, CODINGS, EMPTY_SHA256 } from '../../helpers'

interface Closeable { teardown (fn: () => unknown): void }

const TEXT = 'an unexceptional string\n'.repeat(200)
const LARGE = 'streamed and compressible '.repeat(2000)
const JSON_BODY = { list: Array.from({ length: 200 }, (_, i) => ({ i })) }

function routes (app: FastifyInstance): void {
  app.get('/text', async (_req, reply) => reply.type('text/plain').send(TEXT))
  app.get('/buffer', async (_req, reply) => reply.type('application/octet-stream').send(Buffer.from(TEXT)))
  app.get('/json', async () => JSON_BODY)
  app.get('/stream', async (_req, reply) => reply.type('text/plain').send(Readable.from([LARGE.slice(0, 7000), LARGE.slice(7000)])))
}

async function withCompress (t: Closeable, order: 'digest-first' | 'compress-first', opts: FastifyDigestFieldsOptions, encodings?: string[]): Promise<FastifyInstance> {
  const compressOpts = { threshold: 100, syncThreshold: 4096, ...(encodings === undefined ? {} : { encodings }) }
  const app = await buildApp(t, opts, {}, async (app) => {
    if (order === 'compress-first') await app.register(compress, compressOpts as never)
  })
  if (order === 'digest-first') await app.register(compress, compressOpts as never)
  routes(app)
  return app
}

/** The header and trailer fields of a response together. */
function fields (res: { headers: Record<string, unknown>, trailers: Record<string, unknown> }): Record<string, unknown> {
  return { ...res.headers, ...res.trailers }
}

for (const strict of [false, true]) {
  for (const order of ['digest-first', 'compress-first'] as const) {
    test(`${strict ? 'strict' : 'default'} mode, ${order}: Unencoded-Digest of the decoded content, for every coding compress uses`, async (t) => {
      const app = await withCompress(t, order, { strict, contentDigest: true, reprDigest: true, unencodedDigest: true })
      for (const coding of CODINGS) {
        for (const url of ['/text', '/buffer', '/json', '/stream']) {
          for (const te of [{}, { te: 'trailers' }]) {
            const res = await app.inject({ url, headers: { 'accept-encoding': coding, ...te } })
            const name = `${url} ${coding} ${JSON.stringify(te)}`
            const all = fields(res)
            t.equal(res.headers['content-encoding'], coding, name)
            const identity = decode(res.rawPayload, coding)
            t.equal(all['unencoded-digest'], sf(identity), `${name}: Unencoded-Digest`)
            t.equal(all['content-digest'], sf(res.rawPayload), `${name}: Content-Digest`)
            t.equal(all['repr-digest'], strict ? sf(res.rawPayload) : sf(identity), `${name}: Repr-Digest`)
            t.match(res.headers.vary, /accept-encoding/, name)
            t.match(res.headers.vary, /Want-Unencoded-Digest/, name)
          }
        }
      }
      for (const url of ['/text', '/stream']) {
        const plain = await app.inject({ url, headers: { 'accept-encoding': 'identity' } })
        const value = sf(plain.rawPayload)
        t.equal(plain.headers['content-encoding'], undefined, url)
        t.same([plain.headers['content-digest'], plain.headers['repr-digest'], plain.headers['unencoded-digest']], [value, value, value], `${url}: no coding, one value for all three`)
      }
    })
  }
}

test('without zstd in node:zlib (Node.js 20), compress never sends zstd: a client preferring it gets another coding', async (t) => {
  const app = await withCompress(t, 'digest-first', { unencodedDigest: true })
  const res = await app.inject({ url: '/text', headers: { 'accept-encoding': 'zstd, br' } })
  t.equal(res.headers['content-encoding'], zstd === null ? 'br' : 'zstd')
  t.equal(res.headers['unencoded-digest'], sf(TEXT))
  if (zstd === null) {
    await t.rejects(withCompress(t, 'digest-first', {}, ['zstd']), /None of the passed `encodings` were supported/, 'compress refuses zstd alone')
  }
})

test('unencodedDigest alone, in both modes; on the route; off on the route', async (t) => {
  for (const strict of [false, true]) {
    const app = await buildApp(t, { strict, unencodedDigest: true })
    routes(app)
    app.get('/route', { digest: { unencodedDigest: 'sha-512' } }, async () => TEXT)
    app.get('/off', { digest: { unencodedDigest: false } }, async () => TEXT)
    const res = await app.inject('/text')
    t.equal(res.headers['unencoded-digest'], sf(TEXT), `strict=${strict}`)
    t.equal(res.headers['content-digest'], undefined)
    t.equal(res.headers['repr-digest'], undefined)
    t.equal((await app.inject('/route')).headers['unencoded-digest'], sf(TEXT, 'sha-512'))
    const off = await app.inject('/off')
    t.equal(off.headers['unencoded-digest'], undefined)
    t.equal(off.headers.vary, 'Want-Content-Digest, Want-Repr-Digest, Want-Unencoded-Digest')
    const not404 = await app.inject('/missing')
    t.equal(not404.headers['unencoded-digest'], sf(not404.rawPayload), `strict=${strict}: a 404's own body`)
  }
})

test('Want-Unencoded-Digest picks the algorithm of Unencoded-Digest, and of no other field', async (t) => {
  const app = await buildApp(t, {})
  routes(app)
  const cases: Array<[Record<string, string>, string | undefined, string | undefined]> = [
    [{ 'want-unencoded-digest': 'sha-256=1, sha-512=4' }, sf(TEXT, 'sha-512'), undefined],
    [{ 'want-unencoded-digest': 'sha-256=10' }, sf(TEXT), undefined],
    [{ 'want-unencoded-digest': 'md5=10' }, undefined, undefined],
    [{ 'want-unencoded-digest': 'sha-256=11' }, undefined, undefined],
    [{ 'want-unencoded-digest': 'sha-256=0' }, undefined, undefined],
    [{ 'want-repr-digest': 'sha-512=5' }, undefined, sf(TEXT, 'sha-512')],
    [{ 'want-repr-digest': 'sha-512=5', 'want-unencoded-digest': 'sha-256=3' }, sf(TEXT), sf(TEXT, 'sha-512')]
  ]
  for (const [headers, unencoded, repr] of cases) {
    const res = await app.inject({ url: '/text', headers })
    t.equal(res.headers['unencoded-digest'], unencoded, JSON.stringify(headers))
    t.equal(res.headers['repr-digest'], repr, JSON.stringify(headers))
    t.equal(res.headers['content-digest'], undefined, JSON.stringify(headers))
  }
})

test('unsolicited Unencoded-Digest and Want-Unencoded-Digest: weight 0 refuses one algorithm, not the field', async (t) => {
  const app = await buildApp(t, { reprDigest: true, unencodedDigest: true })
  routes(app)
  const cases: Array<[string | undefined, string | undefined]> = [
    [undefined, sf(TEXT)],
    ['sha-512=3', sf(TEXT, 'sha-512')],
    ['sha-256=0', sf(TEXT, 'sha-512')],
    ['sha-256=0, sha-512=0', undefined],
    ['sha-256=0, sha-512=1', sf(TEXT, 'sha-512')],
    ['unixsum=10', sf(TEXT)],
    ['sha-256="x"', sf(TEXT)]
  ]
  for (const [want, expected] of cases) {
    for (const url of ['/text', '/stream']) {
      const res = await app.inject({ url, headers: want === undefined ? {} : { 'want-unencoded-digest': want } })
      const body = url === '/text' ? TEXT : LARGE
      t.equal(res.headers['unencoded-digest'], expected === undefined ? undefined : expected.replace(sf(TEXT), sf(body)).replace(sf(TEXT, 'sha-512'), sf(body, 'sha-512')), `${url} ${String(want)}`)
      t.equal(res.headers['repr-digest'], sf(body), `${url} ${String(want)}: Repr-Digest keeps its own algorithm`)
    }
  }
})

test('several algorithms; the deprecated checksums as Byte Sequences in both modes', async (t) => {
  for (const strict of [false, true]) {
    const app = await buildApp(t, { strict, algorithms: ['sha-256', 'sha-512', 'unixsum', 'unixcksum'], reprDigest: ['sha-256', 'unixsum'], unencodedDigest: ['sha-256', 'sha-512', 'unixsum', 'unixcksum'] })
    routes(app)
    for (const url of ['/text', '/stream']) {
      const res = await app.inject({ url, headers: { te: 'trailers' } })
      const body = url === '/text' ? TEXT : LARGE
      const b64 = (a: 'unixsum' | 'unixcksum'): string => computeDigest(a, body).toString('base64')
      const all = fields(res)
      t.equal(all['unencoded-digest'], `${sf(body)}, ${sf(body, 'sha-512')}, unixsum=:${b64('unixsum')}:, unixcksum=:${b64('unixcksum')}:`, `strict=${strict} ${url}`)
      const sum = computeDigest('unixsum', body)
      t.equal(all['repr-digest'], `${sf(body)}, unixsum=${strict ? `:${sum.toString('base64')}:` : sum.readUInt16BE()}`, `strict=${strict} ${url}: Repr-Digest's own form`)
    }
  }
})

test('HEAD: the Unencoded-Digest of what GET sends; an unknown representation gets none', async (t) => {
  const app = await withCompress(t, 'digest-first', { contentDigest: true, unencodedDigest: true })
  app.route({ method: 'HEAD', url: '/explicit', handler: async (_req, reply) => reply.type('text/plain').send() })
  for (const [url, body] of [['/text', TEXT], ['/stream', LARGE], ['/json', JSON.stringify(JSON_BODY)]] as const) {
    const res = await app.inject({ method: 'HEAD', url, headers: { 'accept-encoding': 'gzip' } })
    t.equal(res.headers['content-digest'], EMPTY_SHA256, url)
    t.equal(res.headers['unencoded-digest'], sf(body), url)
  }
  const explicit = await app.inject({ method: 'HEAD', url: '/explicit' })
  t.equal(explicit.headers['unencoded-digest'], undefined, 'an explicit HEAD handler without a body: unknown')
})

test('a route\'s 206: only a declared Unencoded-Digest (the whole representation\'s)', async (t) => {
  const app = await buildApp(t, { contentDigest: true, unencodedDigest: true })
  const whole = Buffer.from(TEXT)
  app.get('/part', async (_req, reply) => reply.code(206).header('content-range', `bytes 0-9/${whole.length}`).send(whole.subarray(0, 10)))
  app.get('/part-declared', async (_req, reply) => {
    reply.setReprDigest({ 'sha-256': computeDigest('sha-256', whole) })
    return reply.code(206).header('content-range', `bytes 0-9/${whole.length}`).send(whole.subarray(0, 10))
  })
  const part = await app.inject('/part')
  t.equal(part.headers['content-digest'], sf(whole.subarray(0, 10)))
  t.equal(part.headers['unencoded-digest'], undefined, 'never the part\'s')
  const declared = await app.inject('/part-declared')
  t.equal(declared.headers['unencoded-digest'], sf(whole), 'the declared Repr-Digest: the route codes nothing itself')
})

test('204 and 304: only a declared Unencoded-Digest', async (t) => {
  const app = await buildApp(t, { reprDigest: true, unencodedDigest: true })
  const stored = Buffer.alloc(32, 9)
  app.get('/204', async (_req, reply) => reply.code(204).send())
  app.get('/304', async (_req, reply) => reply.code(304).setUnencodedDigest({ 'sha-256': stored }).send())
  app.get('/304-repr', async (_req, reply) => reply.code(304).setReprDigest({ 'sha-256': stored }).send())
  const none = await app.inject('/204')
  t.equal(none.headers['unencoded-digest'], undefined)
  const declared = await app.inject('/304')
  t.equal(declared.headers['unencoded-digest'], `sha-256=:${stored.toString('base64')}:`)
  t.equal(declared.headers['repr-digest'], undefined, 'setUnencodedDigest() declares no Repr-Digest')
  const repr = await app.inject('/304-repr')
  t.equal(repr.headers['unencoded-digest'], `sha-256=:${stored.toString('base64')}:`, 'a declared Repr-Digest without a coding of the route\'s own')
  t.equal(repr.headers['repr-digest'], `sha-256=:${stored.toString('base64')}:`)
})

test('a route that codes its content itself: Unencoded-Digest only when declared with setUnencodedDigest()', async (t) => {
  for (const strict of [false, true]) {
    const app = await buildApp(t, { strict, contentDigest: true, reprDigest: true, unencodedDigest: true })
    const coded = gzipSync(TEXT)
    const stored = computeDigest('sha-256', TEXT)
    app.get('/precoded', async (_req, reply) => reply.type('text/plain').header('content-encoding', 'gzip').send(coded))
    app.get('/precoded-stream', async (_req, reply) => reply.type('text/plain').header('content-encoding', 'gzip').send(Readable.from([coded])))
    app.get('/precoded-repr', async (_req, reply) => {
      reply.setReprDigest({ 'sha-256': computeDigest('sha-256', coded) })
      return reply.type('text/plain').header('content-encoding', 'gzip').send(coded)
    })
    app.get('/precoded-declared', async (_req, reply) => {
      reply.setUnencodedDigest({ 'sha-256': stored })
      return reply.type('text/plain').header('content-encoding', 'gzip').send(coded)
    })
    app.get('/identity', async (_req, reply) => reply.type('text/plain').header('content-encoding', 'identity').send(TEXT))
    app.get('/lines', async (_req, reply) => reply.type('text/plain').header('content-encoding', ['identity', 'gzip']).send(coded))
    for (const url of ['/precoded', '/precoded-stream', '/precoded-repr']) {
      for (const te of [{}, { te: 'trailers' }]) {
        const res = await app.inject({ url, headers: te })
        const all = fields(res)
        t.equal(all['content-digest'], sf(coded), `strict=${strict} ${url}`)
        t.equal(all['repr-digest'], sf(coded), `strict=${strict} ${url}: the coded bytes are the representation it knows`)
        t.equal(all['unencoded-digest'], undefined, `strict=${strict} ${url} ${JSON.stringify(te)}: never the coded bytes' digest`)
      }
    }
    const declared = await app.inject('/precoded-declared')
    t.equal(declared.headers['unencoded-digest'], sf(TEXT), `strict=${strict}: declared`)
    t.equal(declared.headers['repr-digest'], sf(coded))
    const head = await app.inject({ method: 'HEAD', url: '/precoded-declared' })
    t.equal(head.headers['unencoded-digest'], sf(TEXT), `strict=${strict}: HEAD, declared`)
    const identity = await app.inject('/identity')
    t.equal(identity.headers['unencoded-digest'], sf(TEXT), `strict=${strict}: Content-Encoding: identity is no coding`)
    const lines = await app.inject('/lines')
    t.equal(lines.headers['unencoded-digest'], undefined, `strict=${strict}: a coding in a second field line`)
  }
})

test('declared digests: setReprDigest() stands for Unencoded-Digest; setUnencodedDigest() wins; checked like setReprDigest()', async (t) => {
  const app = await withCompress(t, 'digest-first', { reprDigest: true, unencodedDigest: ['sha-256', 'sha-512'] })
  const stored = Buffer.alloc(32, 3)
  const other = Buffer.alloc(32, 4)
  app.get('/repr', async (_req, reply) => reply.type('text/plain').setReprDigest({ 'sha-256': stored }).send(TEXT))
  app.get('/both', async (_req, reply) => reply.type('text/plain').setUnencodedDigest({ 'sha-256': other }).setReprDigest({ 'sha-256': stored }).setUnencodedDigest({ 'sha-512': computeDigest('sha-512', TEXT) }).send(TEXT))
  app.get('/bad', async (_req, reply) => reply.setUnencodedDigest({ 'sha-256': Buffer.alloc(3) }).send('x'))
  for (const encoding of ['gzip', 'identity']) {
    const repr = await app.inject({ url: '/repr', headers: { 'accept-encoding': encoding } })
    t.equal(repr.headers['repr-digest'], `sha-256=:${stored.toString('base64')}:`, encoding)
    t.equal(repr.headers['unencoded-digest'], `sha-256=:${stored.toString('base64')}:, ${sf(TEXT, 'sha-512')}`, `${encoding}: declared, then computed`)
    const both = await app.inject({ url: '/both', headers: { 'accept-encoding': encoding } })
    t.equal(both.headers['repr-digest'], `sha-256=:${stored.toString('base64')}:`, encoding)
    t.equal(both.headers['unencoded-digest'], `sha-256=:${other.toString('base64')}:, ${sf(TEXT, 'sha-512')}`, `${encoding}: setUnencodedDigest() first`)
  }
  const bad = await app.inject('/bad')
  t.equal(bad.statusCode, 500)
  t.match(bad.json(), { code: 'FST_DIGEST_INVALID_DECLARED_DIGEST' })
})

test('streams: Unencoded-Digest as a trailer with TE: trailers, as a header when buffered, omitted (and reported) over maxBufferSize', async (t) => {
  const app = await withCompress(t, 'digest-first', { unencodedDigest: true, maxBufferSize: 10000 })
  app.get('/small-stream', async (_req, reply) => reply.type('text/plain').send(Readable.from([TEXT])))
  const omitted: unknown[] = []
  app.addHook('onResponse', async (_req, reply) => { omitted.push(reply.digestsOmitted) })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const trailed = await app.inject({ url: '/stream', headers: { te: 'trailers', 'accept-encoding': 'br' } })
  t.equal(trailed.headers.trailer, 'unencoded-digest')
  t.equal(trailed.trailers['unencoded-digest'], sf(LARGE))
  const buffered = await app.inject({ url: '/small-stream', headers: { 'accept-encoding': 'gzip' } })
  t.equal(buffered.headers['unencoded-digest'], sf(TEXT))
  const over = await app.inject({ url: '/stream' })
  t.equal(over.headers['unencoded-digest'], undefined)
  t.same(omitted, [null, null, { reason: 'over-max-buffer-size', fields: ['Unencoded-Digest'] }])
})

test('live streams: Unencoded-Digest as a trailer, or omitted', async (t) => {
  const app = await buildApp(t, { unencodedDigest: true })
  app.get('/events', async (_req, reply) => reply.type('text/event-stream').send(Readable.from(['data: 1\n\n', 'data: 2\n\n'])))
  const trailed = await app.inject({ url: '/events', headers: { te: 'trailers' } })
  t.equal(trailed.trailers['unencoded-digest'], sf('data: 1\n\ndata: 2\n\n'))
  const plain = await app.inject('/events')
  t.equal(plain.headers['unencoded-digest'], undefined)
  t.equal(plain.trailers['unencoded-digest'], undefined)
})

test('the 406 rule: a stale Repr-Digest gets no Unencoded-Digest; a current one gets it', async (t) => {
  const app = await withCompress(t, 'digest-first', { unencodedDigest: true })
  const stale = `sha-256=:${Buffer.alloc(32).toString('base64')}:`
  for (const url of ['/text', '/stream']) {
    const refused = await app.inject({ url, headers: { 'repr-digest': stale, 'accept-encoding': 'gzip' } })
    t.equal(refused.statusCode, 406, url)
    t.equal(refused.headers['unencoded-digest'], undefined, url)
    const body = url === '/text' ? TEXT : LARGE
    const current = await app.inject({ url, headers: { 'repr-digest': sf(body), 'accept-encoding': 'gzip' } })
    t.equal(current.statusCode, 200, url)
    t.equal(current.headers['unencoded-digest'], sf(body), url)
  }
})

test('an onSend hook of the route that rewrites the bytes, nothing coding them: Unencoded-Digest of what is sent', async (t) => {
  const app = await buildApp(t, { unencodedDigest: true, contentDigest: true })
  app.get('/rewritten', { onSend: async (_req, _reply, payload) => String(payload).toUpperCase() }, async (_req, reply) => reply.type('text/plain').send(TEXT))
  const res = await app.inject('/rewritten')
  t.equal(res.body, TEXT.toUpperCase())
  t.equal(res.headers['content-digest'], sf(res.rawPayload))
  t.equal(res.headers['unencoded-digest'], sf(res.rawPayload))
})
