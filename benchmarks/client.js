'use strict'

// `npm run bench:client`: fastify-digest-fields/client's interceptor against the same undici
// client without it, downloading (verified responses) and uploading (a Content-Digest added
// to the request). The server (a child process, this file with `--server`) is node:http, not
// the plugin: only the client's cost is measured. This process is the client: undici.request
// over HTTP/1.1 to 127.0.0.1, one request at a time. BENCH_CLIENT_PARTS (default
// `download,coded,upload`) picks the parts to run.
//
// Downloads: the server sends a fixed body with its sha-256 Content-Digest computed once at
// start; the body is read to its end.
//   * 1 MiB: BENCH_CLIENT_SMALL downloads (default 200) per side and round;
//   * 256 MiB: BENCH_CLIENT_LARGE downloads (default 2) per side and round, with this
//     process's rss sampled every 10 ms during the verified ones (peak growth over the rss
//     before them, after a garbage collection when --expose-gc is given).
// Ratio = plain time / verified time of the same run (throughput of the verified client
// relative to the plain one; the goal is >= 0.95). A third side, the plain client with the
// same sha-256 check written by hand, shows what hashing alone allows: where it is itself
// below 0.95 of the plain client, the goal is out of reach for any verifying client, and
// `verified / by hand` is the interceptor's own cost (wall time; `verified / by hand CPU`, the
// same with this process's CPU time, all threads). A fourth side makes the same check by hand
// inside a minimal interceptor (HandCheckHandler below), where any verifying interceptor hashes:
// `in interceptor / by hand` is the cost of that place, `verified / in interceptor` the plugin's
// own. A fifth side repeats the check by hand (`by hand twin / by hand`): how far apart the same
// code lands in one run, the resolution of the other ratios. Every verified download must end
// cleanly and every plain one must carry the whole body, or the run stops.
//
// Coded downloads: incompressible bodies (random bytes, made once in the server at start)
// sent gzip- and br-coded (level 1 and quality 1, coded once at start) in 16 KiB chunks of a
// chunked response, as @fastify/compress sends them, carrying the Repr-Digest (sha-256) of the
// decoded bytes, as the plugin sends it in its default mode:
// the interceptor (`verify: 'required'`, maxDecodedSize 512 MiB) decodes on the side to check
// it. 20 MiB (BENCH_CLIENT_CODED_SMALL downloads per side and round, default 5) and 256 MiB
// (BENCH_CLIENT_CODED_LARGE, default 1) for each coding. Five sides:
//   * plain: the undici Agent, the coded body read to its end (no decoding);
//   * verified: the Agent composed with digestInterceptor();
//   * decoded only: the same with `reprDigest: 'decoded'` (the coded bytes not hashed);
//   * by hand: the plain Agent, its body piped into node:zlib's decoder (createGunzip,
//     createBrotliDecompress, with the interceptor's settings: 64 KiB output chunks and up to
//     1 MiB queued, without which undici's resume re-reads its socket buffer and the pipe
//     costs time quadratic in the size) and the decoded bytes hashed with sha-256, compared
//     with the Repr-Digest at the end: the check the goal is set against;
//   * by hand, both readings: the same, and the coded bytes hashed too. A coded Repr-Digest
//     may be of the coded bytes (RFC 9530 §3, a strict server) or of the decoded ones (the
//     plugin's default mode): a client that accepts either, as the interceptor does by
//     default, hashes both (this side is the same work written by hand).
// Every download is measured alone: its wall time and this process's CPU time
// (process.cpuUsage: every thread, so node:zlib's work in the thread pool counts too). The
// table gives medians per MiB of the decoded body, and the ratios of the medians: "by hand
// / verified" is the verified client's throughput relative to the check by hand (CPU and
// wall), the goal >= 0.95. rss growth as for the 256 MiB downloads above. Every verified
// download must end cleanly and every side must see the whole body, or the run stops.
//
// Uploads: a 256 MiB file written once at start in os.tmpdir() (removed at the end), sent as
// a POST whose body is multipart/form-data with that file as its one part, file-backed
// (fs.openAsBlob), never read into memory by this file. The server reads the body to its
// end, hashing it with sha-256 as it flows, and answers with the byte count and whether the
// request's Content-Digest (when it has one) equals the digest of the bytes received.
// BENCH_CLIENT_UPLOADS uploads (default 2) per side and round, three sides:
//   * plain: the undici Agent, the body an undici FormData holding the Blob (undici
//     serializes it as it writes the request), no Content-Digest;
//   * verified: the same Agent composed with digestInterceptor(), the same FormData; the
//     interceptor serializes it into a Blob made of the parts, hashes that as a stream,
//     then sends it with its Content-Digest (the file is read twice, to hash and to send);
//   * by hand: the plain Agent doing the same by hand: the multipart body as a Blob of
//     [head, file, tail] with a boundary of its own, hashed as a stream, sent with its
//     Content-Type and Content-Digest.
// rss is sampled as for the 256 MiB downloads, during the verified uploads (and the plain
// ones, for comparison). Every upload must be answered 200 with the byte count the request
// declared (the by hand one: its Blob's size; each: the file plus under 1 KiB of parts'
// heads); the verified and by hand ones with a Content-Digest that matches, the plain ones
// with none, or the run stops. MiB/s counts the file's bytes.
//
// The sides take turns within each of BENCH_CLIENT_ROUNDS rounds (default 3), in the
// opposite order every other round, after one unmeasured request each (the by-hand download too).
//
// A shared or small machine gives figures that mean little: run it on a quiet one.

