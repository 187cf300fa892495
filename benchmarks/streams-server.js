'use strict'

// First: every benchmark process starts with the same nextTick feedback (see tick-maps.js).
require('./tick-maps')

// One side of streams.js (which forks it with --expose-gc): Fastify on 127.0.0.1, bare
// (STREAM_SIDE=bare) or with the plugin from dist/ sending sha-256 Content-Digest and
// Repr-Digest unsolicited (STREAM_SIDE=plugin). Routes: GET /events (text/event-stream,
// 25 events of 100 bytes, the first at once, then one every 20 ms), GET /large (8 MiB of
// application/octet-stream in new 64 KiB chunks, as fast as they are read; plugin:
// maxBufferSize 16 MiB) and GET /large-default (the same, default maxBufferSize, 1 MiB).
// IPC: sends { port } once listening; 'start' (collect garbage, take the memory baseline,
// sample process.memoryUsage() every 2 ms) answers {}; 'stop' answers the peak growth of
// rss and external since then, in bytes. It exits when the IPC channel closes.

const { Readable } = require('node:stream')
const Fastify = require('fastify')

const MiB = 1024 * 1024
const CHUNK = 64 * 1024

function events () {
  let n = 0
  const push = () => {
    const head = `data: {"event":${++n},"pad":"`
    stream.push(head + 'x'.repeat(100 - head.length - 4) + '"}\n\n')
    if (n < 25) return
    clearInterval(timer)
    stream.push(null)
  }
  const timer = setInterval(push, 20)
  const stream = new Readable({ read () {}, destroy (err, callback) { clearInterval(timer); callback(err) } })
  push()
  return stream
}

function large () {
  let sent = 0
  return new Readable({
    highWaterMark: CHUNK,
    read () {
      // A new buffer per chunk, as a file or a socket would give.
      this.push(sent === 8 * MiB ? null : Buffer.alloc(CHUNK, (sent / CHUNK) % 251))
      sent += CHUNK
    }
  })
}

let sampler = null
let base = null
let peak = null

function sample () {
  const { rss, external } = process.memoryUsage()
  peak = { rss: Math.max(peak.rss, rss), external: Math.max(peak.external, external) }
}

function onMessage (message) {
  if (message === 'start') {
    clearInterval(sampler)
    global.gc?.()
    // V8 frees collected Buffers on a background thread: without a pause, the
    // previous request's garbage would still be in the baseline.
    setTimeout(() => {
      global.gc?.()
      const { rss, external } = process.memoryUsage()
      base = peak = { rss, external }
      sampler = setInterval(sample, 2)
      process.send({})
    }, 30)
  } else if (message === 'stop') {
    sample()
    clearInterval(sampler)
    process.send({ rss: peak.rss - base.rss, external: peak.external - base.external })
  }
}

async function main () {
  const side = process.env.STREAM_SIDE
  if (side !== 'bare' && side !== 'plugin') throw new Error(`STREAM_SIDE must be bare or plugin, not ${side}`)
  const app = Fastify({ logger: false })
  if (side === 'plugin') await app.register(require('..'), { contentDigest: true, reprDigest: true })
  const large16 = side === 'plugin' ? { digest: { maxBufferSize: 16 * MiB } } : {}
  app.get('/events', (_request, reply) => reply.type('text/event-stream').send(events()))
  app.get('/large', large16, (_request, reply) => reply.type('application/octet-stream').send(large()))
  app.get('/large-default', (_request, reply) => reply.type('application/octet-stream').send(large()))
  await app.listen({ host: '127.0.0.1', port: 0 })
  process.on('message', onMessage)
  process.on('disconnect', () => process.exit(0))
  process.send({ port: app.server.address().port })
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
