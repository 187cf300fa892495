'use strict'

// The benchmark scenarios. Each has sides, each a Fastify app that `setup` builds in a server process of its own
// (server.js); the first side is the plugin, `budget.against` the key of the side its budget line holds it against.
// The rest runs in the runner (run.js): the request, the checks made on one response of each side before measuring
// (`check`; `badRequest`: a wrong digest, which the sides in `refusedBy` must answer with 400) and the budget
// (`min`: req/s, or in 6 MiB/s, at least this share of the reference's; `addedMax`: see 3). Optional: `together`
// (the sides of a round run at the same time: small CPU-bound requests, margins of a few percent), `rounds`,
// `connections`, `fastify` (the app's options), `protocol: 'h2'` (driven by h2-load.js), `goals` (information lines:
// [side, against, min]).

const { once } = require('node:events')
const { createHash, createPrivateKey, createPublicKey, hash, sign, timingSafeEqual, verify } = require('node:crypto')
const { Transform, Writable } = require('node:stream')
const { gunzipSync, gzipSync } = require('node:zlib')
const { pipeline } = require('node:stream/promises')
const { KiB, MiB, randomBytes, jsonObject, text, uploadChunks, multipartBody } = require('./payloads')

const JSON_OBJECT = jsonObject(KiB)
const JSON_BYTES = Buffer.from(JSON.stringify(JSON_OBJECT))
const BUFFER_1MIB = randomBytes(MiB, 3)
const TEXT_64KIB = text(64 * KiB)
const POST_1MIB = randomBytes(MiB, 5)
const UPLOAD_BYTES = Number(process.env.BENCH_UPLOAD_MIB ?? 256) * MiB
const H2_1MIB = randomBytes(MiB, 11)
const MULTIPART = multipartBody(randomBytes(MiB, 13), { boundary: 'fastify-digest-fields-bench-7c3e1d' })

const BOTH_SHA256 = { contentDigest: 'sha-256', reprDigest: 'sha-256' }
const VARY = /want-content-digest, want-repr-digest/i

function sha256 (data) {
  return createHash('sha256').update(data).digest('base64')
}

function field (data) {
  return `sha-256=:${sha256(data)}:`
}

let uploadDigest = null
/** The Content-Digest of the streamed upload, computed once from the generator. */
function uploadField () {
  if (uploadDigest === null) {
    const hasher = createHash('sha256')
    for (const chunk of uploadChunks(UPLOAD_BYTES)) hasher.update(chunk)
    uploadDigest = `sha-256=:${hasher.digest('base64')}:`
  }
  return uploadDigest
}

/** A digest that matches nothing: the plugin must refuse it. */
const WRONG_FIELD = `sha-256=:${Buffer.alloc(32).toString('base64')}:`

// Sides. `plugin` holds the plugin's options (absent: not registered). A side keyed `hash` is bare Fastify plus the
// plugin's work written by hand with node:crypto.
const bare = { key: 'bare', label: 'bare Fastify' }
const byHand = { key: 'hash', label: 'bare + sha-256 by hand' }
const holdByHand = { key: 'holdByHand', label: 'bare + hash, end held back (by hand)' }
const streamByHand = { key: 'streamByHand', label: 'bare + the check by hand in a preParsing stream' }

async function register (app, side) {
  if (side.compress !== undefined) await app.register(require('@fastify/compress'), side.compress)
  // BENCH_PLUGIN: another build of the plugin (a directory with package.json or dist/index.js), to compare.
  if (side.plugin !== undefined) await app.register(require(process.env.BENCH_PLUGIN || '..'), side.plugin)
}

/**
 * The reference for responses: one sha-256 pass over the payload, and the
 * same header fields as the plugin sends, set by hand.
 */
function digestOnSendByHand (request, reply, payload, done) {
  const value = `sha-256=:${hash('sha256', payload, 'base64')}:`
  reply.header('vary', 'Want-Content-Digest, Want-Repr-Digest, Want-Unencoded-Digest')
  reply.header('content-digest', value).header('repr-digest', value)
  done(null, payload)
}

function digestByHand (app) {
  app.addHook('onSend', digestOnSendByHand)
}

/**
 * Puts onSend hooks around @fastify/compress's, in an app that registered
 * compress first (the README's Quick start): compress adds its hook to each
 * route from an onRoute hook, so one registered after it sees that hook in
 * the route's list. `before` may be null.
 */
function aroundCompress (app, before, after) {
  app.addHook('onRoute', (routeOptions) => {
    const own = routeOptions.onSend
    const list = own === undefined ? [] : Array.isArray(own) ? own : [own]
    routeOptions.onSend = before === null ? [...list, after] : [before, ...list, after]
  })
}

/**
 * Scenario 2c's reference: scenario 2's hook after compress's onSend hook (a route hook, as a plugin's must be: an
 * instance hook would hash the bytes before compress), and the two per-request slots a plugin declares.
 */
function digestAfterCompressByHand (app) {
  app.decorateRequest(Symbol('response state'), null)
  app.decorateReply(Symbol('declared digests'), null)
  aroundCompress(app, null, digestOnSendByHand)
}

const kIdentityDigest = Symbol('identity digest')

/** Before compress: the sha-256 of the identity representation (the Repr-Digest). */
function identityByHand (request, reply, payload, done) {
  request[kIdentityDigest] = hash('sha256', payload, 'base64')
  done(null, payload)
}

/**
 * After compress: the gzip bytes (a Buffer, or a stream gathered into one, as
 * the plugin does without TE: trailers) hashed for Content-Digest, sent with
 * a Content-Length.
 */