const { fork } = require('node:child_process')
const { createHash, randomBytes } = require('node:crypto')
const http = require('node:http')
const { once } = require('node:events')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { median } = require('./stats')

const MiB = 1024 * 1024
const SIZES = { small: 1 * MiB, large: 256 * MiB }
const UPLOAD_SIZE = 256 * MiB
const PARTS = ['download', 'coded', 'upload']
const CODED_SIZES = { small: 20 * MiB, large: 256 * MiB }
const CODINGS = ['gzip', 'br']

function patternChunk () {
  const chunk = Buffer.alloc(MiB)
  for (let i = 0; i < chunk.length; i++) chunk[i] = (i * 31) % 251
  return chunk
}

// POST: the body read to its end and hashed as it flows; the answer says what arrived.
function receive (req, res) {
  const hash = createHash('sha256')
  let bytes = 0
  req.on('data', (chunk) => {
    hash.update(chunk)
    bytes += chunk.length
  })
  req.on('end', () => {
    const field = req.headers['content-digest']
    const actual = `sha-256=:${hash.digest('base64')}:`
    const declared = req.headers['content-length']
    const answer = JSON.stringify({
      bytes,
      length: declared === undefined ? null : Number(declared),
      digest: field === undefined ? 'absent' : field === actual ? 'match' : 'mismatch',
      field: field ?? null,
      actual
    })
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(answer) })
    res.end(answer)
  })
}

// The coded bodies: `${coding}-${name}` -> { coded, digest } (the decoded bytes' sha-256).
function codedBodies () {
  const { gzipSync, brotliCompressSync, constants } = require('node:zlib')
  const out = {}
  for (const [name, size] of Object.entries(CODED_SIZES)) {
    const raw = randomBytes(size)
    const digest = `sha-256=:${createHash('sha256').update(raw).digest('base64')}:`
    out[`gzip-${name}`] = { coded: gzipSync(raw, { level: 1 }), digest }
    out[`br-${name}`] = { coded: brotliCompressSync(raw, { params: { [constants.BROTLI_PARAM_QUALITY]: 1, [constants.BROTLI_PARAM_SIZE_HINT]: size } }), digest }
  }
  return out
}

// `body` in writes of `size`, backpressure respected.
function sendBody (res, body, size) {
  let sent = 0
  const more = () => {
    while (sent < body.length) {
      const chunk = body.subarray(sent, sent + size)
      sent += chunk.length
      if (!res.write(chunk)) return res.once('drain', more)
    }
    res.end()
  }
  more()
}

