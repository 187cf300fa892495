// Requests with Content-Encoding: Content-Digest over the bytes as received,
// default-mode Repr-Digest over the decoded content (after @fastify/compress,
// or decoded on the side), strict mode over the bytes as received.
import { test } from 'tap'
import { Transform } from 'node:stream'
import { brotliCompressSync, deflateSync, gunzipSync, gzipSync } from 'node:zlib'
import compress from '@fastify/compress'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { FastifyDigestFieldsOptions } from '../../../types/index'
import { buildVerifyApp, b64, sf, PROBLEM } from './request-helpers'
import { zstd } from '../../helpers'

// Exchange 4: a JSON document sent gzip-coded.
const JSON_BODY = JSON.stringify({ title: 'Exchange 4', items: Array.from({ length: 50 }, (_, i) => i) }) + '\n'
const GZIPPED = gzipSync(JSON_BODY)

type Setup = 'compress-first' | 'digest-first' | 'no-compress'
const SETUPS: Setup[] = ['compress-first', 'digest-first', 'no-compress']

/**
 * An app for one setup. Without @fastify/compress, the app decodes gzip JSON
 * itself (what such an app has to do); the plugin then decodes on the side.
 */
async function appFor (t: Parameters<typeof buildVerifyApp>[0], setup: Setup, opts: FastifyDigestFieldsOptions = {}, bodyLimit?: number): Promise<FastifyInstance> {
  const serverOpts = bodyLimit === undefined ? {} : { bodyLimit }
  const app = await buildVerifyApp(t, opts, serverOpts, async (app) => {
    if (setup === 'compress-first') await app.register(compress)
  }, async (app) => {
    if (setup === 'digest-first') await app.register(compress)
  })
  if (setup === 'no-compress') {
    app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
      try {
        const text = request.headers['content-encoding'] === 'gzip' ? gunzipSync(body as Buffer) : body
        done(null, JSON.parse(text.toString()))
      } catch (err) {
        done(err as Error)
      }
    })
  }
  return app
}

function post (app: FastifyInstance, headers: Record<string, string>, payload: Buffer | string, url = '/json') {
  return app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json', 'content-encoding': 'gzip', ...headers }, payload })
}