async function codedByHand (request, reply, payload) {
  let body = payload
  if (!Buffer.isBuffer(payload)) {
    const chunks = []
    for await (const chunk of payload) chunks.push(chunk)
    body = Buffer.concat(chunks)
  }
  reply.header('content-length', body.length)
  reply.header('vary', `${reply.getHeader('vary')}, Want-Content-Digest, Want-Repr-Digest`)
  reply.header('content-digest', `sha-256=:${hash('sha256', body, 'base64')}:`)
  reply.header('repr-digest', `sha-256=:${request[kIdentityDigest]}:`)
  return body
}

/** Scenarios 4 and 4s's reference: both fields by hand, around compress's onSend hook. */
function compressedByHand (app) {
  app.decorateRequest(kIdentityDigest, null)
  aroundCompress(app, identityByHand, codedByHand)
}

const CLAIM = { 'sha-256': /sha-256=:([A-Za-z0-9+/=]+):/, 'sha-512': /sha-512=:([A-Za-z0-9+/=]+):/ }

/** The value of one algorithm in a request's digest field (Content-Digest), parsed by hand. */
function claimedDigest (request, algorithm = 'sha-256', name = 'content-digest') {
  const match = CLAIM[algorithm].exec(request.headers[name] ?? '')
  return match === null ? null : match[1]
}

/** Whether `digest` (bytes) is the digest a request's field claims, compared in constant time. */
function claimMatches (request, digest, algorithm, name) {
  const claimed = claimedDigest(request, algorithm, name)
  if (claimed === null) return false
  const bytes = Buffer.from(claimed, 'base64')
  return bytes.length === digest.length && timingSafeEqual(bytes, digest)
}

const MISMATCH = { error: 'Content-Digest does not match the content' }

/**
 * Scenarios 5 and 7's reference: the check as the plugin must make it
 * (hashing as the body streams, failing at its end before the handler), by
 * hand in the fewest lines: a preParsing Transform hashing each chunk, whose
 * flush compares and fails with a 400 (fastify's rawBody answers a stream
 * error with its statusCode).
 */
function verifyStreamByHand (app) {
  app.addHook('preParsing', (request, reply, payload, done) => {
    const hasher = createHash('sha256')
    done(null, payload.pipe(new Transform({
      transform (chunk, encoding, callback) {
        hasher.update(chunk)
        callback(null, chunk)
      },
      flush (callback) {
        const error = Object.assign(new Error('digest mismatch'), { statusCode: 400 })
        callback(claimMatches(request, hasher.digest()) ? null : error)
      }
    })))
  })
}

/**
 * Scenario 8's reference, with the plugin's guarantee: the same fail-before-end
 * check as the plugin's (lib/core/source-tap.ts), written by hand, so that the
 * budget compares like with like. request.raw.push is taken over: each chunk
 * the parser pushes is hashed, and the last one (and at least 1024 bytes) is
 * held back until the end has been checked. A reader (busboy) never sees the
 * end, nor the closing boundary, of a body whose digest fails: request.raw
 * emits an error instead, which fails the file stream (400).
 */
function holdEndByHand (app) {
  app.addHook('onRequest', (request, reply, done) => {
    const raw = request.raw
    const push = raw.push
    const hasher = createHash('sha256')
    const held = []
    let heldBytes = 0
    const take = (chunk) => {
      hasher.update(chunk)
      held.push(chunk)
      heldBytes += chunk.length
      let more = true
      while (held.length > 1 && heldBytes - held[0].length >= 1024) {
        heldBytes -= held[0].length
        more = push.call(raw, held.shift())
      }
      return more
    }
    raw.push = (chunk) => {
      if (chunk !== null) return take(chunk)
      raw.push = push
      if (!claimMatches(request, hasher.digest())) {
        // Not destroy(): node's IncomingMessage would close the connection before the 400.
        raw.emit('error', Object.assign(new Error(MISMATCH.error), { statusCode: 400 }))
        return false
      }
      for (const buffer of held) push.call(raw, buffer)
      return push.call(raw, null)
    }
    // Bytes that came with the headers, pushed before this hook ran (after an
    // async onRequest hook, such as @fastify/multipart's), wait unread.
    if (raw.readableLength > 0) take(raw.read())
    done()
  })
}

/** The body parsed as a Buffer of at most 2 MiB. */
function bufferParser (app) {
  const options = { parseAs: 'buffer', bodyLimit: 2 * MiB }
  app.addContentTypeParser('application/octet-stream', options, (request, body, done) => done(null, body))
}

/** A sink that counts what it is given. */
function counter () {
  const sink = new Writable({
    write (chunk, encoding, callback) {
      sink.bytes += chunk.length
      callback()
    }
  })
  sink.bytes = 0
  return sink
}

function assert (condition, message) {
  if (!condition) throw new Error(message)
}

/** Checks of a response without digest fields (baselines). */
function noDigests (res) {
  assert(res.headers['content-digest'] === undefined, 'unexpected Content-Digest')
  assert(res.headers['repr-digest'] === undefined, 'unexpected Repr-Digest')
}

// Scenario 2h: an RFC 9421 response signature (Ed25519) over @status,
// Content-Type and Content-Digest, built with node:crypto. The key comes
// from a fixed seed (PKCS#8 prefix of RFC 8410): every server process and
// the runner's check use the same one.
const SIGNING_KEY = createPrivateKey({
  key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), Buffer.alloc(32, 7)]),
  format: 'der',
  type: 'pkcs8'
})
const VERIFYING_KEY = createPublicKey(SIGNING_KEY)
const SIGNATURE_PARAMS = '("@status" "content-type" "content-digest");alg="ed25519";keyid="bench"'

