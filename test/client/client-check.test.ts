// The response check and the side decoder on their own: cases a server
// rarely produces (a 206 with trailers, HTTP/2 trailer objects, a decoder
// that ends twice or overflows before its end), and the Content-Encoding
// list read the same way for the side decoder and problem bodies.
import { test } from 'tap'
import { createHash } from 'node:crypto'
import { PassThrough, Transform } from 'node:stream'
import { deflateRawSync, deflateSync } from 'node:zlib'
import { ResponseCheck } from '../../lib/client/response-check'
import { DecodingTap, MAX_CODINGS, contentCoding, createContentDecoders, decodingOrder, type DecoderStages } from '../../lib/core/content-decoding'
import { DigestHandler } from '../../lib/client/handler'
import { normalizeClientOptions } from '../../lib/client/client-options'
import type { DigestClientError } from '../../types/client'
import { sf, zstd } from '../helpers'

const te = new Map([['te', 'trailers']]) // the request's fields: TE: trailers

function verdict (check: ResponseCheck, trailers: Record<string, string>): Promise<DigestClientError | null> {
  return new Promise((resolve) => check.finish(trailers, (err) => resolve(err as DigestClientError | null)))
}

test('a 206 with TE: trailers: the trailer Repr-Digest (of the whole) is not checked', async (t) => {
  const check = new ResponseCheck(normalizeClientOptions(), 'GET', te, 206, {})
  check.update(Buffer.from('part'), null)
  t.equal(await verdict(check, { 'content-digest': sf('part'), 'repr-digest': sf('the whole') }), null)
  const wrong = new ResponseCheck(normalizeClientOptions(), 'GET', te, 206, {})
  wrong.update(Buffer.from('part'), null)
  t.match(await verdict(wrong, { 'content-digest': sf('other') }), { code: 'FST_DIGEST_RESPONSE_MISMATCH' })
})

test('HTTP/2 trailers as an object on the controller (array values too)', async (t) => {
  const ends: unknown[] = []
  const inner = { onResponseStart: () => {}, onResponseEnd: (_c: unknown, trailers: unknown) => { ends.push(trailers) } }
  const handler = new DigestHandler(inner, normalizeClientOptions({ verify: 'required' }), 'GET', te)
  const controller = { rawTrailers: { 'Content-Digest': [sf('ab')], other: 'x' } } as never
  handler.onResponseStart(controller, 200, {})
  handler.onResponseData(controller, Buffer.from('ab'))
  handler.onResponseEnd(controller, {})
  t.same(ends, [{ 'content-digest': [sf('ab')], other: 'x' }])
})

test('the side decoder settles once, and an end after an overflow answers at once', async (t) => {
  const source = new PassThrough()
  const decoder = new DecodingTap([source], ['sha-256'], 4)
  source.emit('end')
  source.emit('error', new Error('late'))
  t.ok(decoder.digests !== null, 'the first settlement stays')
  t.equal(decoder.failure, null)
  const small = new PassThrough()
  const capped = new DecodingTap([small], ['sha-256'], 4)
  small.write(Buffer.from('more than four'))
  await new Promise((resolve) => setImmediate(resolve))
  await new Promise<void>((resolve) => capped.end(resolve))
  t.equal(capped.digests, null)
  t.equal(capped.failure, 'too-large')
})

const noop = () => {}
/** A decoder as the client runs it: deflate raw or not, writes batched. */
const clientDecoder = (coding: string) => new DecodingTap(createContentDecoders(coding, { rawDeflate: true }) as DecoderStages, ['sha-256'], 1024, 1024)

test('strict: a coded Repr-Digest that does not match is mismatched, even when the decoded reading (for Unencoded-Digest) is unknown', async (t) => {
  const headers = { 'content-encoding': 'x-unknown', 'repr-digest': sf('other'), 'unencoded-digest': sf('body') }
  const check = new ResponseCheck(normalizeClientOptions({ strict: true }), 'GET', new Map(), 200, headers)
  check.update(Buffer.from('coded'), null)
  t.match(await verdict(check, {}), { code: 'FST_DIGEST_RESPONSE_MISMATCH', field: 'Repr-Digest' })
  const either = new ResponseCheck(normalizeClientOptions(), 'GET', new Map(), 200, headers)
  either.update(Buffer.from('coded'), null)
  t.equal(await verdict(either, {}), null, 'by default, it may be the decoded bytes\' digest: unchecked')
})

