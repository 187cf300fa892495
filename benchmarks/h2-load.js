'use strict'

// First: every benchmark process starts with the same nextTick feedback (see tick-maps.js).
require('./tick-maps')

// The load driver of the HTTP/2 scenarios (autocannon speaks HTTP/1.1 only).
// run.js forks this file once per HTTP/2 scenario, pins it to the runner's
// core and asks it, over IPC, for runs of a fixed duration against one server
// (h2c, prior knowledge: no TLS, no upgrade): `sessions` HTTP/2 sessions, each
// keeping `streams` requests in flight, a new one started as soon as one ends.
// Each request is the scenario's `request` (method, path, headers, body), sent
// as node:http2 sends it: no content-length unless the headers carry one.
// Response bodies are read and dropped. The answer has the shape run.js reads
// from autocannon's results: completed requests, seconds, errors, non-2xx
// responses (and every status counted), median latency.
//
// h2Once() is the single request of the checks made before measuring.

const http2 = require('node:http2')
const { median } = require('./stats')

const HOST = '127.0.0.1'
/** Seconds without any stream ending after which a run gives up. */
const STALL = 5

function connect (port) {
  return new Promise((resolve, reject) => {
    const session = http2.connect(`http://${HOST}:${port}`)
    session.once('connect', () => {
      session.off('error', reject)
      resolve(session)
    })
    session.once('error', reject)
  })
}

function close (session) {
  return new Promise((resolve) => {
    if (session.closed || session.destroyed) {
      resolve()
      return
    }
    session.close(resolve)
  })
}

function requestHeaders (request, extra = {}) {
  return { ':method': request.method, ':path': request.path, ...request.headers, ...extra }
}

/** One request on a session of its own, body collected: for the checks before measuring. */
async function h2Once (port, request, extraHeaders) {
  const session = await connect(port)
  try {
    return await new Promise((resolve, reject) => {
      const stream = session.request(requestHeaders(request, extraHeaders))
      let status = 0
      let headers = {}
      const chunks = []
      stream.on('response', (h) => {
        status = h[':status']
        headers = h
      })
      stream.on('data', (chunk) => chunks.push(chunk))
      stream.on('end', () => resolve({ status, headers, body: Buffer.concat(chunks) }))
      // A server that answers before reading the whole body may reset the stream after its response.
      stream.on('error', (err) => { if (status === 0) reject(err) })
      stream.on('close', () => { if (status !== 0) resolve({ status, headers, body: Buffer.concat(chunks) }) })
      stream.end(request.body)
    })
  } finally {
    await close(session)
  }
}

/**
 * Load for `seconds`: no request starts after that; the ones in flight are
 * awaited and counted, and the duration runs to the last one's end. A
 * session's error, or STALL seconds without any stream ending, stops the
 * run early (reported, not thrown: run.js decides).
 */
async function h2Load (port, request, { seconds, sessions = 1, streams = 4 }) {
  const clients = await Promise.all(Array.from({ length: sessions }, () => connect(port)))
  const headers = requestHeaders(request)
  const latencies = []
  const statuses = {}
  let answered = 0
  let errors = 0
  let non2xx = 0
  let failure = null
  const start = process.hrtime.bigint()
  const deadline = start + BigInt(Math.round(seconds * 1e9))
  let end = start
  try {
    await new Promise((resolve) => {
      let inFlight = 0
      let progress = process.hrtime.bigint()
      // Streams that stop ending (a stuck server, a session out of flow-control window) end the run as an error.
      const guard = setInterval(() => {
        if (Number(process.hrtime.bigint() - progress) < STALL * 1e9) return
        failure ??= new Error(`${inFlight} HTTP/2 stream(s) open and none ended for ${STALL} s`)
        clearInterval(guard)
        resolve()
      }, 1000)
      for (const session of clients) {
        // A session error ends the run (the streams in flight close with it).
        session.on('error', (err) => { failure ??= err })
      }
      const issue = (session) => {
        inFlight++
        const sent = process.hrtime.bigint()
        const stream = session.request(headers)
        let status = 0
        stream.on('response', (h) => { status = h[':status'] })
        stream.resume()
        // Counted at 'close' (no status: an error).
        stream.on('error', () => {})
        stream.on('close', () => {
          const now = process.hrtime.bigint()
          progress = now
          inFlight--
          // A stream reset after its response (a refusal before the whole body was read) still counts as answered.
          if (status === 0) {
            errors++
          } else {
            statuses[status] = (statuses[status] ?? 0) + 1
            if (status < 200 || status > 299) non2xx++
            answered++
            latencies.push(Number(now - sent) / 1e6)
          }
          end = now
          if (now < deadline && failure === null && !session.closed && !session.destroyed) issue(session)
          else if (inFlight === 0) {
            clearInterval(guard)
            resolve()
          }
        })
        stream.end(request.body)
      }
      for (const session of clients) for (let i = 0; i < streams; i++) issue(session)
    })
  } finally {
    await Promise.all(clients.map((session) => failure === null ? close(session) : session.destroy()))
  }
  // Nothing ended (a stall from the start): the run lasted until it was given up.
  if (end === start) end = process.hrtime.bigint()
  return {
    // As in autocannon's results, requests.total counts every answer, non-2xx ones too.
    requests: { total: answered },
    duration: Number(end - start) / 1e9,
    // A session's failure (a GOAWAY with an error, a reset connection) ends the run and counts as one more error.
    errors: errors + (failure === null ? 0 : 1),
    failure: failure === null ? null : String(failure.message ?? failure),
    timeouts: 0,
    non2xx,
    statusCodeStats: Object.fromEntries(Object.entries(statuses).map(([code, count]) => [code, { count }])),
    latency: { p50: median(latencies) }
  }
}

module.exports = { h2Load, h2Once }

// Forked by run.js: runs on request, the scenario's request taken from scenarios.js
// by id (the same bytes the servers build).
if (require.main === module && typeof process.send === 'function') {
  const { scenarios } = require('./scenarios')
  process.on('message', (message) => {
    if (message.type === 'close') {
      process.exit(0)
      return
    }
    const scenario = scenarios.find((s) => s.id === message.scenario)
    const answer = (data) => process.send({ id: message.id, ...data })
    if (scenario === undefined) {
      answer({ error: `unknown scenario ${message.scenario}` })
      return
    }
    h2Load(message.port, scenario.request, message.options)
      .then((result) => answer({ result }), (err) => answer({ error: String(err?.stack ?? err) }))
  })
  process.on('disconnect', () => process.exit(0))
  process.send({ type: 'ready' })
}
