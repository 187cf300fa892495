// Request verification over a real listening server, for what inject cannot
// do: request trailers (chunked uploads), aborted uploads, bodies longer than
// Content-Length, keep-alive connections after a refusal.
import { test } from 'tap'
import { request as httpRequest, Agent, type OutgoingHttpHeaders } from 'node:http'
import { connect } from 'node:net'
import { gzipSync } from 'node:zlib'
import { once } from 'node:events'
import compress from '@fastify/compress'
import type { FastifyInstance } from 'fastify'
import type { FastifyDigestFieldsOptions } from '../../../types/index'
import { verifyRoutes, b64, sf, HELLO } from './request-helpers'
import { serve as listening } from '../../helpers'

interface Reply { status: number, headers: Record<string, unknown>, body: string, reused: boolean }
interface Upload {
  method?: string
  path: string
  headers?: OutgoingHttpHeaders
  chunks?: Array<Buffer | string>
  trailers?: Record<string, string>
  agent?: Agent
}

/** buildVerifyApp's routes, with @fastify/compress and `setup` after the plugin, listening on loopback. */
async function serve (
  t: Parameters<typeof listening>[0],
  opts: FastifyDigestFieldsOptions = {},
  withCompress = false,
  setup?: (app: FastifyInstance) => void
): Promise<{ app: FastifyInstance, port: number }> {
  return await listening(t, opts, {}, undefined, async (app) => {
    if (withCompress) await app.register(compress)
    setup?.(app)
    verifyRoutes(app)
  })
}

function upload (port: number, { method = 'POST', path, headers = {}, chunks = [], trailers, agent }: Upload): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method, path, headers, agent: agent ?? false }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => { body += chunk })
      res.on('end', () => resolve({ status: res.statusCode as number, headers: res.headers, body, reused: req.reusedSocket }))
    })
    req.on('error', reject)
    for (const chunk of chunks) req.write(chunk)
    if (trailers !== undefined) req.addTrailers(trailers)
    req.end()
  })
}

function connections (app: FastifyInstance): Promise<number> {
  return new Promise((resolve, reject) => app.server.getConnections((err, n) => err ? reject(err) : resolve(n)))
}

const chunked = (type: string, extra: OutgoingHttpHeaders = {}): OutgoingHttpHeaders =>
  ({ 'content-type': type, 'transfer-encoding': 'chunked', ...extra })

test('request trailers: Content-Digest announced in Trailer and sent at the end', async (t) => {
  const { port } = await serve(t)
  const parts = ['{"hello"', ': "world', '"}\n']
  const ok = await upload(port, { path: '/json', headers: chunked('application/json', { trailer: 'Content-Digest' }), chunks: parts, trailers: { 'Content-Digest': sf(HELLO) } })
  t.equal(ok.status, 200)
  t.same(JSON.parse(ok.body), {
    body: { hello: 'world' },
    verification: { verified: true, fields: [{ field: 'Content-Digest', ok: true, results: [{ algorithm: 'sha-256', outcome: 'matched' }] }] }
  })

  const bad = await upload(port, { path: '/json', headers: chunked('application/json', { trailer: 'Content-Digest' }), chunks: parts, trailers: { 'Content-Digest': sf('{"hello": "w0rld"}\n', 'sha-512') } })
  t.equal(bad.status, 400)
  t.equal(bad.headers['content-type'], 'application/problem+json')
  t.same(JSON.parse(bad.body).mismatched_digests, [{ algorithm: 'sha-512', provided_digest: `:${b64('{"hello": "w0rld"}\n', 'sha-512')}:`, header: 'Content-Digest' }])
})

test('request trailers on a stream-passing route: a mismatch errors the stream', async (t) => {
  const { port } = await serve(t)
  const headers = chunked('application/x-stream', { trailer: 'repr-digest' })
  const ok = await upload(port, { path: '/stream', headers, chunks: ['abc', 'def'], trailers: { 'Repr-Digest': sf('abcdef') } })
  t.equal(ok.status, 200)
  t.equal(JSON.parse(ok.body).verification.verified, true)
  const bad = await upload(port, { path: '/stream', headers, chunks: ['abc', 'deF'], trailers: { 'Repr-Digest': sf('abcdef') } })
  t.equal(bad.status, 400)
  t.equal(JSON.parse(bad.body).code, 'FST_DIGEST_MISMATCH')
})

