// Helpers for the upload tests over real listening servers, HTTP/1.1 and
// HTTP/2 (h2c): one upload interface for both transports, the app of
// buildVerifyApp listening on either, hand-built multipart bodies, server
// log capture, and a guard against uncaught exceptions.
import { request as httpRequest, type OutgoingHttpHeaders } from 'node:http'
import { Writable } from 'node:stream'
import type { test } from 'tap'
import type { FastifyInstance, FastifyServerOptions } from 'fastify'
import type { FastifyDigestFieldsOptions } from '../../../types/index'
import { verifyRoutes, PROBLEM } from './request-helpers'
import { h2Session, h2Upload, write, type Body, type Reply, type Upload } from '../../http2-helpers'
import { serve as listening, sleep } from '../../helpers'

export type { Reply, Upload } from '../../http2-helpers'
export { sleep } from '../../helpers'

export type Transport = 'h1' | 'h2'
export const TRANSPORTS: Transport[] = ['h1', 'h2']

/** A tap test (the argument of a test's callback). */
export type TapTest = Parameters<Parameters<typeof test>[0]>[0]

/** One request over a new HTTP/1.1 connection. `cancelAfter` destroys the socket after that many chunks. */
export function h1Upload (port: number, { method = 'POST', path, headers = {}, body, delay = 0, trailers, cancelAfter }: Upload): Promise<Reply> {
  return new Promise((resolve) => {
    const reply: Reply = { status: 0, headers: {}, body: Buffer.alloc(0), reset: false }
    const chunks: Buffer[] = []
    const req = httpRequest({ host: '127.0.0.1', port, method, path, headers: headers as OutgoingHttpHeaders, agent: false }, (res) => {
      reply.status = res.statusCode as number
      reply.headers = res.headers
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('error', () => {})
      res.on('close', () => {
        reply.body = Buffer.concat(chunks)
        reply.reset = !res.complete
        resolve(reply)
      })
    })
    // No response (reset, refused): resolve with status 0; after a response, its close resolves.
    const noResponse = (): void => {
      reply.reset = true
      if (reply.status === 0) resolve(reply)
    }
    req.on('error', noResponse)
    req.on('close', () => { if (reply.status === 0) noResponse() })
    const send = async (): Promise<void> => {
      let sent = 0
      for await (const chunk of body ?? []) {
        if (req.destroyed) return
        await write(req, chunk)
        sent++
        // The client's pace between chunks is the condition set up: time, not an event.
        if (delay > 0) await sleep(delay)
        if (cancelAfter !== undefined && sent >= cancelAfter) {
          req.destroy()
          return
        }
      }
      if (trailers !== undefined) req.addTrailers(trailers as Record<string, string>)
      if (!req.destroyed) req.end()
    }
    send().catch(() => req.destroy())
  })
}

type LogLine = Record<string, unknown>

export interface Served {
  app: FastifyInstance
  port: number
  transport: Transport
  /** One upload over `transport` (HTTP/2: a stream on one shared session). */
  send (upload: Upload): Promise<Reply>
  /** Server log lines at the level `serve` was given and above, parsed. */
  logs: LogLine[]
  /** The first log line that passes `test`, once it is written. */
  logged (test: (line: LogLine) => boolean): Promise<LogLine>
}

/**
 * buildVerifyApp listening on 127.0.0.1 over HTTP/1.1 or h2c, logging into `logs` from `level` up (errors by
 * default); `setup` adds routes and plugins after the digest plugin.
 */
export async function serve (
  t: TapTest,
  transport: Transport,
  opts: FastifyDigestFieldsOptions = {},
  setup?: (app: FastifyInstance) => Promise<void> | void,
  level = 'error'
): Promise<Served> {
  const logs: LogLine[] = []
  const waiting = new Set<(line: LogLine) => boolean>()
  const stream = {
    write (text: string) {
      const line = JSON.parse(text) as LogLine
      logs.push(line)
      for (const take of waiting) if (take(line)) waiting.delete(take)
    }
  }
  const logged = (test: (line: LogLine) => boolean): Promise<LogLine> => new Promise((resolve) => {
    const found = logs.find(test)
    if (found !== undefined) return resolve(found)
    waiting.add((line) => {
      if (!test(line)) return false
      resolve(line)
      return true
    })
  })
  const serverOpts = { http2: transport === 'h2', forceCloseConnections: true, logger: { level, stream } }
  const { app, port } = await listening(t, opts, serverOpts as FastifyServerOptions, undefined, async (app) => {
    await setup?.(app)
    verifyRoutes(app)
  })
  if (transport === 'h1') return { app, port, transport, logs, logged, send: (upload) => h1Upload(port, upload) }
  const session = await h2Session(t, port)
  return { app, port, transport, logs, logged, send: (upload) => h2Upload(session, upload) }
}

