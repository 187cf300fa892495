'use strict'

// `npm run bench`: what fastify-digest-fields costs against the same work by hand (docs/benchmarks.md).
//
// The runner is the client only. Every side of every scenario is a Fastify server in child processes of its own
// (server.js, on 127.0.0.1), driven over real sockets by autocannon, by a streaming upload client (6) or, over
// HTTP/2, by h2-load.js in a process of its own. Sides are measured in rounds of short runs: in the scenarios marked
// `together` the sides of a round run at the same time, sharing the server core, so that other load on the machine
// weighs on all alike; in the others one after another (A B, then B A). Each ratio is the median of the per-round
// ratios of a side against the budget's reference side.
//
// Settings (environment variables):
//   BENCH_SCENARIOS   which scenarios, e.g. "2,5,9h" (all)
//   BENCH_DURATION    seconds per measured run (1.5)
//   BENCH_ROUNDS      rounds (7; a scenario may set its own, `rounds`)
//   BENCH_WARMUP      seconds of load each server process has to itself before measuring (1)
//   BENCH_PROCESSES   server processes per side, used in turn by the rounds (2)
//   BENCH_UPLOAD_MIB  size of scenario 6's upload (256)

require('./tick-maps')

const { execFileSync, fork } = require('node:child_process')
const http = require('node:http')
const os = require('node:os')
const path = require('node:path')
const autocannon = require('autocannon')
const { scenarios } = require('./scenarios')
const { h2Once } = require('./h2-load')
const { median } = require('./stats')
const { numberFromEnv } = require('./env')

const MiB = 1048576
const HOST = '127.0.0.1'
const WARMUP_BURST = 0.5

const config = {
  duration: numberFromEnv('BENCH_DURATION', 1.5),
  rounds: numberFromEnv('BENCH_ROUNDS', 7),
  roundsGiven: process.env.BENCH_ROUNDS !== undefined,
  warmup: numberFromEnv('BENCH_WARMUP', 1),
  processes: numberFromEnv('BENCH_PROCESSES', 2),
  only: process.env.BENCH_SCENARIOS ? process.env.BENCH_SCENARIOS.split(',').map((s) => s.trim()) : null
}

const CORES = os.availableParallelism?.() ?? os.cpus().length
let pinned = false

/** Pins a process and its threads to `cpus` (taskset, Linux): the client and the servers never share a core. */
function pin (pid, cpus) {
  try {
    execFileSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}

// ---------------------------------------------------------------------------
// Child processes

/** A server or the HTTP/2 driver: says 'ready', then answers the runner's messages by id. */
class Child {
  constructor (label, file, options) {
    this.label = label
    this.child = fork(path.join(__dirname, file), [], { ...options, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
    this.pending = new Map()
    this.nextId = 1
    this.exited = new Promise((resolve) => this.child.once('exit', resolve))
    this.ready = new Promise((resolve, reject) => {
      this.child.once('exit', (code) => reject(new Error(`${this.label} exited (${code})`)))
      this.child.on('message', (message) => {
        if (message.type === 'ready') {
          this.port = message.port
          if (pinned) pin(this.child.pid, this.cpus)
          resolve(this)
          return
        }
        const waiting = this.pending.get(message.id)
        this.pending.delete(message.id)
        if (message.error) waiting?.reject(new Error(message.error))
        else waiting?.resolve(message)
      })
    })
  }

  ask (type, data = {}) {
    const id = this.nextId++
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject })
      this.child.send({ id, type, ...data })
    })
  }

  async close () {
    if (this.child.exitCode === null) this.child.send({ type: 'close' })
    const timer = setTimeout(() => this.child.kill(), 5000)
    await this.exited
    clearTimeout(timer)
  }
}

// Fixed heap and malloc settings, but in the upload scenario, whose memory is a budget (docs/benchmarks.md,
// "Method"). With V8's own limits full collections come by lottery, none to 90 per 1000 1 MiB requests in identical
// processes; glibc moves its mmap threshold with what a process freed before, 1 to 90 page faults a request.
const FIXED_HEAP = ['--initial-old-space-size=64', '--no-memory-reducer']
const FIXED_MALLOC = 'glibc.malloc.mmap_threshold=4194304:glibc.malloc.trim_threshold=67108864'