/** The signature base of RFC 9421 §2.5 for the three components. */
function signatureBase (status, contentType, contentDigest) {
  return `"@status": ${status}\n"content-type": ${contentType}\n"content-digest": ${contentDigest}\n` +
    `"@signature-params": ${SIGNATURE_PARAMS}`
}

/** Signature-Input and Signature for a response with these values. */
function signatureFields (status, contentType, contentDigest) {
  const base = Buffer.from(signatureBase(status, contentType, contentDigest))
  const signature = sign(null, base, SIGNING_KEY).toString('base64')
  return { 'signature-input': `sig1=${SIGNATURE_PARAMS}`, signature: `sig1=:${signature}:` }
}

/** The plugin's side of 2s: the onDigestFields hook. */
function signWithPlugin (request, reply, fields) {
  return signatureFields(reply.statusCode, reply.getHeader('content-type'), fields['content-digest'])
}

/** 2h's reference: the same digest and signature by hand in a route-level onSend hook, with a plugin's two slots. */
function signByHandAsPlugin (app) {
  app.decorateRequest(Symbol('response state'), null)
  app.decorateReply(Symbol('declared digests'), null)
  return {
    onSend (request, reply, payload, done) {
      const value = `sha-256=:${hash('sha256', payload, 'base64')}:`
      reply.header('vary', 'Want-Content-Digest, Want-Repr-Digest, Want-Unencoded-Digest')
      reply.header('content-digest', value)
      const signed = signatureFields(reply.statusCode, reply.getHeader('content-type'), value)
      reply.header('signature-input', signed['signature-input']).header('signature', signed.signature)
      done(null, payload)
    }
  }
}

/** A response signed over its Content-Digest (scenario 2s), checked with the public key. */
function signedDigest (res) {
  assert(res.headers['content-digest'] === field(res.body), `wrong Content-Digest ${res.headers['content-digest']}`)
  const input = res.headers['signature-input']
  assert(input === `sig1=${SIGNATURE_PARAMS}`, `wrong Signature-Input ${input}`)
  const base = signatureBase(res.status, res.headers['content-type'], res.headers['content-digest'])
  const signature = Buffer.from(String(res.headers.signature).slice(6, -1), 'base64')
  assert(verify(null, Buffer.from(base), VERIFYING_KEY, signature), 'the signature does not verify')
}

/** A response with sha-256 Content-Digest over `content` and Repr-Digest over `repr`. */
function bothDigests (res, content, repr) {
  assert(res.headers['content-digest'] === field(content), `wrong Content-Digest ${res.headers['content-digest']}`)
  assert(res.headers['repr-digest'] === field(repr), `wrong Repr-Digest ${res.headers['repr-digest']}`)
  assert(VARY.test(res.headers.vary ?? ''), 'Vary lacks the Want-* fields')
}

/** Scenarios 2 and 2c: the request and the checks of a small JSON GET with both fields. */
const smallJsonWithDigests = {
  request: { method: 'GET', path: '/json' },
  check (side, res) {
    assert(res.body.equals(JSON_BYTES), 'wrong body')
    if (side.key === 'bare') noDigests(res)
    else bothDigests(res, JSON_BYTES, JSON_BYTES)
  },
}

/**
 * Scenario 2s: a fixed Ed25519 key (the same in the runner and every server
 * process: PKCS#8 DER of a 32-byte seed), its keyid, and the request a page's
 * `<script integrity="ed25519-KEYID" crossorigin>` makes.
 */
const SRI_KEY = SIGNING_KEY
const SRI_PUBLIC = createPublicKey(SRI_KEY)
const SRI_KEYID = SRI_PUBLIC.export({ format: 'der', type: 'spki' }).subarray(-32).toString('base64')
const SRI_PARAMS = `("unencoded-digest";sf);keyid="${SRI_KEYID}";tag="ed25519-integrity"`
const SRI_SCRIPT = text(KiB, 17)

/**
 * Scenario 2s's reference: the same signature by hand (WICG signature-based
 * SRI): Unencoded-Digest, the RFC 9421 signature base, Ed25519, the fields.
 */
function sriOnSendByHand (request, reply, payload, done) {
  const unencoded = `sha-256=:${hash('sha256', payload, 'base64')}:`
  const base = `"unencoded-digest";sf: ${unencoded}\n"@signature-params": ${SRI_PARAMS}`
  reply.header('vary', 'Want-Content-Digest, Want-Repr-Digest, Want-Unencoded-Digest, Accept-Signature')
  reply.header('unencoded-digest', unencoded)
  reply.header('signature-input', `sig0=${SRI_PARAMS}`)
  reply.header('signature', `sig0=:${sign(null, Buffer.from(base, 'latin1'), SRI_KEY).toString('base64')}:`)
  done(null, payload)
}

/** A response signed for SRI over `body`'s sha-256. */
function sriSigned (res, body) {
  const unencoded = field(body)
  assert(res.headers['unencoded-digest'] === unencoded, `wrong Unencoded-Digest ${res.headers['unencoded-digest']}`)
  const input = res.headers['signature-input']
  assert(input === `sig0=${SRI_PARAMS}`, `wrong Signature-Input ${input}`)
  const signature = Buffer.from(/^sig0=:(.*):$/.exec(res.headers.signature ?? '')?.[1] ?? '', 'base64')
  const base = `"unencoded-digest";sf: ${unencoded}\n"@signature-params": ${SRI_PARAMS}`
  assert(verify(null, Buffer.from(base), SRI_PUBLIC, signature), 'the signature does not verify')
  assert(/accept-signature/i.test(res.headers.vary ?? ''), 'Vary lacks Accept-Signature')
}

