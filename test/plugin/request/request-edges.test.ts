// Request verification at the edges of the body's life: bytes that arrived
// before the tap, bodies read before it, readers that give up, decoders that
// fail while a reply waits, answers that are streams or custom errors.
import { test } from 'tap'
import { PassThrough, Readable } from 'node:stream'
import { gzipSync } from 'node:zlib'
import compress from '@fastify/compress'
import { buildVerifyApp, drain, sf } from './request-helpers'
import { assertProblem, json, serve } from './upload-helpers'
import { arrivals } from '../../helpers'
import { h2Session } from '../../http2-helpers'
import { constants } from 'node:http2'
import { once } from 'node:events'

const MATCHED = { verified: true, fields: [{ field: 'Content-Digest', ok: true, results: [{ algorithm: 'sha-256', outcome: 'matched' }] }] }

test('a body that arrived with the headers while an async onRequest hook ran is hashed from the buffer', async (t) => {
  // Over HTTP/1.1 the parser pushes a small body that came in the same
  // packet as the headers before an asynchronous hook lets the verifier's
  // route-level onRequest hook run: it is already in request.raw's buffer.
  const { send } = await serve(t, 'h1', {}, (app) => {
    const pushes = arrivals(app)
    // Until the body arrived (a chunked one: its first chunk, the rest comes later).
    app.addHook('onRequest', async (request) => {
      const { first, ended } = pushes(request.raw)
      await (request.headers['transfer-encoding'] === 'chunked' ? first : ended)
    })
  })
  const body = '{"hello": "world"}'
  const ok = await send({ path: '/json', headers: { 'content-type': 'application/json', 'content-length': String(body.length), 'content-digest': sf(body) }, body: [body] })
  t.equal(ok.status, 200)
  t.same(json(ok).verification, MATCHED)
  const bad = await send({ path: '/json', headers: { 'content-type': 'application/json', 'content-length': String(body.length), 'content-digest': sf('other') }, body: [body] })
  assertProblem(t, bad, 'FST_DIGEST_MISMATCH')
  // Part of a chunked body in the buffer, the rest later: held back from then on.
  const parts = await send({ path: '/raw', headers: { 'content-type': 'application/x-raw', 'transfer-encoding': 'chunked', 'content-digest': sf('abcdef') }, body: ['abc', 'def'], delay: 40 })
  t.equal(parts.status, 200)
  t.same(json(parts), { bytes: 6, verification: MATCHED })
  // A whole body, ended before the tap: checked before its reader starts.
  const whole = await send({ path: '/raw', headers: { 'content-type': 'application/x-raw', 'content-length': '6', 'content-digest': sf('abcdef') }, body: ['abcdef'] })
  t.equal(whole.status, 200)
  t.same(json(whole), { bytes: 6, verification: MATCHED })
  const wholeBad = await send({ path: '/raw', headers: { 'content-type': 'application/x-raw', 'content-length': '6', 'content-digest': sf('other') }, body: ['abcdef'] })
  assertProblem(t, wholeBad, 'FST_DIGEST_MISMATCH')
})

test('a body read before the verifier could tap it is never verified', async (t) => {
  for (const verify of ['if-present', 'required'] as const) {
    const app = await buildVerifyApp(t, { verify }, {}, undefined, async (app) => {
      app.addHook('onRequest', async (request) => {
        const raw = request.raw
        await new Promise((resolve) => raw.once('readable', resolve))
        raw.unshift(raw.read(1) as Buffer)
      })
    })
    const res = await app.inject({ method: 'POST', url: '/raw', headers: { 'content-type': 'application/x-raw', 'content-digest': sf('abc') }, payload: Readable.from([Buffer.from('abc')]) })
    if (verify === 'required') {
      t.equal(res.statusCode, 400)
      t.equal(res.json().code, 'FST_DIGEST_MISSING')
    } else {
      t.equal(res.statusCode, 200)
      t.same(res.json().verification, { verified: false, reason: 'unread', fields: [] })
    }
  }
})

test('request.digestVerification in an instance-level onRequest hook, before the verifier: null', async (t) => {
  const seen: unknown[] = []
  const app = await buildVerifyApp(t, {}, {}, undefined, async (app) => {
    app.addHook('onRequest', async (request) => { seen.push(request.digestVerification) })
  })
  const res = await app.inject({ method: 'POST', url: '/json', headers: { 'content-type': 'text/plain', 'content-digest': sf('abc') }, payload: 'abc' })
  t.equal(res.statusCode, 200)
  t.same(seen, [null])
})

