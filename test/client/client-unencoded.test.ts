// The client and Unencoded-Digest (draft-ietf-httpbis-unencoded-digest): the
// digest of the representation with no content coding, checked over the
// bytes received when there is none, else over the side decoder's output, in
// both client modes. Against the real plugin with @fastify/compress (every
// coding it uses here: zstd where node:zlib has it), and against node:http
// and node:http2 servers sending hand-built fields (node:crypto), so client
// and server cannot share a mistake: headers and trailers, 206, HEAD, 304,
// maxDecodedSize, zstd on Node.js 20 (not decoded here: unchecked).
import { test } from 'tap'
import { createServer as createH2Server, type ServerHttp2Stream } from 'node:http2'
import { Readable } from 'node:stream'
import { brotliCompressSync, gzipSync } from 'node:zlib'
import Fastify, { type FastifyServerOptions } from 'fastify'
import compress from '@fastify/compress'
import { H2CClient, fetch } from 'undici'
import digestFields = require('../../lib/index')
import type { FastifyDigestFieldsOptions } from '../../types/index'
import { digestBody, digestHeaders, digestInterceptor } from '../../lib/client/index'
import { CODINGS, sf, zstd } from '../helpers'
import { KINDS, assertFailure, call, digestAgent, listenLocal, routeServer, withTrailers, type Route } from './client-helpers'

const BODY = 'hello, unencoded digest'
const OTHER = 'something else'
const GZ = gzipSync(BODY)
const GZ_BR = brotliCompressSync(GZ)
const UNENCODED = 'Unencoded-Digest'

function send (headers: Record<string, string>, body: string | Buffer = BODY, status = 200): Route {
  return (_req, res) => {
    res.writeHead(status, headers)
    res.end(body)
  }
}

function trailered (trailers: Record<string, string>, announce: boolean, body: string | Buffer = BODY, headers: Record<string, string> = {}): Route {
  return withTrailers(trailers, announce, body, headers)
}

const ZSTD = zstd === null ? Buffer.from('(not zstd: never decoded on Node.js 20)') : zstd.compress(Buffer.from(BODY))