/**
 * Scenarios 2s and 2t: a 1 KiB script signed for SRI on request, as Chromium
 * asks for it, against the same signature by hand. 2s sends the same script
 * every time (the plugin signs it once: Ed25519 is deterministic), 2t a
 * script that differs in every response (a counter at its end), so that
 * every response is signed on both sides.
 */
function sriScenario (id, distinct) {
  return {
    id,
    together: true,
    title: `GET 1 KiB script, signed for SRI (Ed25519 over Unencoded-Digest) as a browser asks, ${distinct
      ? 'a different script each time'
      : 'the same script'}`,
    sides: [
      { key: 'plugin', label: 'plugin, integrityKeys', plugin: { integrityKeys: [SRI_KEY] } },
      bare,
      { key: 'hash', label: 'bare + the signature by hand' }
    ],
    async setup (app, side) {
      await register(app, side)
      if (side.key === 'hash') app.addHook('onSend', sriOnSendByHand)
      let n = 0
      app.get('/app.js', (request, reply) => {
        reply.type('text/javascript').send(distinct ? `${SRI_SCRIPT}// ${n++}\n` : SRI_SCRIPT)
      })
    },
    request: { method: 'GET', path: '/app.js', headers: { 'accept-signature': `sig0=${SRI_PARAMS}` } },
    check (side, res) {
      const body = res.body.toString()
      assert(distinct ? body.startsWith(SRI_SCRIPT) : body === SRI_SCRIPT, 'wrong body')
      if (side.key === 'bare') assert(res.headers.signature === undefined, 'unexpected Signature')
      else sriSigned(res, body)
    },
    budget: { min: 0.95, against: 'hash' }
  }
}

/** Scenarios 2u and 4u: the plugin with Repr-Digest and Unencoded-Digest against the plugin with Repr-Digest alone. */
const REPR_ONLY = { reprDigest: 'sha-256' }
const REPR_AND_UNENCODED = { reprDigest: 'sha-256', unencodedDigest: 'sha-256' }
const SYNC_GZIP = { global: true, encodings: ['gzip'], threshold: 1024, syncThreshold: 65536 }

/** A response with a sha-256 Repr-Digest over `repr`, and Unencoded-Digest (the same value) when `unencoded`. */
function reprAndUnencoded (res, repr, unencoded) {
  assert(res.headers['repr-digest'] === field(repr), `wrong Repr-Digest ${res.headers['repr-digest']}`)
  const sent = res.headers['unencoded-digest']
  assert(sent === (unencoded ? field(repr) : undefined), `wrong Unencoded-Digest ${sent}`)
  assert(res.headers['content-digest'] === undefined, 'unexpected Content-Digest')
}

function compressedScenario (id, syncThreshold, path) {
  const compress = { global: true, encodings: ['gzip'], threshold: 1024, syncThreshold }
  return {
    id,
    // Alternating three sides, each round costs three runs: the default's fewest rounds.
    rounds: 5,
    title: `GET 64 KiB text, gzip (${path} path), both fields`,
    sides: [
      { key: 'plugin', label: 'compress + plugin', compress, plugin: BOTH_SHA256 },
      { key: 'compress', label: 'compress alone', compress },
      { key: 'hash', label: 'compress + both fields by hand', compress }
    ],
    async setup (app, side) {
      await register(app, side)
      if (side.key === 'hash') compressedByHand(app)
      app.get('/text', (request, reply) => { reply.type('text/plain; charset=utf-8').send(TEXT_64KIB) })
    },
    request: { method: 'GET', path: '/text', headers: { 'accept-encoding': 'gzip' } },
    check (side, res) {
      assert(res.headers['content-encoding'] === 'gzip', 'not compressed')
      // Which path compress took: the synchronous one sends a Content-Length.
      const sent = res.headers['content-length'] !== undefined ? 'content-length' : 'chunked'
      if (side.key === 'compress') {
        assert(sent === (path === 'sync' ? 'content-length' : 'chunked'), `compress took the wrong path (${sent})`)
        noDigests(res)
      } else {
        // Both other sides send the gzip bytes they hashed with a Content-Length.
        assert(sent === 'content-length', 'not buffered to send the digests as headers')
        bothDigests(res, res.body, TEXT_64KIB)
      }
      return { compressedBytes: res.body.length }
    },
    budget: { min: 0.85, against: 'compress' }
  }
}

// Scenarios 9: a small signed JSON POST (an ActivityPub inbox delivery, a webhook), 2 KiB, fastify's own JSON parser.
const INBOX = Buffer.from(JSON.stringify(jsonObject(2 * KiB)))
const INBOX_GZIP = gzipSync(INBOX)
const NODE_HASH = { 'sha-256': 'sha256', 'sha-512': 'sha512' }
const digestField = (algorithm, data) => `${algorithm}=:${hash(NODE_HASH[algorithm], data, 'base64')}:`
const mismatch = () => Object.assign(new Error(MISMATCH.error), { statusCode: 400 })

/**
 * Scenarios 9's reference: the check by hand where a body is whole, in a parseAs 'buffer' JSON parser: it hashes
 * the body, compares it with the claim (timingSafeEqual), then calls fastify's own JSON parser; 400 on a mismatch.
 */
function jsonParserByHand (app, algorithm) {
  const parseJson = app.getDefaultJsonParser('error', 'error')
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    if (claimMatches(request, hash(NODE_HASH[algorithm], body, 'buffer'), algorithm)) parseJson(request, body, done)
    else done(mismatch())
  })
}

