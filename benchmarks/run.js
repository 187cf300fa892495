'use strict'

// First: the runner, like each server, starts with the same nextTick feedback (see tick-maps.js).
require('./tick-maps')

// `npm run bench`: what fastify-digest-fields costs against bare Fastify.
//
// The runner is the client only. Every side of every scenario is a Fastify
// server in a child process of its own (server.js, listening on 127.0.0.1),
// driven over real sockets by autocannon (scenarios 1-5 and 8), by a streaming
// upload client (scenario 6) or, over HTTP/2, by a node:http2 load driver in a
// process of its own (scenarios 7, 9h, 9h-512: h2-load.js). The sides of a scenario are measured in rounds
// of short runs: in scenarios 1 and 2 the sides of a round run at the same
// time, their servers sharing one core, so that whatever else the machine is
// doing weighs on all of them alike, within milliseconds; in the others (and
// everywhere with BENCH_MODE=alternate) one after another, A B in one round,
// B A in the next, ... (see inRounds). Each ratio is the median
// of the per-round ratios (a run against its baseline of the same round),
// shown with its quartiles. The servers also report their
// own CPU time, so the cost per request can be read independently of the
// client, and they time sha-256 over the scenario's bytes in their own
// process: the "bare + hash" column is what the plugin side would do if it
// cost nothing but the hashing.
//
// Settings (environment variables):
//   BENCH_MODE         concurrent (default): in scenarios 1 and 2 the sides of a round run at the same
//                      time; alternate: one after another (A B, then B A, ...) there too
//   BENCH_DURATION     seconds per measured run (2)
//   BENCH_ROUNDS       measured runs per side (10; a scenario may set its own, `rounds`)
//   BENCH_WARMUP       seconds of warm-up per server process, in bursts of 0.5 s on new connections (2)
//   BENCH_CONNECTIONS  autocannon connections, for scenarios that do not set theirs (10)
//   BENCH_SCENARIOS    which scenarios, e.g. "1,2,4s" (all)
//   BENCH_UPLOAD_MIB   size of scenario 6's upload (256)
//   BENCH_PROCESSES    server processes per side, used in turn by the rounds (5)
//   BENCH_PERF         0: do not count instructions with perf stat
//   BENCH_PIN          1 (default where taskset exists and there are 2+ cores): the runner on
//                      the first core, the servers on the others; 0: let the OS place them
//   BENCH_PROFILE      1 or a directory: servers run with --cpu-prof (profiles in the OS temp dir for 1)
//   BENCH_JSON         write the results to this file as JSON
//   BENCH_LENIENT      1: a side that fails its checks (status, verification, a wrong digest not refused)
//                      or answers non-2xx while measured is reported instead of stopping the run; the
//                      budget lines of its scenario then read INVALID (e.g. a plugin build that does not
//                      verify HTTP/2 or multipart requests yet)
//   BENCH_PLUGIN       load the plugin from this path instead of the package (e.g. a build of another commit)
//   BENCH_MALLOC       fixed (default): servers run with fixed glibc malloc thresholds (GLIBC_TUNABLES; not in
//                      the upload scenario); glibc: glibc's own dynamic thresholds
//   BENCH_HEAP         fixed (default): servers start with a 64 MiB old-generation limit and no memory reducer
//                      (not in the upload scenario); v8: V8's own
//   BENCH_TWIN         e.g. "5:streamByHand": adds a copy of that side to the scenario, and a goal line
//                      comparing the two (how far apart identical code lands in one run)
//
// Quick run while changing things: BENCH_DURATION=1 BENCH_ROUNDS=2 BENCH_WARMUP=1 npm run bench

const { execFileSync, fork, spawn, spawnSync } = require('node:child_process')
const fs = require('node:fs')
const http = require('node:http')
const os = require('node:os')
const path = require('node:path')
const autocannon = require('autocannon')
const { scenarios } = require('./scenarios')
const { h2Once } = require('./h2-load')

const { flagsFromEnv, numberFromEnv } = require('./env')
const { median } = require('./stats')
const MiB = 1048576
const HOST = '127.0.0.1'
/** Seconds per warm-up burst (see warmUp). */
const WARMUP_BURST = 0.5

const config = {
  duration: numberFromEnv('BENCH_DURATION', 2),
  rounds: numberFromEnv('BENCH_ROUNDS', 10),
  roundsGiven: process.env.BENCH_ROUNDS !== undefined,
  warmup: numberFromEnv('BENCH_WARMUP', 2),
  connections: numberFromEnv('BENCH_CONNECTIONS', 10),
  only: process.env.BENCH_SCENARIOS ? process.env.BENCH_SCENARIOS.split(',').map((s) => s.trim()) : null,
  profile: process.env.BENCH_PROFILE
    ? (process.env.BENCH_PROFILE === '1' ? path.join(os.tmpdir(), 'fastify-digest-fields-profiles') : path.resolve(process.env.BENCH_PROFILE))
    : null,
  json: process.env.BENCH_JSON || null,
  pin: process.env.BENCH_PIN !== '0',
  processes: numberFromEnv('BENCH_PROCESSES', 5),
  mode: process.env.BENCH_MODE ?? 'concurrent',
  lenient: process.env.BENCH_LENIENT === '1',
  malloc: process.env.BENCH_MALLOC ?? 'fixed',
  heap: process.env.BENCH_HEAP ?? 'fixed'
}
if (config.malloc !== 'fixed' && config.malloc !== 'glibc') throw new Error(`BENCH_MALLOC: fixed or glibc, not ${config.malloc}`)
if (config.heap !== 'fixed' && config.heap !== 'v8') throw new Error(`BENCH_HEAP: fixed or v8, not ${config.heap}`)
if (config.mode !== 'concurrent' && config.mode !== 'alternate') throw new Error(`BENCH_MODE must be concurrent or alternate, not ${config.mode}`)