class Server extends Child {
  constructor (scenario, side, copy) {
    const upload = scenario.kind === 'upload'
    const env = { ...process.env, BENCH_SCENARIO: scenario.id, BENCH_SIDE: side.key }
    if (!upload) env.GLIBC_TUNABLES = env.GLIBC_TUNABLES ? `${env.GLIBC_TUNABLES}:${FIXED_MALLOC}` : FIXED_MALLOC
    const execArgv = upload ? ['--expose-gc'] : FIXED_HEAP
    super(`${scenario.id}/${side.key}#${copy + 1}`, 'server.js', { env, execArgv })
    this.cpus = CORES === 2 ? '1' : `1-${CORES - 1}`
  }

  /** Server CPU time so far, all threads, µs. */
  async cpu () {
    const { cpu } = await this.ask('usage')
    return cpu.user + cpu.system
  }
}

class H2Driver extends Child {
  constructor (scenario) {
    super(`${scenario.id}/h2-load`, 'h2-load.js', {})
    this.scenario = scenario
    this.cpus = '0'
  }

  /** A run of `seconds` against the server on `port`, in autocannon's result shape. */
  async run (port, seconds, streams) {
    const options = { seconds, streams, sessions: this.scenario.sessions ?? 1 }
    return (await this.ask('run', { scenario: this.scenario.id, port, options })).result
  }
}

// ---------------------------------------------------------------------------
// Clients

/** One request with node:http, body collected: for the checks before measuring. */
function fetchOnce (port, { method, path: urlPath, headers = {}, body }) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: HOST, port, method, path: urlPath, headers, agent: false }, (res) => {
      const chunks = []
      res.on('data', (chunk) => chunks.push(chunk))
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }))
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end(body)
  })
}

/**
 * Scenario 6's upload: chunks written as the socket takes them, never gathered. Resolves with the response and the
 * seconds from the first byte sent to the response's end.
 */
function upload (port, spec, headers) {
  return new Promise((resolve, reject) => {
    const start = process.hrtime.bigint()
    const req = http.request({
      host: HOST,
      port,
      method: 'POST',
      path: spec.path,
      agent: false,
      headers: { 'content-type': 'application/octet-stream', 'content-length': spec.bytes, ...headers }
    })
    let answered = false
    req.on('response', (res) => {
      answered = true
      const chunks = []
      res.on('data', (chunk) => chunks.push(chunk))
      res.on('end', () => resolve({
        status: res.statusCode,
        body: Buffer.concat(chunks),
        seconds: Number(process.hrtime.bigint() - start) / 1e9
      }))
    })
    // A server that answers early (a refusal) may close the connection under us.
    req.on('error', (err) => { if (!answered) reject(err) })
    const chunks = spec.chunks()
    const write = () => {
      for (;;) {
        // Stops sending once the server has answered.
        if (answered) return
        const next = chunks.next()
        if (next.done === true) {
          req.end()
          return
        }
        if (!req.write(next.value)) {
          req.once('drain', write)
          return
        }
      }
    }
    write()
  })
}

// autocannon keeps every response body as a string; nothing here reads them (the checks use node:http): dropped,
// so that the client does not set the pace. Relies on an autocannon internal; without it, bodies are kept.
function discardBodies (client) {
  if (typeof client.pipelinedRequests?.addBody === 'function') client.pipelinedRequests.addBody = () => {}
}

function cannon (port, request, seconds, connections) {
  return autocannon({
    setupClient: discardBodies,
    url: `http://${HOST}:${port}${request.path}`,
    method: request.method,
    headers: request.headers,
    body: request.body,
    connections,
    pipelining: 1,
    duration: seconds,
    // autocannon stops at its next sample: every 100 ms rather than every second, so that 1.5 s is not 2.
    sampleInt: 100
  })
}

/** One request of a scenario over its protocol, `headers` added. */
function requestOnce (scenario, port, headers = {}) {
  if (scenario.kind === 'upload') return upload(port, scenario.upload, headers)
  if (scenario.protocol === 'h2') return h2Once(port, scenario.request, headers)
  return fetchOnce(port, { ...scenario.request, headers: { ...scenario.request.headers, ...headers } })
}

