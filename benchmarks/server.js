'use strict'

// First: every benchmark process starts with the same nextTick feedback (see tick-maps.js).
require('./tick-maps')

// One side of one scenario: a Fastify server listening on 127.0.0.1, in its
// own process, started by run.js with child_process.fork(). It talks to the
// runner over IPC only: 'ready' with its port, then answers requests for its
// CPU time, its memory (peak RSS, sampled), and the cost of sha-256 in this
// process. It never measures its own requests.

const fs = require('node:fs')
const { createHash, hash } = require('node:crypto')
const { PerformanceObserver, constants } = require('node:perf_hooks')
const Fastify = require('fastify')
const { scenarios } = require('./scenarios')
const { randomBytes } = require('./payloads')

const scenario = scenarios.find((s) => s.id === process.env.BENCH_SCENARIO)
const listed = scenario?.sides.find((s) => s.key === process.env.BENCH_SIDE)
// A twin (BENCH_TWIN in scenarios.js) is built as the side it copies.
const side = listed?.twinOf ?? listed

// Full (mark-compact) collections so far: with 1 MiB bodies a process settles at anywhere from none to
// one every 20 requests, and its CPU time per request follows (docs/benchmarks.md, "Findings").
let majorGcs = 0
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) if (entry.detail.kind === constants.NODE_PERFORMANCE_GC_MAJOR) majorGcs++
}).observe({ entryTypes: ['gc'] })

// Peak RSS: sampled every few milliseconds, and, where Linux allows it, the
// kernel's own high-water mark (VmHWM, reset through /proc/self/clear_refs).
let sampler = null
let peak = 0
let baseline = 0

function sample () {
  const rss = process.memoryUsage.rss()
  if (rss > peak) peak = rss
}

function kernelPeak () {
  try {
    const match = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync('/proc/self/status', 'utf8'))
    return match === null ? null : Number(match[1]) * 1024
  } catch {
    return null
  }
}

function resetPeak () {
  if (typeof global.gc === 'function') global.gc()
  let kernel = true
  try {
    fs.writeFileSync('/proc/self/clear_refs', '5')
  } catch {
    kernel = false
  }
  baseline = process.memoryUsage.rss()
  peak = baseline
  if (sampler === null) sampler = setInterval(sample, 2)
  return { baseline, kernel }
}

function readPeak (kernel) {
  sample()
  return { baseline, peak, kernelPeak: kernel ? kernelPeak() : null }
}

function median (values) {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]
}

/**
 * The cost of sha-256 over `bytes` bytes in this process: one-shot
 * (crypto.hash, what the plugin uses for buffered payloads) or in `chunk`
 * updates (createHash, what it does for streams). Median of 7 batches of at
 * least 40 ms each; wall-clock and CPU time per pass, in microseconds.
 */
function timeHash ({ bytes, chunk }) {
  // Streams are timed over (at most) 16 MiB and scaled.
  const size = chunk === undefined ? bytes : Math.min(bytes, 16 * 1048576)
  const data = randomBytes(size, 99)
  const streamed = () => {
    const h = createHash('sha256')
    for (let off = 0; off < size; off += chunk) h.update(data.subarray(off, off + chunk))
    return h.digest()
  }
  const once = chunk === undefined ? () => hash('sha256', data, 'buffer') : streamed
  for (let i = 0; i < 20; i++) once()
  let iterations = 1
  for (;;) {
    const start = process.hrtime.bigint()
    for (let i = 0; i < iterations; i++) once()
    if (Number(process.hrtime.bigint() - start) > 40e6) break
    iterations *= 2
  }
  const wall = []
  const cpu = []
  for (let batch = 0; batch < 7; batch++) {
    const cpuStart = process.cpuUsage()
    const start = process.hrtime.bigint()
    for (let i = 0; i < iterations; i++) once()
    const elapsed = Number(process.hrtime.bigint() - start) / 1e3
    const used = process.cpuUsage(cpuStart)
    wall.push(elapsed / iterations)
    cpu.push((used.user + used.system) / iterations)
  }
  const scale = bytes / size
  return { bytes, chunk, wallMicros: median(wall) * scale, cpuMicros: median(cpu) * scale }
}

async function main () {
  if (side === undefined) throw new Error(`unknown scenario/side ${process.env.BENCH_SCENARIO}/${process.env.BENCH_SIDE}`)
  // scenario.fastify: e.g. http2: true (h2c) for the HTTP/2 scenario.
  const app = Fastify({ logger: false, ...scenario.fastify })
  await scenario.setup(app, side)
  await app.listen({ host: '127.0.0.1', port: 0 })
  let kernel = false

  process.on('message', (message) => {
    const answer = (data) => process.send({ id: message.id, ...data })
    switch (message.type) {
      case 'usage':
        answer({ cpu: process.cpuUsage(), rss: process.memoryUsage.rss(), majorGcs, faults: process.resourceUsage().minorPageFault })
        break
      case 'reset-peak':
        ({ kernel } = resetPeak())
        answer({ baseline })
        break
      case 'peak':
        answer(readPeak(kernel))
        break
      case 'hash':
        answer({ results: message.specs.map(timeHash) })
        break
      case 'close':
        clearInterval(sampler)
        // A clean exit, so that --cpu-prof writes its profile.
        app.close().then(() => process.exit(0))
        break
      default:
        answer({ error: `unknown message ${message.type}` })
    }
  })
  process.on('disconnect', () => process.exit(0))
  process.send({ type: 'ready', port: app.server.address().port })
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
