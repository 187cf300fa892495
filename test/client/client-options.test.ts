// The interceptor's options (validated once, unknown keys refused), the
// header helpers, digestHeaders(), and the handler's pass-through of what
// it does not check (upgrades, the start of a response).
import { test } from 'tap'
import { digestHeaders, digestInterceptor, clientErrors } from '../../lib/client/index'
import { normalizeClientOptions } from '../../lib/client/client-options'
import { fieldValues, headerPairs } from '../../lib/client/interceptor'
import { DigestHandler } from '../../lib/client/handler'
import { computeDigest } from '../../lib/core/algorithms'
import type { DigestInterceptorOptions } from '../../types/client'
import { sf } from '../helpers'

test('defaults, and valid options', async (t) => {
  t.same(normalizeClientOptions(), {
    algorithms: ['sha-256', 'sha-512'], verify: 'if-present', strict: false, reprDigest: 'either', want: [], maxDecodedSize: 64 * 1024 * 1024, acceptReencoded: false
  })
  const params = normalizeClientOptions({ algorithms: ['crc32c', 'sha-256'], verify: 'required', strict: true, want: { content: 'crc32c', repr: ['sha-256', 'crc32c'], unencoded: ['crc32c', 'sha-256'] }, maxDecodedSize: 0 })
  t.same(params, {
    algorithms: ['crc32c', 'sha-256'],
    verify: 'required',
    strict: true,
    reprDigest: 'coded',
    want: [['want-content-digest', 'crc32c=10'], ['want-repr-digest', 'sha-256=10, crc32c=9'], ['want-unencoded-digest', 'crc32c=10, sha-256=9']],
    maxDecodedSize: 0,
    acceptReencoded: false
  })
  // An algorithm or a list asks for Content-Digest and Repr-Digest, not Unencoded-Digest.
  t.same(normalizeClientOptions({ want: ['sha-512'] }).want, [['want-content-digest', 'sha-512=10'], ['want-repr-digest', 'sha-512=10']])
  t.same(normalizeClientOptions({ want: { unencoded: 'sha-512' } }), { ...normalizeClientOptions(), want: [['want-unencoded-digest', 'sha-512=10']] })
  t.same(normalizeClientOptions({ want: {} }), normalizeClientOptions())
  t.equal(normalizeClientOptions({ reprDigest: 'decoded' }).reprDigest, 'decoded')
  t.equal(normalizeClientOptions({ strict: true, reprDigest: 'coded' }).reprDigest, 'coded')
  t.equal(normalizeClientOptions({ acceptReencoded: true }).acceptReencoded, true)
  const report = (): void => {}
  t.equal(normalizeClientOptions({ acceptReencoded: report }).acceptReencoded, report)
  t.ok(Object.isFrozen(params))
  t.equal(typeof digestInterceptor(), 'function')
})

