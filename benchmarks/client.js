'use strict'

// `npm run bench:client`: verified downloads through fastify-digest-fields/client's
// interceptor against the same undici client without it. The server (a child process, this
// file with `--server`) is node:http sending a fixed body with its sha-256 Content-Digest
// computed once at start (not the plugin: only the client's cost is measured). This
// process is the client: undici.request over HTTP/1.1 to 127.0.0.1, one request at a time,
// the body read to its end.
//   * 1 MiB: BENCH_CLIENT_SMALL downloads (default 200) per side and round;
//   * 256 MiB: BENCH_CLIENT_LARGE downloads (default 2) per side and round, with this
//     process's rss sampled every 10 ms during the verified ones (peak growth over the rss
//     before them, after a garbage collection when --expose-gc is given).
// The two sides take turns within each of BENCH_CLIENT_ROUNDS rounds (default 3), after one
// unmeasured download each. Ratio = plain time / verified time of the same run (throughput
// of the verified client relative to the plain one; the goal is >= 0.95). A third side, the
// plain client with the same sha-256 check written by hand, shows what hashing alone allows:
// where it is itself below 0.95 of the plain client, the goal is out of reach for any
// verifying client, and `verified / by hand` is the interceptor's own cost. Every verified
// download must end cleanly and every plain one must carry the whole body, or the run stops.
//
// A shared or small machine gives figures that mean little: run it on a quiet one.

const { fork } = require('node:child_process')
const { createHash } = require('node:crypto')
const http = require('node:http')
const { once } = require('node:events')

const MiB = 1024 * 1024
const SIZES = { small: 1 * MiB, large: 256 * MiB }

function serve () {
  const chunk = Buffer.alloc(MiB)
  for (let i = 0; i < chunk.length; i++) chunk[i] = (i * 31) % 251
  const digests = {}
  for (const [name, size] of Object.entries(SIZES)) {
    const hash = createHash('sha256')
    for (let sent = 0; sent < size; sent += MiB) hash.update(chunk)
    digests[name] = `sha-256=:${hash.digest('base64')}:`
  }
  const server = http.createServer((req, res) => {
    const name = req.url.slice(1)
    const size = SIZES[name]
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': size, 'content-digest': digests[name] })
    let sent = 0
    const more = () => {
      while (sent < size) {
        sent += MiB
        if (!res.write(chunk)) return res.once('drain', more)
      }
      res.end()
    }
    more()
  })
  server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }))
}

async function main () {
  const { Agent, request } = require('undici')
  const { digestInterceptor } = require('../dist/client/index.js')
  const child = fork(__filename, ['--server'])
  const [{ port }] = await once(child, 'message')
  const base = `http://127.0.0.1:${port}`
  const plain = new Agent()
  const verified = new Agent().compose(digestInterceptor({ verify: 'required' }))
  const rounds = Number(process.env.BENCH_CLIENT_ROUNDS ?? 3)
  const counts = { small: Number(process.env.BENCH_CLIENT_SMALL ?? 200), large: Number(process.env.BENCH_CLIENT_LARGE ?? 2) }

  async function download (dispatcher, name) {
    const res = await request(`${base}/${name}`, { dispatcher })
    let bytes = 0
    for await (const chunk of res.body) bytes += chunk.length
    if (bytes !== SIZES[name]) throw new Error(`${name}: ${bytes} of ${SIZES[name]} bytes`)
  }

  // The reference: the plain client with the same check written by hand
  // (sha-256 over the body as it is read, compared with the Content-Digest
  // at its end). No client can verify faster than it hashes.
  async function downloadByHand (dispatcher, name) {
    const res = await request(`${base}/${name}`, { dispatcher })
    const hash = createHash('sha256')
    let bytes = 0
    for await (const chunk of res.body) {
      hash.update(chunk)
      bytes += chunk.length
    }
    if (bytes !== SIZES[name]) throw new Error(`${name}: ${bytes} of ${SIZES[name]} bytes`)
    if (res.headers['content-digest'] !== `sha-256=:${hash.digest('base64')}:`) throw new Error(`${name}: the digest by hand does not match`)
  }

  async function timed (dispatcher, name, count, sample, byHand = false) {
    const start = process.hrtime.bigint()
    for (let i = 0; i < count; i++) await (byHand ? downloadByHand : download)(dispatcher, name)
    const ms = Number(process.hrtime.bigint() - start) / 1e6
    if (sample) sample.stop()
    return ms
  }

  function rssSampler () {
    global.gc?.()
    const base = process.memoryUsage().rss
    let peak = base
    const timer = setInterval(() => { peak = Math.max(peak, process.memoryUsage().rss) }, 10)
    return { stop () { clearInterval(timer); this.growth = peak - base }, growth: 0 }
  }

  const results = []
  try {
    for (const name of ['small', 'large']) {
      await download(plain, name)
      await download(verified, name)
      let plainMs = 0
      let verifiedMs = 0
      let handMs = 0
      let peak = 0
      for (let round = 0; round < rounds; round++) {
        const order = round % 2 === 0 ? ['plain', 'hand', 'verified'] : ['verified', 'hand', 'plain']
        for (const side of order) {
          if (side === 'plain') {
            plainMs += await timed(plain, name, counts[name])
          } else if (side === 'hand') {
            handMs += await timed(plain, name, counts[name], null, true)
          } else {
            const sample = name === 'large' ? rssSampler() : null
            verifiedMs += await timed(verified, name, counts[name], sample)
            if (sample) peak = Math.max(peak, sample.growth)
          }
        }
      }
      const mib = (SIZES[name] / MiB) * counts[name] * rounds
      results.push({
        download: `${SIZES[name] / MiB} MiB x ${counts[name] * rounds}`,
        'plain MiB/s': (mib / (plainMs / 1000)).toFixed(0),
        'verified MiB/s': (mib / (verifiedMs / 1000)).toFixed(0),
        'by hand MiB/s': (mib / (handMs / 1000)).toFixed(0),
        ratio: (plainMs / verifiedMs).toFixed(3),
        'by hand / plain': (plainMs / handMs).toFixed(3),
        'verified / by hand': (handMs / verifiedMs).toFixed(3),
        'rss growth (verified)': name === 'large' ? `${(peak / MiB).toFixed(1)} MiB` : '-'
      })
    }
  } finally {
    await plain.close()
    await verified.close()
    child.kill()
  }
  console.table(results)
}

if (process.argv.includes('--server')) serve()
else main().catch((err) => { console.error(err); process.exitCode = 1 })
