'use strict'

// First: the runner, like each server, starts with the same nextTick feedback (see tick-maps.js).
require('./tick-maps')

// `npm run bench:streams`: streamed responses with the plugin against bare Fastify. Two
// servers (streams-server.js: bare, and the plugin sending sha-256 Content-Digest and
// Repr-Digest unsolicited), each in a child process; this process is the node:http client
// (HTTP/1.1, 127.0.0.1, a new connection per request). Medians of the time from the
// request's start to the first body chunk (TTFB) and to the end of the body:
//   1. GET /events, text/event-stream (25 events of 100 bytes 20 ms apart), without TE and
//      with `TE: trailers`. A live stream must not wait for its digest: the plugin's TTFB
//      minus bare's should be about 0, not the stream's length.
//   2. 8 MiB of application/octet-stream in 64 KiB chunks: (a) maxBufferSize 16 MiB, no
//      TE: buffered, digests as headers; (b) `TE: trailers`; (c) default maxBufferSize
//      (1 MiB), no TE: no digests. One request at a time, each bracketed by the server's
//      memory sampling: peak growth of rss and external (all Buffers) over a baseline
//      taken after a garbage collection. No collection runs within a request, so garbage
//      counts too: the bare row is the reference.
// The cases take turns (reversed every other round) after two unmeasured requests each.
// Every response must be a 200 with every byte, and a digest that does not match the bytes
// received stops the run; where digests came (headers, trailers, none) is the "digests"
// column: WRONG when not where the live-stream version of the plugin puts them.
//
// Settings: BENCH_STREAM_REQUESTS (20 per case), BENCH_JSON (write the results to this file).

const { fork } = require('node:child_process')
const { createHash } = require('node:crypto')
const fs = require('node:fs')
const http = require('node:http')
const os = require('node:os')
const path = require('node:path')
const { numberFromEnv } = require('./env')
const { median } = require('./stats')

const REQUESTS = numberFromEnv('BENCH_STREAM_REQUESTS', 20)
const WARMUP = 2
const MiB = 1024 * 1024
const FIELDS = ['content-digest', 'repr-digest']

const caseOf = (name, side, urlPath, te, expect) => ({ name, side, path: urlPath, te, expect, bytes: urlPath === '/events' ? 2500 : 8 * MiB })
const EVENT_CASES = [
  caseOf('bare', 'bare', '/events', false, 'none'),
  caseOf('bare, TE: trailers', 'bare', '/events', true, 'none'),
  caseOf('plugin', 'plugin', '/events', false, 'none'),
  caseOf('plugin, TE: trailers', 'plugin', '/events', true, 'trailers')
]
const LARGE_CASES = [
  caseOf('bare', 'bare', '/large', false, 'none'),
  caseOf('(a) headers: 16 MiB buffer', 'plugin', '/large', false, 'headers'),
  caseOf('(b) trailers: TE: trailers', 'plugin', '/large', true, 'trailers'),
  caseOf('(c) none: 1 MiB buffer', 'plugin', '/large-default', false, 'none')
]