/**
 * The log line that ends the first request `served` got (a server given level 'info'): the error handler's line when
 * it ran, else fastify's 'request completed'. A line of a server error for that request comes no later.
 */
export async function firstEnded (served: Served): Promise<LogLine> {
  const first = await served.logged((line) => line.msg === 'incoming request')
  return await served.logged((line) => line.reqId === first.reqId && line.res !== undefined)
}

/** Log lines that report a server error: level error or above, or a 5xx status. */
export function serverErrors (logs: Array<Record<string, unknown>>): Array<Record<string, unknown>> {
  return logs.filter((line) => {
    const status = (line.res as { statusCode?: number } | undefined)?.statusCode ?? (line.err as { statusCode?: number } | undefined)?.statusCode
    return Number(line.level) >= 50 || (typeof status === 'number' && status >= 500)
  })
}

export function json (reply: Reply): any {
  return JSON.parse(reply.body.toString('utf8'))
}

/** The reply is the plugin's problem details with this status and code. */
export function assertProblem (t: TapTest, reply: Reply, code: string, status = 400, message = ''): void {
  t.equal(reply.status, status, `${message} status`)
  t.equal(reply.headers['content-type'], 'application/problem+json', `${message} content-type`)
  let body: { code?: string, type?: string, status?: number } = {}
  try {
    body = json(reply)
  } catch {
    t.fail(`${message} body is not JSON: ${reply.body.toString('utf8').slice(0, 200)}`)
  }
  t.equal(body.code, code, `${message} code`)
  t.equal(body.status, status, `${message} body status`)
  if (code === 'FST_DIGEST_MISMATCH') t.equal(body.type, `${PROBLEM}digest-mismatched-values`, `${message} type`)
}

/**
 * Fail `t` on any uncaught exception or unhandled rejection while it runs
 * (the listeners are removed at teardown).
 */
export function failOnCrash (t: TapTest): void {
  const onException = (err: unknown): void => { t.fail(`uncaught exception: ${String((err as Error)?.stack ?? err)}`) }
  const onRejection = (err: unknown): void => { t.fail(`unhandled rejection: ${String((err as Error)?.stack ?? err)}`) }
  process.on('uncaughtException', onException)
  process.on('unhandledRejection', onRejection)
  t.teardown(() => {
    process.off('uncaughtException', onException)
    process.off('unhandledRejection', onRejection)
  })
}

/** A writable that discards what it gets and counts the bytes. */
export function sink (): Writable & { bytes: number } {
  const out = new Writable({
    write (chunk: Buffer, _encoding, callback) {
      out.bytes += chunk.length
      callback()
    }
  }) as Writable & { bytes: number }
  out.bytes = 0
  return out
}

export const BOUNDARY = 'digest-fields-test-boundary-7d1f'
export const MULTIPART_TYPE = `multipart/form-data; boundary=${BOUNDARY}`

/**
 * A multipart/form-data body in three pieces: `head` (the text fields, then
 * the headers of the file part, which is the last part), the file content in
 * between, and `tail` (the closing boundary right after the file content).
 */
export function multipartFrame (fields: Record<string, string> = {}, filename = 'data.bin'): { head: Buffer, tail: Buffer } {
  let head = ''
  for (const [name, value] of Object.entries(fields)) {
    head += `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`
  }
  head += `--${BOUNDARY}\r\nContent-Disposition: form-data; name="upload"; filename="${filename}"\r\nContent-Type: application/octet-stream\r\n\r\n`
  return { head: Buffer.from(head), tail: Buffer.from(`\r\n--${BOUNDARY}--\r\n`) }
}

/** A whole multipart body: fields, then one file part holding `content`, last. */
export function multipartBody (content: Buffer, fields: Record<string, string> = { title: 'a file' }): Buffer {
  const { head, tail } = multipartFrame(fields)
  return Buffer.concat([head, content, tail])
}

/** `bytes` cut into `n` pieces of about the same size (for multi-chunk uploads). */
export function pieces (bytes: Buffer | string, n = 3): Buffer[] {
  const buffer = Buffer.from(bytes)
  const size = Math.max(1, Math.ceil(buffer.length / n))
  const out: Buffer[] = []
  for (let i = 0; i < buffer.length; i += size) out.push(buffer.subarray(i, i + size))
  return out
}

export type { Body }