const kKept = Symbol('chunks kept by hand')
const INBOX_VARY = 'Want-Content-Digest, Want-Repr-Digest, Want-Unencoded-Digest'

/** The Vary a plugin that answers Want-* fields sends (RFC 9110 §12.5.5), added by hand in an onSend hook. */
function varyByHand (app) {
  app.addHook('onSend', (request, reply, payload, done) => {
    reply.header('vary', INBOX_VARY)
    done(null, payload)
  })
}

/** Request and reply decorations in the number and kind the plugin makes (with inboxCheckAsPlugin's kKept), empty. */
function pluginDecorations (app) {
  for (let i = 0; i < 2; i++) app.decorateRequest(Symbol('state'), null)
  const kVerdict = Symbol('verdict')
  app.decorateRequest('digestVerification', {
    getter () { return this[kVerdict] },
    setter (value) { this[kVerdict] = value }
  })
  for (let i = 0; i < 3; i++) app.decorateReply(Symbol('state'), null)
  app.decorateReply('setReprDigest', function () {})
  app.decorateReply('setUnencodedDigest', function () {})
}

/**
 * Scenario 9's second reference: the same check by hand where a plugin has to place it, the parser untouched: an
 * onRequest hook keeps the body's chunks (a `data` listener on request.raw), a preValidation hook hashes them once and
 * compares (400 on a mismatch); and varyByHand(). Around it, the rest of the plugin's hook set, doing nothing: the
 * two preParsing hooks (before and after a decoder), the 404 and the route's second onSend hook, its decorations.
 */
function inboxCheckAsPlugin (app, algorithm) {
  pluginDecorations(app)
  app.decorateRequest(kKept, null)
  app.addHook('onRequest', (request, reply, done) => {
    if (request.headers['content-digest'] !== undefined) {
      const kept = request[kKept] = []
      request.raw.on('data', (chunk) => kept.push(chunk))
    }
    done()
  })
  app.addHook('preParsing', (request, reply, payload, done) => { done(null, payload) })
  app.addHook('preParsing', (request, reply, payload, done) => { done(null, payload) })
  app.addHook('preValidation', (request, reply, done) => {
    const kept = request[kKept]
    if (kept === null) return done()
    const body = kept.length === 1 ? kept[0] : Buffer.concat(kept)
    if (claimMatches(request, hash(NODE_HASH[algorithm], body, 'buffer'), algorithm)) done()
    else reply.code(400).send(MISMATCH)
  })
  app.addHook('onSend', (request, reply, payload, done) => { done(null, payload) })
  app.addHook('onSend', (request, reply, payload, done) => { done(null, payload) })
  varyByHand(app)
}

/** Scenario 9n's second reference: the least a verifying plugin adds to a request that claims nothing, by hand. */
function noClaimByHand (app) {
  app.addHook('onRequest', (request, reply, done) => {
    if (request.headers['content-digest'] !== undefined || request.headers['repr-digest'] !== undefined) {
      return reply.code(500).send()
    }
    done()
  })
  varyByHand(app)
}

/**
 * Scenario 9z's parser: the gzip bytes as sent, which the plugin's default mode hands on (it decodes on the side, for
 * hashing only: docs/design.md "Content coding of requests"); by hand (`check`) the body is gunzipped with node:zlib
 * (at most bodyLimit bytes) and the decoded bytes' sha-256 compared with Repr-Digest's, 400 on a mismatch.
 */
function gzipParser (app, check) {
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    if (!check) return done(null, body)
    let decoded
    try {
      decoded = gunzipSync(body, { maxOutputLength: request.routeOptions.bodyLimit })
    } catch {
      return done(Object.assign(new Error('invalid gzip content'), { statusCode: 400 }))
    }
    if (claimMatches(request, hash('sha256', decoded, 'buffer'), 'sha-256', 'repr-digest')) done(null, body)
    else done(mismatch())
  })
}

/** Scenarios 9's route: what arrived (items parsed, or bytes) and the verdict. */
function inboxRoute (side) {
  return async (request) => ({
    received: Buffer.isBuffer(request.body) ? request.body.length : request.body.items.length,
    verified: side.key === 'hash' || side.key === 'placed' ? true : request.digestVerification?.verified ?? null
  })
}

/** Scenarios 9's check: the body arrived (`received`), verified as `expected` says of each side. */
function inboxCheck (received, expected) {
  return (side, res) => {
    const body = JSON.parse(res.body)
    assert(body.received === received, `received ${body.received}, not ${received}`)
    assert(body.verified === expected[side.key], `verified: ${body.verified}, expected ${expected[side.key]}`)
  }
}

const noClaimHooks = { key: 'hooks', label: 'bare + an onRequest hook reading the claim and Vary by hand' }
const inboxPlugin = { key: 'plugin', label: 'plugin (defaults), verifying', plugin: {} }