function startServer (side) {
  const child = fork(path.join(__dirname, 'streams-server.js'), [], {
    env: { ...process.env, STREAM_SIDE: side },
    execArgv: ['--expose-gc'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc']
  })
  // A server gone while measured would leave the runner waiting for its answer.
  child.once('exit', (code) => {
    console.error(`the ${side} server exited (${code})`)
    process.exit(1)
  })
  return new Promise((resolve) => child.once('message', ({ port }) => resolve({ child, port })))
}

/** One message to a server and its answer (one at a time per server). */
function ask (server, message) {
  return new Promise((resolve) => {
    server.child.once('message', resolve)
    server.child.send(message)
  })
}

/** One GET: ms to the first chunk and to the end, the body's sha-256, headers and trailers. */
function get (port, urlPath, te) {
  return new Promise((resolve, reject) => {
    const start = process.hrtime.bigint()
    const ms = () => Number(process.hrtime.bigint() - start) / 1e6
    const req = http.request({ host: '127.0.0.1', port, path: urlPath, headers: te ? { te: 'trailers' } : {}, agent: false }, (res) => {
      const chunks = []
      let ttfb = null
      res.on('data', (chunk) => { ttfb ??= ms(); chunks.push(chunk) })
      res.on('end', () => {
        const last = ms()
        const body = Buffer.concat(chunks)
        const digest = `sha-256=:${createHash('sha256').update(body).digest('base64')}:`
        resolve({ status: res.statusCode, ttfb, last, bytes: body.length, digest, headers: res.headers, trailers: res.trailers })
      })
      res.on('error', reject)
    }).on('error', reject)
    req.end()
  })
}

/** Where the digests came ("trailers: content-digest, repr-digest", "none"); throws on a wrong response or digest. */
function checkResponse (c, r) {
  const what = `${c.side} ${c.path}${c.te ? ' (TE: trailers)' : ''}`
  if (r.status !== 200 || r.bytes !== c.bytes) throw new Error(`${what}: status ${r.status}, ${r.bytes} bytes, expected 200, ${c.bytes}`)
  const found = []
  for (const [where, fields] of [['headers', r.headers], ['trailers', r.trailers]]) {
    const names = FIELDS.filter((name) => fields[name] !== undefined)
    const wrong = names.find((name) => fields[name] !== r.digest)
    if (wrong) throw new Error(`${what}: ${wrong} in ${where} is ${fields[wrong]}, the bytes received are ${r.digest}`)
    if (names.length > 0) found.push(`${where}: ${names.join(', ')}`)
  }
  return found.length === 0 ? 'none' : found.join('; ')
}

/** The "digests" column: the expected place (with ✓ and the fields) when every response agrees, else WRONG. */
function verdict (c, seen) {
  const [place, ...others] = seen
  if (others.length > 0 || place.split(':')[0] !== c.expect) return `WRONG: ${seen.join(' | ')} (expected ${c.expect})`
  return c.expect === 'none' ? 'none' : `${c.expect} ✓ (${place.split(': ')[1].replace(/-digest/g, '')})`
}

/** Runs the cases in turns; `memory`: bracket each request with the server's memory sampling. */
async function measure (servers, cases, memory) {
  const samples = cases.map(() => [])
  for (let round = -WARMUP; round < REQUESTS; round++) {
    const order = cases.map((_c, i) => i)
    if (round % 2 !== 0) order.reverse()
    for (const i of order) {
      const c = cases[i]
      const server = servers[c.side]
      if (memory) await ask(server, 'start')
      const r = await get(server.port, c.path, c.te)
      const grown = memory ? await ask(server, 'stop') : null
      const place = checkResponse(c, r)
      if (round >= 0) samples[i].push({ ttfb: r.ttfb, last: r.last, place, rss: grown?.rss / MiB, external: grown?.external / MiB })
    }
  }
  const results = cases.map(({ bytes, ...c }, i) => {
    const of = (key) => median(samples[i].map((sample) => sample[key]))
    const seen = [...new Set(samples[i].map((sample) => sample.place))]
    const memoryGrowth = memory ? { rssGrowthMiB: of('rss'), externalGrowthMiB: of('external') } : {}
    return { ...c, ttfbMs: of('ttfb'), lastByteMs: of('last'), ...memoryGrowth, digestsSeen: seen, digests: verdict(c, seen) }
  })
  // Against the bare case with the same TE, or part 2's only bare case.
  for (const r of results.filter((x) => x.side !== 'bare')) {
    const bare = results.find((b) => b.side === 'bare' && b.te === r.te) ?? results.find((b) => b.side === 'bare')
    r.ttfbMinusBareMs = r.ttfbMs - bare.ttfbMs
  }
  return results
}

function table (title, rows, memory) {
  const ms = (v) => (v === undefined ? '' : v.toFixed(1))
  const columns = [
    ['case', (r) => r.name], ['TTFB', (r) => ms(r.ttfbMs)], ['last byte', (r) => ms(r.lastByteMs)],
    ['TTFB - bare', (r) => ms(r.ttfbMinusBareMs)],
    ...(memory ? [['rss', (r) => ms(r.rssGrowthMiB)], ['external', (r) => ms(r.externalGrowthMiB)]] : []),
    ['digests', (r) => r.digests]
  ]
  const cells = [columns.map(([label]) => label), ...rows.map((r) => columns.map(([, value]) => value(r)))]
  const widths = columns.map((_c, i) => Math.max(...cells.map((row) => row[i].length)))
  const last = columns.length - 1
  console.log(`\n${title}`)
  for (const row of cells) console.log(row.map((v, i) => (i === 0 || i === last ? v.padEnd(widths[i]) : v.padStart(widths[i]))).join('  ').trimEnd())
}

async function main () {
  const cores = os.availableParallelism?.() ?? os.cpus().length
  const machine = `${os.cpus()[0].model}, ${cores} cores, node ${process.version}, fastify ${require('fastify/package.json').version}`
  console.log(`${machine}\nfastify-digest-fields from dist/, { contentDigest: true, reprDigest: true }; medians of ${REQUESTS} requests per case, ms from the request's start`)
  const servers = {}
  try {
    servers.bare = await startServer('bare')
    servers.plugin = await startServer('plugin')
    const events = await measure(servers, EVENT_CASES, false)
    table('1. Event stream: GET /events, text/event-stream, 25 events of 100 bytes every 20 ms', events, false)
    const large = await measure(servers, LARGE_CASES, true)
    table('2. 8 MiB application/octet-stream in 64 KiB chunks, one request at a time; server memory: peak growth in MiB', large, true)
    if (process.env.BENCH_JSON) fs.writeFileSync(process.env.BENCH_JSON, JSON.stringify({ machine, requests: REQUESTS, events, large }, null, 2))
  } finally {
    // The servers exit when their IPC channel closes.
    for (const { child } of Object.values(servers)) child.removeAllListeners('exit').disconnect()
  }
}

main().catch((err) => {
  console.error(err)
  process.exitCode = 1
})