const ROUTES: Record<string, Route> = {
  '/right': send({ 'unencoded-digest': sf(BODY) }),
  '/right-both': send({ 'unencoded-digest': `${sf(BODY)}, ${sf(BODY, 'sha-512')}` }),
  '/wrong': send({ 'unencoded-digest': sf(OTHER) }),
  // Every listed value of an accepted algorithm must match, as Chromium checks them.
  '/wrong-512': send({ 'unencoded-digest': `${sf(BODY)}, ${sf(OTHER, 'sha-512')}` }),
  '/md5-only': send({ 'unencoded-digest': sf(OTHER, 'md5') }),
  '/invalid-length': send({ 'unencoded-digest': 'sha-256=:AAAA:' }),
  '/malformed': send({ 'unencoded-digest': 'sha-256=abc' }),
  '/identity': send({ 'content-encoding': 'identity', 'unencoded-digest': sf(BODY) }),
  '/gzip': send({ 'content-encoding': 'gzip', 'unencoded-digest': sf(BODY) }, GZ),
  // The coded bytes' digest is not the unencoded one: there is no coded reading.
  '/gzip-coded': send({ 'content-encoding': 'gzip', 'unencoded-digest': sf(GZ) }, GZ),
  '/gzip-wrong': send({ 'content-encoding': 'gzip', 'unencoded-digest': sf(OTHER) }, GZ),
  '/gzip-invalid': send({ 'content-encoding': 'gzip', 'unencoded-digest': 'sha-256=:AAAA:' }, GZ),
  '/gzip-md5': send({ 'content-encoding': 'gzip', 'unencoded-digest': sf(BODY, 'md5') }, GZ),
  '/gzip-broken': send({ 'content-encoding': 'gzip', 'unencoded-digest': sf('not gzip') }, 'not gzip'),
  '/gzip-br': send({ 'content-encoding': 'gzip, br', 'unencoded-digest': sf(BODY) }, GZ_BR),
  // Repr-Digest's decoded reading and Unencoded-Digest: one decoder, one hash per algorithm.
  '/gzip-repr': send({ 'content-encoding': 'gzip', 'repr-digest': sf(BODY), 'unencoded-digest': `${sf(BODY)}, ${sf(BODY, 'sha-512')}` }, GZ),
  '/gzip-repr-wrong': send({ 'content-encoding': 'gzip', 'repr-digest': sf(BODY), 'unencoded-digest': sf(OTHER) }, GZ),
  '/gzip-content': send({ 'content-encoding': 'gzip', 'content-digest': sf(GZ), 'unencoded-digest': sf(BODY, 'sha-512') }, GZ),
  '/zstd': send({ 'content-encoding': 'zstd', 'unencoded-digest': sf(BODY) }, ZSTD),
  '/zstd-wrong': send({ 'content-encoding': 'zstd', 'unencoded-digest': sf(OTHER) }, ZSTD),
  '/unknown-coding': send({ 'content-encoding': 'x-custom', 'unencoded-digest': sf(BODY) }),
  '/trailer': trailered({ 'Unencoded-Digest': sf(BODY) }, true),
  '/trailer-wrong': trailered({ 'Unencoded-Digest': sf(OTHER) }, true),
  '/trailer-gzip': trailered({ 'Unencoded-Digest': sf(BODY) }, true, GZ, { 'content-encoding': 'gzip' }),
  '/trailer-gzip-wrong': trailered({ 'Unencoded-Digest': sf(GZ) }, true, GZ, { 'content-encoding': 'gzip' }),
  '/trailer-malformed': trailered({ 'Unencoded-Digest': 'sha-256=(' }, true),
  '/trailer-unannounced': trailered({ 'Unencoded-Digest': sf(OTHER) }, false, GZ, { 'content-encoding': 'gzip' }),
  '/head': send({ 'content-digest': sf(''), 'unencoded-digest': sf(OTHER) }),
  '/partial': send({ 'content-digest': sf(BODY), 'unencoded-digest': sf(OTHER), 'content-range': `bytes 0-${BODY.length - 1}/100` }, BODY, 206),
  '/partial-trailer-gzip': (_req, res) => {
    res.writeHead(206, { 'content-encoding': 'gzip', 'content-range': `bytes 0-${GZ.length - 1}/100`, trailer: 'content-digest' })
    res.write(GZ)
    res.addTrailers({ 'content-digest': sf(GZ), 'unencoded-digest': sf(OTHER) })
    res.end()
  },
  '/partial-only': send({ 'unencoded-digest': sf(OTHER), 'content-range': `bytes 0-${BODY.length - 1}/100` }, BODY, 206),
  '/not-modified': send({ 'unencoded-digest': sf(OTHER) }, '', 304),
  // No content: the field names the representation (RFC 9530 Appendix B.5), not checked.
  '/no-content': send({ 'content-encoding': 'gzip', 'unencoded-digest': sf('') }, '', 204),
  '/no-content-other': send({ 'content-encoding': 'br', 'content-digest': sf(''), 'unencoded-digest': sf(OTHER) }, '', 204),
  '/406': send({ 'unencoded-digest': sf('') }, '', 406),
  '/problem': send({ 'content-type': 'application/problem+json' }, JSON.stringify({ code: 'FST_DIGEST_MISMATCH', title: 'Bad Request' }), 400),
  '/problem-zstd': send({ 'content-type': 'application/problem+json', 'content-encoding': 'zstd' },
    zstd === null ? '{"code":"FST_DIGEST_MISMATCH"}' : zstd.compress(Buffer.from(JSON.stringify({ code: 'FST_DIGEST_MISMATCH', detail: 'zstd-coded' }))), 400),
  '/want': (req, res) => send({ 'content-type': 'application/json' }, JSON.stringify({
    unencoded: req.headers['want-unencoded-digest'] ?? null,
    repr: req.headers['want-repr-digest'] ?? null
  }))(req, res)
}

function foreignServer (t: { teardown (fn: () => unknown): void }): Promise<string> {
  return routeServer(t, ROUTES)
}

