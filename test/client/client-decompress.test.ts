// The interceptor composed with undici's own interceptors.decompress(), in
// both orders, with fetch, request and stream, over HTTP/1.1 and HTTP/2 (h2c),
// digests in headers and in trailers. A recorder at the bottom of the chain
// keeps the bytes and fields as they came off the connection, and every digest
// the server sent is recomputed from them here: Content-Digest of the bytes
// received, Repr-Digest and Unencoded-Digest of the decoded content.
//
// Digest interceptor first (nearest the connection): it sees the coded bytes,
// checks Content-Digest over them and the other fields over its own side
// decoding, and decompress() decodes for the caller. Decompress first: the
// interceptor receives decoded bytes with Content-Encoding removed, so a coded
// response's Content-Digest does not match what it received and fails, while
// Repr-Digest and Unencoded-Digest are checked over the decoded content
// (docs/client.md, "With other interceptors").
import { test } from 'tap'
import { createServer as createH1Server, type IncomingMessage, type ServerResponse } from 'node:http'
import { createServer as createH2Server, type Http2ServerRequest, type Http2ServerResponse } from 'node:http2'
import type { Server } from 'node:net'
import { Readable } from 'node:stream'
import { gunzipSync, gzipSync } from 'node:zlib'
import Fastify, { type FastifyServerOptions } from 'fastify'
import compress from '@fastify/compress'
import { Agent, H2CClient, interceptors, type Dispatcher } from 'undici'
import digestFields = require('../../lib/index')
import { digestInterceptor } from '../../lib/client/index'
import { sf } from '../helpers'
import { KINDS, assertFailure, call, listenLocal, type Outcome } from './client-helpers'
import type { TapTest } from '../plugin/request/upload-helpers'

const ITEMS = { items: Array.from({ length: 200 }, (_, id) => ({ id, name: `item ${id}` })) }
const TEXT = 'streamed text, '.repeat(400)

interface Closeable { teardown (fn: () => unknown): void }

/** What came off the connection: status, fields, the bytes, the trailers. */
interface Wire { status: number, headers: Record<string, unknown>, body: Buffer, trailers: Record<string, unknown> }

type Controller = Dispatcher.DispatchController
type Handler = Dispatcher.DispatchHandler

/** Listed first in compose(), nearest the connection: records the response as received and passes everything on. */
class Recorder implements Handler {
  readonly chunks: Buffer[] = []
  constructor (private readonly next: Handler, private readonly wire: Wire) {}
  onRequestStart (controller: Controller, context: unknown): void { this.next.onRequestStart?.(controller, context) }
  onResponseStart (controller: Controller, status: number, headers: Record<string, string | string[]>, message?: string): void {
    this.wire.status = status
    this.wire.headers = { ...headers }
    this.next.onResponseStart?.(controller, status, headers as never, message)
  }

  onResponseData (controller: Controller, chunk: Buffer): void {
    this.chunks.push(Buffer.from(chunk))
    this.next.onResponseData?.(controller, chunk)
  }

  onResponseEnd (controller: Controller, trailers: Record<string, string | string[]>): void {
    this.wire.body = Buffer.concat(this.chunks)
    this.wire.trailers = { ...trailers, ...rawTrailersOf(controller) }
    this.next.onResponseEnd?.(controller, trailers as never)
  }

  onResponseError (controller: Controller, err: Error): void { this.next.onResponseError?.(controller, err) }
}

/** undici 7 hands HTTP/2 trailers over as rawTrailers only (the client reads them back the same way). */
function rawTrailersOf (controller: Controller): Record<string, unknown> {
  const raw = controller.rawTrailers as unknown
  return raw !== null && typeof raw === 'object' && !Array.isArray(raw) ? raw as Record<string, unknown> : {}
}

function recorder (wire: Wire): Dispatcher.DispatcherComposeInterceptor {
  return (dispatch) => (opts, handler) => dispatch(opts, new Recorder(handler, wire))
}

type Order = 'digest first' | 'decompress first'
const ORDERS: Order[] = ['digest first', 'decompress first']

