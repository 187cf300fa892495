// A 256 MiB multipart upload over a real HTTP/1.1 server, verified while it
// streams: the body is hashed as @fastify/multipart reads it, never held in
// memory. The client produces the bytes chunk by chunk twice (once to
// compute the digest, once to send them), so neither side holds the body.
import { test } from 'tap'
import { createHash } from 'node:crypto'
import { pipeline } from 'node:stream/promises'
import multipart from '@fastify/multipart'
import { heapAfterGc } from './hardening-helpers'
import { failOnCrash, h1Upload, json, multipartFrame, serve, sink, MULTIPART_TYPE } from './upload-helpers'

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

test('a 256 MiB multipart upload streamed in 1 MiB chunks is verified without buffering', { timeout: 120000 }, async (t) => {
  failOnCrash(t)
  const { port } = await serve(t, 'h1', {}, async (app) => {
    await app.register(multipart)
    app.post('/big', { bodyLimit: 2 * SIZE }, async (request) => {
      const file = await request.file({ limits: { fileSize: 2 * SIZE } })
      if (file === undefined) throw new Error('no file')
      const out = sink()
      await pipeline(file.file, out)
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

  /** One upload, with or without the Content-Digest; its answer and the RSS growth while it ran. */
  async function upload (withDigest: boolean): Promise<{ res: Awaited<ReturnType<typeof h1Upload>>, growth: number }> {
    await heapAfterGc()
    const before = process.memoryUsage().rss
    let peak = before
    const sampler = setInterval(() => { peak = Math.max(peak, process.memoryUsage().rss) }, 50)
    t.teardown(() => clearInterval(sampler))
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
    clearInterval(sampler)
    peak = Math.max(peak, process.memoryUsage().rss)
    const growth = peak - before
    t.comment(`${withDigest ? 'verified' : 'no digest'}: uploaded in ${Date.now() - started} ms, RSS growth ${(growth / MiB).toFixed(1)} MiB`)
    return { res, growth }
  }

  // RSS growth is compared between uploads in the same process, as its
  // level is Node's: the first upload of a process grows RSS by what the
  // heap and the sockets settle at (5 MiB on Node.js 20, 110 MiB on 24, with
  // or without the plugin). So one upload without a digest warms the process
  // up unmeasured, then the verified one and the same upload without a
  // digest (nothing hashed) are measured; a ceiling of half the body besides.
  const warmUp = await upload(false)
  t.equal(warmUp.res.status, 200, 'warm-up upload')
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
  t.ok(verified.growth < plain.growth + 32 * MiB, `verifying grew RSS by ${mib(verified.growth)} MiB, the same upload without a digest by ${mib(plain.growth)} MiB (allowed: 32 MiB more)`)
  t.ok(verified.growth < SIZE / 2, `RSS grew by ${mib(verified.growth)} MiB during the verified upload: far less than the ${mib(SIZE)} MiB body`)
})
