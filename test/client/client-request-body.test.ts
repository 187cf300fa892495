// Request content through the interceptor, against the server plugin under
// `verify: 'required'`: strings, Buffers, typed arrays and ArrayBuffers get a
// Content-Digest through undici.request, undici.stream and a bare
// dispatcher.dispatch; fetch (which hands the dispatcher every body as a
// stream) sends one with digestHeaders(); a stream body is left alone (the
// plugin refuses it, and the client reports that problem), unless the
// caller gives the field.
import { test } from 'tap'
import { Readable } from 'node:stream'
import Fastify from 'fastify'
import { Agent, fetch, request, type Dispatcher } from 'undici'
import digestFields = require('../../lib/index')
import { digestHeaders, digestInterceptor } from '../../lib/client/index'
import { sf } from '../helpers'
import { assertFailure, call, digestAgent } from './client-helpers'

const TEXT = '{"title":"New Title","note":"é"}'

async function server (t: { teardown (fn: () => unknown): void }): Promise<string> {
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(digestFields, { verify: 'required', algorithms: ['sha-512', 'sha-256'] })
  app.addContentTypeParser('application/octet-stream', { parseAs: 'buffer' }, (_req, body, done) => done(null, body))
  app.post('/upload', async (request) => ({ verification: request.digestVerification, length: (request.body as Buffer | object).toString().length }))
  await app.listen({ port: 0, host: '127.0.0.1' })
  return `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
}

const BODIES: Array<[string, () => string | Buffer | Uint8Array]> = [
  ['string', () => TEXT],
  ['Buffer', () => Buffer.from(TEXT)],
  ['Uint8Array', () => new TextEncoder().encode(TEXT)],
  ['Float64Array view', () => new Uint8Array(new Float64Array([1.5, 2.5, 3.5]).buffer, 8, 16)]
]

test('request and stream: Content-Digest added for bodies known up front', async (t) => {
  const base = await server(t)
  const dispatcher = digestAgent(t, { algorithms: ['sha-512'], verify: 'required', want: 'sha-512' })
  for (const kind of ['request', 'stream'] as const) {
    for (const [name, make] of BODIES) {
      const out = await call(kind, dispatcher, `${base}/upload`, { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body: make() })
      t.equal(out.error, null, `${kind} ${name}: ${String(out.error?.message)}`)
      t.equal(out.status, 200)
      if (kind === 'request') t.equal(JSON.parse(out.body.toString()).verification.fields[0].results[0].algorithm, 'sha-512', 'the first accepted algorithm')
    }
  }
  // A digest the caller gives is kept.
  const given = await call('request', dispatcher, `${base}/upload`, { method: 'POST', headers: { 'content-type': 'application/octet-stream', 'Content-Digest': sf('other') }, body: TEXT })
  assertFailure(t, given, 'FST_DIGEST_REQUEST_REJECTED', 'Content-Digest', 'sha-256')
})

test('a bare dispatch with an ArrayBuffer body', async (t) => {
  const base = await server(t)
  const agent = new Agent()
  t.teardown(() => agent.close())
  const dispatcher = agent.compose(digestInterceptor({ verify: 'required', want: 'sha-256' }))
  const body = new TextEncoder().encode(TEXT).buffer as ArrayBuffer
  const result = await new Promise<{ status: number, text: string }>((resolve, reject) => {
    let status = 0
    const chunks: Buffer[] = []
    dispatcher.dispatch({ origin: base, path: '/upload', method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body: body as never }, {
      onRequestStart () {},
      onResponseStart (_controller, statusCode) { status = statusCode },
      onResponseData (_controller, chunk) { chunks.push(chunk) },
      onResponseEnd () { resolve({ status, text: Buffer.concat(chunks).toString() }) },
      onResponseError (_controller, err) { reject(err) }
    } as Dispatcher.DispatchHandler)
  })
  t.equal(result.status, 200)
  t.equal(JSON.parse(result.text).verification.verified, true)
})

test('fetch: digestHeaders() for the body; streams are left alone', async (t) => {
  const base = await server(t)
  const dispatcher = digestAgent(t, { verify: 'required', want: { content: 'sha-256' } })
  const res = await fetch(`${base}/upload`, {
    dispatcher,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...digestHeaders(TEXT) },
    body: TEXT
  })
  t.equal(res.status, 200)
  t.equal((await res.json() as { verification: { verified: boolean } }).verification.verified, true)
  const bare = await call('fetch', dispatcher, `${base}/upload`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: TEXT })
  assertFailure(t, bare, 'FST_DIGEST_REQUEST_REJECTED', 'Content-Digest', null)
  t.match(bare.error?.message, /requires a Content-Digest or Repr-Digest/)
  // A stream body through undici.request: no digest is added.
  const streamed = await request(`${base}/upload`, { dispatcher, method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body: Readable.from([Buffer.from(TEXT)]) })
  t.equal(streamed.statusCode, 400)
  await t.rejects(streamed.body.text(), { code: 'FST_DIGEST_REQUEST_REJECTED' })
})
