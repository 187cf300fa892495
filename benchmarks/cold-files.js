'use strict'

// `npm run bench:cold-files`: the first request for a large static file, with the whole-file
// digest cache cold. A file of BENCH_COLD_MIB MiB (1024: 1 GiB) is written to a temporary
// directory, with its sha256sum / sha512sum sidecars written after it. For each algorithm
// (sha-256, sha-512), request (HEAD, a 10-byte Range) and mode:
//   no digest   the floor: the plugin asked for no digest (the first request of a new process);
//   wait        the default: the file is hashed before the answer;
//   background  fileHashing: 'background': answered at once without Repr-Digest;
//   sidecars    fileSidecars: true: the digest read from the sidecar, checked in the background;
// a server is started in a child process (Fastify, @fastify/static with staticHeaders, the
// plugin from dist/ with reprDigest and contentDigest set to that algorithm), and this process
// times one request from its start to the end of the response (node:http, 127.0.0.1), then how
// long until a HEAD carries the Repr-Digest (background: the pass that runs after the answer;
// wait and sidecars: at once). The server is then stopped: each measured request is a cold one.
// Medians of BENCH_COLD_ROUNDS rounds (3). The file is in the page cache (written just before,
// then read by every pass): this measures hashing, not the disk. Every Repr-Digest received
// must be the file's, or the run stops. The directory is removed at the end.

const { fork } = require('node:child_process')
const { createHash, randomFillSync } = require('node:crypto')
const fs = require('node:fs')
const http = require('node:http')
const os = require('node:os')
const path = require('node:path')
const { numberFromEnv } = require('./env')
const { median } = require('./stats')

const MiB = 1024 * 1024

if (process.env.COLD_SERVER !== undefined) {
  serve(JSON.parse(process.env.COLD_SERVER))
} else {
  main().catch((err) => {
    console.error(err)
    process.exit(1)
  })
}

async function serve ({ root, options }) {
  const Fastify = require('fastify')
  const fastifyStatic = require('@fastify/static')
  const digestFields = require('..')
  const app = Fastify()
  await app.register(digestFields, options)
  await app.register(fastifyStatic, { root, setHeaders: digestFields.staticHeaders })
  await app.listen({ port: 0, host: '127.0.0.1' })
  process.send({ port: app.server.address().port })
  process.on('disconnect', () => process.exit(0))
}

function request (port, method, headers) {
  return new Promise((resolve, reject) => {
    const start = process.hrtime.bigint()
    const req = http.request({ port, host: '127.0.0.1', path: '/big.bin', method, headers }, (res) => {
      res.resume()
      res.on('end', () => resolve({ ms: Number(process.hrtime.bigint() - start) / 1e6, status: res.statusCode, repr: res.headers['repr-digest'] }))
    })
    req.on('error', reject)
    req.end()
  })
}

async function oneRound (root, options, method, headers, expected) {
  const child = fork(__filename, [], { env: { ...process.env, COLD_SERVER: JSON.stringify({ root, options }) }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const { port } = await new Promise((resolve) => child.once('message', resolve))
  try {
    const first = await request(port, method, headers)
    if (first.repr !== undefined && first.repr !== expected) throw new Error(`wrong Repr-Digest ${first.repr}`)
    // Then until a HEAD carries the Repr-Digest (10 ms apart).
    const start = process.hrtime.bigint()
    while (options.reprDigest !== false && (await request(port, 'HEAD', {})).repr === undefined) await new Promise((resolve) => setTimeout(resolve, 10))
    return { ms: first.ms, status: first.status, digest: first.repr !== undefined, until: first.repr !== undefined ? 0 : Number(process.hrtime.bigint() - start) / 1e6 }
  } finally {
    child.disconnect()
    await new Promise((resolve) => child.once('exit', resolve))
  }
}

async function main () {
  const size = numberFromEnv('BENCH_COLD_MIB', 1024) * MiB
  const rounds = numberFromEnv('BENCH_COLD_ROUNDS', 3)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'digest-cold-bench-'))
  try {
    const file = path.join(dir, 'big.bin')
    const block = randomFillSync(Buffer.alloc(MiB))
    const fd = fs.openSync(file, 'w')
    const sha256 = createHash('sha256')
    const sha512 = createHash('sha512')
    for (let written = 0; written < size; written += MiB) {
      block[0] = written / MiB // every MiB differs
      fs.writeSync(fd, block)
      sha256.update(block)
      sha512.update(block)
    }
    fs.closeSync(fd)
    const digests = { 'sha-256': sha256.digest(), 'sha-512': sha512.digest() }
    fs.writeFileSync(file + '.sha256', `${digests['sha-256'].toString('hex')}  big.bin\n`)
    fs.writeFileSync(file + '.sha512', `${digests['sha-512'].toString('hex')}  big.bin\n`)
    console.log(`${size / MiB} MiB, Node ${process.version}, ${os.cpus()[0].model}, ${os.cpus().length} CPUs; medians of ${rounds} cold servers, ms`)
    console.log('algorithm  request      mode        status  answer ms  Repr-Digest  digest known after ms')
    const modes = { 'no digest': null, wait: {}, background: { fileHashing: 'background' }, sidecars: { fileSidecars: true } }
    const requests = { HEAD: ['HEAD', {}], 'Range 10 B': ['GET', { range: 'bytes=0-9' }] }
    for (const algorithm of ['sha-256', 'sha-512']) {
      const expected = `${algorithm}=:${digests[algorithm].toString('base64')}:`
      for (const [name, [method, headers]] of Object.entries(requests)) {
        for (const [mode, extra] of Object.entries(modes)) {
          const results = []
          for (let i = 0; i < rounds; i++) {
            const options = extra === null ? { reprDigest: false, contentDigest: false } : { reprDigest: algorithm, contentDigest: algorithm, ...extra }
            results.push(await oneRound(dir, options, method, headers, expected))
          }
          const answer = median(results.map((r) => r.ms))
          const until = extra === null ? '-' : median(results.map((r) => r.ms + r.until)).toFixed(0)
          const known = results.every((r) => r.digest) ? 'yes' : results.some((r) => r.digest) ? 'some' : 'no'
          console.log(`${algorithm.padEnd(9)}  ${name.padEnd(11)}  ${mode.padEnd(10)}  ${String(results[0].status).padEnd(6)}  ${answer.toFixed(1).padStart(9)}  ${known.padEnd(11)}  ${until.padStart(21)}`)
        }
      }
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}
