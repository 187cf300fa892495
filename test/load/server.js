'use strict'

// The server of the load run (run.js forks it): Fastify with @fastify/compress
// and the built plugin (dist/), on 127.0.0.1, with digest-enabled routes:
//   POST /upload    verified uploads: 200 only when the Content-Digest was
//                   verified (409 otherwise, which run.js counts as a failure);
//                   a mismatch is the plugin's own 400
//   GET  /download  a 16 KiB JSON document, compressed, with Content-Digest
//                   and Repr-Digest (unsolicited, or as Want-* asks)
//   GET  /stream    the same document as a stream: buffered for header digests
// It reports over IPC only: 'ready' with its port, then its RSS (sampled
// every 20 ms: the peak since the last reset) and request counters.

const Fastify = require('fastify')
const compress = require('@fastify/compress')
const { Readable } = require('node:stream')
const digestFields = require('../../dist/index.js')
const { documentText } = require('./payloads')

let peak = 0
let samples = 0
function sample () {
  const rss = process.memoryUsage.rss()
  if (rss > peak) peak = rss
  samples++
}

async function main () {
  const app = Fastify({ logger: false })
  await app.register(compress, { threshold: 1 })
  await app.register(digestFields, { contentDigest: true, reprDigest: true, algorithms: ['sha-256', 'sha-512'] })
  app.addContentTypeParser('application/octet-stream', { parseAs: 'buffer' }, (_request, body, done) => done(null, body))

  const counters = { uploads: 0, unverified: 0, downloads: 0 }
  const text = documentText()
  app.post('/upload', async (request, reply) => {
    counters.uploads++
    if (request.digestVerification.verified !== true) {
      counters.unverified++
      return reply.code(409).send({ verified: false })
    }
    return { verified: true, bytes: request.body.length }
  })
  app.get('/download', async (_request, reply) => {
    counters.downloads++
    return reply.type('application/json').send(text)
  })
  app.get('/stream', async (_request, reply) => {
    counters.downloads++
    return reply.type('application/json').send(Readable.from([text.slice(0, 5000), text.slice(5000)]))
  })

  await app.listen({ host: '127.0.0.1', port: 0 })
  const sampler = setInterval(sample, 20)
  process.on('message', (message) => {
    const answer = (data) => process.send({ id: message.id, ...data })
    switch (message.type) {
      case 'reset-peak':
        if (typeof global.gc === 'function') global.gc()
        peak = 0
        samples = 0
        sample()
        answer({ baseline: peak })
        break
      case 'peak':
        sample()
        answer({ peak, samples, rss: process.memoryUsage.rss(), counters: { ...counters } })
        break
      case 'close':
        clearInterval(sampler)
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