/** The dispatcher of `order` over `base` (h2c when `http2`), with the recorder at the bottom. */
function dispatcherOf (t: Closeable, base: string, http2: boolean, order: Order, wire: Wire): Dispatcher {
  const bottom = http2 ? new H2CClient(base) : new Agent()
  t.teardown(() => bottom.close())
  const digest = digestInterceptor({ verify: 'required' })
  const decompress = interceptors.decompress()
  return order === 'digest first'
    ? bottom.compose(recorder(wire), digest, decompress)
    : bottom.compose(recorder(wire), decompress, digest)
}

function emptyWire (): Wire {
  return { status: 0, headers: {}, body: Buffer.alloc(0), trailers: {} }
}

/** Each digest field sent, in the head or the trailers, against the bytes received (Content-Digest) or decoded. */
function assertWire (t: TapTest, wire: Wire, label: string): void {
  const field = (name: string): unknown => wire.headers[name] ?? wire.trailers[name]
  const decoded = wire.headers['content-encoding'] === 'gzip' ? gunzipSync(wire.body) : wire.body
  t.equal(field('content-digest'), sf(wire.body), `${label}: Content-Digest is of the bytes received`)
  t.equal(field('repr-digest'), sf(decoded), `${label}: Repr-Digest is of the decoded content`)
  t.equal(field('unencoded-digest'), sf(decoded), `${label}: Unencoded-Digest is of the decoded content`)
}

async function pluginServer (t: Closeable, http2: boolean): Promise<string> {
  const app = Fastify(http2 ? { http2: true } as FastifyServerOptions : {})
  t.teardown(() => app.close())
  await app.register(compress, { threshold: 0 })
  await app.register(digestFields, { contentDigest: true, reprDigest: true, unencodedDigest: true })
  app.get('/items', async () => ITEMS)
  app.get('/stream', async (_request, reply) => reply.type('text/plain').send(Readable.from([TEXT.slice(0, 999), TEXT.slice(999)])))
  await app.listen({ port: 0, host: '127.0.0.1' })
  return `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
}

for (const http2 of [false, true]) {
  const proto = http2 ? 'HTTP/2' : 'HTTP/1.1'
  test(`${proto}: the plugin's three fields through decompress(), both orders, headers and trailers`, async (t) => {
    const base = await pluginServer(t, http2)
    for (const order of ORDERS) {
      const wire = emptyWire()
      const dispatcher = dispatcherOf(t, base, http2, order, wire)
      for (const kind of KINDS) {
        for (const coding of ['identity', 'gzip']) {
          for (const [path, expected] of [['/items', Buffer.from(JSON.stringify(ITEMS))], ['/stream', Buffer.from(TEXT)]] as const) {
            // TE: trailers (verify: 'required') moves a compressed stream's fields into the trailers.
            const label = `${order} ${kind} ${coding} ${path}`
            const out = await call(kind, dispatcher, base + path, { headers: { 'accept-encoding': coding } })
            t.equal(wire.status, 200, label)
            assertWire(t, wire, label)
            t.equal(wire.headers['content-encoding'], coding === 'gzip' ? 'gzip' : undefined, `${label}: as sent`)
            if (path === '/stream' && coding === 'gzip') t.ok(wire.trailers['content-digest'] !== undefined, `${label}: in the trailers`)
            if (order === 'decompress first' && coding === 'gzip') {
              // Decoded before the interceptor saw it: the Content-Digest of the gzip bytes is not of what it received.
              assertFailure(t, out, 'FST_DIGEST_RESPONSE_MISMATCH', 'Content-Digest', 'sha-256')
              continue
            }
            t.equal(out.error, null, `${label}: ${String(out.error?.message)}`)
            t.same(out.body, expected, `${label}: the caller gets the decoded content`)
          }
        }
      }
    }
  })
}

