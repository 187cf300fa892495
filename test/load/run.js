'use strict'

// `npm run test:load`: the plugin under sustained load, over real sockets.
//
// The server (server.js) runs in a child process; this process is the client:
// autocannon at 100 connections for 30 s against digest-enabled routes
// (verified uploads with a correct Content-Digest, compressed downloads with
// Content-Digest and Repr-Digest, buffered and streamed), and, at the same
// time, a checking client that recomputes the digests of a sample of
// responses from the bytes it received (Content-Digest over the gzip bytes,
// Repr-Digest over them decoded, against the known document) and sends a few
// corrupted uploads, which must be refused. The run is repeated on the same
// server: its RSS (sampled every 20 ms) must stay flat from one run to the
// next.
//
// Passes when: no autocannon error or timeout, no non-2xx response, no digest
// mismatch in the sample, every corrupted upload refused, and the second
// run's RSS peak within 15 % (or 16 MiB) of the first's.
//
// Settings (environment variables):
//   LOAD_DURATION      seconds per run (30)
//   LOAD_CONNECTIONS   autocannon connections (100)
//   LOAD_RUNS          runs against the same server (2), after a warm-up
//   LOAD_WARMUP        seconds of warm-up, not reported (5)
//   LOAD_UPLOAD_BYTES  size of an upload (16384)
//   LOAD_RESULT        a file to write the result to as Markdown (none by default;
//                      docs/benchmarks.md holds the latest full run's figures)
//
// Quick trial: LOAD_DURATION=3 LOAD_CONNECTIONS=20 npm run test:load

const { fork } = require('node:child_process')
const { createHash } = require('node:crypto')
const fs = require('node:fs')
const http = require('node:http')
const os = require('node:os')
const path = require('node:path')
const { gunzipSync } = require('node:zlib')
const autocannon = require('autocannon')
const { documentText, uploadBody } = require('./payloads')

const { numberFromEnv } = require('../../benchmarks/env')
const MiB = 1048576

const config = {
  duration: numberFromEnv('LOAD_DURATION', 30),
  connections: numberFromEnv('LOAD_CONNECTIONS', 100),
  runs: numberFromEnv('LOAD_RUNS', 2),
  warmup: numberFromEnv('LOAD_WARMUP', 5),
  uploadBytes: numberFromEnv('LOAD_UPLOAD_BYTES', 16384)
}
const resultFile = process.env.LOAD_RESULT || null

const sha = (algorithm, bytes) => createHash(algorithm === 'sha-256' ? 'sha256' : 'sha512').update(bytes).digest('base64')
const field = (algorithm, bytes) => `${algorithm}=:${sha(algorithm, bytes)}:`

const DOCUMENT = Buffer.from(documentText())
const UPLOAD = uploadBody(config.uploadBytes)
const UPLOAD_HEADERS = { 'content-type': 'application/octet-stream', 'content-digest': `${field('sha-256', UPLOAD)}, ${field('sha-512', UPLOAD)}` }
const REQUESTS = [
  { method: 'POST', path: '/upload', headers: UPLOAD_HEADERS, body: UPLOAD },
  { method: 'GET', path: '/download', headers: { 'accept-encoding': 'gzip' } },
  { method: 'GET', path: '/stream', headers: { 'accept-encoding': 'gzip', 'want-content-digest': 'sha-256=3', 'want-repr-digest': 'sha-512=9' } }
]

// ---------------------------------------------------------------------------
// The server process

function startServer () {
  const child = fork(path.join(__dirname, 'server.js'), [], { execArgv: ['--expose-gc'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  let nextId = 0
  const pending = new Map()
  child.on('message', (message) => {
    const resolve = pending.get(message.id)
    if (resolve !== undefined) {
      pending.delete(message.id)
      resolve(message)
    }
  })
  const ask = (type) => new Promise((resolve) => {
    const id = ++nextId
    pending.set(id, resolve)
    child.send({ id, type })
  })
  return new Promise((resolve, reject) => {
    child.once('error', reject)
    child.once('exit', (code) => reject(new Error(`the server exited (${code})`)))
    child.on('message', (message) => {
      if (message.type === 'ready') resolve({ child, port: message.port, ask })
    })
  })
}

// ---------------------------------------------------------------------------
// The checking client

function get (agent, port, { method, path: url, headers, body }) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path: url, headers, agent }, (res) => {
      const chunks = []
      res.on('data', (chunk) => chunks.push(chunk))
      res.on('error', reject)
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, trailers: res.trailers, body: Buffer.concat(chunks) }))
    })
    req.on('error', reject)
    req.end(body)
  })
}

