// Shared test helpers: a fresh Fastify per test, expected field values
// recomputed from the bytes the client actually received.
import { createHash } from 'node:crypto'
import { connect, type AddressInfo } from 'node:net'
import type { Readable } from 'node:stream'
import * as zlib from 'node:zlib'
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib'
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify'
import type { FastifyDigestFieldsOptions } from '../types/index'
import digestFields = require('../lib/index')

export const EMPTY_SHA256 = 'sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:'

interface Closeable { teardown (fn: () => unknown): void }

export async function buildApp (
  t: Closeable,
  opts: FastifyDigestFieldsOptions = {},
  serverOpts: FastifyServerOptions = {},
  before?: (app: FastifyInstance) => Promise<void>
): Promise<FastifyInstance> {
  const app = Fastify(serverOpts)
  t.teardown(() => app.close())
  if (before !== undefined) await before(app)
  await app.register(digestFields, opts)
  return app
}

/** Listen on 127.0.0.1 at a free port (HTTP/2 when `app` was built with `http2: true`); the port. */
export async function listen (app: FastifyInstance): Promise<number> {
  await app.listen({ port: 0, host: '127.0.0.1' })
  return (app.server.address() as AddressInfo).port
}

/**
 * A fresh Fastify as buildApp makes it, `after` adding what follows the plugin (routes, plugins), listening on
 * loopback (`listen`) and closed at teardown.
 */
export async function serve (
  t: Closeable,
  opts: FastifyDigestFieldsOptions = {},
  serverOpts: FastifyServerOptions = {},
  before?: (app: FastifyInstance) => Promise<void>,
  after?: (app: FastifyInstance) => Promise<void> | void
): Promise<{ app: FastifyInstance, port: number }> {
  const app = await buildApp(t, opts, serverOpts, before)
  await after?.(app)
  return { app, port: await listen(app) }
}

const nodeNames: Record<string, string> = { 'sha-256': 'sha256', 'sha-512': 'sha512', md5: 'md5', sha: 'sha1' }

/** Waits `ms` milliseconds: for a delay a test sets up (a slow client), not to sequence assertions. */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/** The digest octets of `bytes`, base64, computed independently with node:crypto. */
export function b64 (bytes: Buffer | string, alg = 'sha-256'): string {
  const name = nodeNames[alg]
  if (name === undefined) throw new Error(`no independent implementation of ${alg}`)
  return createHash(name).update(bytes).digest('base64')
}

/** `alg=:base64:` computed independently with node:crypto. */
export function sf (bytes: Buffer | string, alg = 'sha-256'): string {
  return `${alg}=:${b64(bytes, alg)}:`
}

type SyncCoder = (data: Buffer) => Buffer

/**
 * node:zlib's zstd (RFC 8878), which Node.js has from 22.15 and 23.8 on
 * (@types/node 20 does not know it), or null (Node.js 20).
 */
export const zstd: { compress: SyncCoder, decompress: SyncCoder } | null = (() => {
  const z = zlib as unknown as { zstdCompressSync?: SyncCoder, zstdDecompressSync?: SyncCoder }
  return z.zstdCompressSync === undefined || z.zstdDecompressSync === undefined
    ? null
    : { compress: z.zstdCompressSync, decompress: z.zstdDecompressSync }
})()

/** The content codings @fastify/compress uses here: zstd only where node:zlib has it. */
export const CODINGS: readonly string[] = zstd === null ? ['gzip', 'deflate', 'br'] : ['gzip', 'deflate', 'br', 'zstd']

/** Undo the content coding a response declares. */
export function decode (body: Buffer, encoding: string | string[] | number | undefined): Buffer {
  switch (encoding) {
    case undefined: return body
    case 'gzip': return gunzipSync(body)
    case 'deflate': return inflateSync(body)
    case 'br': return brotliDecompressSync(body)
    case 'zstd':
      if (zstd !== null) return zstd.decompress(body)
  }
  throw new Error(`unexpected content-encoding ${String(encoding)}`)
}

/** The pattern bytes i -> (i * 31) mod 251, as large as needed. */
export function pattern (size: number): Buffer {
  const buf = Buffer.alloc(size)
  for (let i = 0; i < size; i++) buf[i] = (i * 31) % 251
  return buf
}

/** CRC-32C, bit by bit (RFC 9260 Appendix A), as `crc32c=:base64:`. */
export function crc32cField (bytes: Buffer | string): string {
  let crc = 0xFFFFFFFF
  for (const byte of Buffer.from(bytes)) {
    crc ^= byte
    for (let k = 0; k < 8; k++) crc = (crc & 1) !== 0 ? (crc >>> 1) ^ 0x82F63B78 : crc >>> 1
  }
  const out = Buffer.alloc(4)
  out.writeUInt32BE((crc ^ 0xFFFFFFFF) >>> 0)
  return `crc32c=:${out.toString('base64')}:`
}

/** Listen on loopback, write one raw HTTP request, read until the server closes. */
export async function rawExchange (app: FastifyInstance, request: string): Promise<string> {
  const port = await listen(app)
  return await new Promise<string>((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => { socket.write(request) })
    const parts: Buffer[] = []
    socket.on('data', (c) => parts.push(c))
    socket.on('end', () => resolve(Buffer.concat(parts).toString('latin1')))
    socket.on('error', reject)
  })
}

type Push = (chunk: unknown, encoding?: BufferEncoding) => boolean

export interface Pushes { pushed: Array<string | null>, first: Promise<void>, ended: Promise<void> }

/**
 * Replaces `raw`'s own `push`, recording each chunk (as text) and the end (null); `first` settles after the first
 * chunk is pushed, `ended` after the end is.
 */
export function recordPushes (raw: Readable): Pushes {
  const pushed: Array<string | null> = []
  const target = raw as Readable & { push: Push }
  const push = target.push
  let chunkPushed = (): void => {}
  let endPushed = (): void => {}
  const first = new Promise<void>((resolve) => { chunkPushed = resolve })
  const ended = new Promise<void>((resolve) => { endPushed = resolve })
  target.push = function (chunk, encoding) {
    pushed.push(chunk === null ? null : String(chunk))
    const more = push.call(this, chunk, encoding)
    if (chunk === null) endPushed()
    else chunkPushed()
    return more
  }
  return { pushed, first, ended }
}

/**
 * recordPushes on each request `app` gets, from the server's 'request' event (before any body byte is pushed, before
 * any hook runs): the record of a request's raw stream, by that stream.
 */
export function arrivals (app: FastifyInstance): (raw: Readable) => Pushes {
  const records = new WeakMap<Readable, Pushes>()
  // Ahead of fastify's listener, which runs the first hooks at once.
  app.server.prependListener('request', (raw: Readable) => { records.set(raw, recordPushes(raw)) })
  return (raw) => {
    const record = records.get(raw)
    if (record === undefined) throw new Error('a request the server did not announce')
    return record
  }
}
