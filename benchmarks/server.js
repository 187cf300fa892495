'use strict'

// One side of one scenario (BENCH_SCENARIO, BENCH_SIDE): a Fastify server on 127.0.0.1 in a process of its own,
// forked by run.js. Over IPC it says 'ready' with its port, then answers for its CPU time and, for uploads, its peak
// RSS growth (sampled every 2 ms, and the kernel's high-water mark where Linux allows resetting it).

require('./tick-maps')

const fs = require('node:fs')
const Fastify = require('fastify')
const { scenarios } = require('./scenarios')

const scenario = scenarios.find((s) => s.id === process.env.BENCH_SCENARIO)
const side = scenario?.sides.find((s) => s.key === process.env.BENCH_SIDE)

let sampler = null
let peak = 0
let baseline = 0
let kernel = false

function sample () {
  const rss = process.memoryUsage.rss()
  if (rss > peak) peak = rss
}

function resetPeak () {
  if (typeof global.gc === 'function') global.gc()
  try {
    fs.writeFileSync('/proc/self/clear_refs', '5')
    kernel = true
  } catch {
    kernel = false
  }
  baseline = process.memoryUsage.rss()
  peak = baseline
  sampler ??= setInterval(sample, 2)
}

function growth () {
  sample()
  let highest = peak
  if (kernel) {
    const match = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync('/proc/self/status', 'utf8'))
    if (match !== null) highest = Math.max(highest, Number(match[1]) * 1024)
  }
  return highest - baseline
}

async function main () {
  if (side === undefined) throw new Error(`no side ${process.env.BENCH_SIDE} in ${process.env.BENCH_SCENARIO}`)
  const app = Fastify({ logger: false, ...scenario.fastify })
  await scenario.setup(app, side)
  await app.listen({ host: '127.0.0.1', port: 0 })
  process.on('message', (message) => {
    const answer = (data) => process.send({ id: message.id, ...data })
    if (message.type === 'usage') answer({ cpu: process.cpuUsage() })
    else if (message.type === 'reset-peak') answer(resetPeak())
    else if (message.type === 'peak') answer({ growth: growth() })
    else if (message.type === 'close') app.close().then(() => process.exit(0))
    else answer({ error: `unknown message ${message.type}` })
  })
  process.on('disconnect', () => process.exit(0))
  process.send({ type: 'ready', port: app.server.address().port })
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
