// The client against the real server plugin: a listening fastify with
// @fastify/compress and this plugin, driven by undici.request, undici.fetch
// and undici.stream through the interceptor. Every algorithm (the deprecated
// ones enabled on both ends), gzip, br and identity, default and strict mode
// on both ends, HEAD, 206 from @fastify/static, trailers over HTTP/1.1,
// HTTP/2 (h2c), the 406 rule and problem details.
import { test } from 'tap'
import { Readable } from 'node:stream'
import { readFileSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify'
import compress from '@fastify/compress'
import fastifyStatic from '@fastify/static'
import { H2CClient } from 'undici'
import type { DigestAlgorithm, FastifyDigestFieldsOptions } from '../../types/index'
import digestFields = require('../../lib/index')
import { digestInterceptor } from '../../lib/client/index'
import { pattern, sf } from '../helpers'
import { KINDS, assertFailure, call, digestAgent } from './client-helpers'

const ITEMS = { items: Array.from({ length: 300 }, (_, id) => ({ id, name: `item ${id}` })) }
const CHUNKS = ['first chunk '.repeat(50), 'second chunk '.repeat(50), 'last']

interface Closeable { teardown (fn: () => unknown): void }

async function server (t: Closeable, opts: FastifyDigestFieldsOptions, serverOpts: FastifyServerOptions = {}): Promise<{ app: FastifyInstance, base: string }> {
  const app = Fastify(serverOpts as FastifyServerOptions)
  t.teardown(() => app.close())
  await app.register(compress, { threshold: 0 })
  await app.register(digestFields, opts)
  app.get('/items', async () => ITEMS)
  app.get('/stream', async (_request, reply) => reply.type('text/plain').send(Readable.from(CHUNKS)))
  app.post('/echo', async (request) => ({ verified: request.digestVerification?.verified ?? null }))
  app.get('/te', async (request) => ({ te: request.headers.te ?? null }))
  await app.listen({ port: 0, host: '127.0.0.1' })
  return { app, base: `http://127.0.0.1:${(app.server.address() as { port: number }).port}` }
}

const CODINGS = ['identity', 'gzip', 'br']

/**
 * A digest field from the headers or, when the plugin sent it as a trailer
 * (a compressed body is a stream, and verify: 'required' sends TE: trailers),
 * the trailers; fetch hides trailers: undefined there.
 */
function fieldOf (out: Awaited<ReturnType<typeof call>>, name: string): string | string[] | undefined {
  return out.headers[name] ?? out.trailers[name]
}

test('every algorithm, enabled on both ends, over identity, gzip and br', async (t) => {
  for (const algorithm of digestFields.ALGORITHMS.keys()) {
    const { base } = await server(t, { algorithms: [algorithm], contentDigest: true, reprDigest: true })
    const dispatcher = digestAgent(t, { algorithms: [algorithm], verify: 'required' })
    for (const kind of KINDS) {
      for (const coding of CODINGS) {
        const out = await call(kind, dispatcher, `${base}/items`, { headers: { 'accept-encoding': coding } })
        t.equal(out.error, null, `${algorithm} ${kind} ${coding}: ${String(out.error?.message)}`)
        t.equal(out.status, 200)
        if (kind !== 'fetch' || coding === 'identity') t.ok(String(fieldOf(out, 'content-digest')).startsWith(`${algorithm}=`))
      }
    }
  }
})

test('default and strict mode, both ends; a client in the wrong mode', async (t) => {
  for (const strict of [false, true]) {
    const { base } = await server(t, { strict, contentDigest: ['sha-256', 'sha-512'], reprDigest: ['sha-256', 'sha-512'] })
    const same = digestAgent(t, { strict, verify: 'required' })
    const other = digestAgent(t, { strict: !strict, verify: 'required' })
    for (const kind of KINDS) {
      for (const coding of CODINGS) {
        const out = await call(kind, same, `${base}/items`, { headers: { 'accept-encoding': coding } })
        t.equal(out.error, null, `strict ${String(strict)} ${kind} ${coding}: ${String(out.error?.message)}`)
        t.same(JSON.parse(out.body.toString(kind === 'fetch' ? 'utf8' : 'latin1').startsWith('{') ? out.body.toString() : '{}'),
          kind === 'fetch' || coding === 'identity' ? ITEMS : {})
        const crossed = await call(kind, other, `${base}/items`, { headers: { 'accept-encoding': coding } })
        if (strict || coding === 'identity') {
          // A default-mode client accepts either reading; identity has one.
          t.equal(crossed.error, null, `crossed strict ${String(strict)} ${kind} ${coding}`)
        } else {
          // A strict client reads the default mode's Repr-Digest as of the coded bytes.
          assertFailure(t, crossed, 'FST_DIGEST_RESPONSE_MISMATCH', 'Repr-Digest', 'sha-256')
        }
      }
    }
  }
})

test('want: Want-*-Digest fields ask the plugin for digests', async (t) => {
  const { base } = await server(t, {})
  const none = digestAgent(t, { verify: 'required' })
  const wanting = digestAgent(t, { verify: 'required', want: ['sha-512', 'sha-256'] })
  const reprOnly = digestAgent(t, { verify: 'required', want: { repr: 'sha-256' } })
  for (const kind of KINDS) {
    assertFailure(t, await call(kind, none, `${base}/items`), 'FST_DIGEST_RESPONSE_MISSING', 'Content-Digest, Repr-Digest or Unencoded-Digest', 'sha-256, sha-512')
    for (const coding of CODINGS) {
      const out = await call(kind, wanting, `${base}/items`, { headers: { 'accept-encoding': coding } })
      t.equal(out.error, null)
      if (kind === 'fetch' && coding !== 'identity') continue // in trailers, hidden by fetch
      t.match(fieldOf(out, 'content-digest'), /^sha-512=/)
      t.match(fieldOf(out, 'repr-digest'), /^sha-512=/)
    }
    const repr = await call(kind, reprOnly, `${base}/items`, { headers: { 'accept-encoding': 'identity' } })
    t.equal(repr.error, null)
    t.equal(fieldOf(repr, 'content-digest'), undefined)
    t.match(fieldOf(repr, 'repr-digest'), /^sha-256=/)
  }
})

test('past maxDecodedSize a coded Repr-Digest is unchecked, not mismatched: 80 MiB under the default, 5 MiB under 1 MiB', async (t) => {
  // Compressible text, so the wire stays small; @fastify/compress codes it,
  // and the plugin's Repr-Digest is that of the decoded bytes (default mode).
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(compress, { threshold: 0 })
  await app.register(digestFields, { reprDigest: true })
  const bodies = new Map<number, Buffer>()
  const body = (size: number): Buffer => bodies.get(size) ?? bodies.set(size, Buffer.alloc(size, 'digest fields ')).get(size) as Buffer
  app.get('/text/:size', async (request, reply) => reply.type('text/plain').send(body(Number((request.params as { size: string }).size))))
  app.get('/both/:size', { digest: { contentDigest: true } }, async (request, reply) =>
    reply.type('text/plain').send(body(Number((request.params as { size: string }).size))))
  await app.listen({ port: 0, host: '127.0.0.1' })
  const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
  const MiB = 1024 * 1024
  const check = (out: Awaited<ReturnType<typeof call>>, size: number, label: string): void => {
    t.equal(out.error, null, `${label}: ${String(out.error?.message)}`)
    t.equal(out.headers['repr-digest'], sf(body(size)), `${label}: the server's Repr-Digest is that of the decoded bytes`)
  }
  const defaults = digestAgent(t)
  for (const kind of KINDS) {
    const size = 80 * MiB
    const out = await call(kind, defaults, `${base}/text/${size}`, { headers: { 'accept-encoding': 'gzip' } })
    check(out, size, `${kind} 80 MiB gzip, default maxDecodedSize`)
    t.equal(out.body.length, kind === 'fetch' ? size : out.body.length)
  }
  const capped = digestAgent(t, { maxDecodedSize: MiB })
  const required = digestAgent(t, { maxDecodedSize: MiB, verify: 'required' })
  for (const kind of KINDS) {
    for (const coding of ['gzip', 'br']) {
      const size = 5 * MiB
      const label = `${kind} 5 MiB ${coding}, maxDecodedSize 1 MiB`
      check(await call(kind, capped, `${base}/text/${size}`, { headers: { 'accept-encoding': coding } }), size, label)
      // 'required' asks for a check: none could be made.
      const unchecked = await call(kind, required, `${base}/text/${size}`, { headers: { 'accept-encoding': coding } })
      assertFailure(t, unchecked, 'FST_DIGEST_RESPONSE_UNCHECKED', 'Repr-Digest', 'sha-256')
      t.match(unchecked.error?.message, /maxDecodedSize/)
      // The Content-Digest of the bytes received was checked: that is enough.
      const both = await call(kind, required, `${base}/both/${size}`, { headers: { 'accept-encoding': coding } })
      t.equal(both.error, null, `${label}, Content-Digest too: ${String(both.error?.message)}`)
    }
  }
})

test('HEAD and 206 from @fastify/static', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'client-static-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const file = pattern(100_000)
  await writeFile(join(dir, 'data.bin'), file)
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(digestFields, { contentDigest: true, reprDigest: true })
  await app.register(fastifyStatic, { root: dir, setHeaders: digestFields.staticHeaders })
  app.get('/items', async () => ITEMS)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
  const dispatcher = digestAgent(t, { verify: 'required' })
  for (const kind of KINDS) {
    const head = await call(kind, dispatcher, `${base}/data.bin`, { method: 'HEAD' })
    t.equal(head.error, null, `${kind} HEAD: ${String(head.error?.message)}`)
    t.equal(head.headers['repr-digest'], sf(file))
    const headItems = await call(kind, dispatcher, `${base}/items`, { method: 'HEAD' })
    t.equal(headItems.error, null)
    const part = await call(kind, dispatcher, `${base}/data.bin`, { headers: { range: 'bytes=100-1099' } })
    t.equal(part.error, null, `${kind} 206: ${String(part.error?.message)}`)
    t.equal(part.status, 206)
    t.equal(part.body.length, 1000)
    // The part's Content-Digest is a trailer for TE: trailers (hidden by fetch).
    if (kind !== 'fetch') t.equal(part.trailers['content-digest'], sf(file.subarray(100, 1100)))
    t.equal(part.headers['repr-digest'], sf(file))
    const whole = await call(kind, dispatcher, `${base}/data.bin`)
    t.equal(whole.error, null)
    t.ok(whole.body.equals(file))
  }
})

