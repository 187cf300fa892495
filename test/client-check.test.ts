// The response check and the side decoder on their own: cases a server
// rarely produces (a 206 with trailers, HTTP/2 trailer objects, a decoder
// that ends twice or overflows before its end).
import { test } from 'tap'
import { PassThrough } from 'node:stream'
import { ResponseCheck } from '../lib/client/response-check'
import { SideDecoder } from '../lib/client/side-decoder'
import { DigestHandler } from '../lib/client/handler'
import { normalizeClientOptions } from '../lib/client/options'
import type { DigestClientError } from '../types/client'
import { sf } from './helpers'

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
  const decoder = new SideDecoder(source, ['sha-256'], 4)
  source.emit('end')
  source.emit('error', new Error('late'))
  t.ok(decoder.digests !== null, 'the first settlement stays')
  const small = new PassThrough()
  const capped = new SideDecoder(small, ['sha-256'], 4)
  small.write(Buffer.from('more than four'))
  await new Promise((resolve) => setImmediate(resolve))
  await new Promise<void>((resolve) => capped.end(resolve))
  t.equal(capped.digests, null)
})
