// What an onDigestFields hook returns never breaks a response or the
// process: every returned name must be a token that neither frames nor
// routes the message, every value a field value (no CR, LF, NUL). Over real
// HTTP/1.1 and HTTP/2 servers with @fastify/compress, a buffered response
// whose hook fails is the error handler's well-formed 500 (its length its
// own, no Content-Encoding of the body it replaces), a streamed one with
// trailers is cut off, and the next request is answered as usual. A
// property test (fast-check, seeded) drives any value a hook can return,
// throw or reject through every section and transport.
import { test } from 'tap'
import { createHash } from 'node:crypto'
import { gunzipSync } from 'node:zlib'
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http'
import { connect, type ClientHttp2Session } from 'node:http2'
import type { AddressInfo } from 'node:net'
import { Readable } from 'node:stream'
import fc from 'fast-check'
import compress from '@fastify/compress'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { DigestFieldsHook } from '../../../types/index'
import { buildApp, listen, serve, sf } from '../../helpers'
import type { TapTest } from '../request/upload-helpers'

const BODY = 'hooked content '.repeat(200)
const SEED = 4848

/** What the client saw: `complete` false when the response was cut off; `error` a parse or connection error. */
interface Seen {
  status: number
  headers: IncomingHttpHeaders
  trailers: Record<string, string | undefined>
  body: Buffer
  complete: boolean
  error: string | null
}

type Section = 'buffered' | 'stream' | 'trailers'

function h1 (port: number, path: string, section: Section): Promise<Seen> {
  const headers: Record<string, string> = { 'accept-encoding': 'gzip' }
  if (section === 'trailers') headers.te = 'trailers'
  return new Promise((resolve) => {
    const seen: Seen = { status: 0, headers: {}, trailers: {}, body: Buffer.alloc(0), complete: false, error: null }
    const req = httpRequest({ host: '127.0.0.1', port, path: `${path}?${section}`, headers, agent: false }, (res) => {
      const chunks: Buffer[] = []
      seen.status = res.statusCode as number
      seen.headers = res.headers
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('error', (err: Error & { code?: string }) => { seen.error ??= err.code ?? err.message })
      res.on('close', () => {
        seen.body = Buffer.concat(chunks)
        seen.trailers = res.trailers
        seen.complete = res.complete
        resolve(seen)
      })
    })
    req.on('error', (err: Error & { code?: string }) => {
      seen.error = err.code ?? err.message
      resolve(seen)
    })
    req.end()
  })
}

function h2 (session: ClientHttp2Session, path: string, section: Section): Promise<Seen> {
  const headers: Record<string, string> = { ':path': `${path}?${section}`, 'accept-encoding': 'gzip' }
  if (section === 'trailers') headers.te = 'trailers'
  return new Promise((resolve) => {
    const seen: Seen = { status: 0, headers: {}, trailers: {}, body: Buffer.alloc(0), complete: false, error: null }
    const chunks: Buffer[] = []
    let ended = false
    const stream = session.request(headers)
    stream.on('response', (h) => {
      seen.status = h[':status'] as number
      seen.headers = h as IncomingHttpHeaders
    })
    stream.on('trailers', (t) => { seen.trailers = Object.fromEntries(Object.entries(t)) as Record<string, string> })
    stream.on('data', (c: Buffer) => chunks.push(c))
    stream.on('end', () => { ended = true })
    stream.on('error', (err: Error & { code?: string }) => { seen.error ??= err.code ?? err.message })
    stream.on('close', () => {
      seen.body = Buffer.concat(chunks)
      seen.complete = ended && stream.rstCode === 0
      resolve(seen)
    })
    stream.end()
  })
}

/** A server with compress whose `/h` route's hook does what `current()` says; `/ok` adds a field. */
async function server (t: TapTest, http2: boolean, hook: DigestFieldsHook, logs: string[]): Promise<FastifyInstance> {
  const stream = { write (line: string) { logs.push(line) } }
  const serverOpts = { http2, forceCloseConnections: true, logger: { level: 'error', stream } } as object
  const { app } = await serve(t, { contentDigest: true }, serverOpts, undefined, async (app) => {
    await app.register(compress, { threshold: 0 })
    const body = (query: string): string | Readable =>
      query === 'buffered' ? BODY : Readable.from([BODY.slice(0, 1000), BODY.slice(1000)])
    const send = async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> =>
      await reply.type('text/plain').send(body(Object.keys(request.query as object)[0] as string))
    app.get('/h', { digest: { onDigestFields: hook } }, send)
    app.get('/ok', { digest: { onDigestFields: () => ({ 'x-ok': 'yes' }) } }, send)
  })
  return app
}

