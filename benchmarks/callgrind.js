'use strict'

// Instructions per request of one side of one scenario, counted by valgrind's
// callgrind in the server process (all its threads), where `perf stat` cannot
// count them (virtual machines). Unlike time, the count does not depend on
// what else the machine is doing, so two builds or two sides can be compared
// on a busy machine. Slow: the server runs about 100 times slower.
//
//   node benchmarks/callgrind.js <scenario> <side> [warm-up requests] [requests per window] [windows]
//   BENCH_PLUGIN=/path/to/other/build node benchmarks/callgrind.js 2c plugin
//   BENCH_NODE_FLAGS=--no-concurrent-array-buffer-sweeping node benchmarks/callgrind.js 5 plugin 2000 50 3
//   BENCH_BODY_BYTES=16384 node benchmarks/callgrind.js 5 plugin 4000 1000 3
//
// BENCH_CALLGRIND_FLAGS adds options of callgrind's (--cache-sim=yes: simulated
// cache misses, read from the kept files with callgrind_annotate).
// BENCH_CALLGRIND_OUT=<new dir> keeps callgrind's files there (one per window, for
// callgrind_annotate: native functions and V8 builtins by name, JIT-compiled
// JavaScript unnamed); by default they go to a temporary directory, removed.
//
// BENCH_BODY_BYTES sends only the first bytes of the scenario's request body, with the sha-256
// Content-Digest of those bytes: with a small body the per-request cost of the check stands out.
//
// The server (server.js) runs under callgrind with instrumentation off; after
// the warm-up (enough for V8 to optimize the hot functions: the first windows
// of a shorter one still count their compilation), instrumentation is turned
// on and each window of requests is counted apart (callgrind_control --dump),
// four connections kept alive (an HTTP/2 scenario: four streams in flight on
// one h2c session). Windows that agree show a steady state.

const { execFileSync, fork } = require('node:child_process')
const fs = require('node:fs')
const http = require('node:http')
const http2 = require('node:http2')
const os = require('node:os')
const path = require('node:path')
const { hash } = require('node:crypto')
const { flagsFromEnv } = require('./env')
const { scenarios } = require('./scenarios')

const [id, sideKey, warmupArg, perWindowArg, windowsArg] = process.argv.slice(2)
const scenario = scenarios.find((s) => s.id === id)
if (scenario?.sides.find((s) => s.key === sideKey) === undefined) {
  console.error('usage: node benchmarks/callgrind.js <scenario> <side> [warm-up] [requests per window] [windows]')
  process.exit(2)
}
const warmup = Number(warmupArg ?? 8000)
const perWindow = Number(perWindowArg ?? 1000)
const windows = Number(windowsArg ?? 3)

const keep = process.env.BENCH_CALLGRIND_OUT
// A new directory: every file in it is counted.
if (keep) fs.mkdirSync(keep)
const dir = keep || fs.mkdtempSync(path.join(os.tmpdir(), 'fastify-digest-fields-callgrind-'))
const child = fork(path.join(__dirname, 'server.js'), [], {
  env: { ...process.env, BENCH_SCENARIO: scenario.id, BENCH_SIDE: sideKey },
  stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  execPath: 'valgrind',
  execArgv: ['--tool=callgrind', '--instr-atstart=no', '--smc-check=all-non-file', '-q',
    ...flagsFromEnv('BENCH_CALLGRIND_FLAGS'),
    `--callgrind-out-file=${path.join(dir, 'out.%p')}`, process.execPath,
    ...flagsFromEnv('BENCH_NODE_FLAGS')]
})
const agent = new http.Agent({ keepAlive: true, maxSockets: 4 })

// The request sent every time: the scenario's, or with BENCH_BODY_BYTES its body's first bytes and their digest.
const { method, path: urlPath } = scenario.request
let { headers, body } = scenario.request
if (process.env.BENCH_BODY_BYTES) {
  body = body.subarray(0, Number(process.env.BENCH_BODY_BYTES))
  headers = { ...headers, 'content-digest': `sha-256=:${hash('sha256', body, 'base64')}:` }
}

let session = null

function once (port) {
  if (scenario.protocol === 'h2') return onceH2(port)
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path: urlPath, headers, agent }, (res) => {
      res.resume()
      res.on('end', () => res.statusCode === 200 ? resolve() : reject(new Error(`status ${res.statusCode}`)))
    })
    req.on('error', reject)
    req.end(body)
  })
}

function onceH2 (port) {
  session ??= http2.connect(`http://127.0.0.1:${port}`)
  return new Promise((resolve, reject) => {
    const stream = session.request({ ':method': method, ':path': urlPath, ...headers })
    let status = 0
    stream.on('response', (h) => { status = h[':status'] })
    stream.on('error', reject)
    stream.on('close', () => status === 200 ? resolve() : reject(new Error(`status ${status}`)))
    stream.resume()
    stream.end(body)
  })
}

async function load (port, count) {
  let sent = 0
  const connection = async () => { while (sent++ < count) await once(port) }
  await Promise.all([connection(), connection(), connection(), connection()])
}

/** Instructions counted in every dump so far. */
function counted () {
  let total = 0
  for (const file of fs.readdirSync(dir)) {
    const match = /^(?:summary|totals): (\d+)/m.exec(fs.readFileSync(path.join(dir, file), 'utf8'))
    if (match !== null) total += Number(match[1])
  }
  return total
}

child.once('message', async ({ port }) => {
  try {
    await load(port, warmup)
    execFileSync('callgrind_control', ['--instr=on', String(child.pid)], { stdio: 'ignore' })
    const perRequest = []
    let before = 0
    for (let w = 0; w < windows; w++) {
      await load(port, perWindow)
      execFileSync('callgrind_control', ['--dump', String(child.pid)], { stdio: 'ignore' })
      const now = counted()
      perRequest.push(Math.round((now - before) / perWindow))
      before = now
    }
    console.log(JSON.stringify({ scenario: scenario.id, side: sideKey, plugin: process.env.BENCH_PLUGIN ?? null, warmup, perWindow, perRequest }))
  } finally {
    agent.destroy()
    session?.destroy()
    child.kill('SIGKILL')
    if (!keep) fs.rmSync(dir, { recursive: true, force: true })
  }
})