/** 9, 9-512, 9h, 9h-512: the plugin with its defaults against the check by hand in the JSON parser, HTTP/1.1 or h2c. */
function inboxScenario (id, algorithm, h2, placed = false) {
  const wrong = `${algorithm}=:${Buffer.alloc(algorithm === 'sha-256' ? 32 : 64).toString('base64')}:`
  return {
    id,
    together: true,
    title: `POST 2 KiB JSON, ${algorithm} Content-Digest, verified${h2 ? ', HTTP/2 (h2c)' : ''}`,
    ...(h2 ? { protocol: 'h2', fastify: { http2: true }, sessions: 4 } : {}),
    // 9 also with the check by hand in hooks: how near a plugin-shaped check can come to the parser's.
    sides: [inboxPlugin, bare, { key: 'hash', label: 'bare + the check by hand in a buffering JSON parser' },
      ...(placed ? [{ key: 'placed', label: 'bare + the check by hand in the plugin\'s hooks' }] : [])],
    async setup (app, side) {
      await register(app, side)
      if (side.key === 'hash') jsonParserByHand(app, algorithm)
      if (side.key === 'placed') inboxCheckAsPlugin(app, algorithm)
      app.post('/inbox', inboxRoute(side))
    },
    request: {
      method: 'POST',
      path: '/inbox',
      // node:http2 sends no content-length unless given one; HTTP clients send it for a body of known length.
      headers: {
        'content-type': 'application/json',
        'content-digest': digestField(algorithm, INBOX),
        ...(h2 ? { 'content-length': String(INBOX.length) } : {})
      },
      body: INBOX
    },
    // 32 connections; over HTTP/2 4 sessions of 8 streams.
    connections: h2 ? 8 : 32,
    badRequest: { headers: { 'content-digest': wrong }, refusedBy: ['plugin', 'hash', 'placed'] },
    goals: placed ? [['placed', 'hash', 0.95], ['plugin', 'placed', 0.95]] : [],
    check: inboxCheck(10, { plugin: true, bare: null, hash: true, placed: true }),
    budget: { min: 0.95, against: 'hash' }
  }
}

