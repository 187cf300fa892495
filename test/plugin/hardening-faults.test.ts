// Faults over a real listening server: clients that abort or reset mid-upload
// and mid-download, slow readers, content that does not decode, response
// streams that fail, files deleted, replaced or unreadable while they are
// served. What must hold:
// * the handler never sees a body as complete when it is not (it never runs,
//   or its stream errors);
// * every completed response carries digests of exactly the bytes it sent
//   (each one recomputed here), and a response that fails is either a
//   well-formed error with digests of its own body or cut without them;
// * the server keeps serving, and nothing leaks: connections, source streams,
//   file descriptors, handles, heap (after a thousand aborted requests).
import { test } from 'tap'
import { connect, type Socket } from 'node:net'
import { request as httpRequest } from 'node:http'
import { once } from 'node:events'
import { renameSync, truncateSync, unlinkSync, writeFileSync, type Stats } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { gunzipSync, gzipSync } from 'node:zlib'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import compress from '@fastify/compress'
import fastifyStatic from '@fastify/static'
import digestFields = require('../../lib/index')
import { arrivals, buildApp, listen, pattern, sf } from '../helpers'
import {
  activeResources, checkDigests, connections, fetchRaw, heapAfterGc, openFiles, sleep, type Received
} from './hardening-helpers'

const { staticHeaders } = digestFields

interface Closeable { teardown (fn: () => unknown): void }

interface Served {
  app: FastifyInstance
  port: number
  dir: string
  /** What each handler saw, by the request's x-id: a complete body, or an error. */
  handled: Map<string, 'complete' | 'error'>
  /** Response source streams created and destroyed (ended streams are destroyed too). */
  sources: { created: number, destroyed: number }
  /** Called by @fastify/static's setHeaders before staticHeaders (to alter the file). */
  onStatic: { hook: ((path: string, stat: Stats) => void) | null }
  /** Settles once the server has received body bytes of the request with this x-id. */
  bodyArrived: (id: string) => Promise<void>
}

const BIG = pattern(2 * 1024 * 1024)
const TEXT = Buffer.from('a compressible line of text for the static file\n'.repeat(2000))

