// Live streams (event streams, JSON lines, ...) over real listening servers,
// HTTP/1.1 and HTTP/2 (h2c), read incrementally by node:http and node:http2
// clients: never held back for a digest (the producer sends its second event
// only after the client got the first), digests as trailers with TE:
// trailers, else none (reply.digestsOmitted, one warning per route); HEAD
// answered at once; the Repr-Digest precondition ignored; the Trailer field.
import { test } from 'tap'
import { Readable } from 'node:stream'
import { createHash } from 'node:crypto'
import { request as httpRequest } from 'node:http'
import type { ClientHttp2Session } from 'node:http2'
import type { AddressInfo } from 'node:net'
import type { FastifyInstance, FastifyReply, FastifyServerOptions } from 'fastify'
import type { FastifyDigestFieldsOptions } from '../../../types/index'
import { buildApp, sf, EMPTY_SHA256 } from '../../helpers'
import { h2Session } from '../../http2-helpers'
import { failOnCrash, TRANSPORTS, type TapTest, type Transport } from '../request/upload-helpers'

const EVENTS = ['data: 1\n\n', 'data: 2\n\n', 'data: 3\n\n']
const ALL = EVENTS.join('')
const TE = { te: 'trailers' }
const WANT = { 'want-content-digest': 'sha-256=1', 'want-repr-digest': 'sha-256=1' }
const STALE = 'sha-256=:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=:'
const BOTH = ['Content-Digest', 'Repr-Digest']
const LIVE = { reason: 'live-stream', fields: BOTH }

interface Got { status: number, headers: Record<string, unknown>, trailers: Record<string, unknown>, body: Buffer, first: Buffer | null }
interface Req { method?: string, path: string, headers?: Record<string, string>, onFirst?: () => void }
type Client = (req: Req) => Promise<Got>

/** Collects a response's chunks, calling `onFirst` on the first one. */
function collector (onFirst?: () => void): { got: Got, data: (chunk: Buffer) => void, done: () => Got } {
  const got: Got = { status: 0, headers: {}, trailers: {}, body: Buffer.alloc(0), first: null }
  const chunks: Buffer[] = []
  const data = (chunk: Buffer): void => {
    chunks.push(chunk)
    if (got.first !== null) return
    got.first = chunk
    onFirst?.()
  }
  return { got, data, done: () => ({ ...got, body: Buffer.concat(chunks) }) }
}