test('a stream between request.raw and the parser: an empty body, and a reader that gives up', async (t) => {
  const app = await buildVerifyApp(t, {}, {}, undefined, async (app) => {
    // Another plugin's stream, not a decoder (no receivedEncodedLength).
    app.addHook('preParsing', async (_request, _reply, payload) => {
      const wrapped = new PassThrough()
      payload.pipe(wrapped)
      return wrapped
    })
    app.addContentTypeParser('application/x-giveup', (_req, payload, done) => done(null, payload))
    app.post('/giveup', async (request) => {
      const body = request.body as Readable
      await new Promise((resolve) => body.once('data', resolve))
      body.destroy()
      return { verification: request.digestVerification }
    })
  })
  const empty = await app.inject({ method: 'POST', url: '/json', headers: { 'content-type': 'text/plain', 'content-digest': sf('') }, payload: Readable.from([]) })
  t.equal(empty.statusCode, 200)
  t.same(empty.json().verification, MATCHED)

  const big = Buffer.alloc(200_000, 'g')
  const ok = await app.inject({ method: 'POST', url: '/giveup', headers: { 'content-type': 'application/x-giveup', 'content-digest': sf(big) }, payload: big })
  t.equal(ok.statusCode, 200, 'the rest is read and checked before the answer')
  const corrupt = Buffer.from(big)
  corrupt[150_000] = 0x68
  const bad = await app.inject({ method: 'POST', url: '/giveup', headers: { 'content-type': 'application/x-giveup', 'content-digest': sf(big) }, payload: corrupt })
  t.equal(bad.statusCode, 400)
  t.equal(bad.json().code, 'FST_DIGEST_MISMATCH')
})

test('a preParsing stream that never reads the bytes received: judged on what was hashed of them', async (t) => {
  const app = await buildVerifyApp(t, {}, {}, undefined, async (app) => {
    app.addHook('preParsing', async () => Readable.from([Buffer.from('abc')]))
  })
  const res = await app.inject({ method: 'POST', url: '/json', headers: { 'content-type': 'text/plain', 'content-digest': sf('abc') }, payload: 'abc' })
  t.equal(res.statusCode, 400, 'fails closed: the parsed body is not the one received')
  t.equal(res.json().code, 'FST_DIGEST_MISMATCH')
})

test('a reply waiting for a body decoded by @fastify/compress', async (t) => {
  const app = await buildVerifyApp(t, {}, {}, undefined, async (app) => {
    await app.register(compress)
    app.addContentTypeParser('application/x-ignore', (_req, _payload, done) => done(null))
    app.post('/ignore', async () => ({ answered: true }))
  })
  const json = '{"a": 1}'
  const gz = gzipSync(json)
  const headers = { 'content-type': 'application/x-ignore', 'content-encoding': 'gzip' }
  const ok = await app.inject({ method: 'POST', url: '/ignore', headers: { ...headers, 'repr-digest': sf(json) }, payload: gz })
  t.equal(ok.statusCode, 200)
  t.same(ok.json(), { answered: true })
  const bad = await app.inject({ method: 'POST', url: '/ignore', headers: { ...headers, 'repr-digest': sf('other') }, payload: gz })
  t.equal(bad.statusCode, 400)
  t.equal(bad.json().code, 'FST_DIGEST_MISMATCH')
  // Content that does not decode, found while the reply waits.
  const broken = await app.inject({ method: 'POST', url: '/ignore', headers: { ...headers, 'repr-digest': sf(json) }, payload: Buffer.from('not gzip at all') })
  t.equal(broken.statusCode, 400)
  t.equal(broken.json().code, 'FST_DIGEST_INVALID_ENCODING')
})

test('answers to a failed body: a success streamed is replaced by the problem, an error status stays', async (t) => {
  const app = await buildVerifyApp(t)
  app.addContentTypeParser('application/x-catch', (_req, payload, done) => done(null, payload))
  let replaced: Readable | null = null
  app.post('/catch', async (request, reply) => {
    await drain(request.body).catch(() => {})
    replaced = Readable.from(['never sent'])
    return reply.type('text/plain').send(replaced)
  })
  // The handler answering an error status itself: its answer stays.
  app.post('/conflict', async (request, reply) => {
    await drain(request.body).catch(() => {})
    return reply.code(409).type('text/plain').send('conflict')
  })
  const res = await app.inject({ method: 'POST', url: '/catch', headers: { 'content-type': 'application/x-catch', 'content-digest': sf('other') }, payload: 'abc' })
  t.equal(res.statusCode, 400)
  t.equal(res.json().code, 'FST_DIGEST_MISMATCH')
  t.equal((replaced as unknown as Readable).destroyed, true, 'the stream the handler sent is destroyed')
  const own = await app.inject({ method: 'POST', url: '/conflict', headers: { 'content-type': 'application/x-catch', 'content-digest': sf('other') }, payload: 'abc' })
  t.equal(own.statusCode, 409)
  t.equal(own.body, 'conflict')
})