const CORES = os.availableParallelism?.() ?? os.cpus().length
let pinned = false

/** Whether `perf stat` can count instructions here (not on every virtual machine). */
function perfCounts () {
  const run = spawnSync('perf', ['stat', '-x', ',', '-e', 'instructions:u', 'true'], { encoding: 'utf8' })
  return run.status === 0 && String(run.stderr).split('\n').some((l) => /^\d+,/.test(l) && l.includes('instructions'))
}
const perfWorks = process.env.BENCH_PERF !== '0' && perfCounts()

/**
 * Pin a process, all its threads, to some cores with taskset (Linux). The
 * client and the server then never take each other's core, which on a
 * 2-core machine otherwise happens at random and shows as noise. Returns
 * false where that is not possible.
 */
function pin (pid, cpus) {
  try {
    execFileSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}

// ---------------------------------------------------------------------------
// Server processes

/**
 * A benchmark child process (a server, or the HTTP/2 load driver) that says
 * 'ready' and then answers the runner's messages by id.
 */
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
          this.onReady(message)
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

  onReady () {}

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

// glibc's malloc serves an allocation over its mmap threshold (128 KiB, raised to the largest block freed since,
// up to 32 MiB) with fresh pages, and returns a free heap top over twice that to the system: the same 1 MiB
// bodies cost one process 1.5 page faults a request and another 90, by what each freed before (docs/benchmarks.md,
// Method). Fixed thresholds take that out of the comparison; not in the upload scenario, whose memory is a budget.
const FIXED_MALLOC = 'glibc.malloc.mmap_threshold=4194304:glibc.malloc.trim_threshold=67108864'

function mallocEnv (scenario) {
  if (config.malloc !== 'fixed' || scenario.kind === 'upload') return {}
  const current = process.env.GLIBC_TUNABLES
  return { GLIBC_TUNABLES: current ? `${current}:${FIXED_MALLOC}` : FIXED_MALLOC }
}

// With V8's own limits a benchmark server's 10 MB heap is marked again and again: after a full collection,
// marking restarted at 10 MB of a 26 MB limit (--trace-incremental-marking), and one process ran 14, another
// 52 full collections per 1000 1 MiB requests, its CPU per request following. And a process idle for about 40 s
// between its runs (while the other processes run) gets three full collections from V8's memory reducer
// (--trace-gc: "Mark-Compact (reduce)"), no part of the load measured (docs/benchmarks.md, Method). A 64 MiB
// first limit, which no server reaches in a run, and no memory reducer take both out of the comparison; not in
// the upload scenario, whose memory is a budget.
const FIXED_HEAP = ['--initial-old-space-size=64', '--no-memory-reducer']

class Server extends Child {
  constructor (scenario, side, copy) {
    // BENCH_NODE_FLAGS: flags for every server process (node or V8), e.g. to compare garbage-collection settings.
    const execArgv = flagsFromEnv('BENCH_NODE_FLAGS')
    if (config.heap === 'fixed' && scenario.kind !== 'upload') execArgv.unshift(...FIXED_HEAP)
    if (config.profile !== null) {
      execArgv.push('--cpu-prof', '--cpu-prof-interval', '100', '--cpu-prof-dir', config.profile, '--cpu-prof-name', `scenario-${scenario.id}-${side.key}-${copy + 1}.cpuprofile`)
    }
    // Lets the server collect garbage before taking its memory baseline.
    if (scenario.kind === 'upload') execArgv.push('--expose-gc')
    super(`${scenario.id}/${side.key}#${copy + 1}`, 'server.js', {
      env: { ...process.env, ...mallocEnv(scenario), BENCH_SCENARIO: scenario.id, BENCH_SIDE: side.key },
      execArgv
    })
  }

  onReady (message) {
    this.port = message.port
    if (pinned) pin(this.child.pid, CORES === 2 ? '1' : `1-${CORES - 1}`)
  }

  async cpuMicros () {
    return (await this.usage()).cpu
  }

  /** CPU time (µs, all threads), full garbage collections and minor page faults so far. */
  async usage () {
    const { cpu, majorGcs, faults } = await this.ask('usage')
    return { cpu: cpu.user + cpu.system, majorGcs, faults }
  }

  /**
   * Count the instructions this server executes in user space (all its
   * threads) from now until the returned function is called, which resolves
   * with the count, or null where perf is missing or not allowed. Unlike
   * time, the count barely depends on what else the machine is doing.
   */
  async countInstructions () {
    if (!perfWorks) return async () => null
    const perf = spawn('perf', ['stat', '-x', ',', '-e', 'instructions:u', '-p', String(this.child.pid)], { stdio: ['ignore', 'ignore', 'pipe'] })
    let report = ''
    perf.stderr.on('data', (data) => { report += data })
    const exited = new Promise((resolve) => perf.once('close', resolve))
    // perf attaches asynchronously; the server is idle meanwhile.
    await new Promise((resolve) => setTimeout(resolve, 150))
    return async () => {
      perf.kill('SIGINT')
      await exited
      const line = report.split('\n').find((l) => l.includes('instructions'))
      const count = line === undefined ? NaN : Number(line.split(',')[0])
      return Number.isFinite(count) ? count : null
    }
  }
}

/**
 * The HTTP/2 load driver (h2-load.js) of one scenario, in a process of its
 * own on the runner's core: autocannon speaks HTTP/1.1 only.
 */
class H2Driver extends Child {
  constructor (scenario) {
    super(`${scenario.id}/h2-load`, 'h2-load.js', {})
    this.scenario = scenario
  }

  onReady () {
    if (pinned) pin(this.child.pid, '0')
  }

  /** A run of `seconds` against the server on `port`: autocannon's result shape (see h2-load.js). */
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
 * The streamed upload of scenario 6: chunks are written as the socket takes
 * them (backpressure), never gathered. Resolves with the response and the
 * seconds from the first byte sent to the last byte of the response.
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
        headers: res.headers,
        body: Buffer.concat(chunks),
        seconds: Number(process.hrtime.bigint() - start) / 1e9
      }))
    })
    // A server that answers early (a refusal) may close the connection under us.
    req.on('error', (err) => { if (!answered) reject(err) })
    const chunks = spec.chunks()
    const write = () => {
      for (;;) {
        // Stop sending once the server has answered.
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

// autocannon keeps every response body as a string (decoding it as UTF-8 and
// concatenating), which for the 1 MiB binary responses of scenario 3 costs the
// client more than the server spends on the request, so the client, not the
// server, would set the pace. Nothing here reads response bodies (the checks
// are made before measuring, with node:http): drop them. Bytes are still
// counted. Relies on an autocannon internal; without it, bodies are kept.
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
    duration: seconds
  })
}