for (const setup of SETUPS) {
  test(`Exchange 4, default mode, ${setup}: Content-Digest over the gzip bytes, Repr-Digest over the JSON`, async (t) => {
    const app = await appFor(t, setup)
    const res = await post(app, { 'content-digest': sf(GZIPPED), 'repr-digest': sf(JSON_BODY, 'sha-512') }, GZIPPED)
    t.equal(res.statusCode, 200)
    t.same(res.json().body, JSON.parse(JSON_BODY))
    t.same(res.json().verification, {
      verified: true,
      fields: [
        { field: 'Repr-Digest', ok: true, results: [{ algorithm: 'sha-512', outcome: 'matched' }] },
        { field: 'Content-Digest', ok: true, results: [{ algorithm: 'sha-256', outcome: 'matched' }] }
      ]
    })

    const badContent = await post(app, { 'content-digest': sf(JSON_BODY), 'repr-digest': sf(JSON_BODY, 'sha-512') }, GZIPPED)
    t.equal(badContent.statusCode, 400)
    t.equal(badContent.headers['content-type'], 'application/problem+json')
    t.same(badContent.json().mismatched_digests, [{ algorithm: 'sha-256', provided_digest: `:${b64(JSON_BODY)}:`, header: 'Content-Digest' }])

    const badRepr = await post(app, { 'content-digest': sf(GZIPPED), 'repr-digest': sf(GZIPPED, 'sha-512') }, GZIPPED)
    t.equal(badRepr.statusCode, 400)
    t.equal(badRepr.json().type, `${PROBLEM}digest-mismatched-values`)
    t.same(badRepr.json().mismatched_digests, [{ algorithm: 'sha-512', provided_digest: `:${b64(GZIPPED, 'sha-512')}:`, header: 'Repr-Digest' }])

    const invalid = await post(app, { 'repr-digest': 'sha-256=:AAAA:' }, GZIPPED)
    t.equal(invalid.statusCode, 400)
    t.equal(invalid.json().type, `${PROBLEM}digest-invalid-values`)
  })

  test(`Exchange 4, strict mode, ${setup}: both digests over the gzip bytes (RFC 9530 Appendix A)`, async (t) => {
    const app = await appFor(t, setup, { strict: true })
    const res = await post(app, { 'content-digest': sf(GZIPPED), 'repr-digest': sf(GZIPPED) }, GZIPPED)
    t.equal(res.statusCode, 200)
    t.equal(res.json().verification.verified, true)

    const decoded = await post(app, { 'content-digest': sf(GZIPPED), 'repr-digest': sf(JSON_BODY) }, GZIPPED)
    t.equal(decoded.statusCode, 400)
    t.same(decoded.json().mismatched_digests, [{ algorithm: 'sha-256', provided_digest: `:${b64(JSON_BODY)}:`, header: 'Repr-Digest' }])
  })

  test(`stream-passing route, ${setup}: corrupt content errors the stream`, async (t) => {
    const app = await appFor(t, setup)
    const ok = await post(app, { 'content-type': 'application/x-stream', 'repr-digest': sf(JSON_BODY), 'content-digest': sf(GZIPPED) }, GZIPPED, '/stream')
    t.equal(ok.statusCode, 200)
    t.equal(ok.json().verification.verified, true)
    const bad = await post(app, { 'content-type': 'application/x-stream', 'repr-digest': sf('not it') }, GZIPPED, '/stream')
    t.equal(bad.statusCode, 400)
    t.equal(bad.headers['content-type'], 'application/problem+json')
    t.same(bad.json().mismatched_digests, [{ algorithm: 'sha-256', provided_digest: `:${b64('not it')}:`, header: 'Repr-Digest' }])
    const content = await post(app, { 'content-type': 'application/x-stream', 'content-digest': sf('not it') }, GZIPPED, '/stream')
    t.equal(content.statusCode, 400)
    t.same(content.json().mismatched_digests.map((m: { header: string }) => m.header), ['Content-Digest'])
    // Empty coded content is judged without decoding (every digest is of
    // the empty string), before the decoder fails on it.
    const emptyBad = await post(app, { 'content-type': 'application/x-stream', 'repr-digest': sf('not it') }, '', '/stream')
    t.equal(emptyBad.statusCode, 400)
    t.equal(emptyBad.json().code, 'FST_DIGEST_MISMATCH')
  })

  test(`empty content with a content coding, ${setup}`, async (t) => {
    const app = await appFor(t, setup)
    const res = await app.inject({ method: 'POST', url: '/json', headers: { 'content-encoding': 'gzip', 'repr-digest': sf('') } })
    t.equal(res.statusCode, 200)
    t.equal(res.json().verification.verified, true)
  })
}

test('decoded on the side: deflate, br, x-gzip, stacked codings, zstd where node:zlib has it, and a route with decompress: false', async (t) => {
  const app = await buildVerifyApp(t)
  const cases: Array<[string, Buffer]> = [
    ['deflate', deflateSync(JSON_BODY)],
    ['br', brotliCompressSync(JSON_BODY)],
    ['x-gzip', GZIPPED],
    ['GZIP', GZIPPED],
    ['identity', Buffer.from(JSON_BODY)],
    ['gzip, br', brotliCompressSync(GZIPPED)],
    ['deflate, identity, gzip', gzipSync(deflateSync(JSON_BODY))],
    ...(zstd === null ? [] : [['zstd', zstd.compress(Buffer.from(JSON_BODY))] as [string, Buffer]])
  ]
  for (const [coding, bytes] of cases) {
    const res = await app.inject({
      method: 'POST',
      url: '/json',
      headers: { 'content-type': 'application/octet-stream', 'content-encoding': coding, 'repr-digest': sf(JSON_BODY), 'content-digest': sf(bytes) },
      payload: bytes
    })
    t.equal(res.statusCode, 200, coding)
    t.equal(res.json().verification.verified, true, coding)
    t.equal(res.json().body, bytes.toString('latin1'), `${coding}: the route gets the bytes as sent`)
  }

  const withCompress = await buildVerifyApp(t, {}, {}, async (app) => { await app.register(compress) })
  withCompress.post('/keep', { decompress: false } as object, async (request) => ({ length: (request.body as Buffer).length, verification: request.digestVerification }))
  const res = await withCompress.inject({
    method: 'POST',
    url: '/keep',
    headers: { 'content-type': 'application/octet-stream', 'content-encoding': 'gzip', 'repr-digest': sf(JSON_BODY) },
    payload: GZIPPED
  })
  t.equal(res.statusCode, 200)
  t.same(res.json(), { length: GZIPPED.length, verification: { verified: true, fields: [{ field: 'Repr-Digest', ok: true, results: [{ algorithm: 'sha-256', outcome: 'matched' }] }] } })
})