async function serve (t: Closeable, withCompress: boolean): Promise<Served> {
  const dir = await mkdtemp(join(tmpdir(), 'digest-faults-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  writeFileSync(join(dir, 'big.bin'), BIG)
  writeFileSync(join(dir, 'text.txt'), TEXT)
  const digest = { contentDigest: true, reprDigest: true, maxBufferSize: 64 * 1024 }
  const app = await buildApp(t, digest, {}, async (app) => {
    if (withCompress) await app.register(compress, { threshold: 1 })
  })
  const onStatic: Served['onStatic'] = { hook: null }
  await app.register(fastifyStatic, {
    root: dir,
    setHeaders (reply: FastifyReply, path: string, stat: Stats) {
      onStatic.hook?.(path, stat)
      staticHeaders(reply, path, stat)
    }
  })
  const handled = new Map<string, 'complete' | 'error'>()
  const sources = { created: 0, destroyed: 0 }
  const id = (request: FastifyRequest): string => String(request.headers['x-id'])
  const record = arrivals(app)
  const begun = new Map<string, { promise: Promise<void>, resolve: () => void }>()
  const begin = (key: string): { promise: Promise<void>, resolve: () => void } => {
    let entry = begun.get(key)
    if (entry === undefined) {
      let resolve = (): void => {}
      const promise = new Promise<void>((_resolve) => { resolve = _resolve })
      entry = { promise, resolve }
      begun.set(key, entry)
    }
    return entry
  }
  app.addHook('onRequest', async (request) => {
    const entry = begin(id(request))
    record(request.raw).first.then(entry.resolve, () => {})
  })
  const bodyArrived = async (key: string): Promise<void> => {
    await begin(key).promise
    begun.delete(key)
  }
  app.addContentTypeParser('application/octet-stream', { parseAs: 'buffer' }, (_req, body, done) => done(null, body))
  app.addContentTypeParser('application/x-stream', (_req, payload, done) => done(null, payload))
  app.post('/upload', async (request) => {
    handled.set(id(request), 'complete')
    return { bytes: (request.body as Buffer).length, verification: request.digestVerification }
  })
  app.post('/upload-stream', async (request) => {
    let bytes = 0
    try {
      for await (const chunk of request.body as Readable) bytes += (chunk as Buffer).length
    } catch (err) {
      handled.set(id(request), 'error')
      throw err
    }
    handled.set(id(request), 'complete')
    return { bytes, verification: request.digestVerification }
  })
  // A generated body of `size` bytes in 16 KiB chunks; `fail` bytes in, it errors instead.
  app.get('/stream', async (request, reply) => {
    const query = request.query as { size?: string, fail?: string }
    const size = Number(query.size ?? 0)
    const fail = query.fail === undefined ? Infinity : Number(query.fail)
    let sent = 0
    sources.created++
    const source = new Readable({
      read () {
        setImmediate(() => {
          if (sent >= fail) {
            this.destroy(new Error('the source failed'))
            return
          }
          const n = Math.min(16384, size - sent)
          this.push(n === 0 ? null : BIG.subarray(sent % (BIG.length - 16384), sent % (BIG.length - 16384) + n))
          sent += n
        })
      },
      destroy (err, callback) {
        sources.destroyed++
        callback(err)
      }
    })
    return reply.type('application/octet-stream').send(source)
  })
  return { app, port: await listen(app), dir, handled, sources, onStatic, bodyArrived }
}

/** Wait until `check` holds (polled: no event tells files, handles or sockets are released), or give up after `ms`. */
async function eventually (check: () => boolean | Promise<boolean>, ms = 2000): Promise<boolean> {
  const until = Date.now() + ms
  while (Date.now() < until) {
    if (await check()) return true
    await sleep(10)
  }
  return await check()
}

/** A correct upload still goes through, verified: [status, verified]. */
async function stillServing (port: number): Promise<[number, boolean]> {
  const body = Buffer.from('still serving')
  const res = await fetchRaw(port, { method: 'POST', path: '/upload', headers: { 'content-type': 'application/octet-stream', 'content-digest': sf(body), 'x-id': 'check' }, body })
  return [res.status, JSON.parse(res.body.toString()).verification.verified]
}

type Fault = 'destroy' | 'reset' | 'half-close'

/**
 * An upload that stops halfway: the socket destroyed, reset (RST), or
 * half-closed, once the server has received part of its body.
 */
async function faultyUpload (port: number, path: string, headers: Record<string, string>, body: Buffer, fault: Fault,
  bodyArrived: Served['bodyArrived']): Promise<void> {
  const socket = connect(port, '127.0.0.1')
  socket.on('error', () => {})
  socket.resume()
  await once(socket, 'connect')
  const lines = Object.entries({ host: 'x', 'content-length': String(body.length), ...headers }).map(([k, v]) => `${k}: ${v}\r\n`).join('')
  socket.write(`POST ${path} HTTP/1.1\r\n${lines}\r\n`)
  socket.write(body.subarray(0, body.length >> 1))
  await bodyArrived(headers['x-id'] as string)
  if (fault === 'destroy') socket.destroy()
  else if (fault === 'reset') socket.resetAndDestroy()
  else socket.end()
  if (!socket.closed) await once(socket, 'close')
}

test('uploads cut short (destroyed, reset, half-closed): the handler never sees them as complete; nothing is left open', async (t) => {
  const identity = pattern(256 * 1024)
  const coded = gzipSync(identity, { level: 1 })
  for (const withCompress of [false, true]) {
    const { app, port, handled, bodyArrived } = await serve(t, withCompress)
    const ids: string[] = []
    let n = 0
    for (const path of ['/upload', '/upload-stream']) {
      for (const coding of ['identity', 'gzip']) {
        for (const fault of ['destroy', 'reset', 'half-close'] as Fault[]) {
          for (let i = 0; i < 4; i++) {
            const id = `u${n++}`
            ids.push(id)
            const headers: Record<string, string> = coding === 'gzip'
              ? { 'content-encoding': 'gzip', 'repr-digest': sf(identity), 'content-digest': sf(coded) }
              : { 'content-digest': sf(identity) }
            headers['content-type'] = path === '/upload' ? 'application/octet-stream' : 'application/x-stream'
            headers['x-id'] = id
            await faultyUpload(port, path, headers, coding === 'gzip' ? coded : identity, fault, bodyArrived)
          }
        }
      }
    }
    await eventually(async () => (await connections(app)) === 0)
    const complete = ids.filter((id) => handled.get(id) === 'complete')
    t.same(complete, [], `compress: ${withCompress}: no handler saw one of ${ids.length} cut uploads as complete`)
    t.ok(ids.some((id) => handled.get(id) === 'error'), 'stream handlers saw an error')
    t.equal(await connections(app), 0, 'no connection left open')
    t.same(await stillServing(port), [200, true], `compress: ${withCompress}: still serving, still verifying`)
  }
})

test('content that does not decode, or a coding nothing decodes: 4xx, and the handler never sees a complete body', async (t) => {
  const identity = Buffer.from('{"valid": "json"}\n'.repeat(100))
  const coded = gzipSync(identity)
  const bodies: Array<[string, Buffer, string]> = [
    ['not gzip at all', Buffer.from('this is not gzip'), 'gzip'],
    ['gzip cut in half', coded.subarray(0, coded.length >> 1), 'gzip'],
    ['gzip with a corrupted byte', Buffer.concat([coded.subarray(0, 20), Buffer.from([coded[20] as number ^ 0xff]), coded.subarray(21)]), 'gzip'],
    ['an unknown coding', coded, 'zstd-ish']
  ]
  for (const withCompress of [false, true]) {
    const { port, handled } = await serve(t, withCompress)
    let n = 0
    for (const [label, body, coding] of bodies) {
      for (const path of ['/upload', '/upload-stream']) {
        const id = `c${withCompress}${n++}`
        const res = await fetchRaw(port, {
          method: 'POST',
          path,
          headers: { 'content-type': path === '/upload' ? 'application/octet-stream' : 'application/x-stream', 'content-encoding': coding, 'repr-digest': sf(identity), 'x-id': id },
          body
        })
        const where = `compress: ${withCompress} ${path} ${label}`
        t.ok(res.status >= 400 && res.status < 500, `${where}: ${res.status}`)
        t.not(handled.get(id), 'complete', `${where}: never complete`)
        t.same(checkDigests(res).wrong, [], `${where}: the error's digests are of its own body`)
      }
    }
    t.same(await stillServing(port), [200, true], `compress: ${withCompress}: still serving, still verifying`)
  }
})

/** A download given up after its first chunk: the socket destroyed or reset. */
async function faultyDownload (port: number, path: string, headers: Record<string, string>, fault: 'destroy' | 'reset'): Promise<void> {
  await new Promise<void>((resolve) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, headers, agent: false }, (res) => {
      res.once('data', () => {
        const socket = req.socket as Socket
        if (fault === 'reset') socket.resetAndDestroy()
        else req.destroy()
        resolve()
      })
      res.on('error', () => {})
      res.on('end', resolve)
    })
    req.on('error', () => resolve())
    req.end()
  })
}