function serve () {
  const coded = process.env.BENCH_CLIENT_SERVE_CODED === '1' ? codedBodies() : {}
  const chunk = patternChunk()
  const digests = {}
  for (const [name, size] of Object.entries(SIZES)) {
    const hash = createHash('sha256')
    for (let sent = 0; sent < size; sent += MiB) hash.update(chunk)
    digests[name] = `sha-256=:${hash.digest('base64')}:`
  }
  const server = http.createServer((req, res) => {
    if (req.method === 'POST') return receive(req, res)
    if (req.url.startsWith('/coded/')) {
      const [coding, name] = req.url.slice('/coded/'.length).split('/')
      const { coded: body, digest } = coded[`${coding}-${name}`]
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-encoding': coding, 'repr-digest': digest })
      return sendBody(res, body, 16 * 1024)
    }
    const name = req.url.slice(1)
    const size = SIZES[name]
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': size, 'content-digest': digests[name] })
    let sent = 0
    const more = () => {
      while (sent < size) {
        sent += MiB
        if (!res.write(chunk)) return res.once('drain', more)
      }
      res.end()
    }
    more()
  })
  server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }))
}

function rssSampler () {
  global.gc?.()
  const base = process.memoryUsage().rss
  let peak = base
  const timer = setInterval(() => { peak = Math.max(peak, process.memoryUsage().rss) }, 10)
  return { stop () { clearInterval(timer); this.growth = peak - base }, growth: 0 }
}

function parts () {
  const asked = (process.env.BENCH_CLIENT_PARTS ?? PARTS.join(',')).split(',').map((part) => part.trim()).filter(Boolean)
  for (const part of asked) {
    if (!PARTS.includes(part)) throw new Error(`BENCH_CLIENT_PARTS: unknown part ${JSON.stringify(part)} (parts: ${PARTS.join(', ')})`)
  }
  if (asked.length === 0) throw new Error(`BENCH_CLIENT_PARTS: no part (parts: ${PARTS.join(', ')})`)
  return asked
}

// The same check by hand where any verifying interceptor must make it: an undici 7 handler
// hashing each chunk as it is handed on (onResponseData) and comparing the Content-Digest
// before the end (onResponseEnd), everything else passed through. What it costs over the
// check in the reader is the price of the place, not of the plugin.
class HandCheckHandler {
  constructor (handler) {
    this.handler = handler
    this.hash = createHash('sha256')
    this.field = null
  }

  onRequestStart (controller, context) { this.handler.onRequestStart?.(controller, context) }
  onResponseStarted () { this.handler.onResponseStarted?.() }
  onRequestUpgrade (...args) { this.handler.onRequestUpgrade?.(...args) }
  onResponseStart (controller, status, headers, message) {
    this.field = headers['content-digest']
    this.handler.onResponseStart?.(controller, status, headers, message)
  }

  onResponseData (controller, chunk) {
    this.hash.update(chunk)
    this.handler.onResponseData?.(controller, chunk)
  }

  onResponseEnd (controller, trailers) {
    if (this.field !== `sha-256=:${this.hash.digest('base64')}:`) {
      return this.handler.onResponseError?.(controller, new Error('the digest by hand in the interceptor does not match'))
    }
    this.handler.onResponseEnd?.(controller, trailers)
  }

  onResponseError (controller, err) { this.handler.onResponseError?.(controller, err) }
}

const handCheckInterceptor = (dispatch) => (opts, handler) => dispatch(opts, new HandCheckHandler(handler))