// ---------------------------------------------------------------------------
// Rounds and ratios

/**
 * `runs[i][r]`: side i's run in round r, on side i's process r mod n. Together: the sides of a round run at the same
 * time, each side starting first in turn. Otherwise one after another, the order reversed every other round.
 */
async function inRounds (servers, once, together, rounds) {
  const runs = servers.map(() => [])
  for (let round = 0; round < rounds; round++) {
    const current = servers.map((list) => list[round % list.length])
    if (together) {
      const order = current.map((_, k) => (k + round) % current.length)
      await Promise.all(order.map(async (i) => { runs[i][round] = await once(current[i]) }))
    } else {
      const order = [...current.keys()]
      if (round % 2 === 1) order.reverse()
      for (const i of order) runs[i][round] = await once(current[i])
    }
  }
  return runs
}

function quantile (values, q) {
  const sorted = [...values].sort((a, b) => a - b)
  const pos = (sorted.length - 1) * q
  const lo = Math.floor(pos)
  return sorted[lo] + (sorted[Math.min(lo + 1, sorted.length - 1)] - sorted[lo]) * (pos - lo)
}

/** Per-round ratios of `runs[i]` against `runs[against]` (a cost inverted), their median and quartiles. */
function paired (runs, i, against, value, higherIsBetter = true) {
  const ratios = runs[i].map((run, r) => {
    const ratio = value(run) / value(runs[against][r])
    return higherIsBetter ? ratio : 1 / ratio
  })
  return { median: median(ratios), q1: quantile(ratios, 0.25), q3: quantile(ratios, 0.75) }
}

// ---------------------------------------------------------------------------
// Running one scenario

/** A scenario's rounds: its own where it sets them, unless BENCH_ROUNDS is given. */
function roundsOf (scenario) {
  return config.roundsGiven ? config.rounds : scenario.rounds ?? config.rounds
}

/** Checks one server's answers before measuring: a failure stops the run. */
async function check (scenario, side, server) {
  const correct = scenario.kind === 'upload' ? { 'content-digest': scenario.upload.field() } : {}
  const res = await requestOnce(scenario, server.port, correct)
  if (res.status !== 200) throw new Error(`${server.label}: status ${res.status} ${res.body.subarray(0, 300)}`)
  try {
    scenario.check(side, res)
  } catch (err) {
    throw new Error(`${server.label}: ${err.message}`)
  }
  if (scenario.badRequest?.refusedBy.includes(side.key)) {
    const bad = await requestOnce(scenario, server.port, scenario.badRequest.headers)
    if (bad.status !== 400) throw new Error(`${server.label}: a wrong digest got ${bad.status}, not 400`)
  }
}

/**
 * Warm-up: each server process gets about BENCH_WARMUP seconds of load to itself (the sides of a set that run together
 * share the core for that many seconds per side; too little leaves optimizing compiles in the measured runs, more of
 * them on the side with more code), in bursts of 0.5 s on new connections: closing connections deoptimizes hot stream
 * functions, which one long burst would leave to the first measured run.
 */
async function warmUp (scenario, servers, load) {
  for (let copy = 0; copy < config.processes; copy++) {
    const set = servers.map((list) => list[copy])
    const seconds = scenario.together ? config.warmup * set.length : config.warmup
    const bursts = Math.max(2, Math.round(seconds / WARMUP_BURST))
    for (let b = 0; b < bursts; b++) {
      if (scenario.together) await Promise.all(set.map((server) => load(server, seconds / bursts)))
      else for (const server of set) await load(server, seconds / bursts)
    }
  }
}

async function runRequests (scenario, servers, load) {
  await warmUp(scenario, servers, load)
  return inRounds(servers, async (server) => {
    const before = await server.cpu()
    const result = await load(server, config.duration)
    const cpu = await server.cpu() - before
    if (result.errors > 0 || result.timeouts > 0 || result.non2xx > 0) {
      throw new Error(`${server.label}: ${result.errors} errors, ${result.timeouts} timeouts, ` +
        `${result.non2xx} non-2xx responses${result.failure ? ` (${result.failure})` : ''}`)
    }
    const requests = result.requests.total
    return { rate: requests / result.duration, cpu: cpu / requests }
  }, scenario.together === true, roundsOf(scenario))
}