const DOWNLOADS: Array<[string, Record<string, string>]> = []
for (const path of ['/stream?size=1048576', '/big.bin', '/text.txt', '/big.bin?range']) {
  for (const te of [false, true]) {
    for (const gzip of [false, true]) {
      const headers: Record<string, string> = {}
      if (te) headers.te = 'trailers'
      if (gzip) headers['accept-encoding'] = 'gzip'
      if (path.endsWith('?range')) headers.range = 'bytes=1000-1500000'
      DOWNLOADS.push([path.replace('?range', ''), headers])
    }
  }
}

test('downloads given up mid-way (destroyed, reset): every source stream and file is released', async (t) => {
  const { app, port, sources } = await serve(t, true)
  const files = openFiles()
  for (const fault of ['destroy', 'reset'] as const) {
    for (const [path, headers] of DOWNLOADS) {
      for (let i = 0; i < 3; i++) await faultyDownload(port, path, headers, fault)
    }
  }
  t.ok(await eventually(async () => (await connections(app)) === 0), 'no connection left open')
  t.ok(await eventually(() => sources.destroyed === sources.created), `${sources.destroyed} of ${sources.created} generated sources destroyed`)
  if (files === null) t.skip('open files: no /proc/self/fd here', async () => {})
  else t.ok(await eventually(() => (openFiles() as number) <= files), `open files back to ${files} (${String(openFiles())})`)
  // A HEAD of a streamed route larger than maxBufferSize gives up on it too.
  const head = await fetchRaw(port, { method: 'HEAD', path: '/stream?size=1048576' })
  t.equal(head.status, 200)
  t.ok(await eventually(() => sources.destroyed === sources.created), 'the HEAD\'s source destroyed')
  t.same(await stillServing(port), [200, true], 'after aborted downloads: still serving, still verifying')
})

