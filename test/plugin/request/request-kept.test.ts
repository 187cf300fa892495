// A small body of known length (by its Content-Length) is kept whole at request.raw and hashed once at its end (a coded
// one decoded whole): in pieces, over HTTP/1.1 and HTTP/2, parsed or read from request.raw after part of it arrived;
// behind a stream of another plugin's; and past its Content-Length.
import { test } from 'tap'
import { createHash } from 'node:crypto'
import { Readable } from 'node:stream'
import { brotliCompressSync, deflateRawSync, deflateSync, gzipSync } from 'node:zlib'
import Fastify, { type FastifyInstance } from 'fastify'
import digestFields = require('../../../lib/index')
import { sf } from './request-helpers'
import { assertProblem, failOnCrash, json, pieces, serve, TRANSPORTS, type TapTest } from './upload-helpers'
import { arrivals, sleep } from '../../helpers'

const MATCHED = { verified: true, fields: [{ field: 'Content-Digest', ok: true, results: [{ algorithm: 'sha-256', outcome: 'matched' }] }] }
const BODY = Buffer.from(JSON.stringify({ note: 'x'.repeat(2000) }))

for (const transport of TRANSPORTS) {
  test(`${transport}: a small body in pieces, parsed or read from request.raw once part of it arrived`, async (t) => {
    failOnCrash(t)
    const { send } = await serve(t, transport, {}, (app) => {
      const pushes = arrivals(app)
      // The route's own onRequest hook runs after the verifier's: it waits until the first pieces arrived. Over
      // HTTP/2 nothing reaches request.raw before it is read (the stream is paused till then), and no event tells the
      // pieces reached the session: time for them to arrive.
      const arrived = async (raw: Readable): Promise<void> => {
        await (transport === 'h1' ? pushes(raw).first : sleep(120))
      }
      app.post('/late-raw', { onRequest: async (request) => { await arrived(request.raw) } }, async (request) => {
        let bytes = 0
        for await (const chunk of request.raw) bytes += (chunk as Buffer).length
        return { bytes, verification: request.digestVerification }
      })
    })
    const headers = { 'content-type': 'application/json', 'content-length': String(BODY.length) }
    const ok = await send({ path: '/json', headers: { ...headers, 'content-digest': sf(BODY) }, body: pieces(BODY), delay: 20 })
    t.equal(ok.status, 200)
    t.same(json(ok).verification, MATCHED)
    const bad = await send({ path: '/json', headers: { ...headers, 'content-digest': sf('other') }, body: pieces(BODY), delay: 20 })
    assertProblem(t, bad, 'FST_DIGEST_MISMATCH')

    const raw = { 'content-type': 'application/x-raw', 'content-length': String(BODY.length) }
    const read = await send({ path: '/late-raw', headers: { ...raw, 'content-digest': sf(BODY) }, body: pieces(BODY), delay: 80 })
    t.equal(read.status, 200)
    t.same(json(read), { bytes: BODY.length, verification: MATCHED })
    const refused = await send({ path: '/late-raw', headers: { ...raw, 'content-digest': sf('other') }, body: pieces(BODY), delay: 80 })
    assertProblem(t, refused, 'FST_DIGEST_MISMATCH')
  })
}

test('an instance-level preParsing stream registered before the plugin: the bytes it gives are checked', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  app.addHook('preParsing', async () => Readable.from([Buffer.from('ABC')]))
  await app.register(digestFields)
  app.post('/json', async (request) => ({ body: request.body, verification: request.digestVerification }))
  const headers = { 'content-type': 'text/plain' }
  const ok = await app.inject({ method: 'POST', url: '/json', headers: { ...headers, 'content-digest': sf('ABC') }, payload: 'abc' })
  t.equal(ok.statusCode, 200)
  t.same(ok.json(), { body: 'ABC', verification: MATCHED })
  const bad = await app.inject({ method: 'POST', url: '/json', headers: { ...headers, 'content-digest': sf('abc') }, payload: 'abc' })
  t.equal(bad.statusCode, 400)
  t.equal(bad.json().code, 'FST_DIGEST_MISMATCH')
})