const scenarios = [
  {
    id: '1',
    together: true,
    title: 'GET 1 KiB JSON, no Want-*',
    // By hand: the least a plugin with these defaults adds (verify 'if-present', Want-* answered): 9n's hooks.
    sides: [{ key: 'plugin', label: 'plugin (defaults)', plugin: {} }, bare, noClaimHooks],
    async setup (app, side) {
      await register(app, side)
      if (side === noClaimHooks) noClaimByHand(app)
      app.get('/json', async () => JSON_OBJECT)
    },
    request: { method: 'GET', path: '/json' },
    check (side, res) {
      assert(res.body.equals(JSON_BYTES), 'wrong body')
      noDigests(res)
      if (side.key !== 'bare') assert(VARY.test(res.headers.vary ?? ''), 'Vary lacks the Want-* fields')
    },
    budget: { min: 0.95, against: 'hooks' }
  },
  {
    id: '2',
    together: true,
    title: 'GET 1 KiB JSON, unsolicited sha-256 both fields',
    sides: [{ key: 'plugin', label: 'plugin', plugin: BOTH_SHA256 }, bare, byHand],
    async setup (app, side) {
      await register(app, side)
      if (side === byHand) digestByHand(app)
      app.get('/json', async () => JSON_OBJECT)
    },
    ...smallJsonWithDigests,
    budget: { min: 0.95, against: 'hash' }
  },
  {
    id: '2u',
    together: true,
    title: 'GET 1 KiB JSON, Repr-Digest and Unencoded-Digest (sha-256) against Repr-Digest alone',
    sides: [
      { key: 'plugin', label: 'plugin, both fields', plugin: REPR_AND_UNENCODED },
      { key: 'repr', label: 'plugin, Repr-Digest alone', plugin: REPR_ONLY }
    ],
    async setup (app, side) {
      await register(app, side)
      app.get('/json', async () => JSON_OBJECT)
    },
    request: { method: 'GET', path: '/json' },
    check (side, res) {
      assert(res.body.equals(JSON_BYTES), 'wrong body')
      reprAndUnencoded(res, JSON_BYTES, side.key === 'plugin')
    },
    budget: { min: 0.98, against: 'repr' }
  },
  {
    id: '2c',
    together: true,
    title: 'GET 1 KiB JSON, @fastify/compress registered but not asked, sha-256 both fields',
    sides: [
      { key: 'plugin', label: 'compress + plugin', compress: {}, plugin: BOTH_SHA256 },
      bare,
      { key: 'hash', label: 'compress + by hand after its onSend', compress: {}, afterCompress: true },
      { key: 'compress', label: 'compress alone', compress: {} }
    ],
    async setup (app, side) {
      await register(app, side)
      if (side.afterCompress === true) digestAfterCompressByHand(app)
      app.get('/json', async () => JSON_OBJECT)
    },
    ...smallJsonWithDigests,
    check (side, res) {
      assert(res.headers['content-encoding'] === undefined, 'compressed without Accept-Encoding')
      assert(res.body.equals(JSON_BYTES), 'wrong body')
      if (side.key === 'bare' || side.key === 'compress') noDigests(res)
      else bothDigests(res, JSON_BYTES, JSON_BYTES)
    },
    budget: { min: 0.95, against: 'hash' }
  },
  sriScenario('2s', false),
  sriScenario('2t', true),
  {
    id: '2h',
    together: true,
    title: 'GET 1 KiB JSON, Content-Digest signed with Ed25519 (RFC 9421) through onDigestFields',
    sides: [
      {
        key: 'plugin',
        label: 'plugin + onDigestFields',
        plugin: { contentDigest: 'sha-256', onDigestFields: signWithPlugin }
      },
      bare,
      { key: 'hash', label: 'digest and signature by hand (route hook + 2 decorators)', signByHand: true }
    ],
    async setup (app, side) {
      await register(app, side)
      app.get('/json', side.signByHand === true ? signByHandAsPlugin(app) : {}, async () => JSON_OBJECT)
    },
    request: { method: 'GET', path: '/json' },
    check (side, res) {
      assert(res.body.equals(JSON_BYTES), 'wrong body')
      if (side.key === 'bare') noDigests(res)
      else signedDigest(res)
    },
    budget: { min: 0.95, against: 'hash' }
  },
  {
    id: '3',
    rounds: 5,
    title: 'GET 1 MiB Buffer, sha-256 both fields',
    sides: [{ key: 'plugin', label: 'plugin', plugin: BOTH_SHA256 }, bare, byHand],
    async setup (app, side) {
      await register(app, side)
      if (side === byHand) digestByHand(app)
      app.get('/buffer', (request, reply) => { reply.type('application/octet-stream').send(BUFFER_1MIB) })
    },
    request: { method: 'GET', path: '/buffer' },
    connections: 4,
    check (side, res) {
      assert(res.body.equals(BUFFER_1MIB), 'wrong body')
      if (side.key === 'bare') noDigests(res)
      else bothDigests(res, BUFFER_1MIB, BUFFER_1MIB)
    },
    budget: { addedMax: 1.2, against: 'hash' }
  },
  compressedScenario('4', 8192, 'stream'),
  compressedScenario('4s', 65536, 'sync'),
  {
    id: '4u',
    // A margin of a few percent: the sides run at the same time (run.js, inRounds). compress's
    // synchronous path gzips on the main thread, with no zlib thread to wait for.
    together: true,
    title: 'GET 64 KiB text, gzip (sync path), Repr-Digest and Unencoded-Digest against Repr-Digest alone',
    sides: [
      { key: 'plugin', label: 'compress + plugin, both fields', compress: SYNC_GZIP, plugin: REPR_AND_UNENCODED },
      { key: 'repr', label: 'compress + plugin, Repr-Digest alone', compress: SYNC_GZIP, plugin: REPR_ONLY }
    ],
    async setup (app, side) {
      await register(app, side)
      app.get('/text', (request, reply) => { reply.type('text/plain; charset=utf-8').send(TEXT_64KIB) })
    },
    request: { method: 'GET', path: '/text', headers: { 'accept-encoding': 'gzip' } },
    check (side, res) {
      assert(res.headers['content-encoding'] === 'gzip', 'not compressed')
      reprAndUnencoded(res, TEXT_64KIB, side.key === 'plugin')
    },
    budget: { min: 0.98, against: 'repr' }
  },
  {
    id: '5',
    // One round's ratio spreads widely here (garbage collection of 1 MiB bodies): more rounds.
    rounds: 9,
    title: 'POST 1 MiB, correct sha-256 Content-Digest, verified',
    sides: [{ key: 'plugin', label: 'plugin, verifying', plugin: {} }, streamByHand],
    async setup (app, side) {
      await register(app, side)
      if (side === streamByHand) verifyStreamByHand(app)
      bufferParser(app)
      app.post('/upload', async (request) => ({
        bytes: request.body.length,
        // The reference's stream lets only a matching body through.
        verified: side === streamByHand || (request.digestVerification?.verified ?? null)
      }))
    },
    request: {
      method: 'POST',
      path: '/upload',
      headers: { 'content-type': 'application/octet-stream', 'content-digest': field(POST_1MIB) },
      body: POST_1MIB
    },
    connections: 4,
    badRequest: { headers: { 'content-digest': WRONG_FIELD }, refusedBy: ['plugin', 'streamByHand'] },
    check (side, res) {
      const body = JSON.parse(res.body)
      assert(body.bytes === MiB, 'the body did not arrive whole')
      assert(body.verified === true, `verified: ${body.verified}`)
    },
    // Against the check as the plugin must make it, by hand: hashing as the body streams, failing at its end.
    budget: { min: 0.95, against: 'streamByHand' }
  },
  {
    id: '6',
    title: `streamed ${UPLOAD_BYTES / MiB} MiB upload, verified`,
    kind: 'upload',
    sides: [{ key: 'plugin', label: 'plugin, verifying', plugin: {} }, byHand],
    async setup (app, side) {
      await register(app, side)
      // A stream-passing parser: the handler reads the body as a stream.
      app.addContentTypeParser('application/octet-stream', (request, payload, done) => done(null, payload))
      app.post('/upload', async (request) => {
        let bytes = 0
        // The reference hashes the chunks by hand as they flow to the sink.
        const hasher = side === byHand ? createHash('sha256') : null
        if (hasher !== null) request.body.on('data', (chunk) => hasher.update(chunk))
        await pipeline(request.body, new Writable({
          write (chunk, encoding, callback) {
            bytes += chunk.length
            callback()
          }
        }))
        const verified = hasher === null
          ? request.digestVerification?.verified ?? null
          : hasher.digest('base64') === claimedDigest(request)
        return { bytes, verified }
      })
    },
    upload: { path: '/upload', bytes: UPLOAD_BYTES, chunks: () => uploadChunks(UPLOAD_BYTES), field: uploadField },
    badRequest: { headers: { 'content-digest': WRONG_FIELD }, refusedBy: ['plugin'] },
    check (side, res) {
      const body = JSON.parse(res.body)
      assert(body.bytes === UPLOAD_BYTES, `the body did not arrive whole (${body.bytes})`)
      assert(body.verified === true, `verified: ${body.verified}`)
    },
    budget: { min: 0.95, against: 'hash', maxGrowthMiB: 64 }
  },
  {
    id: '7',
    // One round's ratio spreads widely here (garbage collection of 1 MiB bodies): more rounds.
    rounds: 9,
    title: 'POST 1 MiB over HTTP/2 (h2c), no Content-Length, verified',
    protocol: 'h2',
    fastify: { http2: true },
    sides: [{ key: 'plugin', label: 'plugin, verifying', plugin: {} }, streamByHand],
    async setup (app, side) {
      await register(app, side)
      // Flow-control windows of 1 MiB per stream and 4 MiB per session (a Go
      // net/http2 server's are 1 MiB). With HTTP/2's 64 KiB default the client
      // waits for WINDOW_UPDATEs and the server idles: in a probe, 2.1-2.4 ms of
      // server CPU per bare request at 41-55 % of its core, against 0.75-0.83 ms
      // at 65-94 % with these.
      app.server.on('session', (session) => {
        session.settings({ initialWindowSize: MiB })
        session.setLocalWindowSize(4 * MiB)
      })
      if (side === streamByHand) verifyStreamByHand(app)
      bufferParser(app)
      app.post('/upload', async (request) => ({
        bytes: request.body.length,
        // The check makes sure the request came without one, as from most HTTP/2 clients.
        contentLength: request.headers['content-length'] ?? null,
        // The reference's stream lets only a matching body through.
        verified: side === streamByHand || (request.digestVerification?.verified ?? null)
      }))
    },
    // Sent by h2-load.js (node:http2), which adds no content-length.
    request: {
      method: 'POST',
      path: '/upload',
      headers: { 'content-type': 'application/octet-stream', 'content-digest': field(H2_1MIB) },
      body: H2_1MIB
    },
    // HTTP/2 streams in flight, on `sessions` sessions.
    connections: 4,
    sessions: 1,
    badRequest: { headers: { 'content-digest': WRONG_FIELD }, refusedBy: ['plugin', 'streamByHand'] },
    check (side, res) {
      const body = JSON.parse(res.body)
      assert(body.bytes === MiB, 'the body did not arrive whole')
      assert(body.contentLength === null, `the request carried a content-length (${body.contentLength})`)
      assert(body.verified === true, `verified: ${body.verified}`)
    },
    // Against the same check by hand: in a preParsing stream, the only public point that fails a parsed body at its
    // end (a `data` listener compared in preValidation fails nothing at the end).
    budget: { min: 0.95, against: 'streamByHand' }
  },
  {
    id: '8',
    // One round's ratio spreads widely here (garbage collection of 1 MiB bodies): more rounds.
    rounds: 9,
    title: 'multipart POST, 1 MiB file, Content-Digest of the whole body, verified',
    sides: [{ key: 'plugin', label: 'plugin, verifying', plugin: {} }, holdByHand],
    async setup (app, side) {
      await register(app, side)
      // Before @fastify/multipart, as the plugin's hooks are (registered just above).
      if (side === holdByHand) holdEndByHand(app)
      await app.register(require('@fastify/multipart'), { limits: { fileSize: 2 * MiB } })
      app.post('/upload', async (request) => {
        const file = await request.file()
        const sink = counter()
        await pipeline(file.file, sink)
        // Every side answers once request.raw has ended, when a check of the
        // whole body can be complete: the file part ends a little before it
        // (the closing boundary). holdByHand's end comes only after a
        // match: a mismatch failed the pipeline above.
        if (!request.raw.readableEnded) await once(request.raw, 'end')
        return { bytes: sink.bytes, verified: side === holdByHand || (request.digestVerification?.verified ?? null) }
      })
    },
    request: {
      method: 'POST',
      path: '/upload',
      headers: { 'content-type': MULTIPART.contentType, 'content-digest': field(MULTIPART.body) },
      body: MULTIPART.body
    },
    connections: 4,
    badRequest: { headers: { 'content-digest': WRONG_FIELD }, refusedBy: ['plugin', 'holdByHand'] },
    check (side, res) {
      const body = JSON.parse(res.body)
      assert(body.bytes === MiB, `the file did not arrive whole (${body.bytes})`)
      assert(body.verified === true, `verified: ${body.verified}`)
    },
    // Against the by-hand side with the plugin's guarantee (the end held back until checked).
    budget: { min: 0.95, against: 'holdByHand' }
  },
  inboxScenario('9', 'sha-256', false, true),
  inboxScenario('9-512', 'sha-512', false),
  inboxScenario('9h', 'sha-256', true),
  inboxScenario('9h-512', 'sha-512', true),
  {
    id: '9n',
    together: true,
    title: 'POST 2 KiB JSON, no digest, to a verifying route',
    sides: [inboxPlugin, bare, noClaimHooks],
    async setup (app, side) {
      await register(app, side)
      if (side === noClaimHooks) noClaimByHand(app)
      app.post('/inbox', inboxRoute(side))
    },
    request: { method: 'POST', path: '/inbox', headers: { 'content-type': 'application/json' }, body: INBOX },
    connections: 32,
    check: inboxCheck(10, { plugin: false, bare: null, hooks: null }),
    // The least any verifying plugin adds: a hook to read the claims, one to add Vary.
    goals: [['hooks', 'bare', 0.98], ['plugin', 'hooks', 0.98]],
    budget: { min: 0.98, against: 'bare' }
  },
  {
    id: '9z',
    together: true,
    title: 'POST 2 KiB JSON, gzip, sha-256 Repr-Digest of the decoded bytes, verified',
    sides: [inboxPlugin, bare, { key: 'hash', label: 'bare + gunzip and sha-256 by hand in the parser' }],
    async setup (app, side) {
      await register(app, side)
      gzipParser(app, side.key === 'hash')
      app.post('/inbox', inboxRoute(side))
    },
    request: {
      method: 'POST',
      path: '/inbox',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip', 'repr-digest': field(INBOX) },
      body: INBOX_GZIP
    },
    connections: 32,
    badRequest: { headers: { 'repr-digest': WRONG_FIELD }, refusedBy: ['plugin', 'hash'] },
    check: inboxCheck(INBOX_GZIP.length, { plugin: true, bare: null, hash: true }),
    budget: { min: 0.95, against: 'hash' }
  }
]

module.exports = { scenarios, field }
