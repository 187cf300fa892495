// The client behind a proxy that re-encodes: nginx's and Caddy's compression
// gzip an identity response and pass the origin's digest fields on unchanged,
// so Content-Digest (of the identity bytes) no longer matches the bytes
// received while Repr-Digest (the plugin's default mode: of the content before
// coding) and Unencoded-Digest still match the decoded content. The origin is
// the plugin on a listening Fastify; the proxy here is node:http (HTTP/1.1 or
// h2c towards the client) doing what those proxies do: it gzips the upstream's
// body as it streams and forwards every field, trailers included, recording
// what it sent. Controls: a proxy that changes the content, one that changes a
// field without re-encoding, one that drops the end-to-end fields; and undici's
// decompress() in both orders.
import { test } from 'tap'
import { createServer as createH1Server, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http'
import { createServer as createH2Server, type Http2ServerRequest, type Http2ServerResponse } from 'node:http2'
import type { Server } from 'node:net'
import { Readable, Transform } from 'node:stream'
import { createGunzip, createGzip, gunzipSync } from 'node:zlib'
import Fastify from 'fastify'
import compress from '@fastify/compress'
import { Agent, H2CClient, interceptors, type Dispatcher } from 'undici'
import digestFields = require('../../lib/index')
import { digestInterceptor } from '../../lib/client/index'
import type { DigestClientError, DigestInterceptorOptions } from '../../types/client'
import type { FastifyDigestFieldsOptions } from '../../types/index'
import { sf } from '../helpers'
import { KINDS, assertFailure, call, listenLocal, type Kind, type Outcome } from './client-helpers'
import type { TapTest } from '../plugin/request/upload-helpers'

const ITEMS = { items: Array.from({ length: 200 }, (_, id) => ({ id, name: `item ${id}` })) }
const TEXT = 'streamed text, '.repeat(400)
const WRONG = sf('something else')
const BOTH = ['Repr-Digest', 'Unencoded-Digest']

interface Closeable { teardown (fn: () => unknown): void }

type Fields = Record<string, string | string[] | undefined>

/** What the proxy sent the client: its head, the bytes, its trailers. */
interface Sent { headers: Fields, body: Buffer, trailers: Fields }

/** The proxy: gzip the body (`gunzip` it first: recode) or pass it on; `fields` set (or, null, drop) where present; `alter` the content. */
interface Mode { gzip: boolean, gunzip?: boolean, fields?: Record<string, string | null>, alter?: boolean }

/** The plugin sending all three fields (trailers for a stream asked `TE: trailers`); compressing with `compressed`. */
async function origin (t: Closeable, opts: FastifyDigestFieldsOptions = {}, compressed = false): Promise<string> {
  const app = Fastify()
  t.teardown(() => app.close())
  if (compressed) await app.register(compress, { threshold: 0 })
  await app.register(digestFields, { contentDigest: true, reprDigest: true, unencodedDigest: true, ...opts })
  app.get('/items', async () => ITEMS)
  app.get('/stream', async (_request, reply) => reply.type('text/plain').send(Readable.from([TEXT.slice(0, 999), TEXT.slice(999)])))
  await app.listen({ port: 0, host: '127.0.0.1' })
  return `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
}

// Request fields passed upstream; Accept-Encoding only when the proxy does not gzip, or decodes first.
const FORWARDED = ['te', 'accept-encoding', 'want-content-digest', 'want-repr-digest', 'want-unencoded-digest']
// Connection-specific fields, not forwarded (RFC 9110 §7.6.1; refused by node:http2, RFC 9113 §8.2.2), and the length.
const HOP = ['connection', 'keep-alive', 'transfer-encoding', 'content-length']

function edit (fields: Fields, { fields: edits = {} }: Mode): Fields {
  const out = { ...fields }
  for (const [name, value] of Object.entries(edits)) {
    if (out[name] === undefined) continue
    if (value === null) delete out[name]
    else out[name] = value
  }
  return out
}

/** A node:http (or h2c) proxy to `upstream` re-encoding as `mode` says; `sent` records each response it sent. */
async function proxy (t: Closeable, upstream: string, http2: boolean, mode: Mode, sent: Sent): Promise<string> {
  const respond = (req: IncomingMessage | Http2ServerRequest, res: ServerResponse | Http2ServerResponse): void => {
    const headers = Object.fromEntries(Object.entries(req.headers).filter(([name]) => FORWARDED.includes(name))) as IncomingHttpHeaders
    if (mode.gzip && mode.gunzip !== true) delete headers['accept-encoding']
    httpRequest(upstream + req.url, { method: req.method, headers }, (up) => {
      const head = edit(Object.fromEntries(Object.entries(up.headers).filter(([name]) => !HOP.includes(name))), mode)
      if (mode.gzip) head['content-encoding'] = 'gzip'
      res.writeHead(up.statusCode as number, head as Record<string, string>)
      const decoded = mode.gunzip === true ? up.pipe(createGunzip().on('error', (err) => res.destroy(err))) : up
      const content = mode.alter === true ? decoded.pipe(upperCase()) : decoded
      // Level 1: nginx's default gzip_comp_level (and other bytes than @fastify/compress's, for the recoding case).
      const body = mode.gzip ? content.pipe(createGzip({ level: 1 })) : content
      const chunks: Buffer[] = []
      body.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        (res as ServerResponse).write(chunk)
      })
      body.on('end', () => {
        Object.assign(sent, { headers: head, body: Buffer.concat(chunks), trailers: edit(up.trailers, mode) })
        if (Object.keys(sent.trailers).length > 0) res.addTrailers(sent.trailers as Record<string, string>)
        res.end()
      })
    }).end()
  }
  const server: Server = http2 ? createH2Server(respond) : createH1Server(respond)
  return await listenLocal(t, server)
}

/** Content altered on the way (as a proxy rewriting a body would). */
function upperCase (): Transform {
  return new Transform({ transform: (chunk: Buffer, _encoding, done) => done(null, Buffer.from(chunk.toString('latin1').toUpperCase(), 'latin1')) })
}

function emptySent (): Sent {
  return { headers: {}, body: Buffer.alloc(0), trailers: {} }
}

type Order = 'alone' | 'digest first' | 'decompress first'

/** A dispatcher for the proxy (h2c when `http2`) with the interceptor of `opts`, and undici's decompress() as `order` says. */
function client (t: Closeable, base: string, http2: boolean, opts: DigestInterceptorOptions, order: Order = 'alone'): Dispatcher {
  const bottom = http2 ? new H2CClient(base) : new Agent()
  t.teardown(() => bottom.close())
  const digest = digestInterceptor(opts)
  if (order === 'alone') return bottom.compose(digest)
  // compose() wraps in the order given: the first listed is nearest the connection.
  return order === 'digest first' ? bottom.compose(digest, interceptors.decompress()) : bottom.compose(interceptors.decompress(), digest)
}

const field = (sent: Sent, name: string): unknown => sent.headers[name] ?? sent.trailers[name]

/** What re-encoding leaves: gzip sent, Content-Digest of the identity content, the other two of the decoded content. */
function assertReencodedWire (t: TapTest, sent: Sent, label: string, inTrailers: boolean): Buffer {
  const decoded = gunzipSync(sent.body)
  t.equal(sent.headers['content-encoding'], 'gzip', `${label}: gzip sent`)
  t.not(field(sent, 'content-digest'), sf(sent.body), `${label}: Content-Digest is not of the bytes sent`)
  t.equal(field(sent, 'content-digest'), sf(decoded), `${label}: Content-Digest is of the identity content`)
  t.equal(field(sent, 'repr-digest'), sf(decoded), `${label}: Repr-Digest is of the decoded content`)
  t.equal(field(sent, 'unencoded-digest'), sf(decoded), `${label}: Unencoded-Digest is of the decoded content`)
  t.equal(sent.trailers['content-digest'] !== undefined, inTrailers, `${label}: fields in the ${inTrailers ? 'trailers' : 'head'}`)
  return decoded
}

/** FST_DIGEST_RESPONSE_REENCODED at Content-Digest (or `at`), naming `matched`. */
function assertReencoded (t: TapTest, out: Outcome, matched: string[], at = 'Content-Digest'): void {
  assertFailure(t, out, 'FST_DIGEST_RESPONSE_REENCODED', at, 'sha-256')
  t.same(out.error?.matched, matched, 'the fields that matched the decoded content')
  t.match(out.error?.message, `but ${matched.join(' and ')} matched the decoded content, so the body was re-encoded after the server computed its digests`)
  t.match(out.error?.message, `${at} field (algorithm sha-256) was not verified`)
}

/** The caller's bytes: fetch decodes, request and stream do not. */
const delivered = (kind: Kind, sent: Sent, decoded: Buffer): Buffer => kind === 'fetch' ? decoded : sent.body

/** `TE: trailers` for a stream's fields as trailers. */
const asked = (inTrailers: boolean): Record<string, string> => inTrailers ? { te: 'trailers' } : {}

// Each path's fields: /items in the head, /stream (asked TE: trailers) in the trailers.
const PATHS = [['/items', false, JSON.stringify(ITEMS)], ['/stream', true, TEXT]] as const

for (const http2 of [false, true]) {
  const proto = http2 ? 'HTTP/2' : 'HTTP/1.1'

  test(`${proto}: a proxy gzips the plugin's identity response: FST_DIGEST_RESPONSE_REENCODED, or passed with acceptReencoded`, async (t) => {
    const sent = emptySent()
    const base = await proxy(t, await origin(t), http2, { gzip: true }, sent)
    const reports: DigestClientError[] = []
    const clients: Array<[string, Dispatcher]> = [
      ['default', client(t, base, http2, {})],
      ['acceptReencoded', client(t, base, http2, { acceptReencoded: true })],
      ['acceptReencoded, verify required', client(t, base, http2, { acceptReencoded: true, verify: 'required' })],
      ['acceptReencoded reporting', client(t, base, http2, { acceptReencoded: (err) => { reports.push(err) } })]
    ]
    for (const [path, inTrailers, content] of PATHS) {
      for (const kind of KINDS) {
        for (const [name, dispatcher] of clients) {
          const label = `${path} ${kind} ${name}`
          const out = await call(kind, dispatcher, base + path, { headers: asked(inTrailers) })
          const decoded = assertReencodedWire(t, sent, label, inTrailers)
          t.equal(decoded.toString(), content, `${label}: the proxy sent the origin's content`)
          if (name === 'default') {
            assertReencoded(t, out, BOTH)
            continue
          }
          t.equal(out.error, null, `${label}: ${String(out.error?.message)}`)
          t.same(out.body, delivered(kind, sent, decoded), `${label}: the body`)
        }
      }
    }
    t.equal(reports.length, PATHS.length * KINDS.length, 'one report per response')
    for (const err of reports) {
      t.equal(err.code, 'FST_DIGEST_RESPONSE_REENCODED')
      t.same(err.matched, BOTH)
      t.match(err.message, 'Content-Digest field (algorithm sha-256) was not verified')
    }
  })

  test(`${proto}: the readings of Repr-Digest, and a proxy that also drops the end-to-end fields`, async (t) => {
    const sent = emptySent()
    const base = await proxy(t, await origin(t), http2, { gzip: true }, sent)
    const dropped = await proxy(t, await origin(t), http2, { gzip: true, fields: { 'repr-digest': null, 'unencoded-digest': null } }, sent)
    const strict = client(t, base, http2, { strict: true })
    const decodedReading = client(t, base, http2, { reprDigest: 'decoded' })
    const accepting = client(t, dropped, http2, { acceptReencoded: true })
    const acceptingStrict = client(t, dropped, http2, { acceptReencoded: true, strict: true, verify: 'required' })
    for (const [path, inTrailers] of PATHS) {
      const headers = asked(inTrailers)
      for (const kind of KINDS) {
        // Strict: Repr-Digest is of the coded bytes, stale as Content-Digest is; Unencoded-Digest alone matched.
        assertReencoded(t, await call(kind, strict, base + path, { headers }), ['Unencoded-Digest'])
        assertReencoded(t, await call(kind, decodedReading, base + path, { headers }), BOTH)
        // (d) No end-to-end field to match: a mismatch, accepted or not.
        for (const dispatcher of [accepting, acceptingStrict]) {
          const out = await call(kind, dispatcher, dropped + path, { headers })
          t.equal(field(sent, 'repr-digest') ?? field(sent, 'unencoded-digest'), undefined, `${path} ${kind}: dropped`)
          assertFailure(t, out, 'FST_DIGEST_RESPONSE_MISMATCH', 'Content-Digest', 'sha-256')
        }
      }
    }
  })

  test(`${proto}: controls: changed content, a wrong end-to-end field, a wrong Content-Digest without re-encoding`, async (t) => {
    const upstream = await origin(t)
    const cases: Array<[string, Mode]> = [
      // (a), (c) The content changed: no field matches it.
      ['content changed', { gzip: true, alter: true }],
      // (c) An end-to-end field that does not match the decoded content: not explained by the coding.
      ['Unencoded-Digest wrong', { gzip: true, fields: { 'unencoded-digest': WRONG } }],
      ['Repr-Digest wrong', { gzip: true, fields: { 'repr-digest': WRONG } }],
      // Re-encoded, and Content-Digest of neither the bytes received nor the decoded content: wrong.
      ['Content-Digest wrong', { gzip: true, fields: { 'content-digest': WRONG } }],
      // (b) Identity: Content-Digest and the others are of the same bytes, so the field itself is wrong.
      ['identity, Content-Digest wrong', { gzip: false, fields: { 'content-digest': WRONG } }]
    ]
    for (const [name, mode] of cases) {
      const sent = emptySent()
      const base = await proxy(t, upstream, http2, mode, sent)
      for (const acceptReencoded of [false, true]) {
        const dispatcher = client(t, base, http2, { acceptReencoded })
        for (const [path, inTrailers, content] of PATHS) {
          for (const kind of KINDS) {
            const label = `${name} ${path} ${kind} acceptReencoded: ${String(acceptReencoded)}`
            const out = await call(kind, dispatcher, base + path, { headers: asked(inTrailers) })
            const decoded = mode.gzip ? gunzipSync(sent.body) : sent.body
            t.equal(sent.trailers['content-digest'] !== undefined, inTrailers, `${label}: where the fields are`)
            t.not(field(sent, 'content-digest'), sf(sent.body), `${label}: Content-Digest is wrong`)
            if (mode.alter === true) t.not(decoded.toString(), content, `${label}: the content changed`)
            if (!mode.gzip) {
              t.equal(field(sent, 'repr-digest'), sf(sent.body), `${label}: Repr-Digest matches the bytes sent`)
              t.equal(field(sent, 'unencoded-digest'), sf(sent.body), `${label}: Unencoded-Digest too`)
            }
            assertFailure(t, out, 'FST_DIGEST_RESPONSE_MISMATCH', 'Content-Digest', 'sha-256')
          }
        }
      }
    }
  })
}

