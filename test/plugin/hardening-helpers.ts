// Helpers for the hardening tests (hostile input, resource limits, faults):
// a node:http client that keeps the bytes exactly as received, a checker
// that recomputes every digest field of a response from those bytes, a count
// of what node:crypto hashes, and leak probes.
import { createHash, type BinaryLike, type BinaryToTextEncoding, type Encoding, type Hash } from 'node:crypto'
import { readdirSync } from 'node:fs'
import { request as httpRequest, type Agent, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http'
import { syncBuiltinESMExports } from 'node:module'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib'
import type { FastifyInstance } from 'fastify'
import crypto = require('node:crypto')

export { sleep } from '../helpers'

export interface Received {
  status: number
  headers: IncomingHttpHeaders
  trailers: Record<string, string | undefined>
  /** The content as received: after transfer coding, before content coding. */
  body: Buffer
}

export interface Fetch {
  method?: string
  path: string
  headers?: OutgoingHttpHeaders
  body?: Buffer | string
  agent?: Agent
}

/** One request over a real connection; resolves with everything received. */
export function fetchRaw (port: number, { method = 'GET', path, headers = {}, body, agent }: Fetch): Promise<Received> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method, path, headers, agent: agent ?? false }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('error', reject)
      res.on('end', () => resolve({
        status: res.statusCode as number,
        headers: res.headers,
        trailers: res.trailers,
        body: Buffer.concat(chunks)
      }))
    })
    req.on('error', reject)
    req.end(body)
  })
}

const NODE_HASHES: Record<string, string> = { 'sha-256': 'sha256', 'sha-512': 'sha512' }

/** Members of a digest field value (`alg=:b64:`, comma separated), parsed independently of the plugin. */
export function members (value: unknown): Array<[string, string]> {
  if (typeof value !== 'string') return []
  return value.split(',').map((m) => {
    const match = /^\s*([a-z0-9-]+)=:([A-Za-z0-9+/=]*):\s*$/.exec(m)
    if (match === null) throw new Error(`unexpected digest member ${JSON.stringify(m)}`)
    return [match[1] as string, match[2] as string]
  })
}

export function b64 (bytes: Buffer, algorithm: string): string {
  const name = NODE_HASHES[algorithm]
  if (name === undefined) throw new Error(`no independent implementation of ${algorithm}`)
  return createHash(name).update(bytes).digest('base64')
}

function decoded (body: Buffer, encoding: unknown): Buffer {
  try {
    return decodeAs(body, encoding)
  } catch {
    // fastify's error after a compressed stream failed before its first
    // byte keeps the stream's `content-encoding: gzip` on an uncoded body
    // (as without this plugin: @fastify/compress does not code a reply that
    // already names a coding). The digests then rightly describe the bytes.
    return body
  }
}

function decodeAs (body: Buffer, encoding: unknown): Buffer {
  switch (encoding) {
    case undefined: return body
    case 'gzip': return gunzipSync(body)
    case 'deflate': return inflateSync(body)
    case 'br': return brotliDecompressSync(body)
    default: throw new Error(`unexpected content-encoding ${String(encoding)}`)
  }
}

export interface Checked {
  /** How many digest members were recomputed and matched. */
  checked: number
  /** Members that did not match the bytes (field, algorithm). */
  wrong: string[]
}

/**
 * Recompute every Content-Digest / Repr-Digest member of a completed
 * response, header or trailer, from the bytes received: Content-Digest over
 * the content as received, Repr-Digest (default mode) over it decoded, for a
 * 200. `whole` is the representation when the response is a part (206).
 */
