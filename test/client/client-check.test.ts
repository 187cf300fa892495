// The response check and the side decoder on their own: cases a server
// rarely produces (a 206 with trailers, HTTP/2 trailer objects, a decoder
// that ends twice or overflows before its end), and the Content-Encoding
// list read the same way for the side decoder and problem bodies.
import { test } from 'tap'
import { createHash } from 'node:crypto'
import { PassThrough } from 'node:stream'
import { deflateRawSync, deflateSync } from 'node:zlib'
import { ResponseCheck } from '../../lib/client/response-check'
import { MAX_CODINGS, SideDecoder, codingsOf, sideDecoder } from '../../lib/client/side-decoder'
import { DigestHandler } from '../../lib/client/handler'
import { normalizeClientOptions } from '../../lib/client/options'
import type { DigestClientError } from '../../types/client'
import { sf, zstd } from '../helpers'

const facts = { method: 'GET', trailers: true, digestField: null, digestAlgorithm: null }

function verdict (check: ResponseCheck, trailers: Record<string, string>): Promise<DigestClientError | null> {
  return new Promise((resolve) => check.finish(trailers, resolve))
}

test('a 206 with TE: trailers: the trailer Repr-Digest (of the whole) is not checked', async (t) => {
  const check = new ResponseCheck(normalizeClientOptions(), facts, 206, {})
  check.update(Buffer.from('part'))
  t.equal(await verdict(check, { 'content-digest': sf('part'), 'repr-digest': sf('the whole') }), null)
  const wrong = new ResponseCheck(normalizeClientOptions(), facts, 206, {})
  wrong.update(Buffer.from('part'))
  t.match(await verdict(wrong, { 'content-digest': sf('other') }), { code: 'FST_DIGEST_RESPONSE_MISMATCH' })
})

test('HTTP/2 trailers as an object on the controller (array values too)', async (t) => {
  const ends: unknown[] = []
  const inner = { onResponseStart: () => {}, onResponseEnd: (_c: unknown, trailers: unknown) => { ends.push(trailers) } }
  const handler = new DigestHandler(inner, normalizeClientOptions({ verify: 'required' }), facts)
  const controller = { rawTrailers: { 'Content-Digest': [sf('ab')], other: 'x' } } as never
  handler.onResponseStart(controller, 200, {})
  handler.onResponseData(controller, Buffer.from('ab'))
  handler.onResponseEnd(controller, {})
  t.same(ends, [{ 'content-digest': [sf('ab')], other: 'x' }])
})

test('the side decoder settles once, and an end after an overflow answers at once', async (t) => {
  const source = new PassThrough()
  const decoder = new SideDecoder([source], ['sha-256'], 4)
  source.emit('end')
  source.emit('error', new Error('late'))
  t.ok(decoder.digests !== null, 'the first settlement stays')
  const small = new PassThrough()
  const capped = new SideDecoder([small], ['sha-256'], 4)
  small.write(Buffer.from('more than four'))
  await new Promise((resolve) => setImmediate(resolve))
  await new Promise<void>((resolve) => capped.end(resolve))
  t.equal(capped.digests, null)
})

test('deflate: an empty chunk first tells nothing; zlib or raw by the first octet; an end before any byte', async (t) => {
  const text = Buffer.from('deflated, one way or the other')
  for (const coded of [deflateSync(text), deflateRawSync(text)]) {
    const decoder = sideDecoder('deflate', ['sha-256'], 1024) as SideDecoder
    decoder.write(Buffer.alloc(0))
    decoder.write(coded)
    await new Promise<void>((resolve) => decoder.end(resolve))
    t.same(decoder.digests?.get('sha-256'), createHash('sha256').update(text).digest())
  }
  const empty = sideDecoder('deflate', ['sha-256'], 1024) as SideDecoder
  await new Promise<void>((resolve) => empty.end(resolve))
  t.same(empty.digests?.get('sha-256'), createHash('sha256').update('').digest(), 'nothing decoded from nothing')
  const broken = sideDecoder('deflate', ['sha-256'], 1024) as SideDecoder
  broken.write(Buffer.from('\x78 but not zlib after all'))
  await new Promise<void>((resolve) => broken.end(resolve))
  t.equal(broken.digests, null, 'a decoding error: no decoded reading')
  const dropped = sideDecoder('deflate', ['sha-256'], 1024) as SideDecoder
  dropped.write(deflateSync(text).subarray(0, 4))
  dropped.destroy()
  t.equal(dropped.digests, null)
})

test('codingsOf: the Content-Encoding list as applied (RFC 9110 §8.4)', async (t) => {
  t.same(codingsOf('gzip, br'), ['gzip', 'br'])
  t.same(codingsOf(' Deflate ,GZIP,  x-gzip '), ['deflate', 'gzip', 'x-gzip'], 'case-insensitive, optional whitespace')
  t.same(codingsOf('identity, br, , identity'), ['br'], 'identity and empty list elements are no coding')
  t.same(codingsOf(undefined), [])
  t.same(codingsOf(' , identity'), [])
  t.equal(codingsOf('gzip, x-unknown'), null, 'a coding node:zlib does not decode')
  // zstd where node:zlib has it (Node.js 22.15, 23.8 on); on Node.js 20 a coding not decoded here.
  t.same(codingsOf('zstd'), zstd === null ? null : ['zstd'])
  t.equal(codingsOf('toString'), null, 'not an inherited property')
  t.same(codingsOf(Array(MAX_CODINGS).fill('br').join()), Array(MAX_CODINGS).fill('br'))
  t.equal(codingsOf(Array(MAX_CODINGS + 1).fill('br').join()), null, 'more codings than fetch decodes')
  t.equal(sideDecoder('identity, identity', ['sha-256'], 4), null, 'nothing to decode: the coded reading is the decoded one')
  t.equal(sideDecoder('gzip, x-unknown', ['sha-256'], 4), null)
})

test('a chain of decoders: an error in the first or a later one, destroy', async (t) => {
  const first = new PassThrough()
  const second = new PassThrough()
  const failing = new SideDecoder([first, second], ['sha-256'], 1024)
  t.equal(failing.write(Buffer.from('ab')), true)
  second.emit('error', new Error('the second decoder fails'))
  t.ok(first.destroyed && second.destroyed, 'every decoder is dropped')
  t.equal(failing.write(Buffer.from('cd')), true, 'settled: takes and drops')
  await new Promise<void>((resolve) => failing.end(resolve))
  t.equal(failing.digests, null)
  const a = new PassThrough()
  const b = new PassThrough()
  const dropped = new SideDecoder([a, b], ['sha-256'], 1024)
  let released = 0
  dropped.onRelease(() => { released++ })
  dropped.destroy()
  t.ok(a.destroyed && b.destroyed)
  t.equal(released, 1)
  a.emit('error', new Error('late'))
  t.equal(dropped.digests, null, 'a late error is listened to, and changes nothing')
})