// ---------------------------------------------------------------------------
// Statistics

/** Half the min-max range, relative to the median. */
function spread (values) {
  return (Math.max(...values) - Math.min(...values)) / 2 / median(values)
}

/** Busy and total jiffies of all CPUs (Linux), or null. */
function machineTicks () {
  try {
    const fields = fs.readFileSync('/proc/stat', 'utf8').split('\n', 1)[0].trim().split(/\s+/).slice(1).map(Number)
    const total = fields.reduce((a, b) => a + b, 0)
    // idle and iowait
    return { busy: total - fields[3] - (fields[4] ?? 0), total }
  } catch {
    return null
  }
}

/** Share of the whole machine (all cores) busy between two machineTicks(), 0..1. */
function machineShare (before, after) {
  if (before === null || after === null || after.total === before.total) return null
  return (after.busy - before.busy) / (after.total - before.total)
}

/**
 * The measured runs, in rounds. `sides[i]` is side i's server processes;
 * round r uses process r mod n of each side. `runs[i][r]` is side i's run in
 * round r.
 *
 * concurrent (scenarios marked `together`, unless BENCH_MODE=alternate): the
 * sides of a round run at the same time. Their servers share
 * the same core(s) and each gets the scheduler's fair share, so the machine's
 * speed, which here changes by up to 2x from one second to the next (another
 * tenant's work), weighs on every side alike at the scale of the scheduler's
 * time slices; throughputs then compare the sides' costs per request.
 * alternate (the other scenarios): A, B, C, then C, B, A, and so on: a
 * drift within a round weighs on all sides alike, a change from one run to
 * the next does not. Run together, each request would live k times longer
 * (k sides share the core), which changed what scenarios 4 and 5 measure
 * (zlib waits, garbage collection of 1 MiB bodies), and a fixed-size upload
 * finishing first would leave the whole core to the others.
 */
async function inRounds (sides, once, mode, rounds) {
  const runs = sides.map(() => [])
  for (let round = 0; round < rounds; round++) {
    const servers = sides.map((list) => list[round % list.length])
    if (mode === 'concurrent') {
      // Started in turn by each side first: no side always gets the head start.
      const order = sides.map((_, k) => (k + round) % sides.length)
      await Promise.all(order.map(async (i) => { runs[i][round] = await once(servers[i]) }))
    } else {
      const order = [...sides.keys()]
      if (round % 2 === 1) order.reverse()
      for (const i of order) runs[i][round] = await once(servers[i])
    }
  }
  return runs
}

/**
 * Per-round ratios of each side against the baseline (side 1, or side
 * `against`), from runs made in the same round, and their median and
 * quartiles: a slow drift of the machine cancels out of each pair.
 */
function pairedRatios (runs, value, higherIsBetter = true, against = 1) {
  return runs.map((list) => {
    const ratios = list.map((run, r) => higherIsBetter ? value(run) / value(runs[against][r]) : value(runs[against][r]) / value(run))
    return { ratios, median: median(ratios), q1: quantile(ratios, 0.25), q3: quantile(ratios, 0.75) }
  })
}

function quantile (values, q) {
  const sorted = [...values].sort((a, b) => a - b)
  const pos = (sorted.length - 1) * q
  const lo = Math.floor(pos)
  return sorted[lo] + (sorted[Math.min(lo + 1, sorted.length - 1)] - sorted[lo]) * (pos - lo)
}

function loadAverage () {
  return os.loadavg().map((l) => l.toFixed(2)).join(' ')
}

// ---------------------------------------------------------------------------
// Running one scenario

/** Whether `side` must answer 400 to a wrong digest: the sides named by badRequest.refusedBy, or else the verifying plugin sides. */
function mustRefuse (scenario, side) {
  if (scenario.badRequest === undefined) return false
  if (scenario.badRequest.refusedBy !== undefined) return scenario.badRequest.refusedBy.includes(side.key)
  return side.plugin !== undefined && side.plugin.verify !== false
}

/** One request of a scenario, `headers` added, over its protocol. */
function requestOnce (scenario, port, headers = {}) {
  if (scenario.kind === 'upload') return upload(port, scenario.upload, headers)
  if (scenario.protocol === 'h2') return h2Once(port, scenario.request, headers)
  return fetchOnce(port, { ...scenario.request, headers: { ...scenario.request.headers, ...headers } })
}

/**
 * The checks made on one server process before measuring. A failure stops
 * the run, or with BENCH_LENIENT=1 goes to `problems` (reported with the
 * results).
 */
async function check (scenario, side, server, problems) {
  const info = {}
  const fail = (message) => {
    if (!config.lenient) throw new Error(`${server.label}: ${message}`)
    problems.push({ side: side.key, text: `${server.label}: ${message}` })
  }
  const correct = scenario.kind === 'upload' ? { 'content-digest': scenario.upload.field() } : {}
  const res = await requestOnce(scenario, server.port, correct)
  if (res.status !== 200) {
    fail(`status ${res.status} ${res.body.subarray(0, 300)}`)
  } else {
    try {
      Object.assign(info, scenario.check(side.twinOf ?? side, res))
    } catch (err) {
      fail(err.message)
    }
  }
  if (mustRefuse(scenario, side)) {
    // A verifying side must refuse a wrong digest, or it is not verifying.
    const bad = await requestOnce(scenario, server.port, scenario.badRequest.headers)
    if (bad.status !== 400) fail(`a wrong digest got ${bad.status}, not 400`)
  }
  return info
}

