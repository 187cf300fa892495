// An h2c (HTTP/2 over cleartext TCP) client for uploads with node:http2:
// headers, body chunks with optional delays, optional request trailers, and
// an optional reset of the stream mid-upload. No content-length is sent
// unless the caller gives one (what HTTP/2 clients usually do).
import { connect, constants, type ClientHttp2Session, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http2'
import { once } from 'node:events'
import type { Writable } from 'node:stream'
import { sleep } from './helpers'

/** What an upload got back. `status` is 0 when no response head arrived (e.g. after a reset). */
export interface Reply {
  status: number
  headers: IncomingHttpHeaders
  body: Buffer
  /** The stream was reset (by either side) before the response ended. */
  reset: boolean
}

export type Body = Iterable<Buffer | string> | AsyncIterable<Buffer | string>

export interface Upload {
  method?: string
  path: string
  headers?: OutgoingHttpHeaders
  /** The body, chunk by chunk; none: END_STREAM right after the headers. */
  body?: Body
  /** Milliseconds to wait after each chunk. */
  delay?: number
  /** Sent as request trailers (the request is opened with waitForTrailers). */
  trailers?: OutgoingHttpHeaders
  /** Reset the stream with NGHTTP2_CANCEL after this many chunks, instead of ending it. */
  cancelAfter?: number
}

interface Closeable { teardown (fn: () => unknown): void }

/** A session to `http://127.0.0.1:port`, destroyed at teardown. */
export async function h2Session (t: Closeable, port: number): Promise<ClientHttp2Session> {
  const session = connect(`http://127.0.0.1:${port}`)
  session.on('error', () => {})
  t.teardown(() => session.destroy())
  await once(session, 'connect')
  return session
}

/** Write `chunk`; when the stream's buffer is full, wait until it drains or closes (leaving no listener behind). */
export async function write (stream: Writable, chunk: Buffer | string): Promise<void> {
  if (!stream.write(chunk)) {
    await new Promise<void>((resolve) => {
      const done = (): void => {
        stream.off('drain', done)
        stream.off('close', done)
        resolve()
      }
      stream.once('drain', done)
      stream.once('close', done)
    })
  }
}

/** One request on `session`; resolves when the stream closed, however it ended. */
export function h2Upload (session: ClientHttp2Session, { method = 'POST', path, headers = {}, body, delay = 0, trailers, cancelAfter }: Upload): Promise<Reply> {
  const stream = session.request(
    { ':method': method, ':path': path, ...headers },
    { endStream: body === undefined, waitForTrailers: trailers !== undefined }
  )
  if (trailers !== undefined) stream.on('wantTrailers', () => stream.sendTrailers(trailers))
  const reply: Reply = { status: 0, headers: {}, body: Buffer.alloc(0), reset: false }
  const chunks: Buffer[] = []
  stream.on('response', (headers) => {
    reply.status = Number(headers[':status'])
    reply.headers = headers
  })
  stream.on('data', (chunk: Buffer) => chunks.push(chunk))
  stream.on('error', () => {})
  const closed = once(stream, 'close').then(() => {
    reply.body = Buffer.concat(chunks)
    reply.reset = stream.rstCode !== undefined && stream.rstCode !== constants.NGHTTP2_NO_ERROR
    return reply
  })
  if (body === undefined) return closed
  const send = async (): Promise<void> => {
    let sent = 0
    for await (const chunk of body) {
      if (stream.closed || stream.destroyed) return
      await write(stream, chunk)
      sent++
      // The client's pace between chunks is the condition set up: time, not an event.
      if (delay > 0) await sleep(delay)
      if (cancelAfter !== undefined && sent >= cancelAfter) {
        stream.close(constants.NGHTTP2_CANCEL)
        return
      }
    }
    if (!stream.closed && !stream.destroyed) stream.end()
  }
  return Promise.all([closed, send()]).then(([result]) => result)
}