test('a coded response whose Repr-Digest matches the bytes received: a wrong Content-Digest is a mismatch', async (t) => {
  // The plugin in strict mode behind @fastify/compress: Content-Digest and Repr-Digest of the gzip bytes, Unencoded-Digest
  // of the content. The proxy changes Content-Digest only: Repr-Digest proves the bytes are the ones the server coded.
  const sent = emptySent()
  const base = await proxy(t, await origin(t, { strict: true }, true), false, { gzip: false, fields: { 'content-digest': WRONG } }, sent)
  const dispatcher = client(t, base, false, { acceptReencoded: true })
  for (const kind of KINDS) {
    const out = await call(kind, dispatcher, `${base}/items`, { headers: { 'accept-encoding': 'gzip' } })
    t.equal(sent.headers['content-encoding'], 'gzip', `${kind}: coded by the origin`)
    t.equal(sent.headers['repr-digest'], sf(sent.body), `${kind}: Repr-Digest of the bytes sent`)
    t.equal(sent.headers['unencoded-digest'], sf(gunzipSync(sent.body)), `${kind}: Unencoded-Digest of the decoded content`)
    assertFailure(t, out, 'FST_DIGEST_RESPONSE_MISMATCH', 'Content-Digest', 'sha-256')
  }
})

test('a proxy recoding the origin\'s gzip: Content-Digest of coded bytes not rebuilt here is a mismatch', async (t) => {
  // The plugin's default mode behind @fastify/compress; the proxy decodes and gzips again at another level, so the
  // origin's Content-Digest is of gzip bytes the client never sees, while Repr-Digest and Unencoded-Digest match.
  const sent = emptySent()
  const base = await proxy(t, await origin(t, {}, true), false, { gzip: true, gunzip: true }, sent)
  const dispatcher = client(t, base, false, { acceptReencoded: true })
  for (const [path, inTrailers, content] of PATHS) {
    for (const kind of KINDS) {
      const label = `${path} ${kind}`
      const headers = { 'accept-encoding': 'gzip', ...asked(inTrailers) }
      const out = await call(kind, dispatcher, base + path, { headers })
      const decoded = gunzipSync(sent.body)
      t.equal(decoded.toString(), content, `${label}: the origin's content`)
      t.not(field(sent, 'content-digest'), sf(sent.body), `${label}: Content-Digest is not of the bytes sent`)
      t.not(field(sent, 'content-digest'), sf(decoded), `${label}: nor of the decoded content`)
      t.equal(field(sent, 'unencoded-digest'), sf(decoded), `${label}: Unencoded-Digest is of the decoded content`)
      assertFailure(t, out, 'FST_DIGEST_RESPONSE_MISMATCH', 'Content-Digest', 'sha-256')
    }
  }
})