test('request trailers: malformed, impossible length, missing under verify: required', async (t) => {
  const { port } = await serve(t, { verify: 'required' })
  const headers = chunked('text/plain', { trailer: 'Content-Digest' })
  const malformed = await upload(port, { path: '/json', headers, chunks: ['abc'], trailers: { 'Content-Digest': 'sha-256=nope' } })
  t.equal(malformed.status, 400)
  t.equal(JSON.parse(malformed.body).code, 'FST_DIGEST_INVALID_FIELD')
  t.equal(JSON.parse(malformed.body).type, 'about:blank')

  const short = await upload(port, { path: '/json', headers, chunks: ['abc'], trailers: { 'Content-Digest': 'sha-512=:AAAA:' } })
  t.equal(short.status, 400)
  t.same(JSON.parse(short.body).invalid_digests, [{ algorithm: 'sha-512', header: 'Content-Digest', reason: 'digest value is not 64 bytes long' }])

  const missing = await upload(port, { path: '/json', headers, chunks: ['abc'] })
  t.equal(missing.status, 400)
  t.equal(JSON.parse(missing.body).code, 'FST_DIGEST_MISSING')

  const good = await upload(port, { path: '/json', headers, chunks: ['abc'], trailers: { 'Content-Digest': sf('abc') } })
  t.equal(good.status, 200)
})

test('request trailers that were not announced: checked with what was hashed anyway, else refused', async (t) => {
  const { port } = await serve(t)
  const headers = chunked('text/plain', { 'content-digest': sf('abc') })
  const same = await upload(port, { path: '/json', headers, chunks: ['abc'], trailers: { 'Repr-Digest': sf('abc') } })
  t.equal(same.status, 200)
  t.same(JSON.parse(same.body).verification.fields.map((f: { field: string, ok: boolean }) => [f.field, f.ok]), [['Content-Digest', true], ['Repr-Digest', true]])

  // sha-512 was not hashed: the trailer cannot be checked, and is not passed unchecked.
  const other = await upload(port, { path: '/json', headers, chunks: ['abc'], trailers: { 'Repr-Digest': sf('abc', 'sha-512') } })
  t.equal(other.status, 400)
  t.match(JSON.parse(other.body), { code: 'FST_DIGEST_TRAILER_UNANNOUNCED', detail: /Repr-Digest trailer field arrived without being announced/ })
})

test('request trailers: a decoded Repr-Digest of gzip content, with and without compress', async (t) => {
  const coded = gzipSync(HELLO)
  for (const withCompress of [false, true]) {
    const { port } = await serve(t, {}, withCompress)
    const headers = chunked(withCompress ? 'application/json' : 'application/octet-stream', { 'content-encoding': 'gzip', trailer: 'Repr-Digest, Content-Digest' })
    const chunks = [coded.subarray(0, 10), coded.subarray(10)]
    const ok = await upload(port, { path: '/json', headers, chunks, trailers: { 'Repr-Digest': sf(HELLO, 'sha-512'), 'Content-Digest': sf(coded) } })
    t.equal(ok.status, 200, `compress: ${withCompress}`)
    t.equal(JSON.parse(ok.body).verification.verified, true)
    const bad = await upload(port, { path: '/json', headers, chunks, trailers: { 'Repr-Digest': sf(coded, 'sha-512') } })
    t.equal(bad.status, 400)
    t.same(JSON.parse(bad.body).mismatched_digests.map((m: { header: string }) => m.header), ['Repr-Digest'])
  }
})

test('an aborted upload leaves the server serving', async (t) => {
  for (const withCompress of [false, true]) {
    const aborted: string[] = []
    let abortSeen = (): void => {}
    const { app, port } = await serve(t, {}, withCompress, (app) => {
      app.addHook('onRequestAbort', async (request) => {
        aborted.push(request.url)
        abortSeen()
      })
    })
    const big = Buffer.alloc(64 * 1024, 'x')
    const cases: Array<[string, OutgoingHttpHeaders]> = [
      ['/json', { 'content-type': 'application/octet-stream', 'content-digest': sf('whole') }],
      ['/stream', { 'content-type': 'application/x-stream', 'repr-digest': sf('whole') }],
      ['/raw', { 'content-type': 'application/x-raw', 'content-digest': sf('whole') }],
      ['/json', { 'content-type': 'application/json', 'content-encoding': 'gzip', 'repr-digest': sf('whole') }]
    ]
    for (const [path, headers] of cases) {
      const req = httpRequest({ host: '127.0.0.1', port, method: 'POST', path, agent: false, headers: { ...headers, 'content-length': String(512 * 1024) } })
      req.on('error', () => {})
      // Destroyed once the server has the request and part of its body; the next case once fastify saw the abort.
      const arrived = once(app.server, 'request')
      req.write(headers['content-encoding'] === 'gzip' ? gzipSync(big).subarray(0, 1000) : big)
      await arrived
      const seen = new Promise<void>((resolve) => { abortSeen = resolve })
      req.destroy()
      await seen
    }
    t.same(aborted, cases.map(([path]) => path), `compress: ${withCompress}: every upload was aborted mid-body`)
    t.equal(await connections(app), 0, 'no connection left open')
    const after = await upload(port, { path: '/json', headers: { 'content-type': 'text/plain', 'content-digest': sf('abc') }, chunks: ['abc'] })
    t.equal(after.status, 200, `compress: ${withCompress}`)
    t.equal(JSON.parse(after.body).verification.verified, true)
  }
})

