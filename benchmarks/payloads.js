'use strict'

// Deterministic payloads: the runner (client) and the server processes build
// the same bytes from the same seeds, so the runner can precompute the digests
// it sends and check the ones it receives.

const KiB = 1024
const MiB = 1024 * KiB

/** xorshift32: a small, fast, deterministic generator of 32-bit words. */
function generator (seed) {
  let x = seed >>> 0 || 1
  return function next () {
    x ^= x << 13
    x >>>= 0
    x ^= x >>> 17
    x ^= x << 5
    x >>>= 0
    return x
  }
}

/** `size` incompressible bytes. */
function randomBytes (size, seed) {
  const next = generator(seed)
  const out = Buffer.allocUnsafe(size)
  let i = 0
  for (; i + 4 <= size; i += 4) out.writeUInt32LE(next(), i)
  for (; i < size; i++) out[i] = next() & 0xff
  return out
}

/** An object whose JSON serialization (JSON.stringify) is exactly `size` bytes. */
function jsonObject (size = KiB) {
  const next = generator(1)
  const items = []
  for (let id = 1; id <= 10; id++) {
    items.push({ id, name: `item ${id}`, price: next() % 10000 / 100, stock: next() % 500 })
  }
  const object = { kind: 'catalogue', page: 1, items, note: '' }
  const missing = size - Buffer.byteLength(JSON.stringify(object))
  if (missing < 0) throw new Error(`the JSON object is already larger than ${size} bytes`)
  object.note = 'x'.repeat(missing)
  return object
}

const WORDS = [
  'digest', 'field', 'content', 'representation', 'integrity', 'request', 'response', 'server',
  'client', 'stream', 'compress', 'header', 'trailer', 'algorithm', 'checksum', 'fastify', 'plugin',
  'the', 'a', 'of', 'and', 'to', 'in', 'is', 'for', 'with', 'as', 'by', 'on', 'that', 'bytes'
]

/**
 * `size` bytes of ASCII prose made of random words: compressible like real
 * text (gzip gets it to roughly a third), not like a repeated sentence.
 */
function text (size, seed = 7) {
  const next = generator(seed)
  const parts = []
  let length = 0
  while (length < size) {
    const word = WORDS[next() % WORDS.length] + (next() % 12 === 0 ? '.\n' : ' ')
    parts.push(word)
    length += word.length
  }
  return parts.join('').slice(0, size)
}

/**
 * The streamed upload (scenario 6): `total` bytes made of 64 KiB chunks drawn
 * from a pool of 16 distinct random chunks (1 MiB) in a fixed order. Chunks
 * are produced as they are needed; nothing close to `total` is ever held.
 */
const UPLOAD_CHUNK = 64 * KiB
const UPLOAD_POOL = Array.from({ length: 16 }, (_, i) => randomBytes(UPLOAD_CHUNK, 1000 + i))

function * uploadChunks (total) {
  for (let sent = 0, i = 0; sent < total; sent += UPLOAD_CHUNK, i++) {
    const chunk = UPLOAD_POOL[(i * 7) % UPLOAD_POOL.length]
    yield total - sent >= UPLOAD_CHUNK ? chunk : chunk.subarray(0, total - sent)
  }
}

/**
 * A multipart/form-data body (RFC 7578) with one file part: `content` as
 * field `name`, file name `filename`, type application/octet-stream. Returns
 * the body and the request's Content-Type.
 */
function multipartBody (content, { boundary, name = 'file', filename = 'upload.bin' }) {
  const head = `--${boundary}\r\n` +
    `Content-Disposition: form-data; name="${name}"; filename="${filename}"\r\n` +
    'Content-Type: application/octet-stream\r\n\r\n'
  return {
    body: Buffer.concat([Buffer.from(head), content, Buffer.from(`\r\n--${boundary}--\r\n`)]),
    contentType: `multipart/form-data; boundary=${boundary}`
  }
}

module.exports = { KiB, MiB, randomBytes, jsonObject, text, uploadChunks, UPLOAD_CHUNK, multipartBody }