/** Members `alg=:b64:` of a digest field, checked against `bytes`; returns how many matched, or throws. */
function check (value, bytes, what) {
  if (typeof value !== 'string') throw new Error(`${what}: missing`)
  let n = 0
  for (const member of value.split(',')) {
    const m = /^\s*(sha-256|sha-512)=:([A-Za-z0-9+/=]+):\s*$/.exec(member)
    if (m === null) throw new Error(`${what}: unexpected member ${member}`)
    if (sha(m[1], bytes) !== m[2]) throw new Error(`${what}: ${m[1]} is not the digest of the bytes`)
    n++
  }
  return n
}

/** Verify one sampled response; returns the number of digest values recomputed. */
function verify (kind, res) {
  const decoded = res.headers['content-encoding'] === 'gzip' ? gunzipSync(res.body) : res.body
  if (kind === 'corrupted') {
    if (res.status !== 400 || JSON.parse(res.body).code !== 'FST_DIGEST_MISMATCH') throw new Error(`a corrupted upload got ${res.status}`)
    return check(res.headers['content-digest'], res.body, 'corrupted: Content-Digest of the problem')
  }
  if (res.status !== 200) throw new Error(`${kind}: status ${res.status}`)
  let n = check(res.headers['content-digest'], res.body, `${kind}: Content-Digest`) + check(res.headers['repr-digest'], decoded, `${kind}: Repr-Digest`)
  if (kind === 'upload') {
    if (JSON.parse(decoded).verified !== true) throw new Error('upload: not verified')
  } else {
    if (res.headers['content-encoding'] !== 'gzip') throw new Error(`${kind}: not compressed`)
    if (!decoded.equals(DOCUMENT)) throw new Error(`${kind}: not the document`)
    n += check(res.headers['repr-digest'], DOCUMENT, `${kind}: Repr-Digest of the document`)
  }
  return n
}

function checker (port) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 4 })
  const stats = { samples: 0, values: 0, corrupted: 0, failures: [] }
  const state = { running: true }
  const corrupted = Buffer.from(UPLOAD)
  corrupted[corrupted.length >> 1] ^= 1
  const kinds = [
    ['upload', REQUESTS[0]],
    ['download', REQUESTS[1]],
    ['stream', REQUESTS[2]],
    ['corrupted', { ...REQUESTS[0], body: corrupted }]
  ]
  const loop = async (offset) => {
    for (let i = offset; state.running; i++) {
      const [kind, request] = kinds[i % kinds.length]
      try {
        const res = await get(agent, port, request)
        stats.values += verify(kind, res)
        stats.samples++
        if (kind === 'corrupted') stats.corrupted++
      } catch (err) {
        stats.failures.push(`${kind}: ${err.message}`)
      }
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
  }
  const loops = [0, 1, 2, 3].map(loop)
  return {
    stats,
    stop: async () => {
      state.running = false
      await Promise.all(loops)
      agent.destroy()
    }
  }
}

// ---------------------------------------------------------------------------

function cannon (port, duration = config.duration) {
  return new Promise((resolve, reject) => {
    const instance = autocannon({
      url: `http://127.0.0.1:${port}`,
      connections: config.connections,
      duration,
      requests: REQUESTS.map(({ method, path: url, headers, body }) => ({ method, path: url, headers, body }))
    }, (err, result) => err ? reject(err) : resolve(result))
    autocannon.track(instance, { renderProgressBar: false, renderResultsTable: false, renderLatencyTable: false })
  })
}

async function oneRun (server, n) {
  const { baseline } = await server.ask('reset-peak')
  const check = checker(server.port)
  const started = Date.now()
  const result = await cannon(server.port)
  await check.stop()
  const { peak, samples, counters } = await server.ask('peak')
  const { baseline: after } = await server.ask('reset-peak')
  const run = {
    n,
    seconds: (Date.now() - started) / 1000,
    requests: result.requests.total,
    rps: Math.round(result.requests.average),
    latencyP50: result.latency.p50,
    latencyP99: result.latency.p99,
    errors: result.errors,
    timeouts: result.timeouts,
    non2xx: result.non2xx,
    ok2xx: result['2xx'],
    check: { samples: check.stats.samples, values: check.stats.values, corrupted: check.stats.corrupted, failures: check.stats.failures.length, first: check.stats.failures.slice(0, 5) },
    rss: { baseline, peak, afterGc: after, samples },
    counters
  }
  console.log(`run ${n}: ${run.requests} requests (${run.rps}/s), p50 ${run.latencyP50} ms, p99 ${run.latencyP99} ms, errors ${run.errors}, timeouts ${run.timeouts}, non-2xx ${run.non2xx}; ` +
    `checked ${run.check.samples} responses (${run.check.values} digest values, ${run.check.corrupted} corrupted uploads refused), ${run.check.failures} failures; ` +
    `RSS ${(baseline / MiB).toFixed(1)} -> peak ${(peak / MiB).toFixed(1)} MiB, ${(after / MiB).toFixed(1)} MiB after gc`)
  for (const failure of run.check.first) console.log(`  ${failure}`)
  return run
}