test('bodies shorter or longer than Content-Length', async (t) => {
  const { app, port } = await serve(t)
  const request = (length: number, digest: string) => [
    'POST /json HTTP/1.1',
    'Host: localhost',
    'Content-Type: text/plain',
    `Content-Length: ${length}`,
    `Content-Digest: ${digest}`,
    '',
    ''
  ].join('\r\n')

  // Longer: the bytes after Content-Length are not content (here, a bad next request).
  const long = connect(port, '127.0.0.1')
  let response = ''
  long.setEncoding('utf8')
  // The extra bytes go once the first response is in.
  const answered = new Promise<void>((resolve) => {
    long.on('data', (chunk: string) => {
      response += chunk
      if (response.includes('"verified":true')) resolve()
    })
  })
  long.write(request(5, sf('hello')) + 'hello')
  await answered
  long.write('EXTRA BYTES\r\n\r\n')
  await once(long, 'close')
  t.match(response, /^HTTP\/1\.1 200 OK/)
  t.match(response, /"verified":true/)
  t.match(response, /HTTP\/1\.1 400 Bad Request/, 'the rest is a bad next request, answered by node')

  // Shorter: the client gives up before Content-Length bytes.
  const short = connect(port, '127.0.0.1')
  short.on('error', () => {})
  short.resume()
  // Ended once the server has the request.
  const arrived = once(app.server, 'request')
  short.write(request(100, sf('x'.repeat(100))) + 'x'.repeat(50))
  await arrived
  short.end()
  await once(short, 'close')

  const after = await upload(port, { path: '/json', headers: { 'content-type': 'text/plain', 'content-digest': sf('abc') }, chunks: ['abc'] })
  t.equal(after.status, 200)
})

test('keep-alive: a refusal before reading, and a handler that stops reading, leave the server usable', async (t) => {
  const { port } = await serve(t, {}, false, (app) => {
    app.addContentTypeParser('application/x-partial', (_req, payload, done) => done(null, payload))
    app.post('/partial', async (request) => {
      // Read one chunk, then stop reading and answer: the verifier reads
      // and checks the rest before the answer goes out.
      const body = request.body as NodeJS.ReadableStream
      await once(body, 'data')
      body.pause()
      return { verification: request.digestVerification }
    })
  })
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  t.teardown(() => agent.destroy())
  const big = Buffer.alloc(256 * 1024, 'q')

  const refused = await upload(port, { path: '/json', agent, headers: { 'content-type': 'text/plain', 'content-length': String(big.length), 'content-digest': 'sha-256=bad' }, chunks: [big] })
  t.equal(refused.status, 400)
  const next = await upload(port, { path: '/json', agent, headers: { 'content-type': 'text/plain', 'content-digest': sf('abc') }, chunks: ['abc'] })
  t.equal(next.status, 200)
  t.equal(JSON.parse(next.body).verification.verified, true)
  t.equal(next.reused, true, 'same connection')

  const partial = await upload(port, { path: '/partial', agent, headers: { 'content-type': 'application/x-partial', 'content-length': String(big.length), 'content-digest': sf(big) }, chunks: [big] })
  t.equal(partial.status, 200)
  t.same(JSON.parse(partial.body), { verification: { verified: false, reason: 'unread', fields: [] } }, 'the handler answered before the end')
  const corrupt = Buffer.from(big)
  corrupt[big.length - 1] = 0x72
  const wrong = await upload(port, { path: '/partial', agent, headers: { 'content-type': 'application/x-partial', 'content-length': String(big.length), 'content-digest': sf(big) }, chunks: [corrupt] })
  t.equal(wrong.status, 400, 'the rest is checked before the answer goes out')
  t.equal(JSON.parse(wrong.body).code, 'FST_DIGEST_MISMATCH')
  const last = await upload(port, { path: '/json', agent, headers: { 'content-type': 'text/plain', 'content-digest': sf('abc') }, chunks: ['abc'] })
  t.equal(last.status, 200)
  t.equal(last.reused, true, 'same connection')
})

test('request trailers: a legacy Digest trailer counts only with legacyDigest', async (t) => {
  const body = '{"type":"Note"}'
  for (const legacyDigest of [true, false]) {
    const { port } = await serve(t, { legacyDigest })
    const res = await upload(port, { path: '/json', headers: chunked('application/json', { trailer: 'Digest' }), chunks: [body], trailers: { Digest: `SHA-256=${b64(body)}` } })
    t.equal(res.status, 200)
    t.same(JSON.parse(res.body).verification, legacyDigest
      ? { verified: true, fields: [{ field: 'Digest', ok: true, results: [{ algorithm: 'sha-256', outcome: 'matched' }] }] }
      : { verified: false, reason: 'no-digest', fields: [] })
  }
})