interface Client { get: (path: string, section: Section) => Promise<Seen> }

function client (t: TapTest, app: FastifyInstance, http2: boolean): Client {
  const port = (app.server.address() as AddressInfo).port
  if (!http2) return { get: (path, section) => h1(port, path, section) }
  const session = connect(`http://127.0.0.1:${port}`)
  t.teardown(() => session.destroy())
  return { get: (path, section) => h2(session, path, section) }
}

/** A response that went out whole: the content as sent, its Content-Digest over the coded bytes. */
function assertWhole (t: TapTest, seen: Seen, section: Section, m: string): void {
  t.equal(seen.error, null, `${m}: no client error`)
  t.ok(seen.complete, `${m}: complete`)
  t.equal(seen.status, 200, m)
  t.equal(seen.headers['content-encoding'], 'gzip', m)
  t.equal(gunzipSync(seen.body).toString(), BODY, `${m}: the content`)
  const digest = section === 'trailers' ? seen.trailers['content-digest'] : seen.headers['content-digest']
  t.equal(digest, sf(seen.body), `${m}: Content-Digest over the gzip bytes received`)
}

/** The error handler's 500 in place of a buffered response, whole and well-formed. */
function assertErrorAnswer (t: TapTest, seen: Seen, m: string): void {
  t.equal(seen.error, null, `${m}: no client error`)
  t.ok(seen.complete, `${m}: complete`)
  t.equal(seen.status, 500, m)
  const body = seen.headers['content-encoding'] === 'gzip' ? gunzipSync(seen.body) : seen.body
  t.match(JSON.parse(body.toString()), { code: 'FST_DIGEST_FIELD_HOOK_FAILED' }, m)
  t.equal(seen.headers['content-length'], String(seen.body.length), `${m}: a Content-Length, its own length`)
  t.not(body.toString(), BODY, `${m}: never the content`)
}

const BAD: Array<[string, unknown, RegExp]> = [
  ['a name that is no token', { 'bad name': 'v' }, /"bad name" is not a field name/],
  ['CR LF in a value', { signature: 'a\r\nx-injected: 1' }, /the value of signature holds a character/],
  ['NUL in a value', { signature: 'a\u0000b' }, /the value of signature holds a character/],
  ['a character above latin1', { signature: 'a\u0100' }, /the value of signature holds a character/],
  ['Content-Length', { 'Content-Length': '5' }, /Content-Length frames or routes the message/],
  ['Transfer-Encoding', { 'transfer-encoding': 'chunked' }, /transfer-encoding frames or routes/],
  ['Connection', { connection: 'close' }, /connection frames or routes/],
  ['an array', ['a'], /expected an object of fields or nothing, got an array/],
  ['a number', { 'x-n': 42 }, /got number 42/]
]

for (const http2 of [false, true]) {
  const name = http2 ? 'HTTP/2' : 'HTTP/1.1'
  test(`${name}: a returned field that cannot go out fails the hook cleanly, in every section`, async (t) => {
    let current: unknown = null
    const logs: string[] = []
    const app = await server(t, http2, () => current as never, logs)
    const { get } = client(t, app, http2)
    for (const [what, value, message] of BAD) {
      current = value
      for (const section of ['buffered', 'stream'] as const) {
        const seen = await get('/h', section)
        assertErrorAnswer(t, seen, `${what}, ${section}`)
        const body = seen.headers['content-encoding'] === 'gzip' ? gunzipSync(seen.body) : seen.body
        t.match(JSON.parse(body.toString()).message, message, `${what}, ${section}: says why`)
      }
      const cut = await get('/h', 'trailers')
      t.equal(cut.status, 200, `${what}: trailers`)
      t.notOk(cut.complete, `${what}: trailers: cut off`)
      t.equal(cut.trailers['content-digest'], undefined)
      // The process and the server carry on.
      assertWhole(t, await get('/ok', 'trailers'), 'trailers', `${what}: the next request`)
    }
    t.equal(logs.filter((line) => /failed on the trailers/.test(line)).length, BAD.length, 'one log line a cut-off response')
  })
}

test('a stream sent with its digests in the header section: a failed hook destroys the stream it never sends', async (t) => {
  const app = await buildApp(t, { reprDigest: true, onDigestFields: (_request, reply) => reply.statusCode === 200 ? { 'bad name': 'v' } : undefined },
    { forceCloseConnections: true } as object)
  const closed: boolean[] = []
  app.get('/declared', async (_request, reply) => {
    const body = Readable.from([BODY])
    body.on('close', () => closed.push(true))
    reply.setReprDigest({ 'sha-256': createHash('sha256').update(BODY).digest() })
    return reply.type('text/plain').send(body)
  })
  const seen = await h1(await listen(app), '/declared', 'buffered')
  assertErrorAnswer(t, seen, 'a declared Repr-Digest')
  t.same(closed, [true], 'the unsent stream is destroyed')
})