test('with undici\'s decompress(): re-encoded when the interceptor sees the coding; verified when decoded before it', async (t) => {
  for (const http2 of [false, true]) {
    const sent = emptySent()
    const base = await proxy(t, await origin(t), http2, { gzip: true }, sent)
    for (const acceptReencoded of [false, true]) {
      const first = client(t, base, http2, { acceptReencoded }, 'digest first')
      const after = client(t, base, http2, { acceptReencoded, verify: 'required' }, 'decompress first')
      for (const [path, inTrailers, content] of PATHS) {
        for (const kind of KINDS) {
          const label = `${http2 ? 'HTTP/2' : 'HTTP/1.1'} ${path} ${kind} acceptReencoded: ${String(acceptReencoded)}`
          const headers = asked(inTrailers)
          const out = await call(kind, first, base + path, { headers })
          assertReencodedWire(t, sent, label, inTrailers)
          if (acceptReencoded) {
            t.equal(out.error, null, `${label}: ${String(out.error?.message)}`)
            t.equal(out.body.toString(), content, `${label}: decoded by decompress()`)
          } else {
            assertReencoded(t, out, BOTH)
          }
          // Decoded first, the interceptor receives the identity content the origin sent: all three fields match it,
          // Content-Digest included, so there is nothing to diagnose.
          const decoded = await call(kind, after, base + path, { headers })
          t.equal(decoded.error, null, `${label}, decompress first: ${String(decoded.error?.message)}`)
          t.equal(decoded.body.toString(), content, `${label}, decompress first: decoded`)
        }
      }
    }
  }
})