/** A hand-built server (HTTP/1.1 or h2c) sending the gzip of `content` with the digest fields of `fields`, or its trailers. */
async function handServer (t: Closeable, http2: boolean, content: Buffer, wrong: string, inTrailers: boolean): Promise<string> {
  const coded = gzipSync(content)
  const fields: Record<string, string> = {
    'content-digest': sf(coded),
    'repr-digest': sf(content),
    'unencoded-digest': sf(content),
    [wrong]: sf(Buffer.from('something else'))
  }
  const respond = (_req: IncomingMessage | Http2ServerRequest, res: ServerResponse | Http2ServerResponse): void => {
    const head: Record<string, string> = { 'content-type': 'application/json', 'content-encoding': 'gzip' }
    if (inTrailers) head.trailer = Object.keys(fields).join(', ')
    res.writeHead(200, inTrailers ? head : { ...head, ...fields })
    // Two writes: the body in more than one piece (the union of the two response types has no common write()).
    const out = res as ServerResponse
    out.write(coded.subarray(0, 100))
    out.write(coded.subarray(100))
    if (inTrailers) res.addTrailers(fields)
    res.end()
  }
  const server: Server = http2 ? createH2Server(respond) : createH1Server(respond)
  return await listenLocal(t, server)
}

/** Which field the interceptor refuses when `wrong` is the wrong one, in `order`. */
function refused (wrong: string, order: Order): string {
  // Decoded first, the (right) Content-Digest of the gzip bytes fails before the others are read.
  if (order === 'decompress first') return 'Content-Digest'
  return wrong.split('-').map((w) => w[0]?.toUpperCase() + w.slice(1)).join('-')
}

for (const http2 of [false, true]) {
  const proto = http2 ? 'HTTP/2' : 'HTTP/1.1'
  test(`${proto}: controls: each wrong field is refused, in both orders, in the head and in the trailers`, async (t) => {
    const content = Buffer.from(JSON.stringify(ITEMS))
    for (const wrong of ['content-digest', 'repr-digest', 'unencoded-digest']) {
      for (const inTrailers of [false, true]) {
        const base = await handServer(t, http2, content, wrong, inTrailers)
        for (const order of ORDERS) {
          const wire = emptyWire()
          const dispatcher = dispatcherOf(t, base, http2, order, wire)
          for (const kind of KINDS) {
            const out: Outcome = await call(kind, dispatcher, `${base}/`, { headers: { 'accept-encoding': 'gzip' } })
            const label = `${wrong} wrong, ${inTrailers ? 'trailers' : 'head'}, ${order}, ${kind}`
            t.equal(wire.headers['content-encoding'], 'gzip', `${label}: sent coded`)
            t.not(wire.headers[wrong] ?? wire.trailers[wrong], sf(wrong === 'content-digest' ? wire.body : gunzipSync(wire.body)), `${label}: the field is wrong`)
            assertFailure(t, out, 'FST_DIGEST_RESPONSE_MISMATCH', refused(wrong, order), 'sha-256')
          }
        }
      }
    }
  })
}

test('decompress first: Repr-Digest and Unencoded-Digest alone are checked over the decoded content', async (t) => {
  const content = Buffer.from(JSON.stringify(ITEMS))
  for (const http2 of [false, true]) {
    for (const wrong of ['', 'repr-digest', 'unencoded-digest']) {
      const coded = gzipSync(content)
      const respond = (_req: IncomingMessage | Http2ServerRequest, res: ServerResponse | Http2ServerResponse): void => {
        const fields: Record<string, string> = { 'repr-digest': sf(content), 'unencoded-digest': sf(content) }
        if (wrong !== '') fields[wrong] = sf(Buffer.from('something else'))
        res.writeHead(200, { 'content-encoding': 'gzip', ...fields })
        res.end(coded)
      }
      const server: Server = http2 ? createH2Server(respond) : createH1Server(respond)
      const base = await listenLocal(t, server)
      const wire = emptyWire()
      const dispatcher = dispatcherOf(t, base, http2, 'decompress first', wire)
      for (const kind of KINDS) {
        const out = await call(kind, dispatcher, `${base}/`, { headers: { 'accept-encoding': 'gzip' } })
        const label = `${http2 ? 'HTTP/2' : 'HTTP/1.1'} ${kind} ${wrong === '' ? 'right' : `${wrong} wrong`}`
        t.equal(wire.headers['content-encoding'], 'gzip', `${label}: sent coded`)
        if (wrong === '') {
          t.equal(out.error, null, `${label}: ${String(out.error?.message)}`)
          t.same(out.body, content, `${label}: decoded`)
        } else {
          assertFailure(t, out, 'FST_DIGEST_RESPONSE_MISMATCH', refused(wrong, 'digest first'), 'sha-256')
        }
      }
    }
  }
})