async function runUploads (scenario, servers) {
  const spec = scenario.upload
  const headers = { 'content-digest': spec.field() }
  const once = async (server) => {
    await server.ask('reset-peak')
    const before = await server.cpu()
    const res = await upload(server.port, spec, headers)
    const cpu = await server.cpu() - before
    const memory = await server.ask('peak')
    if (res.status !== 200) throw new Error(`${server.label}: status ${res.status}`)
    return { rate: spec.bytes / MiB / res.seconds, cpu: cpu / (spec.bytes / MiB), growth: memory.growth }
  }
  for (const server of servers.flat()) await once(server)
  return inRounds(servers, once, false, roundsOf(scenario))
}

async function runScenario (scenario) {
  const servers = scenario.sides.map((side) => {
    return Array.from({ length: config.processes }, (_, copy) => new Server(scenario, side, copy))
  })
  const driver = scenario.protocol === 'h2' ? new H2Driver(scenario) : null
  const all = driver === null ? servers.flat() : [...servers.flat(), driver]
  const connections = scenario.connections ?? 10
  const load = driver === null
    ? (server, seconds) => cannon(server.port, scenario.request, seconds, connections)
    : (server, seconds) => driver.run(server.port, seconds, connections)
  try {
    await Promise.all(all.map((child) => child.ready))
    for (const [i, side] of scenario.sides.entries()) {
      for (const server of servers[i]) await check(scenario, side, server)
    }
    const runs = scenario.kind === 'upload'
      ? await runUploads(scenario, servers)
      : await runRequests(scenario, servers, load)
    return { scenario, runs }
  } finally {
    await Promise.all(all.map((child) => child.close()))
  }
}

// ---------------------------------------------------------------------------
// Budget lines and the report

function fmtCost (scenario, us) {
  if (scenario.kind === 'upload') return `${(us / 1000).toFixed(2)} ms/MiB`
  return us >= 1000 ? `${(us / 1000).toFixed(2)} ms` : `${us.toFixed(1)} µs`
}

/** Budget lines of one scenario: { text, value, pass, info, aside }. */
function evaluate ({ scenario, runs }) {
  const keyIndex = (key) => {
    const index = scenario.sides.findIndex((s) => s.key === key)
    if (index === -1) throw new Error(`scenario ${scenario.id}: no side keyed ${key}`)
    return index
  }
  const { budget } = scenario
  const against = keyIndex(budget.against)
  const label = (i) => scenario.sides[i].label
  const lines = []
  if (budget.addedMax !== undefined) {
    // The server CPU the plugin adds to a bare request, against what the same digests by hand add.
    const cpu = (i) => median(runs[i].map((r) => r.cpu))
    const base = keyIndex('bare')
    const added = cpu(0) - cpu(base)
    const byHand = cpu(against) - cpu(base)
    lines.push({
      text: `added CPU/request ≤ ${budget.addedMax}x what ${label(against)} adds`,
      value: `${(added / byHand).toFixed(2)}x`,
      pass: added / byHand <= budget.addedMax,
      aside: `${fmtCost(scenario, added)} against ${fmtCost(scenario, byHand)}`
    })
  } else {
    const rate = paired(runs, 0, against, (r) => r.rate)
    const cpu = paired(runs, 0, against, (r) => r.cpu, false)
    lines.push({
      text: `${scenario.kind === 'upload' ? 'MiB/s' : 'req/s'} ≥ ${budget.min} of ${label(against)}`,
      value: rate.median.toFixed(3),
      pass: rate.median >= budget.min,
      aside: `quartiles ${rate.q1.toFixed(2)}–${rate.q3.toFixed(2)}; CPU ${cpu.median.toFixed(3)}`
    })
  }
  if (budget.maxGrowthMiB !== undefined) {
    const growth = Math.max(...runs[0].map((r) => r.growth)) / MiB
    const text = `peak RSS growth < ${budget.maxGrowthMiB} MiB`
    lines.push({ text, value: `${growth.toFixed(1)} MiB`, pass: growth < budget.maxGrowthMiB })
  }
  for (const [subject, reference, min] of scenario.goals ?? []) {
    const rate = paired(runs, keyIndex(subject), keyIndex(reference), (r) => r.rate)
    lines.push({
      text: `information: ${label(keyIndex(subject))}, req/s ≥ ${min} of ${label(keyIndex(reference))}`,
      value: rate.median.toFixed(3),
      pass: rate.median >= min,
      info: true,
      aside: `quartiles ${rate.q1.toFixed(2)}–${rate.q3.toFixed(2)}`
    })
  }
  return lines
}