test('invalid options are refused once, naming the option', async (t) => {
  const cases: Array<[unknown, RegExp]> = [
    [null, /"options": expected an object, got null/],
    [[], /"options": expected an object, got an array/],
    ['x', /"options": expected an object, got "x"/],
    [{ verfiy: 'required' }, /"verfiy": unknown option; did you mean "verify"\?/],
    [{ zzzzzzzzzz: 1 }, /"zzzzzzzzzz": unknown option \(options: algorithms, verify, strict, reprDigest, want, maxDecodedSize, acceptReencoded\)/],
    [{ acceptReencoded: 'yes' }, /"acceptReencoded": expected a boolean or a function, got "yes"/],
    [{ acceptReencoded: null }, /"acceptReencoded": expected a boolean or a function, got null/],
    [{ toString: 1 }, /"toString": unknown option/],
    [{ algorithms: [] }, /"algorithms": expected a non-empty array/],
    [{ algorithms: 'sha-256' }, /"algorithms": expected a non-empty array of algorithm keys, got "sha-256"/],
    [{ algorithms: ['SHA-256'] }, /unknown algorithm "SHA-256"/],
    [{ algorithms: ['sha-256', 'sha-256'] }, /"sha-256" is listed twice/],
    [{ verify: false }, /"verify": expected 'if-present' or 'required', got boolean/],
    [{ strict: 'yes' }, /"strict": expected a boolean, got "yes"/],
    [{ reprDigest: 'identity' }, /"reprDigest": expected 'either', 'decoded' or 'coded', got "identity"/],
    [{ strict: true, reprDigest: 'either' }, /"reprDigest": strict: true reads a coded Repr-Digest over the coded bytes only, got "either"/],
    [{ maxDecodedSize: -1 }, /"maxDecodedSize": expected a non-negative integer number of bytes, got number -1$/],
    [{ maxDecodedSize: Infinity }, /"maxDecodedSize": .*got number Infinity$/],
    [{ maxDecodedSize: NaN }, /"maxDecodedSize": .*got number NaN$/],
    [{ maxDecodedSize: 1.5 }, /"maxDecodedSize": .*got number 1\.5$/],
    [{ maxDecodedSize: '1' }, /"maxDecodedSize"/],
    [{ want: 'md5' }, /"want": expected algorithms among the accepted ones \(sha-256, sha-512\), got "md5"/],
    [{ want: [] }, /"want": expected 1 to 10 algorithms, got 0/],
    [{ want: ['sha-256', 'sha-256'] }, /"want": "sha-256" is listed twice/],
    [{ want: [1] }, /got number/],
    [{ want: Object.assign([], { 1: 'sha-256' }) }, /"want": expected algorithms among the accepted ones \(sha-256, sha-512\), got undefined/],
    [{ algorithms: Object.assign([], { 1: 'sha-256' }) }, /"algorithms": unknown algorithm undefined/],
    [{ want: 5 }, /"want": expected an algorithm, a list of them or \{ content, repr, unencoded \}, got number/],
    [{ want: null }, /"want": expected an algorithm/],
    [{ want: { contents: 'sha-256' } }, /"want.contents": unknown key \(want keys: content, repr, unencoded\)/],
    [{ want: { repr: 'md5' } }, /"want.repr": expected algorithms/],
    [{ want: { unencoded: [] } }, /"want.unencoded": expected 1 to 10 algorithms, got 0/]
  ]
  for (const [opts, message] of cases) {
    t.throws(() => digestInterceptor(opts as DigestInterceptorOptions), { code: 'FST_DIGEST_INVALID_OPTION', message }, JSON.stringify(opts))
  }
  t.ok((() => { try { digestInterceptor({ strict: 1 as never }) } catch (err) { return err instanceof TypeError } })())
})

test('request headers in every form undici takes', async (t) => {
  t.same(headerPairs(undefined), [])
  t.same(headerPairs(['A', '1', 'b', ['2', '3']]), [['A', '1'], ['b', ['2', '3']]])
  t.same(headerPairs(new Map([['a', '1']])), [['a', '1']])
  t.same(headerPairs({ a: '1', b: undefined }), [['a', '1']])
  const pairs = headerPairs({ TE: 'trailers', te: ['x', 'y'], n: 5, gone: null })
  t.same(pairs, [['TE', 'trailers'], ['te', ['x', 'y']], ['n', '5']], 'names as given, array values kept as field lines')
  t.equal(fieldValues(pairs).get('te'), 'trailers, x, y')
  t.equal(fieldValues(pairs).get('n'), '5')
  t.equal(fieldValues(pairs).get('gone'), undefined)
  t.equal(fieldValues(headerPairs({ e: [] })).get('e'), undefined, 'an empty list is no field line')
})

