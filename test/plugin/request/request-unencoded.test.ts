// A request's Unencoded-Digest (draft-ietf-httpbis-unencoded-digest): the
// digest of the content with every listed content coding undone (§5), in both
// modes, decoded on the side or after @fastify/compress's decompression,
// within the same limits as a default-mode Repr-Digest; refused with the same
// problem details as the other fields; counted by verify: 'required'; listed
// in request.digestVerification; in headers or trailers.
import { test } from 'tap'
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib'
import compress from '@fastify/compress'
import type { FastifyDigestFieldsOptions } from '../../../types/index'
import { buildVerifyApp, b64, sf, PROBLEM } from './request-helpers'
import { zstd } from '../../helpers'
import { assertProblem, json, serve, TRANSPORTS } from './upload-helpers'

const BODY = JSON.stringify({ title: 'unencoded', items: Array.from({ length: 80 }, (_, i) => i) }) + '\n'

interface Closeable { teardown (fn: () => unknown): void }

/** The content codings a client may list, coded as listed (RFC 9110 §8.4: in the order applied). */
const CODED: Array<[string, Buffer]> = [
  ['gzip', gzipSync(BODY)],
  ['x-gzip', gzipSync(BODY)],
  ['deflate', deflateSync(BODY)],
  ['br', brotliCompressSync(BODY)],
  ['gzip, br', brotliCompressSync(gzipSync(BODY))],
  ['br, identity, deflate', deflateSync(brotliCompressSync(BODY))],
  ...(zstd === null ? [] : [['zstd', zstd.compress(Buffer.from(BODY))], ['zstd, gzip', gzipSync(zstd.compress(Buffer.from(BODY)))]] as Array<[string, Buffer]>)
]

async function app (t: Closeable, opts: FastifyDigestFieldsOptions = {}, withCompress = false) {
  return await buildVerifyApp(t, opts, {}, undefined, async (app) => {
    if (withCompress) await app.register(compress)
  })
}

function post (target: Awaited<ReturnType<typeof app>>, headers: Record<string, string>, payload: Buffer | string, url = '/json') {
  return target.inject({ method: 'POST', url, headers: { 'content-type': 'application/octet-stream', ...headers }, payload })
}

test('without a content coding: Unencoded-Digest over the bytes as received; a wrong one is refused', async (t) => {
  for (const strict of [false, true]) {
    const target = await app(t, { strict })
    for (const url of ['/json', '/stream', '/raw']) {
      const type = { '/json': 'application/octet-stream', '/stream': 'application/x-stream', '/raw': 'application/x-raw' }[url] as string
      const ok = await post(target, { 'content-type': type, 'unencoded-digest': `${sf(BODY)}, ${sf(BODY, 'sha-512')}` }, BODY, url)
      t.equal(ok.statusCode, 200, `strict=${strict} ${url}`)
      t.same(ok.json().verification, {
        verified: true,
        fields: [{ field: 'Unencoded-Digest', ok: true, results: [{ algorithm: 'sha-256', outcome: 'matched' }, { algorithm: 'sha-512', outcome: 'matched' }] }]
      }, `strict=${strict} ${url}`)
      const bad = await post(target, { 'content-type': type, 'unencoded-digest': sf('something else') }, BODY, url)
      t.equal(bad.statusCode, 400, `strict=${strict} ${url}: a wrong Unencoded-Digest`)
      t.equal(bad.headers['content-type'], 'application/problem+json')
      t.match(bad.json(), {
        type: `${PROBLEM}digest-mismatched-values`,
        code: 'FST_DIGEST_MISMATCH',
        mismatched_digests: [{ algorithm: 'sha-256', provided_digest: `:${b64('something else')}:`, header: 'Unencoded-Digest' }]
      }, `strict=${strict} ${url}`)
      t.equal(bad.headers['want-unencoded-digest'], 'sha-256=10, sha-512=9', 'the server asks for what it accepts')
    }
  }
})