test('slow readers get complete responses whose digests are of the bytes received', async (t) => {
  const { port } = await serve(t, true)
  for (const [path, headers] of DOWNLOADS) {
    const res = await new Promise<Received>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port, path, headers, agent: false }, (response) => {
        const chunks: Buffer[] = []
        let pauses = 0
        response.on('data', (chunk: Buffer) => {
          chunks.push(chunk)
          if (pauses++ < 4) {
            response.pause()
            setTimeout(() => response.resume(), 15)
          }
        })
        response.on('error', reject)
        response.on('end', () => resolve({ status: response.statusCode as number, headers: response.headers, trailers: response.trailers, body: Buffer.concat(chunks) }))
      })
      req.on('error', reject)
      req.end()
    })
    const where = `${path} ${JSON.stringify(headers)}`
    t.ok(res.status === 200 || res.status === 206, where)
    const whole = path === '/big.bin' ? BIG : path === '/text.txt' ? TEXT : undefined
    const { checked, wrong } = checkDigests(res, whole)
    t.same(wrong, [], `${where}: every digest is of the bytes received`)
    // Over maxBufferSize without trailers a generated stream goes without digests (README); a file never does.
    // Gzipped, the generated pattern is within maxBufferSize.
    const undigested = path.startsWith('/stream') && !('te' in headers) && !('accept-encoding' in headers)
    if (undigested) t.equal(checked, 0, `${where}: no digests`)
    else t.ok(checked > 0, `${where}: ${checked} digests checked`)
  }
})

test('response streams that fail: before the first byte, a well-formed error with its own digests; after it, cut without digests', async (t) => {
  const { app, port } = await serve(t, true)
  for (const te of [false, true]) {
    for (const gzip of [false, true]) {
      const headers: Record<string, string> = {}
      if (te) headers.te = 'trailers'
      if (gzip) headers['accept-encoding'] = 'gzip'
      const where = JSON.stringify(headers)
      const early = await fetchRaw(port, { path: '/stream?size=100000&fail=0', headers })
      t.equal(early.status, 500, `${where}: an error before the first byte is a 500`)
      t.equal(early.headers['transfer-encoding'], undefined, `${where}: sent with a Content-Length, not chunked`)
      t.equal(early.headers.trailer, undefined, `${where}: no trailers announced for the error`)
      const { checked, wrong } = checkDigests(early)
      t.ok(checked > 0 && wrong.length === 0, `${where}: the 500's own digests (${checked})`)
      // Past maxBufferSize (or with trailers) the headers are gone when it
      // fails: the response is cut. Gzipped, the generated pattern stays
      // within maxBufferSize: without trailers it is still buffered, and the
      // failure is a 500 with its own digests.
      const late = await fetchRaw(port, { path: '/stream?size=1000000&fail=200000', headers }).then((r) => r, (err: Error) => err)
      if (te || !gzip) {
        t.match(late, { code: 'ECONNRESET', message: 'aborted' }, `${where}: a late failure cuts the response`)
      } else {
        t.equal((late as Received).status, 500, `${where}: within maxBufferSize a late failure is still a 500`)
        t.same(checkDigests(late as Received).wrong, [])
      }
    }
  }
  t.ok(await eventually(async () => (await connections(app)) === 0))
  t.same(await stillServing(port), [200, true], 'after failing streams: still serving, still verifying')
})