test('a content coding that cannot be decoded on the side: 415 for a default-mode Repr-Digest', async (t) => {
  const app = await buildVerifyApp(t)
  // zstd where node:zlib lacks it (Node.js 20): a coding like any other that is not decoded here.
  const undecodable = ['compress', 'gzip, compress', 'gzip, gzip, gzip, gzip, gzip, gzip', ...(zstd === null ? ['zstd'] : [])]
  for (const coding of undecodable) {
    const res = await app.inject({
      method: 'POST',
      url: '/json',
      headers: { 'content-type': 'application/octet-stream', 'content-encoding': coding, 'repr-digest': sf(JSON_BODY) },
      payload: GZIPPED
    })
    t.equal(res.statusCode, 415, coding)
    t.equal(res.headers['accept-encoding'], zstd === null ? 'gzip, deflate, br' : 'gzip, deflate, br, zstd')
    t.equal(res.headers['want-repr-digest'], 'sha-256=10, sha-512=9')
    t.same(res.json(), {
      type: 'about:blank',
      title: 'Unsupported Media Type',
      status: 415,
      detail: `Cannot verify the Repr-Digest field: content coding "${coding}" cannot be decoded here`,
      code: 'FST_DIGEST_UNSUPPORTED_ENCODING'
    }, coding)
  }
  // Content-Digest needs no decoding; strict mode neither.
  const content = await app.inject({
    method: 'POST',
    url: '/json',
    headers: { 'content-type': 'application/octet-stream', 'content-encoding': 'compress', 'content-digest': sf(GZIPPED) },
    payload: GZIPPED
  })
  t.equal(content.statusCode, 200)
  t.equal(content.json().verification.verified, true)
  const strict = await buildVerifyApp(t, { strict: true })
  const res = await strict.inject({
    method: 'POST',
    url: '/json',
    headers: { 'content-type': 'application/octet-stream', 'content-encoding': 'compress', 'repr-digest': sf(GZIPPED) },
    payload: GZIPPED
  })
  t.equal(res.statusCode, 200)
})

test('content that does not decode: 400 without compress, compress\'s own 400 with it', async (t) => {
  const garbage = Buffer.from('this is not gzip at all')
  const app = await buildVerifyApp(t)
  for (const url of ['/json', '/stream']) {
    const res = await app.inject({
      method: 'POST',
      url,
      headers: { 'content-type': url === '/json' ? 'application/octet-stream' : 'application/x-stream', 'content-encoding': 'gzip', 'repr-digest': sf(garbage) },
      payload: garbage
    })
    t.equal(res.statusCode, 400, url)
    t.same(res.json(), {
      type: 'about:blank',
      title: 'Bad Request',
      status: 400,
      detail: 'Cannot verify the Repr-Digest field: the content is not valid gzip',
      code: 'FST_DIGEST_INVALID_ENCODING'
    }, url)
  }
  // Truncated gzip: the decoder fails at the end.
  const truncated = GZIPPED.subarray(0, GZIPPED.length - 4)
  const res = await app.inject({
    method: 'POST',
    url: '/json',
    headers: { 'content-type': 'application/octet-stream', 'content-encoding': 'gzip', 'repr-digest': sf(JSON_BODY) },
    payload: truncated
  })
  t.equal(res.statusCode, 400)
  t.equal(res.json().code, 'FST_DIGEST_INVALID_ENCODING')

  const withCompress = await appFor(t, 'compress-first')
  const viaCompress = await post(withCompress, { 'repr-digest': sf(garbage) }, garbage)
  t.equal(viaCompress.statusCode, 400)
  t.equal(viaCompress.json().code, 'FST_CP_ERR_INVALID_CONTENT')
})