/** One request per new HTTP/1.1 connection. */
function h1Client (port: number): Client {
  return ({ method = 'GET', path, headers = {}, onFirst }) => new Promise((resolve, reject) => {
    const { got, data, done } = collector(onFirst)
    const req = httpRequest({ host: '127.0.0.1', port, method, path, headers, agent: false }, (res) => {
      got.status = res.statusCode as number
      got.headers = res.headers
      res.on('data', data)
      res.on('end', () => {
        got.trailers = res.trailers
        resolve(done())
      })
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end()
  })
}

/** One stream per request on a shared h2c session. */
function h2Client (session: ClientHttp2Session): Client {
  return ({ method = 'GET', path, headers = {}, onFirst }) => new Promise((resolve, reject) => {
    const { got, data, done } = collector(onFirst)
    const stream = session.request({ ':method': method, ':path': path, ...headers }, { endStream: true })
    stream.on('response', (head) => {
      got.status = Number(head[':status'])
      got.headers = head
    })
    stream.on('trailers', (trailers) => { got.trailers = trailers })
    stream.on('data', data)
    stream.on('end', () => resolve(done()))
    stream.on('error', reject)
  })
}

interface Live { client: Client, logs: Array<Record<string, unknown>>, omitted: unknown[] }

/** The plugin on a listening server over `transport`, logging warnings; `routes` adds the routes. */
async function listen (t: TapTest, transport: Transport, opts: FastifyDigestFieldsOptions, routes: (app: FastifyInstance) => void): Promise<Live> {
  failOnCrash(t)
  const logs: Array<Record<string, unknown>> = []
  const logger = { level: 'warn', stream: { write: (line: string) => { logs.push(JSON.parse(line)) } } }
  const app = await buildApp(t, opts, { http2: transport === 'h2', forceCloseConnections: true, logger } as FastifyServerOptions)
  const omitted: unknown[] = []
  app.addHook('onResponse', async (_req, reply) => { omitted.push(reply.digestsOmitted) })
  routes(app)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const port = (app.server.address() as AddressInfo).port
  const client = transport === 'h1' ? h1Client(port) : h2Client(await h2Session(t, port))
  return { client, logs, omitted }
}

const warnings = (live: Live): Array<Record<string, unknown>> => live.logs.filter((line) => line.level === 40)

/** Hands the client's "I have event 1" to the producer, one request at a time. */
interface Gate { wait (): Promise<void>, open (): void }
function newGate (): Gate {
  let open = (): void => {}
  let opened: Promise<void>
  const next = (): void => { opened = new Promise((resolve) => { open = resolve }) }
  next()
  return { wait: () => opened, open: () => { open(); next() } }
}

/** Event 1 now; the other events, and the end, only once the client has event 1. */
function held (gate: Gate): Readable {
  const stream = new Readable({ read () {} })
  stream.push(EVENTS[0])
  gate.wait().then(() => {
    for (const event of EVENTS.slice(1)) stream.push(event)
    stream.push(null)
  }, (err: Error) => stream.destroy(err))
  return stream
}

/** An event every few milliseconds, until destroyed. */
function endless (): Readable {
  let n = 0
  const stream = new Readable({ read () {} })
  const timer = setInterval(() => stream.push(`data: ${n++}\n\n`), 5)
  stream.on('close', () => clearInterval(timer))
  return stream
}

/** A stream of the events, with `type`. */
const eventsOf = (type: string) => async (_req: unknown, reply: FastifyReply): Promise<FastifyReply> => reply.type(type).send(Readable.from(EVENTS))

/** A GET of a route that sends held(gate): it can only complete if event 1 was not held back. */
async function causal (t: TapTest, live: Live, gate: Gate, path: string, headers: Record<string, string> = {}): Promise<Got> {
  const got = await live.client({ path, headers, onFirst: gate.open })
  t.equal(got.status, 200, `${path} status`)
  t.equal(got.first?.toString(), EVENTS[0], `${path}: event 1 arrived alone, before the producer wrote more`)
  t.equal(got.body.toString(), ALL, `${path}: then every event`)
  return got
}

/** Digests of the whole stream as trailers, announced comma-separated, none in the head. */
function assertTrailers (t: TapTest, got: Got, name: string): void {
  t.equal(got.headers.trailer, 'content-digest, repr-digest', `${name}: Trailer`)
  t.equal(got.headers['content-digest'], undefined, `${name}: no Content-Digest header`)
  t.equal(got.trailers['content-digest'], sf(got.body), `${name}: Content-Digest trailer`)
  t.equal(got.trailers['repr-digest'], sf(got.body), `${name}: Repr-Digest trailer`)
}

function assertNoDigests (t: TapTest, got: Got, name: string): void {
  for (const field of ['content-digest', 'repr-digest', 'trailer']) t.equal(got.headers[field], undefined, `${name}: no ${field}`)
  t.same(got.trailers, {}, `${name}: no trailers`)
}

// A regression that holds a live stream back deadlocks a test: the timeout
// fails it instead. (A fresh options object per test: tap takes it over.)
for (const transport of TRANSPORTS) {
  test(`${transport}: an event stream is not held back; with TE: trailers its digests cover the whole stream as trailers`, { timeout: 10000 }, async (t) => {
    const gate = newGate()
    const live = await listen(t, transport, { contentDigest: true, reprDigest: true }, (app) => {
      app.get('/events', async (_req, reply) => reply.type('text/event-stream').send(held(gate)))
    })
    assertTrailers(t, await causal(t, live, gate, '/events', TE), 'TE: trailers')
    t.same(live.omitted, [null], 'nothing omitted')
    t.same(warnings(live), [], 'no warning')
  })

  test(`${transport}: an event stream without TE: trailers goes without digest fields, reply.digestsOmitted says why, one warning`, { timeout: 10000 }, async (t) => {
    const gate = newGate()
    const live = await listen(t, transport, { contentDigest: true, reprDigest: true }, (app) => {
      app.get('/events', async (_req, reply) => reply.type('text/event-stream').send(held(gate)))
      app.get('/quiet', { digest: { contentDigest: false, reprDigest: false } }, async (_req, reply) => reply.type('text/event-stream').send(held(gate)))
    })
    for (let i = 0; i < 2; i++) assertNoDigests(t, await causal(t, live, gate, '/events'), `request ${i + 1}`)
    t.same(live.omitted, [LIVE, LIVE], 'reply.digestsOmitted')
    t.same(warnings(live).map((l) => [l.route, l.reason, l.fields]), [['GET /events', 'live-stream', BOTH]], 'one warning for two responses')
    t.match(warnings(live)[0]?.msg, /^fastify-digest-fields: Content-Digest, Repr-Digest not sent on GET \/events: .*Fix: /)
    // Nothing configured or asked for on the route: nothing omitted, no warning.
    assertNoDigests(t, await causal(t, live, gate, '/quiet'), '/quiet')
    t.equal(live.omitted[2], null, '/quiet: reply.digestsOmitted')
    t.equal(warnings(live).length, 1, '/quiet: no warning')
  })

  test(`${transport}: every default live type (parameters and case ignored), a web stream, and digest: { live: true } are not held back`, { timeout: 10000 }, async (t) => {
    const gate = newGate()
    const types = ['text/event-stream', 'application/x-ndjson', 'application/jsonl', 'application/json-seq', 'multipart/x-mixed-replace', 'text/event-stream; charset=utf-8', 'Text/Event-Stream; charset=utf-8']
    // Asked for with Want-*, nothing configured.
    const live = await listen(t, transport, {}, (app) => {
      types.forEach((type, i) => app.get(`/type/${i}`, async (_req, reply) => reply.header('content-type', type).send(held(gate))))
      app.get('/web', async (_req, reply) => reply.type('application/x-ndjson').send(Readable.toWeb(held(gate))))
      app.get('/forced', { digest: { live: true } }, async (_req, reply) => reply.type('application/octet-stream').send(held(gate)))
    })
    const paths = [...types.map((_type, i) => `/type/${i}`), '/web', '/forced']
    for (const path of paths) {
      const got = await causal(t, live, gate, path, { ...WANT, ...TE })
      assertTrailers(t, got, path)
      assertNoDigests(t, await causal(t, live, gate, path, WANT), `${path} without TE`)
    }
    t.equal(live.omitted.filter((o) => o === null).length, paths.length, 'nothing omitted with TE: trailers')
    t.same(live.omitted.filter((o) => o !== null), paths.map(() => LIVE), 'both fields omitted without')
    t.same(warnings(live).map((l) => l.route), paths.map((path) => `GET ${path}`), 'one warning per route')
  })

  test(`${transport}: HEAD of an endless live stream is answered at once and destroys it; Repr-Digest only when declared`, { timeout: 10000 }, async (t) => {
    const streams: Readable[] = []
    t.teardown(() => { for (const stream of streams) stream.destroy() })
    const declared = Buffer.from('the declared representation')
    const live = await listen(t, transport, { contentDigest: true, reprDigest: true }, (app) => {
      const send = (reply: FastifyReply): FastifyReply => {
        const stream = endless()
        streams.push(stream)
        return reply.type('text/event-stream').send(stream)
      }
      app.get('/events', async (_req, reply) => send(reply))
      app.get('/declared', async (_req, reply) => send(reply.setReprDigest({ 'sha-256': createHash('sha256').update(declared).digest() })))
    })
    for (const headers of [{}, TE]) {
      const got = await live.client({ method: 'HEAD', path: '/events', headers })
      await new Promise((resolve) => setImmediate(resolve))
      t.equal(got.status, 200)
      t.equal(got.body.length, 0)
      t.equal(got.headers['content-digest'], EMPTY_SHA256, 'the digest of the empty content')
      t.equal(got.headers['repr-digest'], undefined, 'the representation was not read')
      t.same(got.trailers, {}, 'no trailers on HEAD')
      t.equal(streams.at(-1)?.destroyed, true, 'the producer\'s stream was destroyed')
    }
    const declaredHead = await live.client({ method: 'HEAD', path: '/declared' })
    await new Promise((resolve) => setImmediate(resolve))
    t.equal(declaredHead.headers['content-digest'], EMPTY_SHA256)
    t.equal(declaredHead.headers['repr-digest'], sf(declared), 'the declared Repr-Digest')
    t.equal(streams.at(-1)?.destroyed, true, 'the producer\'s stream was destroyed')
    const head = { reason: 'live-stream', fields: ['Repr-Digest'] }
    t.same(live.omitted, [head, head, null], 'reply.digestsOmitted')
    t.same(warnings(live).map((l) => [l.route, l.reason, l.fields]), [['HEAD /events', 'live-stream', ['Repr-Digest']]], 'one warning')
    t.match(warnings(live)[0]?.msg, /^fastify-digest-fields: Repr-Digest not sent on HEAD \/events: .*Fix: /)
  })

  test(`${transport}: a wrong Repr-Digest precondition is ignored for a live stream (200, streamed), not for another stream (406)`, { timeout: 10000 }, async (t) => {
    const gate = newGate()
    const live = await listen(t, transport, {}, (app) => {
      app.get('/events', async (_req, reply) => reply.type('text/event-stream').send(held(gate)))
      app.get('/bytes', async (_req, reply) => reply.type('application/octet-stream').send(Readable.from(EVENTS)))
    })
    assertNoDigests(t, await causal(t, live, gate, '/events', { 'repr-digest': STALE }), 'live')
    const other = await live.client({ path: '/bytes', headers: { 'repr-digest': STALE } })
    t.equal(other.status, 406, 'not a live stream: the precondition is evaluated')
    t.equal(other.headers['repr-digest'], sf(ALL), 'with the Repr-Digest of the current representation')
  })

  test(`${transport}: with the plugin, a streamed response's Trailer field is comma-separated`, { timeout: 10000 }, async (t) => {
    const live = await listen(t, transport, { contentDigest: true, reprDigest: true }, (app) => {
      app.get('/bytes', async (_req, reply) => reply.type('application/octet-stream').send(Readable.from(EVENTS)))
      app.get('/events', async (_req, reply) => reply.type('text/event-stream').send(Readable.from(EVENTS)))
    })
    for (const path of ['/bytes', '/events']) {
      const got = await live.client({ path, headers: TE })
      t.equal(got.body.toString(), ALL, path)
      assertTrailers(t, got, path)
    }
  })
}

test('digest: { live: false } buffers an event stream and sends its digests as headers', async (t) => {
  const app = await buildApp(t, { contentDigest: true, reprDigest: true })
  const omitted: unknown[] = []
  app.addHook('onResponse', async (_req, reply) => { omitted.push(reply.digestsOmitted) })
  app.get('/events', { digest: { live: false } }, eventsOf('text/event-stream'))
  const res = await app.inject('/events')
  t.equal(res.body, ALL)
  t.equal(res.headers['content-length'], String(ALL.length), 'buffered')
  t.equal(res.headers['content-digest'], sf(ALL))
  t.equal(res.headers['repr-digest'], sf(ALL))
  t.equal(res.headers.trailer, undefined)
  t.same(res.trailers, {})
  t.same(omitted, [null])
})

test('liveTypes replaces the default list: text/event-stream is buffered, application/x-custom is live', async (t) => {
  const app = await buildApp(t, { contentDigest: true, reprDigest: true, liveTypes: ['application/x-custom'] })
  const omitted: unknown[] = []
  app.addHook('onResponse', async (_req, reply) => { omitted.push(reply.digestsOmitted) })
  app.get('/events', eventsOf('text/event-stream'))
  app.get('/custom', eventsOf('application/x-custom; v=1'))
  const events = await app.inject('/events')
  t.equal(events.headers['content-digest'], sf(ALL), 'text/event-stream: digests as headers')
  t.equal(events.headers['repr-digest'], sf(ALL))
  const custom = await app.inject('/custom')
  t.equal(custom.body, ALL)
  t.equal(custom.headers['content-digest'], undefined, 'application/x-custom: live, no digests without TE: trailers')
  t.equal(custom.headers['repr-digest'], undefined)
  const trailed = await app.inject({ url: '/custom', headers: TE })
  t.equal(trailed.headers.trailer, 'content-digest, repr-digest')
  t.equal(trailed.trailers['content-digest'], sf(ALL))
  t.same(omitted, [null, LIVE, null])
})

test('liveTypes with a media range: text/* makes a text/plain stream live', async (t) => {
  const app = await buildApp(t, { contentDigest: true, reprDigest: true, liveTypes: ['text/*'] })
  const omitted: unknown[] = []
  app.addHook('onResponse', async (_req, reply) => { omitted.push(reply.digestsOmitted) })
  app.get('/plain', eventsOf('text/plain; charset=utf-8'))
  app.get('/json', eventsOf('application/json'))
  const plain = await app.inject('/plain')
  t.equal(plain.body, ALL)
  t.equal(plain.headers['content-digest'], undefined, 'text/plain: live, not held back for a digest')
  t.equal(plain.headers['content-length'], undefined, 'not buffered')
  const trailed = await app.inject({ url: '/plain', headers: TE })
  t.equal(trailed.trailers['content-digest'], sf(ALL), 'with TE: trailers, as trailers')
  const json = await app.inject('/json')
  t.equal(json.headers['content-digest'], sf(ALL), 'application/json: not in the range, buffered')
  t.same(omitted, [LIVE, null, null])
})

test('a string or Buffer payload with a live media type is not live: its digests are headers', async (t) => {
  const app = await buildApp(t, { contentDigest: true, reprDigest: true })
  app.get('/string', async (_req, reply) => reply.type('text/event-stream').send(ALL))
  app.get('/buffer', async (_req, reply) => reply.type('application/x-ndjson').send(Buffer.from(ALL)))
  for (const url of ['/string', '/buffer']) {
    for (const headers of [{}, TE]) {
      const res = await app.inject({ url, headers })
      const name = `${url} ${JSON.stringify(headers)}`
      t.equal(res.body, ALL, name)
      t.equal(res.headers['content-digest'], sf(ALL), name)
      t.equal(res.headers['repr-digest'], sf(ALL), name)
      t.same(res.trailers, {}, name)
    }
  }
})

test('strict mode with Unencoded-Digest: a live stream without trailers names all three fields; with them, all three are trailers', async (t) => {
  const app = await buildApp(t, { strict: true, unencodedDigest: true, contentDigest: true, reprDigest: true })
  const omitted: unknown[] = []
  app.addHook('onResponse', async (_req, reply) => { omitted.push(reply.digestsOmitted) })
  app.get('/events', eventsOf('text/event-stream'))
  const bare = await app.inject('/events')
  t.equal(bare.body, ALL)
  t.same(omitted.pop(), { reason: 'live-stream', fields: ['Content-Digest', 'Repr-Digest', 'Unencoded-Digest'] })
  const trailed = await app.inject({ url: '/events', headers: TE })
  t.equal(trailed.headers.trailer, 'content-digest, repr-digest, unencoded-digest')
  t.same(trailed.trailers, { 'content-digest': sf(ALL), 'repr-digest': sf(ALL), 'unencoded-digest': sf(ALL) })
  t.equal(omitted.pop(), null)
})

test('a live stream from the not-found handler: no fields, reply.digestsOmitted, one warning named for the 404s', async (t) => {
  const logs: Array<Record<string, unknown>> = []
  const app = await buildApp(t, { contentDigest: true }, { logger: { level: 'warn', stream: { write: (line: string) => { logs.push(JSON.parse(line)) } } } })
  const omitted: unknown[] = []
  app.addHook('onResponse', async (_req, reply) => { omitted.push(reply.digestsOmitted) })
  app.setNotFoundHandler(async (_request, reply) => reply.code(404).type('text/event-stream').send(Readable.from(EVENTS)))
  for (const url of ['/nothing', '/else']) {
    const res = await app.inject(url)
    t.equal(res.statusCode, 404)
    t.equal(res.body, ALL)
    t.equal(res.headers['content-digest'], undefined)
  }
  t.same(omitted, [{ reason: 'live-stream', fields: ['Content-Digest'] }, { reason: 'live-stream', fields: ['Content-Digest'] }])
  t.same(logs.map((l) => l.route), ['(404)'], 'one warning for every not-found answer')
})