test('digestHeaders(): Content-Digest of bytes known up front', async (t) => {
  const body = '{"title":"New Title"}'
  t.same(digestHeaders(body), { 'content-digest': sf(body) })
  t.same(digestHeaders(Buffer.from(body)), { 'content-digest': sf(body) })
  t.same(digestHeaders(new TextEncoder().encode(body).buffer as ArrayBuffer), { 'content-digest': sf(body) })
  const floats = new Float32Array([1, 2, 3])
  t.same(digestHeaders(floats.subarray(1), ['sha-512', 'unixsum']), {
    'content-digest': `${sf(Buffer.from(floats.buffer, 4, 8), 'sha-512')}, unixsum=:${computeDigest('unixsum', Buffer.from(floats.buffer, 4, 8)).toString('base64')}:`
  })
  t.throws(() => digestHeaders({} as never), TypeError)
  t.throws(() => digestHeaders(body, []), /at least one algorithm/)
  t.throws(() => digestHeaders(body, 'sha-1' as never), { code: 'FST_DIGEST_UNKNOWN_ALGORITHM' })
})

test('client errors: code, field and algorithm', async (t) => {
  for (const [code, Ctor] of Object.entries(clientErrors)) {
    const err = new Ctor('Content-Digest', 'sha-256', 'detail')
    t.equal(err.code, code)
    t.equal(err.statusCode, 502)
    t.match(err.message, /Content-Digest/)
  }
})

test('the handler passes on upgrades and the start of a response', async (t) => {
  const seen: string[] = []
  const inner = {
    onRequestUpgrade: () => { seen.push('upgrade') },
    onResponseStarted: () => { seen.push('started') }
  }
  const handler = new DigestHandler(inner, normalizeClientOptions(), 'GET', new Map())
  handler.onRequestUpgrade({} as never, 101, {}, {})
  handler.onResponseStarted()
  t.same(seen, ['upgrade', 'started'])
  // A handler above without those methods: nothing to call, nothing thrown.
  const bare = new DigestHandler({}, normalizeClientOptions(), 'GET', new Map())
  t.doesNotThrow(() => bare.onRequestUpgrade({} as never, 101, {}, {}))
  t.doesNotThrow(() => bare.onResponseStarted())
})

test('a head that failed: the rest of the exchange is not passed on', async (t) => {
  const seen: string[] = []
  const inner = {
    onResponseStart: () => { seen.push('start') },
    onResponseData: () => { seen.push('data') },
    onResponseEnd: () => { seen.push('end') },
    onResponseError: (_c: unknown, err: Error) => { seen.push(`error ${(err as Error & { code: string }).code}`) }
  }
  const handler = new DigestHandler(inner, normalizeClientOptions(), 'GET', new Map())
  const controller = {} as never
  // A 204 has no content: a Content-Digest of other bytes fails the head.
  handler.onResponseStart(controller, 204, { 'content-digest': sf('not empty') })
  handler.onResponseData(controller, Buffer.from('x'))
  handler.onResponseEnd(controller, {})
  handler.onResponseError(controller, new Error('late'))
  t.same(seen, ['error FST_DIGEST_RESPONSE_MISMATCH'])
})

test('the interceptor: method defaults to GET, request fields read leniently', async (t) => {
  const seen: Array<{ opts: Record<string, unknown>, handler: unknown }> = []
  const dispatch = (opts: unknown, handler: unknown): boolean => { seen.push({ opts: opts as Record<string, unknown>, handler }); return true }
  const intercept = digestInterceptor({ want: 'sha-256' })(dispatch as never)
  t.equal(intercept({ path: '/', headers: { 'want-repr-digest': 'sha-256=bad' } } as never, {} as never), true)
  t.same(seen[0]?.opts.headers, ['want-repr-digest', 'sha-256=bad', 'want-content-digest', 'sha-256=10'])
  const inner = seen[0]?.handler as DigestHandler
  const errors: Error[] = []
  const wrapped = new DigestHandler({ onResponseError: (_c, err) => { errors.push(err) }, onResponseStart: () => {} }, normalizeClientOptions(), 'GET', new Map([['want-repr-digest', 'sha-256=bad']]))
  t.ok(inner instanceof DigestHandler)
  wrapped.onResponseStart({} as never, 406, {})
  wrapped.onResponseEnd({} as never, {})
  await new Promise((resolve) => setImmediate(resolve))
  t.match(errors[0], { code: 'FST_DIGEST_NOT_ACCEPTABLE', field: 'Want-Repr-Digest', algorithm: null })
})