/**
 * Each side's summary of its runs: medians of the throughput `rate` (higher
 * is better), of the CPU `cost` and instructions `insn` per unit (null when
 * not counted), their paired ratios against the baseline, and `extra(list)`.
 */
function summarize (runs, { rate, cost, insn }, extra) {
  const medianOf = (list, key) => median(list.map((r) => r[key]))
  const pairs = pairedRatios(runs, (r) => r[rate])
  const cpuPairs = pairedRatios(runs, (r) => r[cost], false)
  const insnPairs = runs[0][0][insn] === null ? null : pairedRatios(runs, (r) => r[insn], false)
  return runs.map((list, i) => ({
    runs: list,
    [rate]: medianOf(list, rate),
    spread: spread(list.map((r) => r[rate])),
    paired: pairs[i],
    cpuPaired: cpuPairs[i],
    insnPaired: insnPairs?.[i] ?? null,
    [insn]: insnPairs === null ? null : medianOf(list, insn),
    [cost]: medianOf(list, cost),
    cpuShare: medianOf(list, 'cpuShare'),
    machine: list[0].machine === null ? null : medianOf(list, 'machine'),
    ...extra(list)
  }))
}

/**
 * How many rounds a scenario runs: its own `rounds` where it sets them (those whose per-round ratios
 * spread widely, docs/benchmarks.md "Method"), unless BENCH_ROUNDS is given.
 */
function roundsOf (scenario) {
  return config.roundsGiven ? config.rounds : scenario.rounds ?? config.rounds
}

/** How a scenario's rounds run (see inRounds). */
function modeOf (scenario) {
  return scenario.together === true ? config.mode : 'alternate'
}

/** The servers of all sides, first processes first: A1 B1 C1 A2 B2 C2 ... */
function inTurn (servers) {
  return servers[0].flatMap((_, copy) => servers.map((list) => list[copy]))
}

/**
 * Warm a server up in short bursts, each on new connections. The end of a
 * burst closes its connections, a path the steady state never takes; V8 then
 * deoptimizes hot stream functions (Readable.push, read, flow, emit: "wrong
 * map") and re-optimizes them in the next burst. With one 2 s burst, that
 * happened in the first measured run of every process: +10 to +15 % of
 * instructions per request for a 1 KiB GET, on every side (docs/benchmarks.md,
 * "Method"). After four bursts it no longer shows.
 */
async function warmUp (load, port) {
  const bursts = Math.max(2, Math.round(config.warmup / WARMUP_BURST))
  for (let i = 0; i < bursts; i++) await load(port, config.warmup / bursts)
}

/** Status codes counted in a run's result: { '200': 1234, ... }. */
function statusCounts (result) {
  return Object.fromEntries(Object.entries(result.statusCodeStats ?? {}).map(([code, stats]) => [code, stats.count]))
}

/**
 * The measured runs of a request scenario. `load(port, seconds)` is one run of
 * the scenario's client (autocannon, or the HTTP/2 driver), autocannon's
 * result shape.
 */
async function runRequests (scenario, servers, load) {
  // Process by process, the sides in turn: no side's processes wait longer for their first run.
  for (const server of inTurn(servers)) await warmUp(load, server.port)
  const runs = await inRounds(servers, async (server) => {
    const stopCounting = await server.countInstructions()
    const before = await server.usage()
    const ticks = machineTicks()
    const result = await load(server.port, config.duration)
    const machine = machineShare(ticks, machineTicks())
    const after = await server.usage()
    const cpu = after.cpu - before.cpu
    const instructions = await stopCounting()
    const faults = result.errors > 0 || result.timeouts > 0 || result.non2xx > 0
    if (faults && !config.lenient) {
      throw new Error(`${server.label}: ${result.errors} errors, ${result.timeouts} timeouts, ${result.non2xx} non-2xx responses` +
        (result.failure ? ` (${result.failure})` : ''))
    }
    const requests = result.requests.total
    return {
      statuses: statusCounts(result),
      errors: result.errors + result.timeouts,
      rps: requests / result.duration,
      cpuPerRequest: cpu / requests,
      cpuShare: cpu / 1e6 / result.duration,
      machine,
      instructionsPerRequest: instructions === null ? null : instructions / requests,
      latencyP50: result.latency.p50,
      majorGcs: after.majorGcs - before.majorGcs,
      faults: after.faults - before.faults,
      requests
    }
  }, modeOf(scenario), roundsOf(scenario))
  return summarize(runs, { rate: 'rps', cost: 'cpuPerRequest', insn: 'instructionsPerRequest' }, (list) => {
    // Every status counted over the measured runs, and the errors (only with BENCH_LENIENT can they be anything but 200 and 0).
    const statuses = {}
    for (const run of list) for (const [code, count] of Object.entries(run.statuses)) statuses[code] = (statuses[code] ?? 0) + count
    const total = (key) => list.reduce((sum, r) => sum + r[key], 0)
    return { latencyP50: median(list.map((r) => r.latencyP50)), statuses, errors: total('errors'), majorGcsPerK: 1000 * total('majorGcs') / total('requests'), faultsPerRequest: total('faults') / total('requests') }
  })
}