test('a right sha-256 beside a wrong sha-512 is refused; values of the wrong length, Integers and malformed fields too', async (t) => {
  const target = await app(t)
  const mixed = await post(target, { 'unencoded-digest': `${sf(BODY)}, ${sf('x', 'sha-512')}` }, BODY)
  t.equal(mixed.statusCode, 400)
  t.same(mixed.json().mismatched_digests.map((m: { algorithm: string }) => m.algorithm), ['sha-512'])
  const short = await post(target, { 'unencoded-digest': 'sha-256=:AAAA:' }, BODY)
  t.equal(short.statusCode, 400)
  t.match(short.json(), { type: `${PROBLEM}digest-invalid-values`, invalid_digests: [{ algorithm: 'sha-256', header: 'Unencoded-Digest' }] })
  const integer = await post(target, { 'unencoded-digest': 'unixsum=6405' }, BODY)
  t.equal(integer.statusCode, 400)
  t.match(integer.json(), { code: 'FST_DIGEST_INVALID_FIELD', detail: 'Malformed Unencoded-Digest field: unixsum must be a Byte Sequence' })
  const malformed = await post(target, { 'unencoded-digest': 'sha-256=abc' }, BODY)
  t.equal(malformed.statusCode, 400)
  t.equal(malformed.json().code, 'FST_DIGEST_INVALID_FIELD')
  const unknown = await post(target, { 'unencoded-digest': sf(BODY, 'md5') }, BODY)
  t.equal(unknown.statusCode, 200, 'an algorithm not enabled is ignored')
  t.same(unknown.json().verification, { verified: false, reason: 'no-digest', fields: [{ field: 'Unencoded-Digest', ok: false, results: [{ algorithm: 'md5', outcome: 'unsupported' }] }] })
})

for (const withCompress of [false, true]) {
  test(`with every content coding listed, ${withCompress ? 'after @fastify/compress' : 'decoded on the side'}: Unencoded-Digest over the decoded content, in both modes`, async (t) => {
    for (const strict of [false, true]) {
      const target = await app(t, { strict }, withCompress)
      // @fastify/compress decodes one coding of those it knows; stacked codings it refuses with its own 415.
      const cases = withCompress ? CODED.filter(([coding]) => !coding.includes(',') && coding !== 'x-gzip') : CODED
      for (const [coding, bytes] of cases) {
        const name = `strict=${strict} ${coding}`
        const headers = { 'content-type': withCompress ? 'application/json' : 'application/octet-stream', 'content-encoding': coding }
        const ok = await post(target, { ...headers, 'unencoded-digest': sf(BODY), 'content-digest': sf(bytes) }, bytes)
        t.equal(ok.statusCode, 200, name)
        t.same(ok.json().verification, {
          verified: true,
          fields: [
            { field: 'Unencoded-Digest', ok: true, results: [{ algorithm: 'sha-256', outcome: 'matched' }] },
            { field: 'Content-Digest', ok: true, results: [{ algorithm: 'sha-256', outcome: 'matched' }] }
          ]
        }, name)
        const coded = await post(target, { ...headers, 'unencoded-digest': sf(bytes) }, bytes)
        t.equal(coded.statusCode, 400, `${name}: the digest of the coded bytes is not the unencoded one`)
        t.same(coded.json().mismatched_digests, [{ algorithm: 'sha-256', provided_digest: `:${b64(bytes)}:`, header: 'Unencoded-Digest' }], name)
        // Repr-Digest: the decoded content in the default mode, the bytes as received in strict mode.
        const repr = await post(target, { ...headers, 'repr-digest': sf(strict ? bytes : BODY), 'unencoded-digest': sf(BODY, 'sha-512') }, bytes)
        t.equal(repr.statusCode, 200, `${name}: with Repr-Digest`)
        t.equal(repr.json().verification.verified, true, name)
      }
    }
  })
}

test('zstd without node:zlib\'s zstd (Node.js 20): 415 with the codings that are decoded; with it: decoded', async (t) => {
  const target = await app(t)
  const coded = zstd === null ? Buffer.from('(not zstd: never decoded)') : zstd.compress(Buffer.from(BODY))
  const res = await post(target, { 'content-encoding': 'zstd', 'unencoded-digest': sf(BODY) }, coded)
  if (zstd === null) {
    t.equal(res.statusCode, 415)
    t.equal(res.headers['accept-encoding'], 'gzip, deflate, br')
    t.same(res.json(), {
      type: 'about:blank',
      title: 'Unsupported Media Type',
      status: 415,
      detail: 'Cannot verify the Unencoded-Digest field: content coding "zstd" cannot be decoded here',
      code: 'FST_DIGEST_UNSUPPORTED_ENCODING'
    })
  } else {
    t.equal(res.statusCode, 200)
    t.equal(res.json().verification.verified, true)
  }
})