test('static files deleted, replaced, rewritten or unreadable while served: never another version\'s digest, never an uncaught error', async (t) => {
  const { port, dir, onStatic } = await serve(t, true)
  const path = join(dir, 'victim.txt')
  const variants: Array<Record<string, string>> = [{}, { te: 'trailers' }, { 'accept-encoding': 'gzip' }, { te: 'trailers', 'accept-encoding': 'gzip' }]
  const original = Buffer.from('the original version of the file\n'.repeat(50))
  const replacement = Buffer.from('THE REPLACEMENT VERSION of the file\n'.repeat(50)).subarray(0, original.length)

  // Deleted after @fastify/send's stat, before it opened the file.
  for (const headers of variants) {
    writeFileSync(path, original)
    onStatic.hook = (p) => unlinkSync(p)
    const res = await fetchRaw(port, { path: '/victim.txt', headers })
    onStatic.hook = null
    t.equal(res.status, 500, `deleted ${JSON.stringify(headers)}: fastify's 500`)
    t.equal(res.headers['transfer-encoding'], undefined, 'well-formed: a Content-Length, no chunked framing left over')
    const { checked, wrong } = checkDigests(res)
    t.ok(checked > 0 && wrong.length === 0, 'digests of the error body')
  }

  // Replaced (a deploy's rename) after the stat, with its digest cached from an earlier request.
  for (const headers of variants) {
    writeFileSync(path, original)
    const first = await fetchRaw(port, { path: '/victim.txt', headers })
    t.same(checkDigests(first, original).wrong, [])
    onStatic.hook = (p) => {
      writeFileSync(`${p}.new`, replacement)
      renameSync(`${p}.new`, p)
    }
    const res = await fetchRaw(port, { path: '/victim.txt', headers })
    onStatic.hook = null
    const where = `replaced ${JSON.stringify(headers)}`
    t.equal(res.status, 200, where)
    const fields = { ...res.headers, ...res.trailers }
    t.ok(fields['content-digest'], `${where}: a Content-Digest`)
    const { wrong } = checkDigests(res)
    t.same(wrong, [], `${where}: of the bytes sent (the new file), not the cached digest of the old one`)
    t.equal(res.headers['content-encoding'], headers['accept-encoding'], `${where}: coded as asked`)
    // Coded or not: the file opened is not the one stat'ed, whose digests are the only whole-file ones known.
    t.equal(fields['repr-digest'], undefined,
      `${where}: no whole-file Repr-Digest for a version that was not the one described`)
  }

  // Rewritten in place, longer, after the stat: the bytes sent are a prefix.
  writeFileSync(path, original)
  onStatic.hook = (p) => writeFileSync(p, Buffer.concat([replacement, replacement]))
  const rewritten = await fetchRaw(port, { path: '/victim.txt' })
  onStatic.hook = null
  t.equal(rewritten.status, 200)
  t.same(checkDigests(rewritten).wrong, [], 'rewritten: digests of the bytes sent')
  t.equal(rewritten.headers['repr-digest'], undefined)

  // Truncated while a slow reader downloads it: cut (fewer bytes than Content-Length), or complete and right.
  for (const headers of variants) {
    writeFileSync(join(dir, 'shrinking.bin'), BIG)
    const res = await new Promise<Received | Error>((resolve) => {
      const req = httpRequest({ host: '127.0.0.1', port, path: '/shrinking.bin', headers, agent: false }, (response) => {
        const chunks: Buffer[] = []
        response.once('data', () => truncateSync(join(dir, 'shrinking.bin'), 1000))
        response.on('data', (chunk: Buffer) => chunks.push(chunk))
        response.on('error', resolve)
        response.on('end', () => resolve({ status: response.statusCode as number, headers: response.headers, trailers: response.trailers, body: Buffer.concat(chunks) }))
      })
      req.on('error', resolve)
      req.end()
    })
    const where = `truncated ${JSON.stringify(headers)}`
    if (res instanceof Error) {
      // Fewer bytes than announced: the connection is cut, never ended as if whole.
      t.match(res, { code: 'ECONNRESET', message: 'aborted' }, `${where}: cut`)
      continue
    }
    // Chunked (trailers): the framing cannot tell the copy is torn, the digests do.
    // Content-Digest is of the bytes sent; Repr-Digest, announced before the
    // first byte, is the whole file's, which the bytes received do not match.
    const { wrong } = checkDigests(res)
    t.notOk(wrong.includes('content-digest sha-256'), `${where}: Content-Digest of the bytes sent`)
    const received = res.headers['content-encoding'] === 'gzip' ? gunzipSync(res.body) : res.body
    if (received.equals(BIG)) {
      t.same(wrong, [], `${where}: read whole before the truncation, and so described`)
    } else {
      t.equal(res.headers['repr-digest'], sf(BIG), `${where}: Repr-Digest of the file as it was described`)
      t.ok(wrong.includes('repr-digest sha-256'), `${where}: so the client sees the copy is torn`)
    }
  }

  t.same(await stillServing(port), [200, true], 'after static faults: still serving, still verifying')
})