async function runUploads (scenario, servers) {
  const spec = scenario.upload
  const headers = { 'content-digest': spec.field() }
  const one = async (server) => {
    await server.ask('reset-peak')
    const cpuBefore = await server.cpuMicros()
    const res = await upload(server.port, spec, headers)
    const cpu = await server.cpuMicros() - cpuBefore
    const memory = await server.ask('peak')
    if (res.status !== 200) throw new Error(`${server.label}: status ${res.status}`)
    return { res, cpu, memory }
  }
  for (const server of inTurn(servers)) await one(server) // warm-up
  const runs = await inRounds(servers, async (server) => {
    const stopCounting = await server.countInstructions()
    const ticks = machineTicks()
    const { res, cpu, memory } = await one(server)
    const machine = machineShare(ticks, machineTicks())
    const instructions = await stopCounting()
    const kernelGrowth = memory.kernelPeak === null ? null : memory.kernelPeak - memory.baseline
    return {
      mibps: spec.bytes / MiB / res.seconds,
      cpuPerMiB: cpu / (spec.bytes / MiB),
      cpuShare: cpu / 1e6 / res.seconds,
      machine,
      instructionsPerMiB: instructions === null ? null : instructions / (spec.bytes / MiB),
      growth: Math.max(memory.peak - memory.baseline, kernelGrowth ?? 0),
      sampledGrowth: memory.peak - memory.baseline,
      kernelGrowth,
      peak: Math.max(memory.peak, memory.kernelPeak ?? 0)
    }
  }, modeOf(scenario), roundsOf(scenario))
  return summarize(runs, { rate: 'mibps', cost: 'cpuPerMiB', insn: 'instructionsPerMiB' }, (list) => ({
    maxGrowth: Math.max(...list.map((r) => r.growth)),
    medianGrowth: median(list.map((r) => r.growth)),
    peak: Math.max(...list.map((r) => r.peak))
  }))
}

// sha-256 timed in a process of the first side's own, never measured: the megabytes it hashes would change a
// measured process's garbage collection for the rest of its life.
async function timeHashes (scenario, info) {
  const timer = new Server(scenario, scenario.sides[0], config.processes)
  try {
    await timer.ready
    return (await timer.ask('hash', { specs: scenario.hashes(info) })).results
  } finally {
    await timer.close()
  }
}

async function runScenario (scenario) {
  // Several processes per side (BENCH_PROCESSES): the same server code can
  // settle into a faster or slower state from one process to the next (see
  // docs/benchmarks.md), so no side is judged on one process only.
  const servers = scenario.sides.map((side) => Array.from({ length: config.processes }, (_, copy) => new Server(scenario, side, copy)))
  // The HTTP/2 scenario's client runs in a process of its own (h2-load.js).
  const driver = scenario.protocol === 'h2' ? new H2Driver(scenario) : null
  const all = driver === null ? servers.flat() : [...servers.flat(), driver]
  const connections = scenario.connections ?? config.connections
  const load = driver === null
    ? (port, seconds) => cannon(port, scenario.request, seconds, connections)
    : (port, seconds) => driver.run(port, seconds, connections)
  try {
    await Promise.all(all.map((s) => s.ready))
    const info = {}
    const problems = []
    for (const [i, side] of scenario.sides.entries()) {
      for (const server of servers[i]) Object.assign(info, await check(scenario, side, server, problems))
    }
    const hashes = await timeHashes(scenario, info)
    const loadBefore = loadAverage()
    const sides = scenario.kind === 'upload' ? await runUploads(scenario, servers) : await runRequests(scenario, servers, load)
    return { scenario, info, problems, hashes, sides, load: [loadBefore, loadAverage()] }
  } finally {
    await Promise.all(all.map((s) => s.close()))
  }
}

// ---------------------------------------------------------------------------
// Judging and printing

function fmtMicros (us) {
  return Math.abs(us) >= 1000 ? `${(us / 1000).toFixed(2)} ms` : `${us.toFixed(1)} µs`
}

function pct (x) {
  return `±${(x * 100).toFixed(1)}%`
}

function sizeLabel (bytes) {
  return bytes >= MiB && bytes % MiB === 0 ? `${bytes / MiB} MiB` : `${bytes} B`
}

/** ", instructions 0.912": a side's instruction ratio against the baseline, where counted. */
function insnText (side) {
  return side.insnPaired === null ? '' : `, instructions ${side.insnPaired.median.toFixed(3)}`
}

/**
 * Ratios and budget lines of one scenario. Sides: [0] the plugin, [1] the
 * baseline, the one keyed `hash` (if any) the baseline plus the sha-256 passes
 * by hand. Without that side, "bare + hash" is estimated from the sha-256
 * timings taken in the plugin's server process while it was idle. A budget of
 * kind 'reference' compares the plugin with the side keyed
 * `budget.reference` (default `hash`).
 */