test('the hook\'s own failure is its cause: the log states the cause once', async (t) => {
  const logs: string[] = []
  const app = await server(t, false, () => Promise.reject(new Error('signer down')), logs)
  const { get } = client(t, app, false)
  assertErrorAnswer(t, await get('/h', 'buffered'), 'rejected')
  const line = logs.find((l) => /FST_DIGEST_FIELD_HOOK_FAILED/.test(l)) as string
  t.match(JSON.parse(line).err.message, /^The onDigestFields hook failed: it rejected: signer down$/)
})

// Any outcome of a hook: a value of any shape, a field object of random names
// and values (any characters), a throw or a rejection of anything.
const anyText = fc.oneof(fc.string({ unit: 'binary', maxLength: 12 }), fc.string({ maxLength: 12 }),
  fc.constantFrom('x-sig', 'signature', 'Signature-Input', 'content-digest', 'te', 'Content-Length', 'vary', 'a b', 'a\r\nb', ''))
const fieldValue = fc.oneof(anyText, fc.array(anyText, { maxLength: 3 }), fc.anything({ maxDepth: 1 }))
const outcome = fc.oneof(
  fc.record({ kind: fc.constant('return' as const), value: fc.dictionary(anyText, fieldValue, { maxKeys: 4 }) }),
  fc.record({ kind: fc.constant('return' as const), value: fc.anything({ maxDepth: 2 }) }),
  fc.record({ kind: fc.constantFrom('throw' as const, 'reject' as const, 'resolve' as const), value: fc.anything({ maxDepth: 1 }) })
)

/** The hook that gives `o`. */
function acting (o: { kind: string, value: unknown }): DigestFieldsHook {
  return () => {
    if (o.kind === 'throw') throw o.value
    if (o.kind === 'reject') return Promise.reject(o.value) as never
    if (o.kind === 'resolve') return Promise.resolve(o.value) as never
    return o.value as never
  }
}

/** The fields `value` asks to add, lowercase names met once, as they would read on the wire. */
function asked (value: unknown): Array<[string, string]> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return []
  const entries = Object.entries(value as Record<string, unknown>)
  const once = entries.filter(([n]) => entries.filter(([m]) => m.toLowerCase() === n.toLowerCase()).length === 1)
  return once.map(([n, v]) => [n.toLowerCase(), (Array.isArray(v) ? v.join(', ') : String(v)).trim()])
}

for (const http2 of [false, true]) {
  const name = http2 ? 'HTTP/2' : 'HTTP/1.1'
  test(`${name}: property: whatever a hook returns, throws or rejects, no malformed response goes out and the next is answered`, async (t) => {
    let current: DigestFieldsHook = () => undefined
    const logs: string[] = []
    const app = await server(t, http2, (request, reply, fields) => current(request, reply, fields), logs)
    const { get } = client(t, app, http2)
    let outcomes = { whole: 0, refused: 0, cut: 0 }
    await fc.assert(fc.asyncProperty(outcome, fc.constantFrom<Section>('buffered', 'stream', 'trailers'), async (o, section) => {
      current = acting(o)
      const seen = await get('/h', section)
      const failed = o.kind === 'throw' || o.kind === 'reject'
      if (seen.complete && seen.status === 200) {
        if (failed) throw new Error('a failed hook let the response end cleanly')
        assertWhole(t, seen, section, 'whole')
        const got = section === 'trailers' ? seen.trailers : seen.headers
        for (const [field, value] of asked(o.value)) if (got[field] !== value) throw new Error(`${field}: ${String(got[field])} is not ${value}`)
        outcomes.whole++
      } else if (section === 'trailers') {
        if (seen.status !== 200 || seen.complete) throw new Error(`trailers: ${seen.status}`)
        outcomes.cut++
      } else {
        assertErrorAnswer(t, seen, 'refused')
        outcomes.refused++
      }
      const next = await get('/ok', section)
      assertWhole(t, next, section, 'the next request')
      if ((section === 'trailers' ? next.trailers : next.headers)['x-ok'] !== 'yes') throw new Error('the next request lost its field')
    }), { seed: SEED, numRuns: 120 })
    t.ok(outcomes.whole > 0 && outcomes.refused > 0 && outcomes.cut > 0, `every outcome met: ${JSON.stringify(outcomes)}`)
    outcomes = { whole: 0, refused: 0, cut: 0 }
  })
}