test('right values end cleanly, wrong ones fail the body, in both client modes (request, fetch, stream)', async (t) => {
  const base = await foreignServer(t)
  for (const strict of [false, true]) {
    const dispatcher = digestAgent(t, { strict })
    for (const kind of KINDS) {
      const mode = `${strict ? 'strict' : 'default'} ${kind}`
      // (A strict client takes a coded Repr-Digest over the coded bytes only.)
      for (const path of ['/right', '/right-both', '/md5-only', '/identity', '/gzip', '/gzip-md5', '/gzip-br', ...(strict ? [] : ['/gzip-repr']), '/gzip-content', '/unknown-coding', '/no-content']) {
        const out = await call(kind, dispatcher, base + path)
        t.equal(out.error, null, `${mode} ${path}: ${String(out.error?.message)}`)
      }
      const gz = await call(kind, dispatcher, `${base}/gzip`)
      t.same(gz.body, kind === 'fetch' ? Buffer.from(BODY) : GZ, `${mode}: the bytes reach the caller untouched`)
      const wrong = await call(kind, dispatcher, `${base}/wrong`)
      assertFailure(t, wrong, 'FST_DIGEST_RESPONSE_MISMATCH', UNENCODED, 'sha-256')
      t.equal(wrong.error?.message, 'The response Unencoded-Digest field does not match the content for sha-256')
      assertFailure(t, await call(kind, dispatcher, `${base}/wrong-512`), 'FST_DIGEST_RESPONSE_MISMATCH', UNENCODED, 'sha-512')
      assertFailure(t, await call(kind, dispatcher, `${base}/invalid-length`), 'FST_DIGEST_RESPONSE_INVALID_VALUE', UNENCODED, 'sha-256')
      assertFailure(t, await call(kind, dispatcher, `${base}/malformed`), 'FST_DIGEST_RESPONSE_INVALID_FIELD', UNENCODED, null)
      assertFailure(t, await call(kind, dispatcher, `${base}/gzip-coded`), 'FST_DIGEST_RESPONSE_MISMATCH', UNENCODED, 'sha-256')
      assertFailure(t, await call(kind, dispatcher, `${base}/gzip-wrong`), 'FST_DIGEST_RESPONSE_MISMATCH', UNENCODED, 'sha-256')
      assertFailure(t, await call(kind, dispatcher, `${base}/gzip-invalid`), 'FST_DIGEST_RESPONSE_INVALID_VALUE', UNENCODED, 'sha-256')
      // Strict: the decoded bytes' Repr-Digest fails first.
      assertFailure(t, await call(kind, dispatcher, `${base}/gzip-repr-wrong`), 'FST_DIGEST_RESPONSE_MISMATCH', strict ? 'Repr-Digest' : UNENCODED, 'sha-256')
      // fetch decodes gzip itself, and fails on a broken body first.
      if (kind !== 'fetch') {
        assertFailure(t, await call(kind, dispatcher, `${base}/gzip-broken`), 'FST_DIGEST_RESPONSE_MISMATCH', UNENCODED, 'sha-256')
      }
    }
  }
})

test("reprDigest: 'decoded': Repr-Digest's reading and Unencoded-Digest's from one decoder", async (t) => {
  const base = await foreignServer(t)
  const dispatcher = digestAgent(t, { reprDigest: 'decoded', verify: 'required' })
  for (const kind of KINDS) {
    for (const path of ['/gzip', '/gzip-repr', '/gzip-content', '/right']) {
      t.equal((await call(kind, dispatcher, base + path)).error, null, `${kind} ${path}`)
    }
    assertFailure(t, await call(kind, dispatcher, `${base}/gzip-repr-wrong`), 'FST_DIGEST_RESPONSE_MISMATCH', UNENCODED, 'sha-256')
    assertFailure(t, await call(kind, dispatcher, `${base}/gzip-coded`), 'FST_DIGEST_RESPONSE_MISMATCH', UNENCODED, 'sha-256')
  }
})