async function downloads (base, plain, verified, rounds) {
  const { Agent } = require('undici')
  const inInterceptor = new Agent().compose(handCheckInterceptor)
  const { request } = require('undici')
  const counts = { small: Number(process.env.BENCH_CLIENT_SMALL ?? 200), large: Number(process.env.BENCH_CLIENT_LARGE ?? 2) }

  async function download (dispatcher, name) {
    const res = await request(`${base}/${name}`, { dispatcher })
    let bytes = 0
    for await (const chunk of res.body) bytes += chunk.length
    if (bytes !== SIZES[name]) throw new Error(`${name}: ${bytes} of ${SIZES[name]} bytes`)
  }

  // The reference: the plain client with the same check written by hand
  // (sha-256 over the body as it is read, compared with the Content-Digest
  // at its end). No client can verify faster than it hashes.
  async function downloadByHand (dispatcher, name) {
    const res = await request(`${base}/${name}`, { dispatcher })
    const hash = createHash('sha256')
    let bytes = 0
    for await (const chunk of res.body) {
      hash.update(chunk)
      bytes += chunk.length
    }
    if (bytes !== SIZES[name]) throw new Error(`${name}: ${bytes} of ${SIZES[name]} bytes`)
    if (res.headers['content-digest'] !== `sha-256=:${hash.digest('base64')}:`) throw new Error(`${name}: the digest by hand does not match`)
  }

  // Wall time, and this process's CPU time (all threads), which other tenants of the machine disturb less.
  const cpuMs = { plain: 0, hand: 0, verified: 0, inInterceptor: 0, handTwin: 0 }
  async function timed (side, dispatcher, name, count, sample = null) {
    const byHand = side === 'hand' || side === 'handTwin'
    const start = process.hrtime.bigint()
    const cpu = process.cpuUsage()
    for (let i = 0; i < count; i++) await (byHand ? downloadByHand : download)(dispatcher, name)
    const ms = Number(process.hrtime.bigint() - start) / 1e6
    const used = process.cpuUsage(cpu)
    cpuMs[side] += (used.user + used.system) / 1000
    if (sample) sample.stop()
    return ms
  }

  const results = []
  for (const name of ['small', 'large']) {
    await download(plain, name)
    await download(verified, name)
    await downloadByHand(plain, name)
    await download(inInterceptor, name)
    let plainMs = 0
    let verifiedMs = 0
    let handMs = 0
    let inInterceptorMs = 0
    let twinMs = 0
    let peak = 0
    for (const side of Object.keys(cpuMs)) cpuMs[side] = 0
    for (let round = 0; round < rounds; round++) {
      // handTwin repeats `hand` as a side of its own: how far apart the same code lands in one run.
      const order = round % 2 === 0 ? ['plain', 'hand', 'inInterceptor', 'verified', 'handTwin'] : ['handTwin', 'verified', 'inInterceptor', 'hand', 'plain']
      for (const side of order) {
        if (side === 'plain') {
          plainMs += await timed(side, plain, name, counts[name])
        } else if (side === 'inInterceptor') {
          inInterceptorMs += await timed(side, inInterceptor, name, counts[name])
        } else if (side === 'hand') {
          handMs += await timed(side, plain, name, counts[name])
        } else if (side === 'handTwin') {
          twinMs += await timed(side, plain, name, counts[name])
        } else {
          const sample = name === 'large' ? rssSampler() : null
          verifiedMs += await timed(side, verified, name, counts[name], sample)
          if (sample) peak = Math.max(peak, sample.growth)
        }
      }
    }
    const mib = (SIZES[name] / MiB) * counts[name] * rounds
    results.push({
      download: `${SIZES[name] / MiB} MiB x ${counts[name] * rounds}`,
      'plain MiB/s': (mib / (plainMs / 1000)).toFixed(0),
      'verified MiB/s': (mib / (verifiedMs / 1000)).toFixed(0),
      'by hand MiB/s': (mib / (handMs / 1000)).toFixed(0),
      ratio: (plainMs / verifiedMs).toFixed(3),
      'by hand / plain': (plainMs / handMs).toFixed(3),
      'verified / by hand': (handMs / verifiedMs).toFixed(3),
      'verified / by hand CPU': (cpuMs.hand / cpuMs.verified).toFixed(3),
      'in interceptor / by hand': (handMs / inInterceptorMs).toFixed(3),
      'verified / in interceptor': (inInterceptorMs / verifiedMs).toFixed(3),
      'by hand twin / by hand': (handMs / twinMs).toFixed(3),
      'rss growth (verified)': name === 'large' ? `${(peak / MiB).toFixed(1)} MiB` : '-'
    })
  }
  await inInterceptor.close()
  console.table(results)
}