test('a stream with TE: trailers over HTTP/1.1, in both modes, coded or not', async (t) => {
  for (const strict of [false, true]) {
    const { base } = await server(t, { strict, contentDigest: true, reprDigest: true })
    const dispatcher = digestAgent(t, { strict, verify: 'required' })
    for (const kind of KINDS) {
      for (const coding of CODINGS) {
        const out = await call(kind, dispatcher, `${base}/stream`, { headers: { te: 'trailers', 'accept-encoding': coding } })
        t.equal(out.error, null, `${kind} ${coding}: ${String(out.error?.message)}`)
        t.equal(out.headers['content-digest'], undefined, 'the digests came as trailers')
        if (kind === 'fetch') continue // checked by the interceptor, hidden by fetch
        t.match(out.trailers['content-digest'], /^sha-256=/)
        t.match(out.trailers['repr-digest'], /^sha-256=/)
      }
    }
  }
})

test("verify: 'required' asks for trailers (TE: trailers) unless the caller set TE: streams over maxBufferSize, HTTP/1.1 and HTTP/2", async (t) => {
  for (const http2 of [false, true]) {
    // CHUNKS are over maxBufferSize: without TE: trailers the plugin can send no digest for them.
    const { base } = await server(t, { contentDigest: true, reprDigest: true, maxBufferSize: 100 }, http2 ? { http2: true } as FastifyServerOptions : {})
    let dispatcher = digestAgent(t, { verify: 'required' })
    let lenient = digestAgent(t)
    if (http2) {
      const client = new H2CClient(base)
      t.teardown(() => client.close())
      dispatcher = client.compose(digestInterceptor({ verify: 'required' }))
      lenient = client.compose(digestInterceptor())
    }
    const proto = http2 ? 'HTTP/2' : 'HTTP/1.1'
    for (const kind of KINDS) {
      for (const coding of CODINGS) {
        const out = await call(kind, dispatcher, `${base}/stream`, { headers: { 'accept-encoding': coding } })
        t.equal(out.error, null, `${proto} ${kind} ${coding}: ${String(out.error?.message)}`)
        t.equal(out.body.length > 0, true)
        if (kind !== 'fetch') t.match(out.trailers, { 'content-digest': /^sha-256=/, 'repr-digest': /^sha-256=/ }, 'the digests came as trailers')
      }
      t.same(JSON.parse((await call(kind, dispatcher, `${base}/te`)).body.toString()), { te: 'trailers' }, `${proto} ${kind}: sent`)
      t.same(JSON.parse((await call(kind, lenient, `${base}/te`)).body.toString()), { te: null }, `${proto} ${kind}: 'if-present' asks for nothing`)
      if (http2) continue // HTTP/2 allows no TE value but "trailers" (RFC 9113 §8.2.2)
      // The caller's TE is theirs: kept as it is, and without trailers asked for there is no digest.
      const own = await call(kind, dispatcher, `${base}/te`, { headers: { TE: 'deflate' } })
      t.equal(own.error, null)
      t.same(JSON.parse(own.body.toString()), { te: 'deflate' }, `${kind}: the caller's TE kept`)
      assertFailure(t, await call(kind, dispatcher, `${base}/stream`, { headers: { TE: 'deflate', 'accept-encoding': 'identity' } }),
        'FST_DIGEST_RESPONSE_MISSING', 'Content-Digest, Repr-Digest or Unencoded-Digest', 'sha-256, sha-512')
    }
  }
})