function markdown (runs, verdict) {
  const mib = (n) => (n / MiB).toFixed(1)
  const lines = [
    '# Load run: the last result',
    '',
    `Written by \`npm run test:load\` (test/load/run.js) on ${new Date().toISOString().slice(0, 10)}: ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? 'unknown'}), Node.js ${process.version}, ` +
      `${config.connections} connections for ${config.duration} s per run, ${config.runs} runs against one server process (child process, 127.0.0.1) after a ${config.warmup} s warm-up, ` +
      'the client (autocannon and the checking client) in another process on the same machine.',
    '',
    'Routes: `POST /upload` (verified upload, ' + `${config.uploadBytes} bytes` + ', `Content-Digest` sha-256 and sha-512), `GET /download` (16 KiB JSON, gzip, ' +
      'unsolicited `Content-Digest` and `Repr-Digest`), `GET /stream` (the same as a stream, `Want-Repr-Digest: sha-512=9`), in rotation.',
    '',
    '| run | requests | req/s | p50 ms | p99 ms | errors | timeouts | non-2xx | sampled responses checked | digest values recomputed | corrupted uploads refused | check failures | RSS before | RSS peak | RSS after gc |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|'
  ]
  for (const r of runs) {
    lines.push(`| ${r.n} | ${r.requests} | ${r.rps} | ${r.latencyP50} | ${r.latencyP99} | ${r.errors} | ${r.timeouts} | ${r.non2xx} | ${r.check.samples} | ${r.check.values} | ${r.check.corrupted} | ${r.check.failures} | ${mib(r.rss.baseline)} MiB | ${mib(r.rss.peak)} MiB | ${mib(r.rss.afterGc)} MiB |`)
  }
  lines.push('', `Verdict: ${verdict}`, '')
  return lines.join('\n')
}

async function main () {
  console.log(`load run: ${config.connections} connections, ${config.duration} s, ${config.runs} runs`)
  const server = await startServer()
  const runs = []
  try {
    // Warm-up (not reported): JIT, pools and caches settle first.
    await cannon(server.port, config.warmup)
    for (let n = 1; n <= config.runs; n++) runs.push(await oneRun(server, n))
  } finally {
    server.child.removeAllListeners('exit')
    const exited = new Promise((resolve) => server.child.once('exit', resolve))
    server.child.send({ type: 'close' })
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5000).unref())])
    server.child.kill()
  }
  const problems = []
  for (const r of runs) {
    if (r.errors > 0 || r.timeouts > 0) problems.push(`run ${r.n}: ${r.errors} errors, ${r.timeouts} timeouts`)
    if (r.non2xx > 0) problems.push(`run ${r.n}: ${r.non2xx} non-2xx responses`)
    if (r.check.failures > 0) problems.push(`run ${r.n}: ${r.check.failures} sampled responses failed the check`)
    if (r.check.samples === 0) problems.push(`run ${r.n}: no response was checked`)
    if (r.counters.unverified > 0) problems.push(`run ${r.n}: ${r.counters.unverified} uploads reached the handler unverified`)
  }
  const first = runs[0]
  for (const r of runs.slice(1)) {
    const bound = Math.max(first.rss.peak * 1.15, first.rss.peak + 16 * MiB)
    if (r.rss.peak > bound) problems.push(`run ${r.n}: RSS peak ${(r.rss.peak / MiB).toFixed(1)} MiB above run 1's ${(first.rss.peak / MiB).toFixed(1)} MiB`)
  }
  const verdict = problems.length === 0 ? 'pass: zero errors, zero non-2xx, zero digest mismatches, RSS flat across runs.' : `FAIL: ${problems.join('; ')}`
  console.log(verdict)
  if (resultFile !== null) {
    fs.writeFileSync(resultFile, markdown(runs, verdict))
    console.log(`written to ${path.relative(process.cwd(), resultFile)}`)
  }
  process.exitCode = problems.length === 0 ? 0 : 1
}

main().catch((err) => {
  console.error(err)
  process.exitCode = 1
})