test('more bytes than the Content-Length, read by a parser of its own: not all kept, refused', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(digestFields)
  // Reads the stream itself, without fastify's check of the length.
  app.addContentTypeParser('application/x-own', (_request, payload, done) => {
    const parts: Buffer[] = []
    payload.on('data', (chunk: Buffer) => parts.push(chunk)).on('end', () => done(null, Buffer.concat(parts).toString()))
  })
  app.post('/own', async (request) => ({ body: request.body }))
  const res = await app.inject({
    method: 'POST',
    url: '/own',
    headers: { 'content-type': 'application/x-own', 'content-length': '3', 'content-digest': sf('abcdef') },
    payload: 'abcdef'
  })
  t.equal(res.statusCode, 400)
  t.equal(res.json().code, 'FST_DIGEST_INCOMPLETE')
})

test('behind a stream that never reads request.raw: judged on what it read of it, none of what arrived', async (t) => {
  failOnCrash(t)
  const { send } = await serve(t, 'h1', {}, (app) => {
    const pushes = arrivals(app)
    // Registered after the plugin; it waits until the body has arrived, unread.
    app.addHook('preParsing', async (request, _reply, payload) => {
      if (request.url !== '/json') return payload
      await pushes(request.raw).ended
      return Readable.from([Buffer.from('abc')])
    })
  })
  const res = await send({ path: '/json', headers: { 'content-type': 'text/plain', 'content-length': '3', 'content-digest': sf('abc') }, body: ['abc'] })
  assertProblem(t, res, 'FST_DIGEST_MISMATCH')
})

/** A route whose parser answers whether it was handed request.raw itself (`same`), and the verification. */
async function sameApp (t: TapTest): Promise<FastifyInstance> {
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(digestFields)
  // fastify hands request.raw to the first preParsing hook (lib/route.js); no stream of the verifier's is put between.
  app.addContentTypeParser('application/x-same', (request, payload, done) => {
    const same = payload === request.raw
    payload.resume().once('end', () => done(null, { same }))
  })
  app.post('/same', async (request) => ({ body: request.body, verification: request.digestVerification }))
  return app
}

test('a small body reaches the parser as request.raw itself, and is verified', async (t) => {
  const app = await sameApp(t)
  const res = await app.inject({ method: 'POST', url: '/same', headers: { 'content-type': 'application/x-same', 'content-digest': sf('abc') }, payload: 'abc' })
  t.equal(res.statusCode, 200)
  t.same(res.json(), { body: { same: true }, verification: MATCHED })
})

test('a small coded body reaches the parser as request.raw, decoded whole for its Repr-Digest', async (t) => {
  const app = await sameApp(t)
  const headers = { 'content-type': 'application/x-same' }
  const json = '{"kept":true}'
  for (const [coding, coded] of [['gzip', gzipSync(json)], ['br, gzip', gzipSync(brotliCompressSync(json))]] as const) {
    const res = await app.inject({ method: 'POST', url: '/same', headers: { ...headers, 'content-encoding': coding, 'repr-digest': sf(json) }, payload: coded })
    t.equal(res.statusCode, 200, coding)
    t.same(res.json(), { body: { same: true }, verification: { verified: true, fields: [{ field: 'Repr-Digest', ok: true, results: [{ algorithm: 'sha-256', outcome: 'matched' }] }] } }, coding)
    const wrong = await app.inject({ method: 'POST', url: '/same', headers: { ...headers, 'content-encoding': coding, 'repr-digest': sf('other') }, payload: coded })
    t.same([wrong.statusCode, wrong.json().code], [400, 'FST_DIGEST_MISMATCH'], coding)
  }
  // "deflate" is zlib data (RFC 9110 §8.4.1.2): raw deflate does not decode, as on the side decoder.
  const raw = await app.inject({ method: 'POST', url: '/same', headers: { ...headers, 'content-encoding': 'deflate', 'repr-digest': sf(json) }, payload: deflateRawSync(json) })
  t.same([raw.statusCode, raw.json().code], [400, 'FST_DIGEST_INVALID_ENCODING'])
  const zlibData = await app.inject({ method: 'POST', url: '/same', headers: { ...headers, 'content-encoding': 'deflate', 'repr-digest': sf(json) }, payload: deflateSync(json) })
  t.equal(zlibData.statusCode, 200)
})