test('codings that cannot be decoded, content that does not decode, content over the body limit', async (t) => {
  for (const strict of [false, true]) {
    const target = await app(t, { strict }, false)
    target.post('/small', { bodyLimit: 1000 }, async (request) => request.digestVerification)
    const undecodable = await post(target, { 'content-encoding': 'gzip, compress', 'unencoded-digest': sf(BODY), 'repr-digest': sf(BODY) }, BODY)
    t.equal(undecodable.statusCode, 415)
    t.equal(undecodable.json().detail, `Cannot verify the ${strict ? 'Unencoded-Digest' : 'Repr-Digest, Unencoded-Digest'} field: content coding "gzip, compress" cannot be decoded here`)
    const six = await post(target, { 'content-encoding': 'gzip, gzip, gzip, gzip, gzip, gzip', 'unencoded-digest': sf(BODY) }, BODY)
    t.equal(six.statusCode, 415, 'more codings than fetch and curl decode')
    const garbage = await post(target, { 'content-encoding': 'gzip', 'unencoded-digest': sf(BODY) }, 'not gzip at all')
    t.equal(garbage.statusCode, 400)
    t.match(garbage.json(), { code: 'FST_DIGEST_INVALID_ENCODING', detail: 'Cannot verify the Unencoded-Digest field: the content is not valid gzip' })
    const bomb = await target.inject({ method: 'POST', url: '/small', headers: { 'content-type': 'application/octet-stream', 'content-encoding': 'br, gzip', 'unencoded-digest': sf(BODY) }, payload: gzipSync(brotliCompressSync(Buffer.alloc(100_000))) })
    t.equal(bomb.statusCode, 413)
    t.match(bomb.json(), { code: 'FST_DIGEST_CONTENT_TOO_LARGE', detail: 'Cannot verify the Unencoded-Digest field: the decoded content exceeds the body limit of 1000 bytes' })
  }
})

test('verify: \'required\' counts Unencoded-Digest', async (t) => {
  const target = await app(t, { verify: 'required' })
  const only = await post(target, { 'content-encoding': 'gzip', 'unencoded-digest': sf(BODY) }, gzipSync(BODY))
  t.equal(only.statusCode, 200)
  t.equal(only.json().verification.verified, true)
  const none = await post(target, {}, BODY)
  t.equal(none.statusCode, 400)
  t.equal(none.json().code, 'FST_DIGEST_MISSING')
  t.equal(none.headers['want-unencoded-digest'], 'sha-256=10, sha-512=9')
  const unsupported = await post(target, { 'unencoded-digest': sf(BODY, 'md5') }, BODY)
  t.equal(unsupported.statusCode, 400)
  t.match(unsupported.json(), { code: 'FST_DIGEST_UNSUPPORTED_ALGORITHM', unsupported_algorithms: [{ algorithm: 'md5', header: 'Unencoded-Digest' }] })
})

for (const transport of TRANSPORTS) {
  test(`${transport}: Unencoded-Digest in the trailer section, announced or not`, async (t) => {
    const coded = gzipSync(BODY)
    const served = await serve(t, transport)
    const headers = { 'content-type': 'application/octet-stream', 'content-encoding': 'gzip', trailer: 'Unencoded-Digest' }
    const body = [coded.subarray(0, 20), coded.subarray(20)]
    const ok = await served.send({ path: '/json', headers, body, trailers: { 'unencoded-digest': sf(BODY, 'sha-512') } })
    t.equal(ok.status, 200)
    t.same(json(ok).verification.fields, [{ field: 'Unencoded-Digest', ok: true, results: [{ algorithm: 'sha-512', outcome: 'matched' }] }])
    const bad = await served.send({ path: '/json', headers, body, trailers: { 'unencoded-digest': sf(coded, 'sha-512') } })
    assertProblem(t, bad, 'FST_DIGEST_MISMATCH', 400, 'the coded bytes\' digest')
    // Not announced: checked with what was hashed anyway (here: the decoded content, for the header field).
    const unannounced = await served.send({
      path: '/json',
      headers: { 'content-type': 'application/octet-stream', 'content-encoding': 'gzip', 'unencoded-digest': sf(BODY) },
      body,
      trailers: { 'unencoded-digest': sf('wrong') }
    })
    assertProblem(t, unannounced, 'FST_DIGEST_MISMATCH', 400, 'an unannounced trailer of an algorithm hashed anyway')
  })
}
