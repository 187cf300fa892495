// With the real @fastify/compress: Repr-Digest before compression and
// Content-Digest after it, in both registration orders, on compress's
// synchronous (Buffer) path and its stream path, for gzip, deflate and br.
import { test } from 'tap'
import { createHash } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import { Readable } from 'node:stream'
import compress from '@fastify/compress'
import type { FastifyInstance } from 'fastify'
import type { FastifyDigestFieldsOptions } from '../../../types/index'
import { buildApp, decode, sf, EMPTY_SHA256 } from '../../helpers'
import { fetchRaw } from '../hardening-helpers'

// syncThreshold is set explicitly: its default depends on the CPU count.
const compressOpts = { threshold: 100, syncThreshold: 4096 }
const SMALL = 'small but compressible '.repeat(100) // 2300 B: sync path
const LARGE = 'large and compressible '.repeat(1000) // 23000 B: stream path

async function appWith (t: Parameters<typeof buildApp>[0], order: 'digest-first' | 'compress-first', opts: FastifyDigestFieldsOptions): Promise<FastifyInstance> {
  const app = order === 'digest-first'
    ? await buildApp(t, opts)
    : await buildApp(t, opts, {}, async (app) => { await app.register(compress, compressOpts) })
  if (order === 'digest-first') await app.register(compress, compressOpts)
  app.get('/small', async (_req, reply) => reply.type('text/plain').send(SMALL))
  app.get('/large', async (_req, reply) => reply.type('text/plain').send(LARGE))
  app.get('/stream', async (_req, reply) => reply.type('text/plain').send(Readable.from([LARGE.slice(0, 5000), LARGE.slice(5000)])))
  app.get('/json', async () => ({ list: Array.from({ length: 200 }, (_, i) => ({ i })) }))
  return app
}

for (const order of ['digest-first', 'compress-first'] as const) {
  test(`default mode, ${order}: Content-Digest over the coded bytes, Repr-Digest over the identity`, async (t) => {
    const app = await appWith(t, order, { contentDigest: true, reprDigest: true })
    for (const encoding of ['gzip', 'deflate', 'br']) {
      for (const url of ['/small', '/large', '/stream', '/json']) {
        const res = await app.inject({ url, headers: { 'accept-encoding': encoding } })
        const name = `${url} ${encoding}`
        t.equal(res.headers['content-encoding'], encoding, name)
        const identity = decode(res.rawPayload, res.headers['content-encoding'])
        t.equal(res.headers['content-digest'], sf(res.rawPayload), `${name} Content-Digest`)
        t.equal(res.headers['repr-digest'], sf(identity), `${name} Repr-Digest`)
        t.equal(res.headers['content-length'], String(res.rawPayload.length), `${name} Content-Length`)
        t.match(res.headers.vary, /accept-encoding/, name)
        t.match(res.headers.vary, /Want-Content-Digest, Want-Repr-Digest/, name)
      }
    }
    const identity = await app.inject('/small')
    t.equal(identity.headers['content-encoding'], undefined)
    t.equal(identity.headers['content-digest'], sf(SMALL))
    t.equal(identity.headers['repr-digest'], sf(SMALL))
  })

  test(`strict mode, ${order}: Repr-Digest equals Content-Digest for a full coded response`, async (t) => {
    const app = await appWith(t, order, { contentDigest: true, reprDigest: true, strict: true, unencodedDigest: true })
    for (const url of ['/small', '/large', '/stream']) {
      const res = await app.inject({ url, headers: { 'accept-encoding': 'gzip' } })
      t.equal(res.headers['content-digest'], sf(res.rawPayload), url)
      t.equal(res.headers['repr-digest'], sf(res.rawPayload), url)
      t.equal(res.headers['unencoded-digest'], sf(decode(res.rawPayload, 'gzip')), `${url} Unencoded-Digest`)
    }
  })

  test(`HEAD, ${order}: automatic HEAD routes are never compressed`, async (t) => {
    const app = await appWith(t, order, { contentDigest: true, reprDigest: true })
    for (const url of ['/small', '/large', '/stream']) {
      const head = await app.inject({ method: 'HEAD', url, headers: { 'accept-encoding': 'gzip' } })
      t.equal(head.statusCode, 200)
      t.equal(head.headers['content-encoding'], undefined, url)
      t.equal(head.headers['content-digest'], EMPTY_SHA256, url)
      t.equal(head.headers['repr-digest'], sf(LARGE.length > 0 && url === '/small' ? SMALL : LARGE), url)
    }
  })
}