export function checkDigests (res: Received, whole?: Buffer): Checked {
  const out: Checked = { checked: 0, wrong: [] }
  const fields: Array<[string, Buffer | null]> = [
    ['content-digest', res.body],
    ['repr-digest', res.status === 206 ? whole ?? null : res.status === 406 ? null : decoded(res.body, res.headers['content-encoding'])]
  ]
  for (const [field, bytes] of fields) {
    for (const value of [res.headers[field], res.trailers[field]]) {
      for (const [algorithm, digest] of members(value)) {
        if (bytes === null) continue
        if (b64(bytes, algorithm) === digest) out.checked++
        else out.wrong.push(`${field} ${algorithm}`)
      }
    }
  }
  return out
}

export function connections (app: FastifyInstance): Promise<number> {
  return new Promise((resolve, reject) => app.server.getConnections((err, n) => err ? reject(err) : resolve(n)))
}

/** Open file descriptors of this process (Linux), or null where /proc is not there (the check is skipped, not passed). */
export function openFiles (): number | null {
  try {
    return readdirSync('/proc/self/fd').length
  } catch {
    return null
  }
}

/** Active handles and requests by type, e.g. { TCPSocketWrap: 2, Timeout: 1 }. */
export function activeResources (): Record<string, number> {
  const out: Record<string, number> = {}
  for (const type of process.getActiveResourcesInfo()) out[type] = (out[type] ?? 0) + 1
  return out
}

let gcFunction: (() => void) | null = null

/** Heap used after a full garbage collection. */
export async function heapAfterGc (): Promise<number> {
  if (gcFunction === null) {
    setFlagsFromString('--expose-gc')
    gcFunction = runInNewContext('gc') as () => void
  }
  for (let i = 0; i < 3; i++) {
    gcFunction()
    await new Promise((resolve) => setImmediate(resolve))
  }
  return process.memoryUsage().heapUsed
}

/** What node:crypto hashed while counting, by registry key. */
export interface HashCount {
  /** Bytes given to Hash objects and to one-shot crypto.hash(). */
  bytes: Map<string, number>
  /** Hash objects fed data, plus one-shot digests computed. */
  passes: Map<string, number>
  reset (): void
  restore (): void
}

const REGISTRY_KEYS: Record<string, string> = { sha256: 'sha-256', sha512: 'sha-512', md5: 'md5', sha1: 'sha' }

/**
 * Counts what node:crypto hashes: createHash() and hash() of node:crypto
 * are wrapped, and module.syncBuiltinESMExports() (Node.js's public way to
 * change a builtin) makes ES modules see it too. Nothing of the plugin is
 * replaced: every hash it computes is a real one. The four registry keys
 * backed by node:crypto are seen; the checksums are plain code.
 */
export function countHashing (): HashCount {
  const { createHash: realCreateHash, hash } = crypto
  const bytes = new Map<string, number>()
  const passes = new Map<string, number>()
  const add = (map: Map<string, number>, name: string, n: number): void => {
    const key = REGISTRY_KEYS[name] ?? name
    map.set(key, (map.get(key) ?? 0) + n)
  }
  const length = (data: unknown): number => typeof data === 'string' ? Buffer.byteLength(data) : (data as Uint8Array).byteLength
  const target = crypto as { createHash: typeof createHash, hash: typeof hash }
  target.createHash = (name, options) => {
    const real = realCreateHash(name, options)
    const update = real.update
    let fed = false
    real.update = function (this: Hash, ...args: [BinaryLike, Encoding?]): Hash {
      if (!fed) add(passes, name, 1)
      fed = true
      add(bytes, name, length(args[0]))
      return Reflect.apply(update, this, args) as Hash
    }
    return real
  }
  target.hash = ((name: string, data: BinaryLike, output?: BinaryToTextEncoding) => {
    add(passes, name, 1)
    add(bytes, name, length(data))
    return hash(name, data, output)
  }) as typeof hash
  syncBuiltinESMExports()
  return {
    bytes,
    passes,
    reset () {
      bytes.clear()
      passes.clear()
    },
    restore () {
      target.createHash = realCreateHash
      target.hash = hash
      syncBuiltinESMExports()
    }
  }
}