test("verify: 'required': an Unencoded-Digest satisfies it; a coding not decoded here or maxDecodedSize leaves it unchecked", async (t) => {
  const base = await foreignServer(t)
  const required = digestAgent(t, { verify: 'required' })
  const strict = digestAgent(t, { verify: 'required', strict: true })
  const capped = digestAgent(t, { maxDecodedSize: 4 })
  const cappedRequired = digestAgent(t, { maxDecodedSize: 4, verify: 'required' })
  for (const kind of KINDS) {
    for (const path of ['/right', '/gzip', '/gzip-br']) {
      t.equal((await call(kind, required, base + path)).error, null, `${kind} ${path}`)
      t.equal((await call(kind, strict, base + path)).error, null, `strict ${kind} ${path}`)
    }
    assertFailure(t, await call(kind, required, `${base}/md5-only`), 'FST_DIGEST_RESPONSE_MISSING', 'Content-Digest, Repr-Digest or Unencoded-Digest', 'sha-256, sha-512')
    // A coding not decoded here: unchecked, not mismatched.
    const unknown = await call(kind, required, `${base}/unknown-coding`)
    assertFailure(t, unknown, 'FST_DIGEST_RESPONSE_UNCHECKED', UNENCODED, 'sha-256')
    t.match(unknown.error?.message, /content coding "x-custom" is not decoded here \(gzip, x-gzip, deflate, br/)
    // Past maxDecodedSize: unchecked, passes unless required.
    t.equal((await call(kind, capped, `${base}/gzip`)).error, null)
    t.equal((await call(kind, capped, `${base}/gzip-wrong`)).error, null, 'unknown, so not a mismatch')
    const failed = await call(kind, cappedRequired, `${base}/gzip`)
    assertFailure(t, failed, 'FST_DIGEST_RESPONSE_UNCHECKED', UNENCODED, 'sha-256')
    t.equal(failed.error?.message, "The response Unencoded-Digest field (algorithm sha-256) could not be checked: the decoded content exceeds maxDecodedSize (4 bytes); verify is 'required'")
    // The coded bytes' Content-Digest was verified: the response was checked.
    t.equal((await call(kind, cappedRequired, `${base}/gzip-content`)).error, null)
    assertFailure(t, await call(kind, cappedRequired, `${base}/gzip-invalid`), 'FST_DIGEST_RESPONSE_INVALID_VALUE', UNENCODED, 'sha-256')
    // Uncoded: no decoder, no cap.
    t.equal((await call(kind, cappedRequired, `${base}/right`)).error, null)
  }
})

test('zstd: decoded where node:zlib has it (Node.js 22.15, 23.8 on); on Node.js 20 a coding not decoded here, unchecked', async (t) => {
  const base = await foreignServer(t)
  const dispatcher = digestAgent(t)
  const required = digestAgent(t, { verify: 'required' })
  // fetch decodes zstd only where node:zlib has it; undici.request and stream never decode.
  for (const kind of zstd === null ? ['request', 'stream'] as const : KINDS) {
    t.equal((await call(kind, dispatcher, `${base}/zstd`)).error, null)
    if (zstd === null) {
      t.equal((await call(kind, dispatcher, `${base}/zstd-wrong`)).error, null, 'unchecked, not mismatched')
      const out = await call(kind, required, `${base}/zstd`)
      assertFailure(t, out, 'FST_DIGEST_RESPONSE_UNCHECKED', UNENCODED, 'sha-256')
      t.match(out.error?.message, /content coding "zstd" is not decoded here/)
      t.equal((await call(kind, dispatcher, `${base}/problem-zstd`)).error, null, 'a zstd problem body is not read as one')
    } else {
      t.equal((await call(kind, required, `${base}/zstd`)).error, null)
      assertFailure(t, await call(kind, dispatcher, `${base}/zstd-wrong`), 'FST_DIGEST_RESPONSE_MISMATCH', UNENCODED, 'sha-256')
      const problem = await call(kind, dispatcher, `${base}/problem-zstd`)
      assertFailure(t, problem, 'FST_DIGEST_REQUEST_REJECTED', 'Content-Digest', null)
      t.match(problem.error?.message, /zstd-coded$/, 'the problem body decoded')
    }
  }
})

test('trailers over HTTP/1.1: announced or asked for with TE: trailers, coded bodies decoded in both modes', async (t) => {
  const base = await foreignServer(t)
  for (const strict of [false, true]) {
    const dispatcher = digestAgent(t, { strict })
    for (const kind of KINDS) {
      const mode = `${strict ? 'strict' : 'default'} ${kind}`
      const right = await call(kind, dispatcher, `${base}/trailer`)
      t.equal(right.error, null, `${mode}: ${String(right.error?.message)}`)
      if (kind !== 'fetch') t.equal(right.trailers['unencoded-digest'], sf(BODY))
      assertFailure(t, await call(kind, dispatcher, `${base}/trailer-wrong`), 'FST_DIGEST_RESPONSE_MISMATCH', UNENCODED, 'sha-256')
      assertFailure(t, await call(kind, dispatcher, `${base}/trailer-malformed`), 'FST_DIGEST_RESPONSE_INVALID_FIELD', UNENCODED, null)
      t.equal((await call(kind, dispatcher, `${base}/trailer-gzip`)).error, null, `${mode}: a coded body, the decoded bytes' trailer`)
      assertFailure(t, await call(kind, dispatcher, `${base}/trailer-gzip-wrong`), 'FST_DIGEST_RESPONSE_MISMATCH', UNENCODED, 'sha-256')
      // Unannounced and not asked for: not foreseen, so not checked; asked for: checked.
      t.equal((await call(kind, dispatcher, `${base}/trailer-unannounced`)).error, null)
      assertFailure(t, await call(kind, dispatcher, `${base}/trailer-unannounced`, { headers: { te: 'trailers' } }),
        'FST_DIGEST_RESPONSE_MISMATCH', UNENCODED, 'sha-256')
    }
  }
})

test('HEAD, 204, 206, 304: the whole representation\'s Unencoded-Digest is not checked; a 406\'s is', async (t) => {
  const base = await foreignServer(t)
  const dispatcher = digestAgent(t, { verify: 'required' })
  for (const kind of KINDS) {
    t.equal((await call(kind, dispatcher, `${base}/head`, { method: 'HEAD' })).error, null, 'HEAD: Content-Digest of no content')
    t.equal((await call(kind, dispatcher, `${base}/partial`)).error, null, "206: the part's Content-Digest, not the whole's Unencoded-Digest")
    t.equal((await call(kind, dispatcher, `${base}/partial-trailer-gzip`)).error, null, '206 with trailers: nothing decoded, the whole\'s Unencoded-Digest not checked')
    assertFailure(t, await call(kind, dispatcher, `${base}/partial-only`), 'FST_DIGEST_RESPONSE_MISSING', 'Content-Digest, Repr-Digest or Unencoded-Digest', 'sha-256, sha-512')
    t.equal((await call(kind, dispatcher, `${base}/not-modified`)).error, null, '304: nothing checked')
    t.equal((await call(kind, dispatcher, `${base}/no-content-other`)).error, null, "204: the representation's, not the absent content's; its Content-Digest is checked")
    t.equal((await call(kind, dispatcher, `${base}/406`)).error, null, "a 406's own (empty) content")
  }
})

test('Want-Unencoded-Digest: sent for want: { unencoded }, not for an algorithm or a list; a 406 or a problem names the request\'s field', async (t) => {
  const base = await foreignServer(t)
  const wanting = digestAgent(t, { want: { unencoded: ['sha-512', 'sha-256'] } })
  const listed = digestAgent(t, { want: ['sha-512'] })
  for (const kind of KINDS) {
    const sent = JSON.parse((await call(kind, wanting, `${base}/want`)).body.toString())
    t.same(sent, { unencoded: 'sha-512=10, sha-256=9', repr: null })
    const list = JSON.parse((await call(kind, listed, `${base}/want`)).body.toString())
    t.same(list, { unencoded: null, repr: 'sha-512=10' })
    const given = JSON.parse((await call(kind, wanting, `${base}/want`, { headers: { 'want-unencoded-digest': 'md5=1' } })).body.toString())
    t.same(given, { unencoded: 'md5=1', repr: null }, "the caller's own field is kept")
    assertFailure(t, await call(kind, wanting, `${base}/406`), 'FST_DIGEST_NOT_ACCEPTABLE', 'Want-Unencoded-Digest', 'sha-512')
    // The request's own field is named when the problem names none.
    assertFailure(t, await call(kind, wanting, `${base}/problem`, { headers: { 'unencoded-digest': sf('') } }),
      'FST_DIGEST_REQUEST_REJECTED', UNENCODED, null)
  }
})

test('HTTP/2 (h2c, node:http2): Unencoded-Digest in headers and trailers over a gzip body', async (t) => {
  const server = createH2Server()
  server.on('stream', (stream: ServerHttp2Stream, headers) => {
    const value = sf(headers[':path'] === '/wrong' ? OTHER : BODY)
    if (headers[':path'] === '/head-field') {
      stream.respond({ ':status': 200, 'content-encoding': 'gzip', 'unencoded-digest': value })
      stream.end(GZ)
      return
    }
    stream.respond({ ':status': 200, 'content-encoding': 'gzip', trailer: 'unencoded-digest' }, { waitForTrailers: true })
    stream.on('wantTrailers', () => stream.sendTrailers({ 'unencoded-digest': value }))
    stream.end(GZ)
  })
  const base = await listenLocal(t, server)
  const agent = new H2CClient(base)
  t.teardown(() => agent.close())
  for (const strict of [false, true]) {
    const dispatcher = agent.compose(digestInterceptor({ verify: 'required', strict }))
    for (const kind of KINDS) {
      const right = await call(kind, dispatcher, `${base}/right`)
      t.equal(right.error, null, `${kind}: ${String(right.error?.message)}`)
      if (kind !== 'fetch') t.equal(right.trailers['unencoded-digest'], sf(BODY), 'the trailers reach the caller too')
      t.equal((await call(kind, dispatcher, `${base}/head-field`)).error, null)
      assertFailure(t, await call(kind, dispatcher, `${base}/wrong`), 'FST_DIGEST_RESPONSE_MISMATCH', UNENCODED, 'sha-256')
    }
  }
})

const ITEMS = { items: Array.from({ length: 300 }, (_, id) => ({ id, name: `item ${id}` })) }
const CHUNKS = ['first chunk '.repeat(50), 'second chunk '.repeat(50), 'last']

async function plugin (t: { teardown (fn: () => unknown): void }, opts: FastifyDigestFieldsOptions, serverOpts: FastifyServerOptions = {}): Promise<string> {
  const app = Fastify(serverOpts)
  t.teardown(() => app.close())
  await app.register(compress, { threshold: 0 })
  await app.register(digestFields, opts)
  app.get('/items', async () => ITEMS)
  app.get('/stream', async (_request, reply) => reply.type('text/plain').send(Readable.from(CHUNKS)))
  app.post('/echo', async (request) => ({ fields: request.digestVerification?.fields.map((f) => [f.field, f.ok]) ?? null }))
  await app.listen({ port: 0, host: '127.0.0.1' })
  return `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
}

test('against the plugin with @fastify/compress: every coding, both modes on both ends, headers and trailers', async (t) => {
  for (const serverStrict of [false, true]) {
    const base = await plugin(t, { unencodedDigest: true, strict: serverStrict })
    for (const strict of [false, true]) {
      const dispatcher = digestAgent(t, { verify: 'required', strict })
      for (const kind of KINDS) {
        for (const coding of ['identity', ...CODINGS]) {
          const label = `server ${serverStrict ? 'strict' : 'default'}, client ${strict ? 'strict' : 'default'}, ${kind} ${coding}`
          const out = await call(kind, dispatcher, `${base}/items`, { headers: { 'accept-encoding': coding } })
          t.equal(out.error, null, `${label}: ${String(out.error?.message)}`)
          t.equal(out.headers['content-encoding'], coding === 'identity' ? undefined : coding, label)
          // verify: 'required' sends TE: trailers: a compressed body's digest comes as a trailer.
          if (kind !== 'fetch') t.ok((out.headers['unencoded-digest'] ?? out.trailers['unencoded-digest']) !== undefined, `${label}: the field was sent`)
          const streamed = await call(kind, dispatcher, `${base}/stream`, { headers: { 'accept-encoding': coding } })
          t.equal(streamed.error, null, `${label} stream: ${String(streamed.error?.message)}`)
          if (kind !== 'fetch') t.match(streamed.trailers['unencoded-digest'], /^sha-256=:/, `${label} stream: a trailer`)
        }
      }
    }
  }
})

test('against the plugin: want: { unencoded } asks for the field the plugin does not send unsolicited', async (t) => {
  const base = await plugin(t, {})
  const dispatcher = digestAgent(t, { verify: 'required', want: { unencoded: 'sha-512' } })
  const none = digestAgent(t, { verify: 'required' })
  for (const kind of KINDS) {
    for (const coding of ['identity', 'gzip', 'br']) {
      const out = await call(kind, dispatcher, `${base}/items`, { headers: { 'accept-encoding': coding } })
      t.equal(out.error, null, `${kind} ${coding}: ${String(out.error?.message)}`)
      if (kind !== 'fetch') t.match(out.headers['unencoded-digest'] ?? out.trailers['unencoded-digest'], /^sha-512=:/)
      assertFailure(t, await call(kind, none, `${base}/items`, { headers: { 'accept-encoding': coding } }),
        'FST_DIGEST_RESPONSE_MISSING', 'Content-Digest, Repr-Digest or Unencoded-Digest', 'sha-256, sha-512')
    }
  }
})

test('against the plugin over HTTP/2 (h2c): Unencoded-Digest in headers and trailers', async (t) => {
  const base = await plugin(t, { unencodedDigest: 'sha-512' }, { http2: true } as FastifyServerOptions)
  const client = new H2CClient(base)
  t.teardown(() => client.close())
  const dispatcher = client.compose(digestInterceptor({ verify: 'required', strict: true }))
  for (const kind of KINDS) {
    for (const coding of ['identity', ...CODINGS]) {
      const out = await call(kind, dispatcher, `${base}/items`, { headers: { 'accept-encoding': coding } })
      t.equal(out.error, null, `${kind} ${coding}: ${String(out.error?.message)}`)
      const streamed = await call(kind, dispatcher, `${base}/stream`, { headers: { 'accept-encoding': coding } })
      t.equal(streamed.error, null, `${kind} ${coding} stream: ${String(streamed.error?.message)}`)
      if (kind !== 'fetch') t.match(streamed.trailers['unencoded-digest'], /^sha-512=:/, 'read back from the HTTP/2 stream')
    }
  }
})

test('digestHeaders() and digestBody() with { unencoded: true }: an upload\'s Unencoded-Digest, for fetch', async (t) => {
  const text = '{"title":"New Title"}'
  t.same(digestHeaders(text, 'sha-512', { unencoded: true }), { 'content-digest': sf(text, 'sha-512'), 'unencoded-digest': sf(text, 'sha-512') })
  t.same(digestHeaders(text, undefined, { unencoded: false }), { 'content-digest': sf(text) })
  t.same(digestHeaders(text, 'sha-256', {}), { 'content-digest': sf(text) })
  t.same((await digestBody(Buffer.from(text), 'sha-256', { unencoded: true })).headers, { 'content-digest': sf(text), 'unencoded-digest': sf(text) })
  const form = await digestBody(new FormData(), 'sha-256', { unencoded: true })
  t.equal(form.headers['unencoded-digest'], form.headers['content-digest'])
  t.match(form.headers['content-type'], /^multipart\/form-data; boundary=/)
  t.same(Object.keys((await digestBody(new Blob([text]), 'sha-256', { unencoded: true })).headers), ['content-digest', 'unencoded-digest'])
  for (const [options, message] of [
    [null, /"options": expected \{ unencoded \}, got null/],
    ['yes', /"options": expected \{ unencoded \}, got "yes"/],
    [{ unencode: true }, /"unencode": unknown option \(options: unencoded\)/],
    [{ unencoded: 1 }, /"unencoded": expected a boolean, got number/]
  ] as const) {
    t.throws(() => digestHeaders(text, 'sha-256', options as never), { code: 'FST_DIGEST_INVALID_OPTION', message })
    await t.rejects(digestBody(text, 'sha-256', options as never), { code: 'FST_DIGEST_INVALID_OPTION', message })
  }

  // The plugin checks a request's Unencoded-Digest over the content (no coding: the bytes received).
  const base = await plugin(t, { verify: 'required' })
  const { 'unencoded-digest': unencoded } = digestHeaders(text, 'sha-256', { unencoded: true })
  const res = await fetch(`${base}/echo`, { method: 'POST', headers: { 'content-type': 'application/json', 'unencoded-digest': unencoded }, body: text })
  t.equal(res.status, 200)
  t.same(await res.json(), { fields: [['Unencoded-Digest', true]] })
  const wrong = await fetch(`${base}/echo`, { method: 'POST', headers: { 'content-type': 'application/json', 'unencoded-digest': sf(OTHER) }, body: text })
  t.equal(wrong.status, 400)
  await wrong.arrayBuffer()
})