/** Columns padded to their widest cell: text columns (`left`) to the left, numbers to the right. */
function table (rows, left = [0, 1]) {
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => String(r[c] ?? '').length)))
  return rows.map((r) => r.map((cell, c) => {
    const s = String(cell ?? '')
    return left.includes(c) ? s.padEnd(widths[c]) : s.padStart(widths[c])
  }).join('  ').trimEnd()).join('\n')
}

function report (results) {
  const sideRows = [['#', 'side', 'req/s', 'CPU/req', 'vs reference', 'quartiles', 'CPU ratio']]
  const budgetRows = [['#', 'budget line', 'measured', 'result', 'notes']]
  let failed = 0
  for (const result of results) {
    const { scenario, runs } = result
    const against = scenario.sides.findIndex((s) => s.key === scenario.budget.against)
    sideRows.push([scenario.id, scenario.title])
    for (const [i, side] of scenario.sides.entries()) {
      const rate = median(runs[i].map((r) => r.rate))
      const ratio = paired(runs, i, against, (r) => r.rate)
      sideRows.push(['', `  ${side.label}${i === against ? ' (reference)' : ''}`,
        scenario.kind === 'upload' ? `${rate.toFixed(0)} MiB/s` : rate.toFixed(0),
        fmtCost(scenario, median(runs[i].map((r) => r.cpu))),
        i === against ? '' : ratio.median.toFixed(3),
        i === against ? '' : `${ratio.q1.toFixed(2)}–${ratio.q3.toFixed(2)}`,
        i === against ? '' : paired(runs, i, against, (r) => r.cpu, false).median.toFixed(3)])
    }
    for (const line of evaluate(result)) {
      if (!line.pass && !line.info) failed++
      const verdict = line.info ? (line.pass ? 'above' : 'below') : (line.pass ? 'PASS' : 'FAIL')
      budgetRows.push([scenario.id, line.text, line.value, verdict, line.aside ?? ''])
    }
  }
  console.log(`${table(sideRows)}\n\n${table(budgetRows, [0, 1, 4])}`)
  return failed
}

async function main () {
  const selected = config.only === null ? scenarios : scenarios.filter((s) => config.only.includes(s.id))
  if (selected.length === 0) throw new Error(`no scenario matches BENCH_SCENARIOS=${process.env.BENCH_SCENARIOS}`)
  pinned = CORES >= 2 && pin(process.pid, '0')
  const version = (name) => require(`${name}/package.json`).version
  const load = () => os.loadavg().map((l) => l.toFixed(2)).join(' ')
  console.log(`fastify-digest-fields benchmarks: ${os.cpus()[0]?.model}, ${CORES} cores, Node.js ${process.version}, ` +
    `fastify ${version('fastify')}, @fastify/compress ${version('@fastify/compress')}, ` +
    `autocannon ${version('autocannon')}`)
  console.log(`${config.rounds} rounds (or a scenario's own) of ${config.duration} s, ${config.processes} processes ` +
    `per side, ${config.warmup} s of warm-up each; ` +
    `${pinned ? 'runner on core 0, servers on the others' : 'not pinned'}; load average ${load()}`)
  const started = Date.now()
  const results = []
  for (const scenario of selected) {
    process.stdout.write(`  ${scenario.id}: ${scenario.title} ... `)
    const start = Date.now()
    results.push(await runScenario(scenario))
    console.log(`${((Date.now() - start) / 1000).toFixed(0)} s`)
  }
  console.log(`${((Date.now() - started) / 60000).toFixed(1)} min; load average ${load()}\n`)
  const failed = report(results)
  if (failed > 0) console.log(`\n${failed} budget line(s) missed`)
}

main().catch((err) => {
  console.error(err)
  process.exitCode = 1
})