test('verify: required, a route that answers without reading a body of unknown length and no digest', async (t) => {
  const { send } = await serve(t, 'h1', { verify: 'required' }, (app) => {
    app.addContentTypeParser('application/x-ignore', (_req, _payload, done) => done(null))
    app.post('/ignore', { bodyLimit: 1000 }, async () => ({ answered: true }))
  })
  const headers = { 'content-type': 'application/x-ignore', 'transfer-encoding': 'chunked' }
  const small = await send({ path: '/ignore', headers, body: ['abc'] })
  assertProblem(t, small, 'FST_DIGEST_MISSING')
  const empty = await send({ path: '/ignore', headers, body: [] })
  t.equal(empty.status, 200, 'an empty body needs no digest')
  // The rest of a body that keeps coming after the answer: more than bodyLimit.
  const large = await send({ path: '/ignore', headers, body: Array.from({ length: 8 }, () => Buffer.alloc(16 * 1024)), delay: 10 })
  assertProblem(t, large, 'FST_DIGEST_UNREAD_TOO_LARGE', 413)
  t.equal(large.headers.connection, 'close')
  const wrong = await send({ path: '/ignore', headers: { ...headers, 'content-digest': sf('other') }, body: ['abc'] })
  assertProblem(t, wrong, 'FST_DIGEST_MISMATCH')
})

test('HTTP/2: the rest of an unread body over bodyLimit is refused with no Connection field (RFC 9113 §8.2.2)', async (t) => {
  // node's compat layer drops a connection field on HTTP/2 with an UnsupportedWarning, once per process.
  const warnings: string[] = []
  const onWarning = (warning: Error): void => { warnings.push(`${warning.name}: ${warning.message}`) }
  process.on('warning', onWarning)
  t.teardown(() => { process.off('warning', onWarning) })
  const { send } = await serve(t, 'h2', {}, (app) => {
    app.addContentTypeParser('application/x-ignore', (_req, _payload, done) => done(null))
    app.post('/ignore', { bodyLimit: 1000 }, async () => ({ answered: true }))
  })
  const headers = { 'content-type': 'application/x-ignore', 'content-digest': sf('other') }
  const large = await send({ path: '/ignore', headers, body: Array.from({ length: 8 }, () => Buffer.alloc(16 * 1024)), delay: 10 })
  assertProblem(t, large, 'FST_DIGEST_UNREAD_TOO_LARGE', 413)
  t.same(warnings.filter((w) => w.includes('connection')), [], 'no connection-specific field was set')
})

test('HTTP/2 without Content-Type: fastify parses nothing, the verifier still sees what arrives', async (t) => {
  const { send } = await serve(t, 'h2')
  const empty = await send({ path: '/json', headers: { 'content-digest': sf('') } })
  t.equal(empty.status, 200)
  t.same(json(empty).verification, MATCHED)
  const some = await send({ path: '/json', headers: { 'content-digest': sf('abc') }, body: ['abc'] })
  t.equal(some.status, 200, 'the reply waits for the check')
  t.same(json(some).verification, { verified: false, reason: 'unread', fields: [] }, 'the handler ran before the end')
  const wrong = await send({ path: '/json', headers: { 'content-digest': sf('abd') }, body: ['abc'] })
  assertProblem(t, wrong, 'FST_DIGEST_MISMATCH')
})

test('a client gone while the verifier waits: the reply is settled, nothing hangs', async (t) => {
  for (const transport of ['h1', 'h2'] as const) {
    const replies: Array<{ sent: boolean }> = []
    let closed = (): void => {}
    const responseClosed = new Promise<void>((resolve) => { closed = resolve })
    const { send } = await serve(t, transport, { verify: 'required' }, (app) => {
      app.addContentTypeParser('application/x-ignore', (_req, _payload, done) => done(null))
      app.post('/ignore', async (_request, reply) => {
        replies.push(reply)
        reply.raw.once('close', closed)
        return { answered: true }
      })
    })
    // The handler answers at once; the verifier reads the rest, which never ends.
    const headers = { 'content-type': 'application/x-ignore', 'content-digest': sf('abcdef'), ...(transport === 'h1' ? { 'transfer-encoding': 'chunked' } : {}) }
    const cut = await send({ path: '/ignore', headers, body: ['abc', 'def'], delay: 50, cancelAfter: 1 })
    t.ok(cut.status === 0 || cut.reset, `${transport}: the client saw no answer`)
    await responseClosed
    t.equal(replies.length, 1)
    t.equal(replies[0]?.sent, true, `${transport}: the reply was settled`)
  }
  // HTTP/2 without Content-Type: preValidation waits for a first byte that never comes.
  const handled: string[] = []
  let answer = (): void => {}
  const answered = new Promise<void>((resolve) => { answer = resolve })
  const { app, port } = await serve(t, 'h2', {}, (app) => {
    app.post('/wait', {
      onSend: async (_request, reply, payload) => {
        handled.push(`answer ${reply.statusCode}`)
        answer()
        return payload
      }
    }, async () => {
      handled.push('handler')
      return 'ok'
    })
  })
  const session = await h2Session(t, port)
  // Cancelled once the server has the request.
  const arrived = once(app.server, 'request')
  const stream = session.request({ ':method': 'POST', ':path': '/wait', 'content-digest': sf('abc') }, { endStream: false })
  stream.on('error', () => {})
  await arrived
  stream.close(constants.NGHTTP2_CANCEL)
  await once(stream, 'close')
  await answered
  // node's compatibility layer ends request.raw when the stream closes: the
  // check runs over what arrived (nothing), and the answer is settled.
  t.same(handled, ['answer 400'], 'the lifecycle went on to an answer')
})