test('deflate: an empty chunk first tells nothing; zlib or raw by the first octet; an end before any byte', async (t) => {
  const text = Buffer.from('deflated, one way or the other')
  for (const coded of [deflateSync(text), deflateRawSync(text)]) {
    const decoder = clientDecoder('deflate')
    decoder.write(Buffer.alloc(0), noop)
    decoder.write(coded, noop)
    await new Promise<void>((resolve) => decoder.end(resolve))
    t.same(decoder.digests?.get('sha-256'), createHash('sha256').update(text).digest())
  }
  const empty = clientDecoder('deflate')
  await new Promise<void>((resolve) => empty.end(resolve))
  t.same(empty.digests?.get('sha-256'), createHash('sha256').update('').digest(), 'nothing decoded from nothing')
  const broken = clientDecoder('deflate')
  broken.write(Buffer.from('\x78 but not zlib after all'), noop)
  await new Promise<void>((resolve) => broken.end(resolve))
  t.equal(broken.digests, null, 'a decoding error: no decoded reading')
  t.equal(broken.failure, 'invalid')
  const dropped = clientDecoder('deflate')
  dropped.write(deflateSync(text).subarray(0, 4), noop)
  dropped.destroy()
  t.equal(dropped.digests, null)
})

test('contentCoding and decodingOrder: the Content-Encoding list as applied, undone last first (RFC 9110 §8.4)', async (t) => {
  t.equal(contentCoding('gzip, br'), 'gzip, br')
  t.equal(contentCoding(' Deflate ,GZIP,  x-gzip '), 'deflate, gzip, x-gzip', 'case-insensitive, optional whitespace')
  t.equal(contentCoding('identity, br, , identity'), 'br', 'identity and empty list elements are no coding')
  t.equal(contentCoding(undefined), null)
  t.equal(contentCoding(' , identity'), null)
  t.same(decodingOrder('gzip, br'), ['br', 'gzip'])
  t.equal(decodingOrder('gzip, x-unknown'), null, 'a coding node:zlib does not decode')
  // zstd where node:zlib has it (Node.js 22.15, 23.8 on); on Node.js 20 a coding not decoded here.
  t.same(decodingOrder('zstd'), zstd === null ? null : ['zstd'])
  t.equal(decodingOrder('toString'), null, 'not an inherited property')
  t.same(decodingOrder(Array(MAX_CODINGS).fill('br').join(', ')), Array(MAX_CODINGS).fill('br'))
  t.equal(decodingOrder(Array(MAX_CODINGS + 1).fill('br').join(', ')), null, 'more codings than fetch decodes')
  t.equal(createContentDecoders('gzip, x-unknown'), null)
})

test('a chain of decoders: an error in the first or a later one, destroy', async (t) => {
  const first = new PassThrough()
  const second = new PassThrough()
  const failing = new DecodingTap([first, second], ['sha-256'], 1024)
  t.equal(failing.write(Buffer.from('ab'), noop), true)
  second.emit('error', new Error('the second decoder fails'))
  t.ok(first.destroyed && second.destroyed, 'every decoder is dropped')
  t.equal(failing.write(Buffer.from('cd'), noop), true, 'settled: takes and drops')
  await new Promise<void>((resolve) => failing.end(resolve))
  t.equal(failing.digests, null)
  const a = new Transform({ writableHighWaterMark: 1, transform () {} }) // takes nothing
  const b = new PassThrough()
  const dropped = new DecodingTap([a, b], ['sha-256'], 1024)
  let released = 0
  t.equal(dropped.write(Buffer.from('ab'), () => { released++ }), false, 'the first decoder\'s queue is full: held')
  dropped.destroy()
  t.ok(a.destroyed && b.destroyed)
  t.equal(released, 1, 'released when dropped')
  a.emit('error', new Error('late'))
  t.equal(dropped.digests, null, 'a late error is listened to, and changes nothing')
  t.equal(dropped.failure, null)
})
