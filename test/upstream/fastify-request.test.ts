// Canaries: what the request verifier (lib/plugin/request/) relies on in fastify's handling of a request
// (docs/design.md, "What this plugin relies on"). Each test fails when upstream changes what it pins; none loads the
// plugin.
import { test } from 'tap'
import Fastify from 'fastify'
import { once } from 'node:events'
import { connect as h2Connect } from 'node:http2'
import type { AddressInfo } from 'node:net'
import { Readable, Transform } from 'node:stream'
import { recordPushes } from '../helpers'

const TEXT = { 'content-type': 'text/plain' }

test('the first preParsing hook is handed request.raw itself (lib/route.js)', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  const handed: boolean[] = []
  app.addHook('preParsing', (request, _reply, payload, done) => {
    handed.push(payload === request.raw)
    done(null, payload)
  })
  app.post('/', async (request) => request.body)
  const res = await app.inject({ method: 'POST', url: '/', headers: TEXT, payload: 'abc' })
  t.equal(res.body, 'abc')
  t.same(handed, [true])
})

/** A preParsing stream that doubles each byte, with `receivedEncodedLength` counting the bytes it read, or without. */
function doubling (payload: Readable, counted: boolean): Readable {
  let read = 0
  const stream = new Transform({
    transform (chunk: Buffer, _encoding, callback) {
      read += chunk.length
      callback(null, Buffer.from([...chunk].flatMap((byte) => [byte, byte])))
    }
  })
  if (counted) Object.defineProperty(stream, 'receivedEncodedLength', { get: () => read })
  return payload.pipe(stream)
}

test('fastify checks Content-Length against a preParsing stream\'s receivedEncodedLength (lib/content-type-parser.js rawBody)', async (t) => {
  for (const counted of [true, false]) {
    const app = Fastify()
    t.teardown(() => app.close())
    app.addHook('preParsing', async (_request, _reply, payload) => doubling(payload, counted))
    app.post('/', async (request) => request.body)
    const res = await app.inject({ method: 'POST', url: '/', headers: { ...TEXT, 'content-length': '3' }, payload: 'abc' })
    if (counted) {
      t.equal(res.statusCode, 200, 'the count of the bytes received, not of those decoded')
      t.equal(res.body, 'aabbcc')
    } else {
      t.equal(res.statusCode, 400, 'control: without it the decoded bytes are counted')
      t.equal(res.json().code, 'FST_ERR_CTP_INVALID_CONTENT_LENGTH')
    }
  }
})

test('HTTP/2 without Content-Type nor length: the handler runs at once, unread; read(0) makes an empty body push its end', async (t) => {
  const app = Fastify({ http2: true })
  t.teardown(() => app.close())
  // When the end has been pushed into request.raw (through its own push, as node-request-stream.test.ts pins).
  const endPushed = new WeakMap<object, Promise<void>>()
  app.addHook('onRequest', (request, _reply, done) => {
    endPushed.set(request.raw, recordPushes(request.raw).ended)
    done()
  })
  const seen: Array<{ didRead: boolean, ended: boolean }> = []
  app.post('/', async (request) => {
    const raw = request.raw as typeof request.raw & { _readableState: { ended: boolean } }
    const didRead = raw.readableDidRead
    raw.read(0)
    await endPushed.get(raw)
    seen.push({ didRead, ended: raw._readableState.ended })
    return 'ok'
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const session = h2Connect(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}`)
  t.teardown(() => session.close())
  const stream = session.request({ ':method': 'POST', ':path': '/' }, { endStream: true })
  const chunks: Buffer[] = []
  stream.on('data', (chunk: Buffer) => chunks.push(chunk))
  await once(stream, 'end')
  t.equal(Buffer.concat(chunks).toString(), 'ok')
  t.same(seen, [{ didRead: false, ended: true }], 'nothing read the body before the handler')
})

test('a status set in onError is kept for an error without one (lib/error-status.js)', async (t) => {
  for (const setStatus of [true, false]) {
    const app = Fastify()
    t.teardown(() => app.close())
    app.addHook('onError', (_request, reply, _error, done) => {
      if (setStatus) reply.code(413)
      done()
    })
    app.post('/', async () => { throw new Error('cut') })
    const res = await app.inject({ method: 'POST', url: '/', headers: TEXT, payload: 'abc' })
    t.equal(res.statusCode, setStatus ? 413 : 500, setStatus ? 'the status set in onError' : 'control: 500')
  }
})

test('fastify\'s default error body has statusCode, error and message (lib/error-handler.js)', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  app.post('/', async () => { throw Object.assign(new Error('refused'), { statusCode: 400 }) })
  const res = await app.inject({ method: 'POST', url: '/', headers: TEXT, payload: 'abc' })
  t.equal(res.statusCode, 400)
  t.match(res.json(), { statusCode: 400, error: 'Bad Request', message: 'refused' })
})
