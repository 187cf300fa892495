// Streamed bodies: trailers when the client allows them, else buffered up to
// maxBufferSize, else passed through untouched without digests.
import { test } from 'tap'
import { Readable } from 'node:stream'
import { request as httpRequest } from 'node:http'
import { createHash } from 'node:crypto'
import compress from '@fastify/compress'
import { buildApp, decode, rawExchange, sf, pattern, EMPTY_SHA256 } from '../../helpers'
import { pipedTrailersLost } from '../../loaded-majors'

function chunked (buf: Buffer, size: number): Readable {
  const parts: Buffer[] = []
  for (let i = 0; i < buf.length; i += size) parts.push(buf.subarray(i, i + size))
  return Readable.from(parts)
}

test('trailers when the client sends TE: trailers (inject)', async (t) => {
  const app = await buildApp(t, { contentDigest: true, reprDigest: ['sha-256', 'sha-512'] })
  const body = pattern(200000)
  app.get('/s', async (_req, reply) => reply.type('application/octet-stream').header('content-length', body.length).send(chunked(body, 16384)))
  const res = await app.inject({ url: '/s', headers: { te: 'trailers' } })
  t.equal(res.rawPayload.length, body.length)
  t.equal(res.headers['content-length'], undefined, 'Content-Length removed when trailers are used')
  t.equal(res.headers['transfer-encoding'], 'chunked')
  t.equal(res.headers.trailer, 'content-digest, repr-digest', 'a comma-separated list (RFC 9110 §6.6.2)')
  t.equal(res.headers['content-digest'], undefined)
  t.equal(res.trailers['content-digest'], sf(body))
  t.equal(res.trailers['repr-digest'], `${sf(body)}, ${sf(body, 'sha-512')}`)
})

test('no TE: trailers, or HTTP/1.0, or trailers: false: buffered and sent as headers', async (t) => {
  const app = await buildApp(t, { contentDigest: true })
  const body = pattern(50000)
  app.get('/s', async (_req, reply) => reply.type('application/octet-stream').send(chunked(body, 1000)))
  app.get('/off', { digest: { trailers: false } }, async (_req, reply) => reply.type('application/octet-stream').send(chunked(body, 1000)))
  for (const headers of [{}, { te: 'gzip' }, { te: 'trailersx' }]) {
    const res = await app.inject({ url: '/s', headers })
    t.equal(res.headers['content-digest'], sf(body), JSON.stringify(headers))
    t.equal(res.headers['content-length'], String(body.length))
    t.same(res.trailers, {})
  }
  const off = await app.inject({ url: '/off', headers: { te: 'trailers' } })
  t.equal(off.headers['content-digest'], sf(body))
  t.same(off.trailers, {})
})