function evaluate ({ scenario, hashes, sides }) {
  const [subject, base] = sides
  // Run concurrently, the sides shared the server core: each ran at about
  // 1/slots of the rate it would reach alone.
  const slots = modeOf(scenario) === 'concurrent' ? sides.length : 1
  const refIndex = scenario.sides.findIndex((s) => s.key === 'hash')
  const ref = refIndex === -1 ? null : sides[refIndex]
  const budget = scenario.budget
  const budgetRefIndex = scenario.sides.findIndex((s) => s.key === (budget.reference ?? 'hash'))
  if (budget.kind === 'reference' && budgetRefIndex === -1) throw new Error(`scenario ${scenario.id}: no side keyed ${budget.reference ?? 'hash'} to compare with`)
  const hashWall = hashes.reduce((sum, h) => sum + h.wallMicros, 0)
  const hashCpu = hashes.reduce((sum, h) => sum + h.cpuMicros, 0)
  const whom = scenario.sides[1].label
  if (scenario.kind === 'upload') {
    // The median of the per-round ratios (see pairedRatios).
    const ratio = subject.paired.median
    const hashMibps = (hashes[0].bytes / MiB) / (hashes[0].wallMicros / 1e6)
    const estimate = 1 / (1 + base.mibps * slots / hashMibps)
    const growthMiB = subject.maxGrowth / MiB
    const cpuRatio = subject.cpuPaired.median
    return {
      ratio,
      cpuRatio,
      refIndex,
      ideal: ref === null ? estimate : ref.paired.median,
      measuredIdeal: ref !== null,
      estimate,
      hashMibps,
      lines: [
        {
          text: `throughput ≥ ${budget.min} of ${whom} (unverified)`,
          value: ratio.toFixed(3),
          pass: ratio >= budget.min,
          aside: `CPU ${cpuRatio.toFixed(3)}${insnText(subject)}; bare + sha-256 by hand: ${ref === null ? '-' : ref.paired.median.toFixed(3)}${ref === null ? '' : insnText(ref)}`
        },
        { text: `peak RSS growth < ${budget.maxGrowthMiB} MiB`, value: `${growthMiB.toFixed(1)} MiB`, pass: growthMiB < budget.maxGrowthMiB }
      ]
    }
  }
  // The median of the per-round ratios (see pairedRatios).
  const ratio = subject.paired.median
  // What the ratio would be if the server alone set the pace: with small
  // responses one autocannon process cannot keep a Fastify server busy, so
  // req/s flatters whichever side costs more.
  const cpuRatio = subject.cpuPaired.median
  // Estimated bare + hash: each request costs the baseline's time plus the hashing.
  const estimate = 1 / (1 + base.rps * slots * hashWall / 1e6)
  const result = {
    ratio,
    cpuRatio,
    refIndex,
    ideal: ref === null ? estimate : ref.paired.median,
    // The plugin against the budget's by-hand reference, per round (budget kind 'reference').
    againstRef: budget.kind === 'reference',
    budgetRefIndex,
    vsRef: budgetRefIndex === -1 ? null : pairedRatios(sides.map((s) => s.runs), (r) => r.rps, true, budgetRefIndex)[0],
    cpuVsRef: budgetRefIndex === -1 ? null : pairedRatios(sides.map((s) => s.runs), (r) => r.cpuPerRequest, false, budgetRefIndex)[0],
    // ... and against the `hash` side, when the budget names another one.
    vsHash: ref === null || refIndex === budgetRefIndex ? null : pairedRatios(sides.map((s) => s.runs), (r) => r.rps, true, refIndex)[0],
    measuredIdeal: ref !== null,
    estimate,
    hashWall,
    hashCpu,
    addedWall: 1e6 / (subject.rps * slots) - 1e6 / (base.rps * slots),
    addedCpu: subject.cpuPerRequest - base.cpuPerRequest,
    refAddedWall: ref === null ? null : 1e6 / (ref.rps * slots) - 1e6 / (base.rps * slots),
    refAddedCpu: ref === null ? null : ref.cpuPerRequest - base.cpuPerRequest
  }
  if (budget.kind === 'reference') {
    // Against bare Fastify + the same check written by hand, measured in the same rounds.
    const { vsRef, cpuVsRef, vsHash } = result
    const budgetRef = sides[budgetRefIndex]
    result.lines = [{
      text: `req/s ≥ ${budget.min} of ${scenario.sides[budgetRefIndex].label}`,
      value: vsRef.median.toFixed(3),
      pass: vsRef.median >= budget.min,
      aside: `quartiles ${vsRef.q1.toFixed(2)}–${vsRef.q3.toFixed(2)}; CPU ${cpuVsRef.median.toFixed(3)}; ` +
        `against ${whom}: ${ratio.toFixed(3)}, by hand ${budgetRef.paired.median.toFixed(3)}` +
        (vsHash === null ? '' : `; against ${scenario.sides[refIndex].label}: ${vsHash.median.toFixed(3)} (it ${ref.paired.median.toFixed(3)} of ${whom})`)
    }]
  } else if (budget.kind === 'ratio') {
    result.lines = [{
      text: `req/s ≥ ${budget.min} of ${whom}`,
      value: ratio.toFixed(3),
      pass: ratio >= budget.min,
      aside: `CPU ${cpuRatio.toFixed(3)}${cpuRatio >= budget.min ? '' : ' (below)'}${insnText(subject)}` +
        (ref === null ? '' : `; ${scenario.sides[refIndex].label}: ${ref.paired.median.toFixed(3)}${insnText(ref)}`)
    }]
  } else {
    // The time the plugin adds to a request, against one sha-256 pass over
    // the same bytes by hand in the same conditions (server CPU time, which
    // neither the client nor other processes inflate), and, for information,
    // against req/s and the idle-process timing.
    const times = result.addedCpu / result.refAddedCpu
    result.lines = [{
      text: `added CPU time/request ≤ ${budget.max}x one sha-256 pass by hand (${fmtMicros(result.refAddedCpu)})`,
      value: `${fmtMicros(result.addedCpu)} = ${times.toFixed(2)}x`,
      pass: times <= budget.max,
      aside: `by req/s ${(result.addedWall / result.refAddedWall).toFixed(2)}x; idle-process sha-256: ${(result.addedCpu / hashCpu).toFixed(2)}x`
    }]
  }
  // Goals (information, no budget line): [subject, reference, min], the median of the per-round req/s ratios.
  for (const [subjectKey, referenceKey, min] of scenario.goals ?? []) {
    const index = (key) => scenario.sides.findIndex((s) => s.key === key)
    const runs = sides.map((s) => s.runs)
    const vs = pairedRatios(runs, (r) => r.rps, true, index(referenceKey))[index(subjectKey)]
    const cpu = pairedRatios(runs, (r) => r.cpuPerRequest, false, index(referenceKey))[index(subjectKey)]
    result.lines.push({
      text: `goal: ${scenario.sides[index(subjectKey)].label}, req/s ≥ ${min} of ${scenario.sides[index(referenceKey)].label}`,
      value: vs.median.toFixed(3),
      pass: vs.median >= min,
      info: true,
      aside: `quartiles ${vs.q1.toFixed(2)}–${vs.q3.toFixed(2)}; CPU ${cpu.median.toFixed(3)}`
    })
  }
  return result
}

