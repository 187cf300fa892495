'use strict'

// A large upload through a verifying route: memory must stay bounded (not
// proportional to the body) and throughput close to what hashing costs.
//
//   npx tsc -p tsconfig.json && node benchmarks/upload-memory.js
//
// The server runs in a child process (so that its RSS is its own) with the
// built plugin (dist/index.js), `verify: 'required'`, and a stream-passing
// parser whose handler drains the body into a sink. The client generates the
// body on the fly (a 1 MiB block with a per-block counter, never the whole
// body in memory) and computes its sha-256 incrementally, in two ways:
// * header:  a first pass over the same generated data computes the digest,
//            sent as a Content-Digest header with Content-Length;
// * trailer: one pass, chunked, the digest sent as a Content-Digest trailer.
// A run with a wrong digest checks that the server refuses it at the end, and
// a run through a route with `digest: false` gives the baseline throughput.
//
// Settings: UPLOAD_MIB (256).

const { fork } = require('node:child_process')
const { createHash } = require('node:crypto')
const fs = require('node:fs')
const http = require('node:http')
const path = require('node:path')

const MiB = 1024 * 1024
const SIZE_MIB = Number(process.env.UPLOAD_MIB ?? 256)

// ---------------------------------------------------------------- server side

function kernelPeakReset () {
  try { fs.writeFileSync('/proc/self/clear_refs', '5') } catch {}
}

function kernelPeak () {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync('/proc/self/status', 'utf8'))
    return m === null ? 0 : Number(m[1]) * 1024
  } catch {
    return 0
  }
}

async function server () {
  const Fastify = require('fastify')
  const digestFields = require(path.join(__dirname, '..', 'dist', 'index.js'))
  const { Writable } = require('node:stream')
  const { pipeline } = require('node:stream/promises')

  const app = Fastify({ bodyLimit: 2 * SIZE_MIB * MiB })
  await app.register(digestFields, { verify: 'required' })
  app.addContentTypeParser('application/octet-stream', (_request, payload, done) => done(null, payload))
  const handler = async (request, reply) => {
    let bytes = 0
    try {
      await pipeline(request.body, new Writable({
        write (chunk, _encoding, callback) {
          bytes += chunk.length
          callback()
        }
      }))
    } catch (err) {
      reply.code(err.statusCode ?? 500)
      return { bytes, error: err.code }
    }
    return { bytes, verification: request.digestVerification }
  }
  app.post('/upload', handler)
  app.post('/plain', { digest: false }, handler)

  let peak = 0
  let timer = null
  process.on('message', (message) => {
    if (message === 'start') {
      global.gc?.()
      kernelPeakReset()
      peak = 0
      const baseline = process.memoryUsage.rss()
      timer = setInterval(() => { peak = Math.max(peak, process.memoryUsage.rss()) }, 10)
      process.send({ baseline })
    } else if (message === 'stop') {
      clearInterval(timer)
      peak = Math.max(peak, process.memoryUsage.rss())
      process.send({ peak, kernelPeak: kernelPeak() })
    } else if (message === 'exit') {
      app.close().then(() => process.exit(0))
    }
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  process.send({ port: app.server.address().port })
}

// ---------------------------------------------------------------- client side

// Block i of the body: a fixed 1 MiB pattern with i written into its first
// bytes, so that no two blocks are equal and nothing needs to be stored.
const PATTERN = Buffer.alloc(MiB)
for (let i = 0; i < MiB; i++) PATTERN[i] = (i * 131 + 7) % 251
function block (i) {
  const b = Buffer.from(PATTERN)
  b.writeUInt32BE(i, 0)
  return b
}

function digestOfBody () {
  const h = createHash('sha256')
  for (let i = 0; i < SIZE_MIB; i++) h.update(block(i))
  return h.digest('base64')
}

function upload (port, pathName, { digest, trailer }) {
  return new Promise((resolve, reject) => {
    const headers = { 'content-type': 'application/octet-stream' }
    if (trailer) {
      headers['transfer-encoding'] = 'chunked'
      headers.trailer = 'Content-Digest'
    } else {
      headers['content-length'] = String(SIZE_MIB * MiB)
      headers['content-digest'] = `sha-256=:${digest}:`
    }
    const started = process.hrtime.bigint()
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: pathName, headers, agent: false }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (c) => { body += c })
      res.on('end', () => {
        const seconds = Number(process.hrtime.bigint() - started) / 1e9
        resolve({ status: res.statusCode, body: JSON.parse(body), seconds })
      })
    })
    req.on('error', reject)
    const hash = createHash('sha256')
    let i = 0
    const writeMore = () => {
      while (i < SIZE_MIB) {
        const b = block(i++)
        if (trailer) hash.update(b)
        if (!req.write(b)) {
          req.once('drain', writeMore)
          return
        }
      }
      if (trailer) req.addTrailers({ 'Content-Digest': `sha-256=:${digest ?? hash.digest('base64')}:` })
      req.end()
    }
    writeMore()
  })
}

function ask (child, message) {
  return new Promise((resolve) => {
    child.once('message', resolve)
    child.send(message)
  })
}

async function client () {
  const child = fork(__filename, ['--server'], { execArgv: ['--expose-gc'] })
  const { port } = await new Promise((resolve) => child.once('message', resolve))
  const digest = digestOfBody()
  // Warm-up (JIT, heap sizing), not measured.
  await upload(port, '/upload', { trailer: true })
  const runs = [
    ['header', '/upload', { digest }],
    ['trailer', '/upload', { trailer: true }],
    ['wrong digest', '/upload', { digest: createHash('sha256').update('not the body').digest('base64') }],
    ['baseline (digest: false)', '/plain', { digest }]
  ]
  console.log(`upload of ${SIZE_MIB} MiB, server: node ${process.version}, fastify-digest-fields (dist), verify: 'required'`)
  console.log('run                       status  verified             MiB/s  peak RSS growth (sampled / VmHWM)')
  for (const [name, route, opts] of runs) {
    const { baseline } = await ask(child, 'start')
    const res = await upload(port, route, opts)
    const { peak, kernelPeak } = await ask(child, 'stop')
    const verified = res.body.error ?? res.body.verification?.verified ?? 'n/a'
    const growth = (peak - baseline) / MiB
    const kernelGrowth = kernelPeak > 0 ? ((kernelPeak - baseline) / MiB).toFixed(1) : 'n/a'
    console.log(
      `${name.padEnd(26)}${String(res.status).padEnd(8)}${String(verified).padEnd(21)}` +
      `${(SIZE_MIB / res.seconds).toFixed(0).padStart(5)}  ${growth.toFixed(1)} MiB / ${kernelGrowth} MiB` +
      ` (baseline RSS ${(baseline / MiB).toFixed(0)} MiB, ${res.body.bytes / MiB} MiB received)`
    )
  }
  child.send('exit')
  await new Promise((resolve) => child.once('exit', resolve))
}

if (process.argv.includes('--server')) server()
else client()