test('over maxBufferSize without trailers: streamed untouched, digests omitted, the app told, a warning once per route', async (t) => {
  const logs: Array<Record<string, unknown>> = []
  const omitted: unknown[] = []
  const app = await buildApp(t, { contentDigest: true, reprDigest: true, maxBufferSize: 10000 }, { logger: { level: 'warn', stream: { write: (line: string) => { logs.push(JSON.parse(line)) } } } })
  app.addHook('onResponse', async (_req, reply) => { omitted.push(reply.digestsOmitted) })
  const body = pattern(30000)
  app.get('/s', async (_req, reply) => reply.type('application/octet-stream').send(chunked(body, 4096)))
  app.get('/route', { digest: { maxBufferSize: 100000 } }, async (_req, reply) => reply.type('application/octet-stream').send(chunked(body, 4096)))
  app.get('/asked', { digest: { contentDigest: false, reprDigest: false, trailers: false } }, async (_req, reply) => reply.type('application/octet-stream').send(chunked(body, 4096)))
  const res = await app.inject('/s')
  t.equal(res.statusCode, 200)
  t.ok(res.rawPayload.equals(body), 'every byte arrives, in order')
  t.equal(res.headers['content-digest'], undefined)
  t.equal(res.headers['repr-digest'], undefined)
  t.same(omitted.pop(), { reason: 'over-max-buffer-size', fields: ['Content-Digest', 'Repr-Digest'] }, 'reply.digestsOmitted')
  await app.inject('/s')
  t.same(logs.map((l) => [l.level, l.route, l.reason, l.fields]), [[40, 'GET /s', 'over-max-buffer-size', ['Content-Digest', 'Repr-Digest']]], 'one warning for two responses')
  t.match(logs[0]?.msg, /Content-Digest, Repr-Digest not sent on GET \/s: the streamed response is larger than maxBufferSize and goes without trailers\. Fix: raise maxBufferSize \(plugin or route option\) above the response's size, or clients that send "TE: trailers" get them as trailers/)
  const route = await app.inject('/route')
  t.equal(route.headers['content-digest'], sf(body), 'a route may raise the limit')
  t.equal(omitted.pop(), null, 'nothing omitted')
  // Nothing configured, Content-Digest asked for with Want-*, trailers off on the route.
  const asked = await app.inject({ url: '/asked', headers: { 'want-content-digest': 'sha-256=1', te: 'trailers' } })
  t.equal(asked.headers['content-digest'], undefined)
  t.same(omitted.pop(), { reason: 'over-max-buffer-size', fields: ['Content-Digest'] })
  t.match(logs[1], { route: 'GET /asked', msg: /Fix: raise maxBufferSize \(plugin or route option\) above the response's size, or set the trailers option to true, and clients that send "TE: trailers" get them as trailers/ })
  await app.inject('/asked')
  t.equal(omitted.pop(), null, 'nothing asked, nothing omitted')
  t.equal(logs.length, 2)
})

test('HEAD of a streamed route: Repr-Digest hashed up to maxBufferSize, empty Content-Digest', async (t) => {
  const logs: Array<Record<string, unknown>> = []
  const app = await buildApp(t, { contentDigest: true, reprDigest: true, maxBufferSize: 10000 }, { logger: { level: 'warn', stream: { write: (line: string) => { logs.push(JSON.parse(line)) } } } })
  const small = pattern(5000)
  const large = pattern(20000)
  app.get('/small', async (_req, reply) => reply.type('application/octet-stream').send(chunked(small, 1000)))
  app.get('/large', async (_req, reply) => reply.type('application/octet-stream').send(chunked(large, 1000)))
  const omitted: unknown[] = []
  app.addHook('onResponse', async (_req, reply) => { omitted.push(reply.digestsOmitted) })
  const a = await app.inject({ method: 'HEAD', url: '/small' })
  t.equal(a.statusCode, 200)
  t.equal(a.headers['content-digest'], EMPTY_SHA256)
  t.equal(a.headers['repr-digest'], sf(small))
  const b = await app.inject({ method: 'HEAD', url: '/large', headers: { te: 'trailers' } })
  t.equal(b.statusCode, 200)
  t.equal(b.headers['content-digest'], EMPTY_SHA256)
  t.equal(b.headers['repr-digest'], undefined, 'too large to hash for a HEAD: omitted')
  t.same(b.trailers, {}, 'never trailers on HEAD')
  t.same(omitted, [null, { reason: 'over-max-buffer-size', fields: ['Repr-Digest'] }], 'reply.digestsOmitted')
  t.equal(logs.length, 1)
  t.match(logs[0], { route: 'HEAD /large', reason: 'over-max-buffer-size', fields: ['Repr-Digest'] })
  const msg = logs[0]?.msg as string
  t.match(msg, /Repr-Digest not sent on HEAD \/large: a HEAD hashes at most maxBufferSize bytes of the streamed representation, and it is larger\. Fix: declare the digest with reply\.setReprDigest\(\) when it is known, or raise maxBufferSize \(plugin or route option\) above the representation's size/)
  t.notMatch(msg, /TE: trailers/, 'trailers cannot help a HEAD')
})

test('stream errors do not become digests', async (t) => {
  const app = await buildApp(t, { contentDigest: true })
  app.get('/fail', async (_req, reply) => {
    const s = new Readable({ read () {} })
    s.push('partial')
    setImmediate(() => s.destroy(new Error('source failed')))
    return reply.type('text/plain').send(s)
  })
  const res = await app.inject('/fail')
  t.equal(res.statusCode, 500, 'the error is caught while buffering, before any header went out')
  t.equal(res.json().message, 'source failed')
  t.equal(res.headers['content-digest'], sf(res.rawPayload), 'the 500 carries the digest of its own body')
})

test('over a real server: trailers with gzip, checked by a node:http client', async (t) => {
  const app = await buildApp(t, { contentDigest: true, reprDigest: true }, {}, async (app) => {
    await app.register(compress, { threshold: 1 })
  })
  const body = Buffer.from('streamed over a socket\n'.repeat(5000))
  app.get('/s', async (_req, reply) => reply.type('text/plain').send(chunked(body, 7000)))
  await app.listen({ port: 0, host: '127.0.0.1' })
  const port = (app.server.address() as { port: number }).port
  const got = await new Promise<{ headers: Record<string, unknown>, trailers: Record<string, unknown>, raw: Buffer }>((resolve, reject) => {
    const req = httpRequest({ port, host: '127.0.0.1', path: '/s', headers: { te: 'trailers', 'accept-encoding': 'gzip' } }, (res) => {
      const parts: Buffer[] = []
      res.on('data', (c: Buffer) => parts.push(c))
      res.on('end', () => resolve({ headers: res.headers, trailers: res.trailers, raw: Buffer.concat(parts) }))
    })
    req.on('error', reject)
    req.end()
  })
  t.equal(got.headers['content-encoding'], 'gzip')
  t.equal(got.headers.trailer, 'content-digest, repr-digest')
  t.equal(got.trailers['content-digest'], sf(got.raw), { skip: pipedTrailersLost })
  t.equal(got.trailers['repr-digest'], sf(decode(got.raw, 'gzip')), { skip: pipedTrailersLost })
  t.ok(decode(got.raw, 'gzip').equals(body))
})

test('over a real server: an HTTP/1.0 request never gets trailers', async (t) => {
  const app = await buildApp(t, { contentDigest: true })
  app.get('/s', async (_req, reply) => reply.type('text/plain').send(Readable.from(['one ', 'two'])))
  const raw = await rawExchange(app, 'GET /s HTTP/1.0\r\nHost: x\r\nTE: trailers\r\n\r\n')
  const [head, content] = raw.split('\r\n\r\n') as [string, string]
  t.equal(content, 'one two')
  t.notMatch(head, /trailer/i)
  t.match(head, new RegExp(`content-digest: ${sf('one two').replace(/[+/=]/g, '\\$&')}`, 'i'))
  t.equal(createHash('sha256').update(content).digest('base64').length, 44)
})

test('strict mode streams: Repr-Digest of the coded bytes, Unencoded-Digest of the identity, as trailers or headers', async (t) => {
  for (const unencodedDigest of [false, true]) {
    const app = await buildApp(t, { strict: true, unencodedDigest, contentDigest: true, reprDigest: true }, {}, async (app) => {
      await app.register(compress, { threshold: 1 })
    })
    const body = Buffer.from('strict stream\n'.repeat(3000))
    app.get('/s', async (_req, reply) => reply.type('text/plain').send(chunked(body, 5000)))
    for (const headers of [{ te: 'trailers', 'accept-encoding': 'gzip' }, { 'accept-encoding': 'gzip' }, { te: 'trailers' }]) {
      const res = await app.inject({ url: '/s', headers })
      const fields = { ...res.headers, ...res.trailers }
      const name = `unencodedDigest=${unencodedDigest} ${JSON.stringify(headers)}`
      t.ok(decode(res.rawPayload, res.headers['content-encoding']).equals(body), name)
      t.equal(fields['content-digest'], sf(res.rawPayload), name)
      t.equal(fields['repr-digest'], sf(res.rawPayload), `${name}: the representation is the coded content`)
      t.equal(fields['unencoded-digest'], unencodedDigest ? sf(body) : undefined, name)
    }
  }
})