/** Columns padded to their widest cell: text columns (`left`) to the left, numbers to the right. */
function table (rows, left = [0, 1]) {
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => String(r[c] ?? '').length)))
  return rows.map((r) => r.map((cell, c) => {
    const s = String(cell ?? '')
    return left.includes(c) ? s.padEnd(widths[c]) : s.padStart(widths[c])
  }).join('  ').trimEnd()).join('\n')
}

/**
 * The ratio cells of side `i`: the median of its per-round ratios against
 * the baseline with their quartiles, and (plugin only) against bare + hash.
 */
function ratioCells (i, s, e) {
  if (i === 1) return ['1', '', '']
  const cells = [s.paired.median.toFixed(3), `${s.paired.q1.toFixed(2)}–${s.paired.q3.toFixed(2)}`]
  if (i !== 0) return [...cells, '']
  // Budgets against the reference: the median of the per-round ratios, as on the budget line.
  if (e.againstRef === true) return [...cells, e.vsRef.median.toFixed(3)]
  return [...cells, `${(e.ratio / e.ideal).toFixed(3)}${e.measuredIdeal ? '' : ' (est.)'}`]
}

function share (x) {
  return x === null ? '-' : `${(x * 100).toFixed(0)}%`
}

function report (results) {
  const rows = [['#', 'scenario / side', 'req/s', 'spread', 'srv CPU', 'machine', 'CPU/req', 'p50 ms', 'full GC/1k', 'faults/req', 'vs base', 'quartiles', 'vs bare+hash', 'CPU ratio', 'k insn/req', 'insn ratio']]
  const uploadRows = [['#', 'scenario / side', 'MiB/s', 'spread', 'srv CPU', 'machine', 'CPU ms/MiB', 'RSS growth max', 'median', 'peak RSS', 'vs base', 'quartiles', 'vs bare+hash', 'CPU ratio', 'M insn/MiB', 'insn ratio']]
  const hashRows = [['#', 'sha-256 over', 'wall', 'CPU']]
  const budgetRows = [['#', 'budget', 'measured', 'result', 'server CPU and instruction ratios / notes']]
  const notes = []
  let failed = 0
  for (const result of results) {
    const { scenario, sides, hashes } = result
    const e = evaluate(result)
    result.evaluation = e
    if (scenario.kind === 'upload') {
      uploadRows.push([scenario.id, scenario.title])
      for (const [i, s] of sides.entries()) {
        uploadRows.push([
          '', `  ${scenario.sides[i].label}`, s.mibps.toFixed(0), pct(s.spread), share(s.cpuShare), share(s.machine),
          (s.cpuPerMiB / 1000).toFixed(3), `${(s.maxGrowth / MiB).toFixed(1)} MiB`, `${(s.medianGrowth / MiB).toFixed(1)} MiB`,
          `${(s.peak / MiB).toFixed(0)} MiB`, ...ratioCells(i, s, e),
          i === 1 ? '' : s.cpuPaired.median.toFixed(3),
          s.instructionsPerMiB === null ? '-' : (s.instructionsPerMiB / 1e6).toFixed(1),
          i === 1 || s.insnPaired === null ? '' : s.insnPaired.median.toFixed(3)
        ])
      }
      notes.push(`S${scenario.id}: sha-256 alone streams at ${e.hashMibps.toFixed(0)} MiB/s in an idle process, so bare + hash ` +
        `would reach ${e.estimate.toFixed(3)} of ${scenario.sides[1].label}` +
        (e.measuredIdeal ? `; measured by hand: ${e.ideal.toFixed(3)}` : ''))
    } else {
      rows.push([scenario.id, scenario.title])
      for (const [i, s] of sides.entries()) {
        rows.push([
          '', `  ${scenario.sides[i].label}`, s.rps.toFixed(0), pct(s.spread), share(s.cpuShare), share(s.machine),
          fmtMicros(s.cpuPerRequest), s.latencyP50.toFixed(1), s.majorGcsPerK.toFixed(1), s.faultsPerRequest.toFixed(1), ...ratioCells(i, s, e),
          i === 1 ? '' : s.cpuPaired.median.toFixed(3),
          s.instructionsPerRequest === null ? '-' : (s.instructionsPerRequest / 1e3).toFixed(1),
          i === 1 || s.insnPaired === null ? '' : s.insnPaired.median.toFixed(3)
        ])
      }
      if (e.hashWall > 0) {
        let note = `S${scenario.id}: ${scenario.sides[0].label} adds ${fmtMicros(e.addedCpu)} of server CPU per request (${fmtMicros(e.addedWall)} by req/s)`
        if (e.refAddedCpu !== null) note += `; sha-256 by hand adds ${fmtMicros(e.refAddedCpu)} (${fmtMicros(e.refAddedWall)} by req/s)`
        note += `; in an idle process the passes take ${fmtMicros(e.hashCpu)}`
        notes.push(note)
      }
    }
    if (modeOf(scenario) === 'concurrent') {
      // Sharing the server core, every side busy gets the same share; a side
      // well below the others was waiting for its client, and its throughput
      // then flatters it: the CPU ratio still compares costs per request.
      const shares = sides.map((s) => s.cpuShare)
      const low = Math.min(...shares)
      const high = Math.max(...shares)
      if (low < 0.85 * high) {
        notes.push(`S${scenario.id}: the servers' CPU shares differ (${share(low)} to ${share(high)}): not every side kept its ` +
          'share of the core busy (its client set the pace), so its req/s ratio flatters it; the CPU ratio compares the costs')
      }
    }
    for (const h of hashes) {
      hashRows.push([scenario.id, `${sizeLabel(h.bytes)}${h.chunk ? ` in ${h.chunk / 1024} KiB updates` : ', one-shot'}`,
        h.chunk ? `${((h.bytes / MiB) / (h.wallMicros / 1e6)).toFixed(0)} MiB/s` : fmtMicros(h.wallMicros),
        h.chunk ? `${((h.bytes / MiB) / (h.cpuMicros / 1e6)).toFixed(0)} MiB/s` : fmtMicros(h.cpuMicros)])
    }
    // BENCH_LENIENT: what failed its checks, or was not answered 200 while measured.
    for (const problem of result.problems) notes.push(`S${scenario.id}: check failed: ${problem.text}`)
    const answered = sides.map((s, i) => {
      const codes = Object.entries(s.statuses ?? {}).filter(([code]) => code !== '200')
      if (codes.length === 0 && !(s.errors > 0)) return true
      const parts = [...codes.map(([code, n]) => `${code} ×${n}`), ...(s.errors > 0 ? [`${s.errors} errors`] : [])]
      notes.push(`S${scenario.id}: ${scenario.sides[i].label} answered ${parts.join(', ')} (and 200 ×${s.statuses?.['200'] ?? 0}) in the measured runs`)
      return false
    })
    const invalid = result.problems.length > 0 || answered.includes(false)
    if (invalid) notes.push(`S${scenario.id}: INVALID: a side did not answer as the scenario requires, its figures do not measure what the scenario says`)
    for (const line of e.lines) {
      // A line applied for information (scenario 2p) is no budget line of its own.
      const info = scenario.budget.info === true || line.info === true
      if (invalid || (!line.pass && !info)) failed++
      const verdict = invalid ? 'INVALID' : info ? (line.pass ? 'above' : 'below') : (line.pass ? 'PASS' : 'FAIL')
      budgetRows.push([scenario.id, line.text, line.value, verdict, line.aside ?? ''])
    }
  }
  const out = []
  if (rows.length > 1) out.push(table(rows), '')
  if (uploadRows.length > 1) out.push(table(uploadRows), '')
  if (notes.length > 0) out.push(...notes, '')
  if (hashRows.length > 1) out.push('node:crypto sha-256 in a server process of the first side (the plugin\'s; in 2p the by-hand hook\'s), never measured (median of 7 batches):', table(hashRows), '')
  out.push(table(budgetRows, [0, 1, 4]))
  console.log(out.join('\n'))
  return failed
}

