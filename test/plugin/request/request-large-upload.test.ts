// A 256 MiB multipart upload over a real HTTP/1.1 server, verified while it
// streams: the body is hashed as @fastify/multipart reads it, never held in
// memory. The client produces the bytes chunk by chunk twice (once to
// compute the digest, once to send them), so neither side holds the body.
import { test } from 'tap'
import { createHash } from 'node:crypto'
import { pipeline } from 'node:stream/promises'
import { Writable } from 'node:stream'
import multipart from '@fastify/multipart'
import { heapAfterGc } from '../hardening-helpers'
import { failOnCrash, h1Upload, json, multipartFrame, serve, MULTIPART_TYPE } from './upload-helpers'

const MiB = 1024 * 1024
const CHUNKS = 256
const SIZE = CHUNKS * MiB

// Two MiB of pseudo-random bytes; chunk i is the MiB of it that starts at
// a shifting offset: each chunk differs, and none is allocated (the client's
// own garbage stays out of the memory measurement).
const BASE = Buffer.alloc(2 * MiB)
for (let i = 0, x = 42; i < BASE.length; i++) {
  x = (x * 1103515245 + 12345) >>> 0
  BASE[i] = x >>> 24
}

function chunk (i: number): Buffer {
  const offset = (i * 4099) % MiB
  return BASE.subarray(offset, offset + MiB)
}

const HALFWAY = SIZE / 2

/**
 * A sink that counts, and halfway through the upload stops to collect
 * garbage and measure the Buffers still alive: what the server holds of the
 * body at that moment (the plugin holds back its last chunk and 1 KiB).
 */
function measuringSink (): Writable & { bytes: number, retained: number | null } {
  const out = new Writable({
    write (chunk: Buffer, _encoding, callback) {
      const crossed = out.bytes < HALFWAY && out.bytes + chunk.length >= HALFWAY
      out.bytes += chunk.length
      if (!crossed) {
        callback()
        return
      }
      heapAfterGc().then(() => {
        out.retained = process.memoryUsage().arrayBuffers
        callback()
      }, callback)
    }
  }) as Writable & { bytes: number, retained: number | null }
  out.bytes = 0
  out.retained = null
  return out
}

test('a 256 MiB multipart upload streamed in 1 MiB chunks is verified without buffering', { timeout: 120000 }, async (t) => {
  failOnCrash(t)
  let retained: number | null = null
  const { port } = await serve(t, 'h1', {}, async (app) => {
    await app.register(multipart)
    app.post('/big', { bodyLimit: 2 * SIZE }, async (request) => {
      const file = await request.file({ limits: { fileSize: 2 * SIZE } })
      if (file === undefined) throw new Error('no file')
      const out = measuringSink()
      await pipeline(file.file, out)
      retained = out.retained
      return { bytes: out.bytes, verification: request.digestVerification }
    })
  })
  const { head, tail } = multipartFrame({ title: 'big' }, 'big.bin')

  const hash = createHash('sha256').update(head)
  for (let i = 0; i < CHUNKS; i++) hash.update(chunk(i))
  const digest = `sha-256=:${hash.update(tail).digest('base64')}:`

  async function * body (): AsyncGenerator<Buffer> {
    yield head
    for (let i = 0; i < CHUNKS; i++) yield chunk(i)
    yield tail
  }

  /**
   * One upload, with or without the Content-Digest: its answer, and the
   * Buffers alive halfway through it, after a full garbage collection, over
   * those alive before it. Peak RSS is no measure here: garbage Buffers pile
   * up to 70-120 MiB before a collection on Node.js 24, with or without the
   * plugin, and RSS is not given back between uploads.
   */
  async function upload (withDigest: boolean): Promise<{ res: Awaited<ReturnType<typeof h1Upload>>, held: number }> {
    await heapAfterGc()
    const before = process.memoryUsage().arrayBuffers
    retained = null
    const started = Date.now()
    const res = await h1Upload(port, {
      path: '/big',
      headers: {
        'content-type': MULTIPART_TYPE,
        'content-length': String(head.length + SIZE + tail.length),
        ...(withDigest ? { 'content-digest': digest } : {})
      },
      body: body()
    })
    const held = (retained ?? Infinity) - before
    t.comment(`${withDigest ? 'verified' : 'no digest'}: uploaded in ${Date.now() - started} ms, Buffers alive halfway: ${(held / MiB).toFixed(1)} MiB`)
    return { res, held }
  }

  const verified = await upload(true)
  t.equal(verified.res.status, 200)
  t.same(verified.res.status === 200 ? json(verified.res) : null, {
    bytes: SIZE,
    verification: { verified: true, fields: [{ field: 'Content-Digest', ok: true, results: [{ algorithm: 'sha-256', outcome: 'matched' }] }] }
  })
  const plain = await upload(false)
  t.equal(plain.res.status, 200)
  t.same(plain.res.status === 200 ? json(plain.res).verification : null, { verified: false, reason: 'no-digest', fields: [] })
  const mib = (n: number): string => (n / MiB).toFixed(1)
  // Holding the body would keep 128 MiB alive by then.
  t.ok(verified.held < 16 * MiB, `halfway through the verified upload ${mib(verified.held)} MiB of Buffers are alive (the same upload without a digest: ${mib(plain.held)} MiB)`)
})