async function codedDownloads (base, rounds) {
  const { Agent, request } = require('undici')
  const zlib = require('node:zlib')
  const { digestInterceptor } = require('../dist/client/index.js')
  const { CHUNK_SIZE, HOLD_SIZE } = require('../dist/client/response-check.js')
  const counts = { small: Number(process.env.BENCH_CLIENT_CODED_SMALL ?? 5), large: Number(process.env.BENCH_CLIENT_CODED_LARGE ?? 1) }
  const plain = new Agent()
  const verified = new Agent().compose(digestInterceptor({ verify: 'required', maxDecodedSize: 512 * MiB }))
  const decodedOnly = new Agent().compose(digestInterceptor({ verify: 'required', maxDecodedSize: 512 * MiB, reprDigest: 'decoded' }))
  const decoders = { gzip: zlib.createGunzip, br: zlib.createBrotliDecompress }

  // Each side reads one download to its end; it returns the decoded bytes it saw (the coded
  // ones for the sides that do not decode) and throws when the download is not right.
  const sides = {
    async plain (url) {
      const res = await request(url, { dispatcher: plain, headers: { 'accept-encoding': url.split('/')[4] } })
      let bytes = 0
      for await (const chunk of res.body) bytes += chunk.length
      return { coded: bytes, decoded: null }
    },
    verified: (url) => intercepted(url, verified),
    decodedOnly: (url) => intercepted(url, decodedOnly),
    hand: (url) => byHand(url, false),
    both: (url) => byHand(url, true)
  }

  async function intercepted (url, dispatcher) {
    const res = await request(url, { dispatcher, headers: { 'accept-encoding': url.split('/')[4] } })
    let bytes = 0
    for await (const chunk of res.body) bytes += chunk.length // rejects unless the check passed
    return { coded: bytes, decoded: null }
  }

  // The check written by hand: the body piped into node:zlib's decoder, the decoded bytes
  // hashed as they come out (and, with `both`, the coded ones as they come in: the digest
  // matches either reading).
  async function byHand (url, both) {
    const coding = url.split('/')[4]
    const res = await request(url, { dispatcher: plain, headers: { 'accept-encoding': coding } })
    const decoder = decoders[coding]({ chunkSize: CHUNK_SIZE, writableHighWaterMark: HOLD_SIZE })
    const decodedHash = createHash('sha256')
    const codedHash = both ? createHash('sha256') : null
    let coded = 0
    let decoded = 0
    decoder.on('data', (chunk) => {
      decodedHash.update(chunk)
      decoded += chunk.length
    })
    if (codedHash !== null) {
      res.body.on('data', (chunk) => {
        codedHash.update(chunk)
        coded += chunk.length
      })
    }
    res.body.on('error', (err) => decoder.destroy(err))
    const ended = once(decoder, 'end')
    res.body.pipe(decoder)
    await ended
    const field = res.headers['repr-digest']
    const ok = field === `sha-256=:${decodedHash.digest('base64')}:` || (codedHash !== null && field === `sha-256=:${codedHash.digest('base64')}:`)
    if (!ok) throw new Error(`${url}: the digest by hand does not match`)
    return { coded: coded === 0 ? null : coded, decoded }
  }

  async function measured (side, url, size, sample) {
    const cpu = process.cpuUsage()
    const start = process.hrtime.bigint()
    const got = await sides[side](url)
    const wall = Number(process.hrtime.bigint() - start) / 1e6
    const used = process.cpuUsage(cpu)
    sample?.stop()
    if (got.decoded !== null && got.decoded !== size) throw new Error(`${url} (${side}): ${got.decoded} of ${size} decoded bytes`)
    if (got.coded !== null && got.coded < size) throw new Error(`${url} (${side}): ${got.coded} coded bytes for ${size} incompressible ones`)
    return { wall, cpu: (used.user + used.system) / 1000 }
  }

  const results = []
  try {
    for (const coding of CODINGS) {
      for (const name of ['small', 'large']) {
        const url = `${base}/coded/${coding}/${name}`
        const size = CODED_SIZES[name]
        const mib = size / MiB
        for (const side of Object.keys(sides)) await measured(side, url, size)
        const ms = { plain: [], verified: [], decodedOnly: [], hand: [], both: [] }
        let peak = 0
        for (let round = 0; round < rounds; round++) {
          const order = round % 2 === 0 ? ['plain', 'hand', 'both', 'verified', 'decodedOnly'] : ['decodedOnly', 'verified', 'both', 'hand', 'plain']
          for (const side of order) {
            for (let i = 0; i < counts[name]; i++) {
              const sample = side === 'verified' && name === 'large' ? rssSampler() : null
              ms[side].push(await measured(side, url, size, sample))
              if (sample) peak = Math.max(peak, sample.growth)
            }
          }
        }
        const cpu = (side) => median(ms[side].map((m) => m.cpu)) / mib
        const wall = (side) => median(ms[side].map((m) => m.wall)) / mib
        results.push({
          download: `${coding} ${mib} MiB x ${counts[name] * rounds}`,
          'CPU ms/MiB plain': cpu('plain').toFixed(2),
          'by hand': cpu('hand').toFixed(2),
          'both readings': cpu('both').toFixed(2),
          verified: cpu('verified').toFixed(2),
          'by hand / verified CPU': (cpu('hand') / cpu('verified')).toFixed(3),
          'both / verified CPU': (cpu('both') / cpu('verified')).toFixed(3),
          'by hand / verified wall': (wall('hand') / wall('verified')).toFixed(3),
          "decoded only ('decoded')": cpu('decodedOnly').toFixed(2),
          "by hand / 'decoded' CPU": (cpu('hand') / cpu('decodedOnly')).toFixed(3),
          "by hand / 'decoded' wall": (wall('hand') / wall('decodedOnly')).toFixed(3),
          'wall ms/MiB verified': wall('verified').toFixed(2),
          'rss growth (verified)': name === 'large' ? `${(peak / MiB).toFixed(1)} MiB` : '-'
        })
      }
    }
  } finally {
    await plain.close()
    await verified.close()
    await decodedOnly.close()
  }
  console.table(results)
}