function describeMachine () {
  let model = os.cpus()[0]?.model ?? 'unknown'
  try {
    const match = /^model name\s*:\s*(.+)$/m.exec(fs.readFileSync('/proc/cpuinfo', 'utf8'))
    if (match !== null) model = match[1]
  } catch {}
  const version = (name) => {
    try {
      return require(`${name}/package.json`).version
    } catch {
      return '?'
    }
  }
  return {
    cpu: model,
    cores: CORES,
    node: process.version,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    fastify: version('fastify'),
    compress: version('@fastify/compress'),
    autocannon: version('autocannon')
  }
}

async function main () {
  const selected = config.only === null ? scenarios : scenarios.filter((s) => config.only.includes(s.id))
  if (selected.length === 0) throw new Error(`no scenario matches BENCH_SCENARIOS=${process.env.BENCH_SCENARIOS}`)
  if (config.profile !== null) fs.mkdirSync(config.profile, { recursive: true })
  pinned = config.pin && CORES >= 2 && pin(process.pid, '0')
  const machine = describeMachine()
  console.log(`fastify-digest-fields benchmarks: ${machine.cpu}, ${machine.cores} cores, Node ${machine.node}, ` +
    `fastify ${machine.fastify}, @fastify/compress ${machine.compress}, autocannon ${machine.autocannon}`)
  const ownRounds = config.roundsGiven ? [] : selected.filter((s) => s.rounds !== undefined).map((s) => `${s.rounds} in ${s.id}`)
  console.log(`${config.rounds} rounds${ownRounds.length === 0 ? '' : ` (${ownRounds.join(', ')})`} of ${config.duration} s per side after ${config.warmup} s of warm-up in bursts, ${config.mode === 'concurrent' ? `the sides of a round at the same time in scenarios ${scenarios.filter((s) => s.together === true).map((s) => s.id).join(', ')}, alternating (A B, B A, ...) in the others` : 'sides alternating (A B, B A, ...)'}, ` +
    `${config.processes} server process(es) per side in turn; instructions ${perfWorks ? 'counted (perf stat)' : 'not counted'}; ` +
    `load average ${loadAverage()}; ${pinned ? 'runner pinned to core 0, servers to the others' : 'not pinned to cores'}; ` +
    `malloc thresholds ${config.malloc}, heap ${config.heap === 'fixed' ? 'a 64 MiB first old-generation limit, no memory reducer' : 'V8\'s limits'} (not in uploads)` +
    `${config.lenient ? '; BENCH_LENIENT: failed checks are reported, not fatal' : ''}`)
  const results = []
  for (const scenario of selected) {
    process.stdout.write(`  scenario ${scenario.id}: ${scenario.title} ... `)
    const started = Date.now()
    results.push(await runScenario(scenario))
    console.log(`${((Date.now() - started) / 1000).toFixed(0)} s`)
  }
  console.log(`load average after the run: ${loadAverage()}\n`)
  const failed = report(results)
  for (const { scenario } of results) console.log(`  S${scenario.id}: ${scenario.note}`)
  if (config.profile !== null) console.log(`\nCPU profiles: ${config.profile}`)
  if (config.json !== null) {
    fs.writeFileSync(config.json, JSON.stringify({
      machine,
      config,
      results: results.map(({ scenario, info, problems, hashes, sides, load, evaluation }) => ({
        id: scenario.id, title: scenario.title, sides: scenario.sides.map((s) => s.label), info, problems, hashes, load, results: sides, evaluation
      }))
    }, null, 2))
  }
  if (failed > 0) console.log(`\n${failed} budget line(s) missed`)
}

main().catch((err) => {
  console.error(err)
  process.exitCode = 1
})