test('both registration orders give identical fields', async (t) => {
  const a = await appWith(t, 'digest-first', { contentDigest: ['sha-256', 'sha-512'], reprDigest: true })
  const b = await appWith(t, 'compress-first', { contentDigest: ['sha-256', 'sha-512'], reprDigest: true })
  for (const url of ['/small', '/large', '/stream', '/json']) {
    for (const encoding of ['gzip', 'br', 'identity']) {
      const ra = await a.inject({ url, headers: { 'accept-encoding': encoding } })
      const rb = await b.inject({ url, headers: { 'accept-encoding': encoding } })
      t.equal(ra.headers['content-digest'], rb.headers['content-digest'], `${url} ${encoding}`)
      t.equal(ra.headers['repr-digest'], rb.headers['repr-digest'], `${url} ${encoding}`)
      t.ok(ra.headers['content-digest'], `${url} ${encoding} has a Content-Digest`)
    }
  }
})

// The specification's exchange 5: "PUT with Want-Repr-Digest: <algorithm>=<integer> → on success, a 201 Created
// response with Repr-Digest and Content-Digest using the requested algorithm; Content-Digest reflects the
// Content-Encoding of the response." Over a real server, checked against the gzip bytes received.
test('exchange 5: PUT with Want-Repr-Digest answered 201 with Repr-Digest and Content-Digest in that algorithm, Content-Digest over the gzip bytes', async (t) => {
  for (const order of ['digest-first', 'compress-first'] as const) {
    const app = await appWith(t, order, { contentDigest: true })
    app.put('/items/:id', async (req, reply) => {
      reply.code(201).header('content-location', `/items/${(req.params as { id: string }).id}`)
      return { id: (req.params as { id: string }).id, title: 'New Title', padding: 'p'.repeat(500) }
    })
    await app.listen({ port: 0, host: '127.0.0.1' })
    const res = await fetchRaw((app.server.address() as AddressInfo).port, {
      method: 'PUT',
      path: '/items/123',
      headers: { 'content-type': 'application/json', 'want-repr-digest': 'sha-512=5', 'accept-encoding': 'gzip' },
      body: JSON.stringify({ title: 'New Title' })
    })
    t.equal(res.status, 201, order)
    t.equal(res.headers['content-encoding'], 'gzip', order)
    const identity = decode(res.body, 'gzip')
    t.equal(JSON.parse(identity.toString()).id, '123')
    t.equal(res.headers['repr-digest'], `sha-512=:${createHash('sha512').update(identity).digest('base64')}:`, `${order}: Repr-Digest in sha-512, of the JSON`)
    t.equal(res.headers['content-digest'], `sha-512=:${createHash('sha512').update(res.body).digest('base64')}:`, `${order}: Content-Digest in sha-512, of the gzip bytes received`)
  }
})

test('a route with compress: false and a route with its own encoding', async (t) => {
  const app = await appWith(t, 'compress-first', { contentDigest: true, reprDigest: true })
  app.get('/nocompress', { compress: false }, async (_req, reply) => reply.type('text/plain').send(SMALL))
  app.get('/preencoded', async (_req, reply) => {
    const { gzipSync } = await import('node:zlib')
    return reply.type('text/plain').header('content-encoding', 'gzip').send(gzipSync(SMALL))
  })
  const plain = await app.inject({ url: '/nocompress', headers: { 'accept-encoding': 'gzip' } })
  t.equal(plain.headers['content-encoding'], undefined)
  t.equal(plain.headers['content-digest'], sf(SMALL))
  const pre = await app.inject({ url: '/preencoded', headers: { 'accept-encoding': 'gzip' } })
  t.equal(pre.headers['content-encoding'], 'gzip')
  t.equal(pre.headers['content-digest'], sf(pre.rawPayload))
  t.equal(pre.headers['repr-digest'], sf(pre.rawPayload), 'the route sent coded bytes: they are the representation it knows')
})

// A HEAD's identity digests stand for the body its Content-Length describes as the representation stage sees it:
// compress's synchronous path sets the coded length afterwards (as its stream path removes the field).
test('an explicit HEAD route coded by compress: the identity digests of its representation', async (t) => {
  for (const order of ['digest-first', 'compress-first'] as const) {
    const app = await appWith(t, order, { reprDigest: true, unencodedDigest: true })
    app.head('/explicit', async (_req, reply) => reply.type('text/plain').send(SMALL))
    const head = await app.inject({ method: 'HEAD', url: '/explicit', headers: { 'accept-encoding': 'gzip' } })
    t.equal(head.headers['content-encoding'], 'gzip', order)
    t.equal(head.headers['repr-digest'], sf(SMALL), `${order} Repr-Digest`)
    t.equal(head.headers['unencoded-digest'], sf(SMALL), `${order} Unencoded-Digest`)
  }
})