// The upload's file: written once, 1 MiB at a time (never whole in memory).
function writeUploadFile (file) {
  const chunk = patternChunk()
  const fd = fs.openSync(file, 'w')
  try {
    for (let written = 0; written < UPLOAD_SIZE; written += MiB) fs.writeSync(fd, chunk)
  } finally {
    fs.closeSync(fd)
  }
}

async function uploads (base, rounds) {
  // undici's own FormData: on Node 20, undici 7's serializer does not take Node's global one.
  const { Agent, FormData, request } = require('undici')
  const { digestInterceptor } = require('../dist/client/index.js')
  const count = Number(process.env.BENCH_CLIENT_UPLOADS ?? 2)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-client-'))
  const file = path.join(dir, 'upload.bin')
  const plain = new Agent()
  const verified = new Agent().compose(digestInterceptor())
  try {
    writeUploadFile(file)
    const blob = await fs.openAsBlob(file)
    const form = new FormData()
    form.append('file', blob, 'upload.bin')

    // The answer must show the whole body arrived, as declared, with the
    // expected digest (`exact`: the body's size, when this side knows it).
    async function send (dispatcher, body, headers, digest, exact) {
      const res = await request(`${base}/upload`, { dispatcher, method: 'POST', body, headers })
      const answer = await res.body.json()
      const fail = (what) => { throw new Error(`upload: ${what} (${JSON.stringify(answer)})`) }
      if (res.statusCode !== 200) fail(`status ${res.statusCode}`)
      if (answer.length !== null && answer.bytes !== answer.length) fail(`${answer.bytes} of ${answer.length} declared bytes`)
      if (exact !== null && answer.bytes !== exact) fail(`${answer.bytes} of ${exact} bytes`)
      if (answer.bytes < UPLOAD_SIZE || answer.bytes - UPLOAD_SIZE >= 1024) fail(`${answer.bytes} bytes for a file of ${UPLOAD_SIZE}`)
      if (answer.digest !== digest) fail(`Content-Digest ${answer.digest}, expected ${digest}`)
    }

    const upload = (dispatcher) => send(dispatcher, form, undefined, dispatcher === plain ? 'absent' : 'match', null)

    // The same work by hand: the multipart body serialized with a boundary
    // of our own (file referenced, not copied), hashed as a stream, sent with
    // its Content-Type and Content-Digest through the plain Agent.
    async function uploadByHand () {
      const boundary = `----bench-by-hand-${randomBytes(16).toString('hex')}`
      const head = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="upload.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`
      const body = new Blob([head, blob, `\r\n--${boundary}--\r\n`])
      const hash = createHash('sha256')
      for await (const chunk of body.stream()) hash.update(chunk)
      const headers = { 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-digest': `sha-256=:${hash.digest('base64')}:` }
      await send(plain, body, headers, 'match', body.size)
    }

    async function timed (side, sample) {
      const start = process.hrtime.bigint()
      for (let i = 0; i < count; i++) await (side === 'hand' ? uploadByHand() : upload(side === 'plain' ? plain : verified))
      const ms = Number(process.hrtime.bigint() - start) / 1e6
      sample.stop()
      return ms
    }

    await upload(plain)
    await uploadByHand()
    await upload(verified)
    const ms = { plain: 0, hand: 0, verified: 0 }
    const peak = { plain: 0, hand: 0, verified: 0 }
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? ['plain', 'hand', 'verified'] : ['verified', 'hand', 'plain']
      for (const side of order) {
        const sample = rssSampler()
        ms[side] += await timed(side, sample)
        peak[side] = Math.max(peak[side], sample.growth)
      }
    }
    const mib = (UPLOAD_SIZE / MiB) * count * rounds
    console.table([{
      upload: `${UPLOAD_SIZE / MiB} MiB x ${count * rounds}`,
      'plain MiB/s': (mib / (ms.plain / 1000)).toFixed(0),
      'verified MiB/s': (mib / (ms.verified / 1000)).toFixed(0),
      'by hand MiB/s': (mib / (ms.hand / 1000)).toFixed(0),
      ratio: (ms.plain / ms.verified).toFixed(3),
      'by hand / plain': (ms.plain / ms.hand).toFixed(3),
      'verified / by hand': (ms.hand / ms.verified).toFixed(3),
      'rss growth (verified)': `${(peak.verified / MiB).toFixed(1)} MiB`,
      'rss growth (plain)': `${(peak.plain / MiB).toFixed(1)} MiB`
    }])
  } finally {
    await plain.close()
    await verified.close()
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

async function main () {
  const { Agent } = require('undici')
  const { digestInterceptor } = require('../dist/client/index.js')
  const asked = parts()
  const child = fork(__filename, ['--server'], { env: { ...process.env, BENCH_CLIENT_SERVE_CODED: asked.includes('coded') ? '1' : '0' } })
  const [{ port }] = await once(child, 'message')
  const base = `http://127.0.0.1:${port}`
  const rounds = Number(process.env.BENCH_CLIENT_ROUNDS ?? 3)
  try {
    if (asked.includes('download')) {
      const plain = new Agent()
      const verified = new Agent().compose(digestInterceptor({ verify: 'required' }))
      try {
        await downloads(base, plain, verified, rounds)
      } finally {
        await plain.close()
        await verified.close()
      }
    }
    if (asked.includes('coded')) await codedDownloads(base, rounds)
    if (asked.includes('upload')) await uploads(base, rounds)
  } finally {
    child.kill()
  }
}

if (process.argv.includes('--server')) serve()
else main().catch((err) => { console.error(err); process.exitCode = 1 })