test('the 406 rule and problem details from the plugin', async (t) => {
  const { base } = await server(t, { contentDigest: true })
  const dispatcher = digestAgent(t)
  for (const kind of KINDS) {
    const stale = await call(kind, dispatcher, `${base}/items`, { headers: { 'repr-digest': sf('an older version') } })
    t.equal(stale.status, 406)
    assertFailure(t, stale, 'FST_DIGEST_NOT_ACCEPTABLE', 'Repr-Digest', 'sha-256')
    const refused = await call(kind, dispatcher, `${base}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-digest': sf('{"other":1}') },
      body: '{"a":1}'
    })
    assertFailure(t, refused, 'FST_DIGEST_REQUEST_REJECTED', 'Content-Digest', 'sha-256')
  }
})

test('HTTP/2 (h2c): headers and trailers, coded or not', async (t) => {
  const { base } = await server(t, { contentDigest: true, reprDigest: true }, { http2: true } as FastifyServerOptions)
  const client = new H2CClient(base)
  t.teardown(() => client.close())
  const dispatcher = client.compose(digestInterceptor({ verify: 'required', algorithms: ['sha-512', 'sha-256'] as DigestAlgorithm[] }))
  for (const kind of KINDS) {
    for (const coding of CODINGS) {
      const out = await call(kind, dispatcher, `${base}/items`, { headers: { 'accept-encoding': coding } })
      t.equal(out.error, null, `${kind} ${coding}: ${String(out.error?.message)}`)
      const streamed = await call(kind, dispatcher, `${base}/stream`, { headers: { te: 'trailers', 'accept-encoding': coding } })
      t.equal(streamed.error, null, `${kind} ${coding} stream: ${String(streamed.error?.message)}`)
      if (kind === 'fetch') continue // fetch hides the trailers the interceptor checked
      t.match(streamed.trailers['content-digest'], /^sha-256=/, 'trailers read back from the HTTP/2 stream')
    }
  }
})

test('HTTP/2 over TLS: new Agent({ allowH2: true }) against fastify({ http2: true, https })', async (t) => {
  // A throwaway self-signed certificate for 127.0.0.1 (test/fixtures), trusted by this client only.
  const key = readFileSync(join(__dirname, '..', 'fixtures', 'client-h2-key.pem'))
  const cert = readFileSync(join(__dirname, '..', 'fixtures', 'client-h2-cert.pem'))
  const app = Fastify({ http2: true, https: { key, cert } } as unknown as FastifyServerOptions)
  t.teardown(() => app.close())
  await app.register(compress, { threshold: 0 })
  await app.register(digestFields, { contentDigest: true, reprDigest: true })
  app.get('/items', async () => ITEMS)
  app.get('/stream', async (_request, reply) => reply.type('text/plain').send(Readable.from(CHUNKS)))
  await app.listen({ port: 0, host: '127.0.0.1' })
  const base = `https://127.0.0.1:${(app.server.address() as { port: number }).port}`
  const dispatcher = digestAgent(t, { verify: 'required' }, { allowH2: true, connect: { ca: cert } })
  for (const kind of KINDS) {
    for (const coding of CODINGS) {
      const out = await call(kind, dispatcher, `${base}/items`, { headers: { 'accept-encoding': coding } })
      t.equal(out.error, null, `${kind} ${coding}: ${String(out.error?.message)}`)
      t.same(kind === 'fetch' || coding === 'identity' ? JSON.parse(out.body.toString()) : ITEMS, ITEMS)
      const streamed = await call(kind, dispatcher, `${base}/stream`, { headers: { te: 'trailers', 'accept-encoding': coding } })
      t.equal(streamed.error, null, `${kind} ${coding} stream: ${String(streamed.error?.message)}`)
      if (kind === 'fetch') continue // fetch hides the trailers the interceptor checked
      t.match(streamed.trailers['repr-digest'], /^sha-256=/, 'trailers read back from the HTTP/2 stream')
    }
  }
})
