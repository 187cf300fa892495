// The streams behind request verification, without fastify: the lazy hashing
// stream preParsing hands on (BodyStream) and the decoder that hashes a content coding on the side.
import { test } from 'tap'
import { PassThrough, Readable, Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { createHash, randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib'
import { BodyStream } from '../../../lib/core/body-stream'
import { contentCoding, createContentDecoders, DecodingTap, DECODABLE_CODINGS, MAX_CODINGS, type DecoderStages } from '../../../lib/core/content-decoding'
import { zstd } from '../../helpers'

/** The decoders of codings that are decoded here. */
function decoders (coding: string): DecoderStages {
  const stages = createContentDecoders(coding)
  if (stages === null) throw new Error(`${coding} is not decoded here`)
  return stages
}

const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest()
const sink = () => new Writable({ write (_chunk, _encoding, callback) { callback() } })

test('BodyStream reads nothing until its consumer reads', async (t) => {
  const source = new PassThrough()
  source.end('hello world')
  const lazy = new BodyStream(source, ['sha-256'])
  await new Promise((resolve) => setImmediate(resolve))
  t.equal(source.readableLength, 11, 'the source was not read')
  t.equal(source.listenerCount('data'), 0)

  const chunks: Buffer[] = []
  for await (const chunk of lazy) chunks.push(chunk as Buffer)
  t.equal(Buffer.concat(chunks).toString(), 'hello world')
  t.same(lazy.digests?.get('sha-256'), sha256('hello world'))
})

test('BodyStream: an error or premature end of the source reaches the consumer', async (t) => {
  const failing = new Readable({ read () { this.destroy(Object.assign(new Error('aborted'), { code: 'ECONNRESET' })) } })
  await t.rejects(pipeline(new BodyStream(failing, ['sha-256']), sink()), { code: 'ECONNRESET' })

  const cut = new Readable({ read () { this.destroy() } })
  await t.rejects(pipeline(new BodyStream(cut, ['sha-256']), sink()), { code: 'ERR_STREAM_PREMATURE_CLOSE' })
})

test('BodyStream: endCheck can turn the clean end into an error', async (t) => {
  const lazy = new BodyStream(Readable.from([Buffer.from('abc')]), ['sha-256'])
  let seen: Buffer | undefined
  lazy.endCheck = (callback) => {
    seen = lazy.digests?.get('sha-256')
    callback(new Error('digest mismatch'))
  }
  await t.rejects(pipeline(lazy, sink()), { message: 'digest mismatch' })
  t.same(seen, sha256('abc'), 'the digests are ready when endCheck runs')
})

test('BodyStream: a consumer that gives up leaves the source drained, not destroyed', async (t) => {
  const source = new PassThrough()
  const lazy = new BodyStream(source, ['sha-256'])
  source.write(Buffer.alloc(1000))
  await once(lazy, 'data')
  lazy.destroy()
  t.equal(lazy.destroyed, true)
  t.equal(source.destroyed, false)
  source.end(Buffer.alloc(100_000))
  await new Promise((resolve) => source.once('end', resolve))
  t.pass('the rest of the source was consumed')
  // A late error of the source is not an uncaught exception.
  lazy.emit('error', new Error('late'))
})

test('BodyStream with a decoder on the side: a full decoder holds chunks back, in order; destroyed while it waits, nothing more', async (t) => {
  // Random bytes gzip cannot shrink: many coded chunks.
  const identity = randomBytes(1024 * 1024)
  const coded = gzipSync(identity, { level: 1 })
  const source = new PassThrough()
  const stream = new BodyStream(source, ['sha-256'])
  stream.side = new DecodingTap(decoders('gzip'), ['sha-256'], identity.length)
  let held = 0
  source.on('pause', () => { held++ })
  for (let offset = 0; offset < coded.length; offset += 64 * 1024) source.write(coded.subarray(offset, offset + 64 * 1024))
  source.end()
  // A reader pausing after every other chunk until the next turn of the event loop.
  const chunks: Buffer[] = []
  stream.on('data', (chunk: Buffer) => {
    if (chunks.push(chunk) % 2 === 0) return
    stream.pause()
    setImmediate(() => stream.resume())
  })
  await once(stream, 'end')
  t.same(Buffer.concat(chunks), coded, 'every chunk passed, in order')
  t.ok(held > 0, 'the source was paused')
  t.same(stream.digests?.get('sha-256'), sha256(coded))
  t.same((stream.side as DecodingTap).digests?.get('sha-256'), sha256(identity))

  // Destroyed while the decoder is full: the chunk it held is dropped, the rest of the source drained.
  const next = new PassThrough()
  const cut = new BodyStream(next, ['sha-256'])
  const tap = cut.side = new DecodingTap(decoders('gzip'), ['sha-256'], identity.length)
  let taken = 0
  cut.on('data', () => { taken++ })
  next.write(coded.subarray(0, 256 * 1024))
  while (!next.isPaused()) await new Promise((resolve) => setImmediate(resolve))
  cut.destroy()
  await once(cut, 'close')
  t.equal(taken, 0, 'the held chunk never reached the reader')
  t.equal(tap.digests, null)
  next.end(coded.subarray(256 * 1024))
  await once(next, 'end')
})

test('contentCoding', async (t) => {
  t.equal(contentCoding(undefined), null)
  t.equal(contentCoding(['gzip']), null)
  t.equal(contentCoding(''), null)
  t.equal(contentCoding(' identity '), null)
  t.equal(contentCoding('GZip'), 'gzip')
  t.equal(contentCoding('gzip, identity'), 'gzip')
  t.equal(contentCoding('gzip,br'), 'gzip, br')
  t.equal(createContentDecoders('gzip, br')?.length, 2, 'stacked codings: one decoder each')
  t.equal(createContentDecoders('gzip, compress'), null, 'a coding not decoded here')
  t.equal(createContentDecoders(Array(MAX_CODINGS).fill('gzip').join(', '))?.length, MAX_CODINGS)
  t.equal(createContentDecoders(Array(MAX_CODINGS + 1).fill('gzip').join(', ')), null, 'more codings than fetch and curl decode')
  // zstd where node:zlib has it (Node.js >= 22.15, 23.8), not on Node.js 20.
  t.equal(createContentDecoders('zstd')?.length, zstd === null ? undefined : 1)
  t.same(DECODABLE_CODINGS, zstd === null ? ['gzip', 'x-gzip', 'deflate', 'br'] : ['gzip', 'x-gzip', 'deflate', 'br', 'zstd'])
})

test('DecodingTap: stacked codings decoded last applied first, every decoder capped', async (t) => {
  const identity = Buffer.from('stacked codings, undone in reverse order\n'.repeat(500))
  const stacked = brotliCompressSync(deflateSync(gzipSync(identity)))
  const tap = new DecodingTap(decoders('gzip, deflate, br'), ['sha-256'], identity.length)
  await decodeThrough(tap, stacked, 100)
  t.equal(tap.failure, null)
  t.same(tap.digests?.get('sha-256'), sha256(identity))

  // The outer coding expands past the limit while the inner one (the last
  // decoder) gives nothing: 5000 empty gzip members.
  const empties = Buffer.concat(Array.from({ length: 5000 }, () => gzipSync('')))
  const outer = new DecodingTap(decoders('gzip, br'), ['sha-256'], 10_000)
  await decodeThrough(outer, brotliCompressSync(empties), 1000)
  t.equal(outer.failure, 'too-large', 'the intermediate output is capped too')
  t.equal(outer.digests, null)

  const broken = new DecodingTap(decoders('gzip, br'), ['sha-256'], 1 << 20)
  await decodeThrough(broken, brotliCompressSync(Buffer.from('not gzip inside')), 10)
  t.equal(broken.failure, 'invalid', 'an inner decoder\'s error')

  if (zstd !== null) {
    const z = new DecodingTap(decoders('gzip, zstd'), ['sha-256'], identity.length)
    await decodeThrough(z, zstd.compress(gzipSync(identity)), 100)
    t.same(z.digests?.get('sha-256'), sha256(identity), 'zstd')
  }
})

function decodeThrough (tap: DecodingTap, data: Buffer, chunkSize: number): Promise<void> {
  return new Promise((resolve) => {
    let offset = 0
    const next = (): void => {
      if (offset >= data.length) {
        tap.end(resolve)
        return
      }
      const chunk = data.subarray(offset, offset + chunkSize)
      offset += chunkSize
      if (tap.write(chunk, next)) next()
    }
    next()
  })
}

test('DecodingTap hashes the decoded bytes, with backpressure', async (t) => {
  const identity = Buffer.alloc(2 * 1024 * 1024)
  for (let i = 0; i < identity.length; i++) identity[i] = (i * 131) % 253
  const coded = gzipSync(identity, { level: 1 })
  const tap = new DecodingTap(decoders('gzip'), ['sha-256'], identity.length)
  await decodeThrough(tap, coded, 256 * 1024)
  t.equal(tap.failure, null)
  t.same(tap.digests?.get('sha-256'), sha256(identity))
})

test('DecodingTap: over the limit, or not decodable; the stream is never stalled', async (t) => {
  const bomb = gzipSync(Buffer.alloc(4 * 1024 * 1024))
  const capped = new DecodingTap(decoders('x-gzip'), ['sha-256'], 1024)
  await decodeThrough(capped, bomb, 1000)
  t.equal(capped.failure, 'too-large')
  t.equal(capped.digests, null)

  // A failure before the end: end() settles at once.
  const early = new DecodingTap(decoders('gzip'), ['sha-256'], 10)
  early.write(gzipSync(Buffer.alloc(100_000)), () => {})
  while (early.failure === null) await new Promise((resolve) => setImmediate(resolve))
  await new Promise<void>((resolve) => early.end(resolve))
  t.equal(early.failure, 'too-large')

  const broken = new DecodingTap(decoders('br'), ['sha-256'], 1024)
  await decodeThrough(broken, Buffer.from('not brotli, not anything'), 4)
  t.equal(broken.failure, 'invalid')

  const inflate = new DecodingTap(decoders('deflate'), ['sha-256'], 1024)
  inflate.write(Buffer.from('garbage'), () => {})
  inflate.destroy()
  t.equal(inflate.failure, null, 'destroy drops it without a verdict')
})

test('DecodingTap: a decoder that stops inside a write has taken the chunk, leaving no callback waiting', async (t) => {
  const stage = new PassThrough()
  const tap = new DecodingTap([stage], ['sha-256'], 4)
  await new Promise((resolve) => setImmediate(resolve)) // flowing: its output is emitted within write()
  let called = false
  t.equal(tap.write(Buffer.alloc(32 * 1024), () => { called = true }), true, 'a stopped tap takes everything')
  t.equal(tap.failure, 'too-large')
  t.equal(called, false)
})

test('DecodingTap: destroy answers a pending end, without a verdict', async (t) => {
  const tap = new DecodingTap(decoders('gzip'), ['sha-256'], 1024 * 1024)
  tap.write(gzipSync('abc'), () => {})
  let ended = false
  tap.end(() => { ended = true })
  tap.destroy() // before the decoder's asynchronous end
  t.equal(ended, true)
  t.equal(tap.digests, null)
  t.equal(tap.failure, null)
  let again = false
  tap.end(() => { again = true })
  t.equal(again, true, 'a stopped tap ends at once')
})

test('BodyStream: a tap that is dropped, before or after its stream is destroyed', async (t) => {
  // A side decoder's stand-in that only ends when destroyed.
  const makeTap = () => {
    const tap = {
      done: null as null | (() => void),
      write: () => true,
      end (done: () => void) { tap.done = done },
      destroy () { tap.done?.() }
    }
    return tap
  }

  const first = makeTap()
  const untapped = new BodyStream(Readable.from([Buffer.from('abc')]), ['sha-256'])
  untapped.side = first as unknown as DecodingTap
  const chunks: Buffer[] = []
  untapped.on('data', (chunk: Buffer) => chunks.push(chunk))
  while (first.done === null) await new Promise((resolve) => setImmediate(resolve))
  first.destroy() // the stream waits for the tap's end: dropping the tap lets it end
  await once(untapped, 'end')
  t.equal(Buffer.concat(chunks).toString(), 'abc')
  t.same(untapped.digests?.get('sha-256'), sha256('abc'))

  const second = makeTap()
  const destroyed = new BodyStream(Readable.from([Buffer.from('abc')]), ['sha-256'])
  destroyed.side = second as unknown as DecodingTap
  let checked = false
  destroyed.endCheck = (callback) => { checked = true; callback() }
  destroyed.resume()
  while (second.done === null) await new Promise((resolve) => setImmediate(resolve))
  destroyed.destroy()
  await once(destroyed, 'close')
  t.equal(checked, false, 'nothing is checked for a destroyed stream')
})