test('decompress() first, the origin compressing: a mismatch, never re-encoded, acceptReencoded or not', async (t) => {
  // The plugin's own gzip (no proxy): decoded before the interceptor, with Content-Encoding removed from the head and
  // rawHeaders, the gzip bytes' Content-Digest fails over the very bytes Repr-Digest and Unencoded-Digest match, as a
  // wrong Content-Digest of an identity response does: the interceptor cannot tell the two apart.
  const sent = emptySent()
  const base = await proxy(t, await origin(t, {}, true), false, { gzip: false }, sent)
  for (const acceptReencoded of [false, true]) {
    const dispatcher = client(t, base, false, { acceptReencoded }, 'decompress first')
    for (const [path, inTrailers] of PATHS) {
      for (const kind of KINDS) {
        const out = await call(kind, dispatcher, base + path, { headers: { 'accept-encoding': 'gzip', ...asked(inTrailers) } })
        t.equal(sent.headers['content-encoding'], 'gzip', `${path} ${kind}: coded by the origin`)
        t.equal(field(sent, 'content-digest'), sf(sent.body), `${path} ${kind}: Content-Digest of the bytes sent`)
        t.equal(field(sent, 'repr-digest'), sf(gunzipSync(sent.body)), `${path} ${kind}: Repr-Digest of the decoded content`)
        assertFailure(t, out, 'FST_DIGEST_RESPONSE_MISMATCH', 'Content-Digest', 'sha-256')
      }
    }
  }
})

test('acceptReencoded: what the reporting function throws fails the response', async (t) => {
  const sent = emptySent()
  const base = await proxy(t, await origin(t), false, { gzip: true }, sent)
  const refusal = new Error('not through a re-encoding proxy')
  const dispatcher = client(t, base, false, { acceptReencoded: () => { throw refusal } })
  for (const [path, inTrailers] of PATHS) {
    for (const kind of KINDS) {
      const out = await call(kind, dispatcher, base + path, { headers: asked(inTrailers) })
      t.equal(out.error, refusal, `${path} ${kind}: the thrown error`)
    }
  }
})