test('a decompression bomb is refused with a 4xx, never a 5xx', async (t) => {
  const bomb = gzipSync(Buffer.alloc(8 * 1024 * 1024))
  t.ok(bomb.length < 64 * 1024, `the bomb is ${bomb.length} bytes`)
  const app = await buildVerifyApp(t, {}, { bodyLimit: 1024 * 1024 })
  app.post('/small', { bodyLimit: 1000 }, async (request) => request.digestVerification)
  for (const url of ['/json', '/stream']) {
    const res = await app.inject({
      method: 'POST',
      url,
      headers: { 'content-type': url === '/json' ? 'application/octet-stream' : 'application/x-stream', 'content-encoding': 'gzip', 'repr-digest': sf('whatever') },
      payload: bomb
    })
    t.equal(res.statusCode, 413, url)
    t.same(res.json(), {
      type: 'about:blank',
      title: 'Content Too Large',
      status: 413,
      detail: 'Cannot verify the Repr-Digest field: the decoded content exceeds the body limit of 1048576 bytes',
      code: 'FST_DIGEST_CONTENT_TOO_LARGE'
    }, url)
  }
  // A route's own bodyLimit is the cap.
  const small = await app.inject({
    method: 'POST',
    url: '/small',
    headers: { 'content-type': 'application/octet-stream', 'content-encoding': 'gzip', 'repr-digest': sf(JSON_BODY) },
    payload: gzipSync(Buffer.alloc(2000))
  })
  t.equal(small.statusCode, 413)
  t.match(small.json().detail, /body limit of 1000 bytes/)

  const withCompress = await appFor(t, 'digest-first', {}, 1024 * 1024)
  const viaCompress = await post(withCompress, { 'repr-digest': sf('whatever') }, bomb)
  t.equal(viaCompress.statusCode, 413, 'compress + fastify\'s bodyLimit')
  // Under a bodyLimit over 1 MiB a small coded body is not decoded whole: compress's output is counted as it comes.
  const streamed = await post(await appFor(t, 'digest-first', {}, 4 * 1024 * 1024), { 'repr-digest': sf('whatever') }, bomb)
  t.equal(streamed.statusCode, 413, 'compress, a bodyLimit over 1 MiB')
})

test('trailer-announced Repr-Digest with a coding hashes decoded content with every enabled algorithm', async (t) => {
  // inject cannot send trailers: this checks the announcement path alone,
  // which then finds no trailer and, under verify: 'required', refuses.
  const app = await buildVerifyApp(t, { verify: 'required' })
  const res = await app.inject({
    method: 'POST',
    url: '/json',
    headers: { 'content-type': 'application/octet-stream', 'content-encoding': 'gzip', trailer: 'Repr-Digest, Content-Digest' },
    payload: GZIPPED
  })
  t.equal(res.statusCode, 400)
  t.equal(res.json().code, 'FST_DIGEST_MISSING')
})

test('a large gzip upload decoded on the side with backpressure', async (t) => {
  const identity = Buffer.alloc(3 * 1024 * 1024)
  for (let i = 0; i < identity.length; i++) identity[i] = (i * 7919) % 256
  const coded = gzipSync(identity, { level: 1 })
  const app = await buildVerifyApp(t, {}, { bodyLimit: 16 * 1024 * 1024 })
  const res = await app.inject({
    method: 'POST',
    url: '/stream',
    headers: { 'content-type': 'application/x-stream', 'content-encoding': 'gzip', 'repr-digest': sf(identity), 'content-digest': sf(coded) },
    payload: coded
  })
  t.equal(res.statusCode, 200)
  t.same(res.json(), { bytes: coded.length, verification: { verified: true, fields: [{ field: 'Repr-Digest', ok: true, results: [{ algorithm: 'sha-256', outcome: 'matched' }] }, { field: 'Content-Digest', ok: true, results: [{ algorithm: 'sha-256', outcome: 'matched' }] }] } })
})

test('with compress, a route reading request.raw is not blocked, and its body is verified', async (t) => {
  const app = await appFor(t, 'digest-first')
  const res = await app.inject({
    method: 'POST',
    url: '/raw',
    headers: { 'content-type': 'application/x-raw', 'content-digest': sf('abc') },
    payload: 'abc'
  })
  t.equal(res.statusCode, 200)
  t.same(res.json(), { bytes: 3, verification: { verified: true, fields: [{ field: 'Content-Digest', ok: true, results: [{ algorithm: 'sha-256', outcome: 'matched' }] }] } })
})