test('a thousand aborted requests: connections, handles and heap back where they were', async (t) => {
  const { app, port, sources, bodyArrived } = await serve(t, true)
  const identity = pattern(128 * 1024)
  const digest = sf(identity)
  let uploads = 0
  const round = async (count: number): Promise<void> => {
    const jobs: Array<() => Promise<void>> = []
    for (let i = 0; i < count; i++) {
      const fault = i % 3 === 0 ? 'reset' : 'destroy'
      if (i % 2 === 0) {
        const type = i % 4 === 0 ? 'application/octet-stream' : 'application/x-stream'
        const uploadHeaders = { 'content-type': type, 'content-digest': digest, 'x-id': `bulk${uploads++}` }
        const path = i % 4 === 0 ? '/upload' : '/upload-stream'
        jobs.push(() => faultyUpload(port, path, uploadHeaders, identity, fault, bodyArrived))
      } else {
        const [path, headers] = DOWNLOADS[i % DOWNLOADS.length] as [string, Record<string, string>]
        jobs.push(() => faultyDownload(port, path, headers, fault))
      }
    }
    const concurrency = 16
    let next = 0
    await Promise.all(Array.from({ length: concurrency }, async () => {
      while (next < jobs.length) await (jobs[next++] as () => Promise<void>)()
    }))
    await eventually(async () => (await connections(app)) === 0, 5000)
  }
  await round(100) // warm up: caches, JIT, pools
  const heapBefore = await heapAfterGc()
  const resourcesBefore = activeResources()
  const filesBefore = openFiles()
  const started = Date.now()
  await round(1000)
  const elapsed = Date.now() - started
  t.equal(await connections(app), 0, 'no connection left open')
  t.ok(await eventually(() => sources.destroyed === sources.created), `all ${sources.created} generated sources destroyed`)
  if (filesBefore === null) t.skip('open files: no /proc/self/fd here', async () => {})
  else t.ok(await eventually(() => (openFiles() as number) <= filesBefore), 'no file descriptor left open')
  const settled = await eventually(() => Object.entries(activeResources()).every(([type, n]) => n <= (resourcesBefore[type] ?? 0)))
  t.ok(settled, `handles ${JSON.stringify(activeResources())} (before: ${JSON.stringify(resourcesBefore)})`)
  const grown = (await heapAfterGc()) - heapBefore
  t.ok(grown < 8 * 1024 * 1024, `heap grew by ${Math.round(grown / 1024)} KiB over 1000 aborted requests (${elapsed} ms)`)
  t.same(await stillServing(port), [200, true], 'after a thousand aborts: still serving, still verifying')
})
