// Driving the client: one request through undici.request, undici.fetch or
// undici.stream with the digest interceptor, read to its end. A failure is
// returned (not thrown) as the digest error itself, unwrapped from fetch's
// TypeError('terminated') when it is its cause.
import { once } from 'node:events'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { Server } from 'node:net'
import { Writable } from 'node:stream'
import { Agent, fetch, request, stream, type Dispatcher } from 'undici'
import type { DigestClientError, DigestInterceptorOptions } from '../../types/client'
import { digestInterceptor } from '../../lib/client/index'
import type { TapTest } from '../plugin/request/upload-helpers'

export type Kind = 'request' | 'fetch' | 'stream'
export const KINDS: Kind[] = ['request', 'fetch', 'stream']

interface Closeable { teardown (fn: () => unknown): void }

/** A hand-built response (servers that are not the plugin). */
export type Route = (req: IncomingMessage, res: ServerResponse) => void

/** A node:http server answering each path from `routes` (404 for others), closed when the test ends: its base URL. */
export async function routeServer (t: Closeable, routes: Readonly<Record<string, Route>>): Promise<string> {
  const server = createServer((req, res) => {
    const route = routes[(req.url ?? '').split('?')[0] as string]
    if (route !== undefined) {
      route(req, res)
      return
    }
    res.writeHead(404)
    res.end('not found')
  })
  return await listenLocal(t, server)
}

/** `body` in two writes, then `trailers`, named in a Trailer field when `announce`. */
export function withTrailers (trailers: Record<string, string>, announce: boolean, body: string | Buffer, headers: Record<string, string> = {}): Route {
  return (_req, res) => {
    res.writeHead(200, announce ? { ...headers, trailer: Object.keys(trailers).join(', ') } : headers)
    const bytes = Buffer.from(body)
    res.write(bytes.subarray(0, 3))
    res.write(bytes.subarray(3))
    res.addTrailers(trailers)
    res.end()
  }
}

/** `server` listening on a free port of 127.0.0.1, closed when the test ends: its base URL. */
export async function listenLocal (t: Closeable, server: Server): Promise<string> {
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => new Promise((resolve) => server.close(resolve)))
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`
}

export function digestAgent (t: Closeable, opts?: DigestInterceptorOptions, agentOpts: Agent.Options = {}): Dispatcher {
  const agent = new Agent(agentOpts)
  t.teardown(() => agent.close())
  return agent.compose(digestInterceptor(opts))
}

export interface Outcome {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: Buffer
  trailers: Record<string, string | string[] | undefined>
  /** The digest error (or any other error) that replaced the clean end. */
  error: (Error & Partial<DigestClientError>) | null
}

export interface Call {
  method?: string
  headers?: Record<string, string>
  body?: string | Buffer | Uint8Array
}

function unwrap (err: unknown): Error & Partial<DigestClientError> {
  const e = err as Error & { cause?: unknown, code?: string }
  if (e.code === undefined && e.cause instanceof Error) return e.cause as Error & Partial<DigestClientError>
  return e as Error & Partial<DigestClientError>
}

export async function call (kind: Kind, dispatcher: Dispatcher, url: string, { method = 'GET', headers = {}, body }: Call = {}): Promise<Outcome> {
  const out: Outcome = { status: 0, headers: {}, body: Buffer.alloc(0), trailers: {}, error: null }
  const chunks: Buffer[] = []
  try {
    if (kind === 'request') {
      const res = await request(url, { dispatcher, method: method as Dispatcher.HttpMethod, headers, body })
      out.status = res.statusCode
      out.headers = res.headers
      for await (const chunk of res.body) chunks.push(chunk as Buffer)
      out.trailers = res.trailers
    } else if (kind === 'fetch') {
      const res = await fetch(url, { dispatcher, method, headers, body })
      out.status = res.status
      for (const [k, v] of res.headers) out.headers[k] = v
      if (res.body !== null) for await (const chunk of res.body) chunks.push(Buffer.from(chunk))
    } else {
      const res = await stream(url, { dispatcher, method: method as Dispatcher.HttpMethod, headers, body }, ({ statusCode, headers: h }) => {
        out.status = statusCode
        out.headers = h
        return new Writable({
          write (chunk: Buffer, _enc, cb) {
            chunks.push(chunk)
            cb()
          }
        })
      })
      out.trailers = res.trailers
    }
  } catch (err) {
    out.error = unwrap(err)
  }
  out.body = Buffer.concat(chunks)
  return out
}

type Assert = TapTest

/** The error shape: code, field and algorithm, both named in the message. */
export function assertFailure (t: Assert, out: Outcome, code: string, field: string, algorithm: string | null): void {
  t.ok(out.error !== null, `${code}: the body failed instead of ending cleanly`)
  const err = out.error as Error & Partial<DigestClientError>
  t.equal(err.code, code)
  t.equal(err.field, field)
  t.equal(err.algorithm, algorithm)
  t.ok(err.message.includes(field), `message names ${field}: ${err.message}`)
  t.ok(err.message.includes(algorithm ?? 'none'), `message names ${String(algorithm)}: ${err.message}`)
}