test('compress reading ahead before the route-level hook runs', async (t) => {
  // A slow route-level preParsing hook sits between compress's decompressor
  // (which reads eagerly) and the verifier's route-level hook.
  const app = await appFor(t, 'compress-first')
  const slow = async (_request: unknown, _reply: unknown, payload: unknown) => {
    await new Promise((resolve) => setTimeout(resolve, 30))
    return payload
  }
  app.post('/slow', { preParsing: slow }, async (request) => ({ body: request.body, verification: request.digestVerification }))
  const ok = await post(app, { 'content-digest': sf(GZIPPED), 'repr-digest': sf(JSON_BODY) }, GZIPPED, '/slow')
  t.equal(ok.statusCode, 200)
  t.equal(ok.json().verification.verified, true)
  const bad = await post(app, { 'content-digest': sf(JSON_BODY) }, GZIPPED, '/slow')
  t.equal(bad.statusCode, 400)
  t.equal(bad.json().code, 'FST_DIGEST_MISMATCH')
})

/** A request decoder of another plugin: "x-upper" turns the content to upper case; it reports receivedEncodedLength as fastify asks of decoders. */
function upperDecoder (request: { headers: Record<string, unknown> }, payload: NodeJS.ReadableStream): NodeJS.ReadableStream {
  if (request.headers['content-encoding'] !== 'x-upper') return payload
  const decoder = new Transform({
    transform (chunk: Buffer, _encoding, callback) {
      decoder.receivedEncodedLength += chunk.length
      callback(null, Buffer.from(chunk.toString('latin1').toUpperCase(), 'latin1'))
    }
  }) as Transform & { receivedEncodedLength: number }
  decoder.receivedEncodedLength = 0
  payload.pipe(decoder)
  return decoder
}

const UPPER_REQUEST = {
  method: 'POST' as const,
  url: '/json',
  headers: { 'content-type': 'text/plain', 'content-encoding': 'x-upper', 'repr-digest': sf('HELLO'), 'content-digest': sf('hello') },
  payload: 'hello'
}

test('a decoder in front of the verifier for a coding it cannot decode itself', async (t) => {
  // Added to each route from onRoute, as @fastify/compress adds its own
  // decompressor: it stands between the verifier's two route-level hooks.
  const app = await buildVerifyApp(t, {}, {}, undefined, async (app) => {
    app.addHook('onRoute', (routeOptions) => {
      const decode = async (request: FastifyRequest, _reply: unknown, payload: NodeJS.ReadableStream) => upperDecoder(request, payload)
      const hooks = routeOptions.preParsing
      routeOptions.preParsing = hooks === undefined ? [decode] : [decode, ...(Array.isArray(hooks) ? hooks : [hooks])]
    })
  })
  const res = await app.inject(UPPER_REQUEST)
  t.equal(res.statusCode, 200)
  t.equal(res.json().body, 'HELLO')
  t.equal(res.json().verification.verified, true)
})

test('an instance-level preParsing hook that decodes: Content-Digest is of the bytes as received, before it', async (t) => {
  // The verifier taps request.raw from a route-level onRequest hook, so an
  // instance-level preParsing hook (which fastify runs before route-level
  // ones) hands the handler its output, while Content-Digest is checked
  // over the bytes that arrived (docs/design.md, "Where the hooks run").
  const app = await buildVerifyApp(t, {}, {}, undefined, async (app) => {
    app.addHook('preParsing', async (request, _reply, payload) => upperDecoder(request, payload))
  })
  const headers = { 'content-type': 'text/plain', 'content-encoding': 'x-upper' }
  const decoded = await app.inject({ ...UPPER_REQUEST, headers: { ...headers, 'content-digest': sf('HELLO') } })
  t.equal(decoded.statusCode, 400)
  t.equal(decoded.json().code, 'FST_DIGEST_MISMATCH')
  const res = await app.inject({ ...UPPER_REQUEST, headers: { ...headers, 'content-digest': sf('hello') } })
  t.equal(res.statusCode, 200)
  t.equal(res.json().body, 'HELLO')
  t.equal(res.json().verification.verified, true)
})