test('a kept body that fails its digest and does not parse: the digest failure is answered', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(digestFields)
  app.post('/json', async (request) => ({ verification: request.digestVerification }))
  const headers = { 'content-type': 'application/json' }
  const bad = await app.inject({ method: 'POST', url: '/json', headers: { ...headers, 'content-digest': sf('other') }, payload: '{bad json' })
  t.equal(bad.statusCode, 400)
  t.equal(bad.json().code, 'FST_DIGEST_MISMATCH')
  const unparsed = await app.inject({ method: 'POST', url: '/json', headers: { ...headers, 'content-digest': sf('{bad json') }, payload: '{bad json' })
  t.equal(unparsed.statusCode, 400)
  t.equal(unparsed.json().code, 'FST_ERR_CTP_INVALID_JSON_BODY')
})

test('a kept body no parser reads (415) keeps fastify\'s answer, whatever its digest', async (t) => {
  failOnCrash(t)
  const { send } = await serve(t, 'h1', {}, (app) => {
    const pushes = arrivals(app)
    // The body arrives, unread, while the route's own onRequest hook waits for its end.
    const ended = async (request: { raw: Readable }): Promise<void> => { await pushes(request.raw).ended }
    app.post('/late-json', { onRequest: ended }, async () => ({ ran: true }))
  })
  const headers = { 'content-type': 'application/x-unknown', 'content-length': '3', 'content-digest': sf('other') }
  const res = await send({ path: '/late-json', headers, body: ['abc'] })
  t.equal(res.status, 415)
  t.equal(json(res).code, 'FST_ERR_CTP_INVALID_MEDIA_TYPE')
})

test('a claim whose base64 has non-zero pad bits matches the digest it decodes to (RFC 8941 §4.2.7); the problem names it as sent', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(digestFields)
  app.post('/json', async (request) => ({ verification: request.digestVerification }))
  // 32 octets take 43 base64 characters and a "=": the last character's two low bits are pad bits, zero when canonical.
  // The next character of the alphabet sets one of them and decodes to the same octets.
  const canonical = createHash('sha256').update('abc').digest('base64')
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'
  const padBits = `${canonical.slice(0, -2)}${alphabet[alphabet.indexOf(canonical.charAt(42)) + 1]}=`
  t.not(padBits, canonical)
  t.same(Buffer.from(padBits, 'base64'), Buffer.from(canonical, 'base64'))
  const headers = { 'content-type': 'text/plain' }
  const ok = await app.inject({ method: 'POST', url: '/json', headers: { ...headers, 'content-digest': `sha-256=:${padBits}:` }, payload: 'abc' })
  t.equal(ok.statusCode, 200)
  t.same(ok.json(), { verification: MATCHED })
  // The same form over other content: refused, the value quoted as the client wrote it.
  const bad = await app.inject({ method: 'POST', url: '/json', headers: { ...headers, 'content-digest': `sha-256=:${padBits}:` }, payload: 'abd' })
  t.equal(bad.statusCode, 400)
  t.equal(bad.json().code, 'FST_DIGEST_MISMATCH')
  t.same(bad.json().mismatched_digests, [{ algorithm: 'sha-256', provided_digest: `:${padBits}:`, header: 'Content-Digest' }])
})
