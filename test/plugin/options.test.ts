import { test } from 'tap'
import Fastify from 'fastify'
import digestFields = require('../../lib/index')
import { normalizeOptions, normalizeRouteOptions } from '../../lib/plugin/plugin-options'

const bad: Array<[string, unknown, RegExp]> = [
  ['an array', [], /"options": expected an object, got an array/],
  ['algorithms not an array', { algorithms: 'sha-256' }, /"algorithms": expected a non-empty array/],
  ['algorithms empty', { algorithms: [] }, /"algorithms": expected a non-empty array/],
  ['unknown algorithm', { algorithms: ['sha-256', 'md4'] }, /"algorithms": unknown algorithm "md4"/],
  ['uppercase algorithm', { algorithms: ['SHA-256'] }, /"algorithms": unknown algorithm "SHA-256"/],
  ['a hole in a list', { contentDigest: Object.assign([], { 1: 'sha-256' }) }, /"contentDigest": expected true, false, or algorithms among the enabled ones \(sha-256, sha-512\), got undefined/],
  ['duplicate algorithm', { algorithms: ['sha-256', 'sha-256'] }, /"algorithms": "sha-256" is listed twice/],
  ['contentDigest not enabled', { contentDigest: 'md5' }, /"contentDigest": expected true, false, or algorithms among the enabled ones \(sha-256, sha-512\), got "md5"/],
  ['reprDigest wrong type', { reprDigest: 1 }, /"reprDigest": .*got number/],
  ['reprDigest array with junk', { reprDigest: ['sha-256', null] }, /"reprDigest": .*got null/],
  ['verify', { verify: 'always' }, /"verify": expected 'if-present', 'required' or false, got "always"/],
  ['verify true', { verify: true }, /"verify": .*got boolean/],
  ['strict', { strict: 'yes' }, /"strict": expected a boolean, got "yes"/],
  ['trailers', { trailers: 1 }, /"trailers": expected a boolean, got number/],
  ['conditional', { conditional: null }, /"conditional": expected a boolean, got null/],
  ['noTransform', { noTransform: 'yes' }, /"noTransform": expected a boolean, got "yes"/],
  ['legacyDigest', { legacyDigest: [] }, /"legacyDigest": expected a boolean, got an array/],
  ['unencodedDigest not enabled', { unencodedDigest: 'md5' }, /"unencodedDigest": expected true, false, or algorithms among the enabled ones \(sha-256, sha-512\), got "md5"/],
  ['unencodedDigest wrong type', { unencodedDigest: 'yes' }, /"unencodedDigest": .*got "yes"/],
  ['maxBufferSize negative', { maxBufferSize: -1 }, /"maxBufferSize": expected a non-negative integer number of bytes, got number -1$/],
  ['maxBufferSize fractional', { maxBufferSize: 1.5 }, /"maxBufferSize": .*got number 1\.5$/],
  ['maxBufferSize Infinity', { maxBufferSize: Infinity }, /"maxBufferSize": .*got number Infinity$/],
  ['maxBufferSize NaN', { maxBufferSize: NaN }, /"maxBufferSize": .*got number NaN$/],
  ['fileCacheSize negative', { fileCacheSize: -1 }, /"fileCacheSize": .*got number -1$/],
  ['a long string, shown cut', { verify: 'x'.repeat(300) }, new RegExp(`"verify": .*got "${'x'.repeat(100)}…"$`)],
  ['fileCacheSize fractional', { fileCacheSize: 2.5 }, /"fileCacheSize": .*got number 2\.5$/],
  ['maxBufferSize string', { maxBufferSize: '1mb' }, /"maxBufferSize"/]
]

test('bad options fail at registration with FST_DIGEST_INVALID_OPTION naming the option', async (t) => {
  for (const [name, opts, message] of bad) {
    const app = Fastify()
    await t.rejects(async () => { await app.register(digestFields, opts as never) }, { code: 'FST_DIGEST_INVALID_OPTION', message }, name)
    await app.close()
  }
  t.throws(() => normalizeOptions(null as never), { code: 'FST_DIGEST_INVALID_OPTION', message: /"options": expected an object, got null/ })
})

test('defaults and normalization', async (t) => {
  const d = normalizeOptions()
  t.same(d, {
    algorithms: ['sha-256', 'sha-512'],
    contentDigest: [],
    reprDigest: [],
    unencodedDigest: [],
    verify: 'if-present',
    strict: false,
    trailers: true,
    maxBufferSize: 1048576,
    liveTypes: new Set(['text/event-stream', 'application/x-ndjson', 'application/jsonl', 'application/json-seq', 'multipart/x-mixed-replace']),
    live: null,
    conditional: true,
    noTransform: true,
    legacyDigest: false,
    fileCacheSize: 1000,
    fileHashing: 'wait',
    fileSidecars: false,
    integrityKeys: new Map(),
    integritySignature: null,
    onDigestFields: null
  })
  t.ok(Object.isFrozen(d))
  const o = normalizeOptions({
    algorithms: ['sha-512', 'sha-256', 'crc32c'],
    contentDigest: true,
    reprDigest: ['crc32c', 'sha-512', 'crc32c'],
    strict: true,
    unencodedDigest: true,
    verify: false
  })
  t.same(o.contentDigest, ['sha-512'], 'true means the first enabled algorithm')
  t.same(o.reprDigest, ['sha-512', 'crc32c'], 'server order, duplicates dropped')
  t.same(o.unencodedDigest, ['sha-512'], 'unencodedDigest: true means the first enabled algorithm, in strict mode')
  t.same(normalizeOptions({ unencodedDigest: ['sha-512', 'sha-256'] }).unencodedDigest, ['sha-256', 'sha-512'], 'unencodedDigest in the default mode, server order')
  t.same(normalizeOptions({ contentDigest: 'sha-512', reprDigest: false }).contentDigest, ['sha-512'])
  t.equal(normalizeOptions({ verify: 'required' }).verify, 'required')
  t.same(normalizeOptions({ liveTypes: [' Text/Event-Stream ', 'application/x-ndjson'] }).liveTypes, new Set(['text/event-stream', 'application/x-ndjson']), 'trimmed, lowercase')
  t.same(normalizeOptions({ liveTypes: [] }).liveTypes, new Set(), 'no live types')
  t.same(normalizeOptions({ liveTypes: ['Text/*', '*/*', 'application/vnd.a+json'] }).liveTypes, new Set(['text/*', '*/*', 'application/vnd.a+json']), 'media ranges')
})

test('liveTypes and the live route option are validated', async (t) => {
  const cases: Array<[unknown, RegExp]> = [
    ['text/event-stream', /"liveTypes": expected an array of media types, got "text\/event-stream"/],
    [['text/event-stream; charset=utf-8'], /"liveTypes": expected media types or ranges such as "text\/event-stream" or "text\/\*" \(no parameters\), got "text\/event-stream; charset=utf-8"/],
    [['text'], /got "text"/],
    [['text/*/x'], /got "text\/\*\/x"/],
    [['*/plain'], /got "\*\/plain"/],
    [['*'], /got "\*"/],
    [['text/*+json'], /got "text\/\*\+json"/],
    [['text/x-*'], /got "text\/x-\*"/],
    [['text/'], /got "text\/"/],
    [['/plain'], /got "\/plain"/],
    [['text/*;q=1'], /got "text\/\*;q=1"/],
    [[42], /got number/],
    [null, /got null/]
  ]
  for (const [liveTypes, message] of cases) {
    t.throws(() => normalizeOptions({ liveTypes: liveTypes as never }), { code: 'FST_DIGEST_INVALID_OPTION', message }, JSON.stringify(liveTypes))
  }
  const global = normalizeOptions()
  t.equal(normalizeRouteOptions(global, { method: 'GET', url: '/', digest: { live: true } } as never)?.live, true)
  t.equal(normalizeRouteOptions(global, { method: 'GET', url: '/', digest: { live: false } } as never)?.live, false)
  t.equal(normalizeRouteOptions(global, { method: 'GET', url: '/', digest: {} } as never)?.live, null, 'by liveTypes')
  t.throws(() => normalizeRouteOptions(global, { method: 'GET', url: '/x', digest: { live: 'yes' } } as never), { code: 'FST_DIGEST_INVALID_ROUTE_OPTION', message: /GET \/x: live: expected a boolean, got "yes"/ })
  t.throws(() => normalizeRouteOptions(global, { method: 'GET', url: '/x', digest: { liveTypes: [] } } as never), { message: /liveTypes: not a route-level option/ })
})

test('unknown keys fail at registration, naming the key and the nearest option', async (t) => {
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['missing letter', { verfy: 'required' }, 'Invalid fastify-digest-fields option "verfy": unknown option; did you mean "verify"?'],
    ['singular', { algorithm: ['sha-512'] }, 'Invalid fastify-digest-fields option "algorithm": unknown option; did you mean "algorithms"?'],
    ['swapped letters', { stirct: true }, 'Invalid fastify-digest-fields option "stirct": unknown option; did you mean "strict"?'],
    ['case', { contentdigest: true }, 'Invalid fastify-digest-fields option "contentdigest": unknown option; did you mean "contentDigest"?'],
    ['kebab case', { 'repr-digest': true }, 'Invalid fastify-digest-fields option "repr-digest": unknown option; did you mean "reprDigest"?'],
    ['shortened', { maxBuffer: 10 }, 'Invalid fastify-digest-fields option "maxBuffer": unknown option; did you mean "maxBufferSize"?'],
    ['nothing near', { foo: 1 }, 'Invalid fastify-digest-fields option "foo": unknown option (options: algorithms, contentDigest, reprDigest, verify, strict, unencodedDigest, trailers, maxBufferSize, liveTypes, conditional, noTransform, legacyDigest, fileCacheSize, fileHashing, fileSidecars, integrityKeys, integritySignature, onDigestFields)'],
    ['even when undefined', { verify: 'required', trailer: undefined }, 'Invalid fastify-digest-fields option "trailer": unknown option; did you mean "trailers"?']
  ]
  for (const [name, opts, message] of cases) {
    const app = Fastify()
    await t.rejects(async () => { await app.register(digestFields, opts as never) }, { code: 'FST_DIGEST_INVALID_OPTION', message }, name)
    await app.close()
    t.throws(() => normalizeOptions(opts as never), { code: 'FST_DIGEST_INVALID_OPTION', message }, `${name}: normalizeOptions`)
  }
})

test('registered twice in one scope or a child scope: register() fails with FST_DIGEST_ALREADY_REGISTERED, no crash', async (t) => {
  const code = 'FST_DIGEST_ALREADY_REGISTERED'
  const same = Fastify()
  t.teardown(() => same.close())
  await same.register(digestFields)
  await t.rejects(async () => { await same.register(digestFields, { contentDigest: true }) }, { code, message: /register it once/ }, 'same scope, awaited')

  const notAwaited = Fastify()
  t.teardown(() => notAwaited.close())
  notAwaited.register(digestFields)
  notAwaited.register(digestFields)
  await t.rejects(async () => { await notAwaited.ready() }, { code }, 'same scope, ready()')

  const child = Fastify()
  t.teardown(() => child.close())
  await child.register(digestFields)
  await t.rejects(async () => {
    await child.register(async (scope) => { await scope.register(digestFields) })
  }, { code }, 'a child scope')

  // Sibling scopes do not share decorators: each may have its own.
  const siblings = Fastify()
  t.teardown(() => siblings.close())
  for (const [prefix, contentDigest] of [['/a', 'sha-256'], ['/b', 'sha-512']] as const) {
    await siblings.register(async (scope) => {
      await scope.register(digestFields, { contentDigest })
      scope.get('/', async () => 'x')
    }, { prefix })
  }
  t.match((await siblings.inject('/a')).headers['content-digest'], /^sha-256=/)
  t.match((await siblings.inject('/b')).headers['content-digest'], /^sha-512=/)
})

test('a decorator of the application under one of the plugin\'s names fails register(), no crash', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  app.decorateReply('digestsOmitted', null)
  await t.rejects(async () => { await app.register(digestFields) }, { code: 'FST_ERR_DEC_ALREADY_PRESENT' })
})

test('fastify\'s own register options are passed to the plugin and accepted', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(digestFields, { prefix: '/x', logLevel: 'warn', logSerializers: {}, contentDigest: true })
  app.get('/', async () => 'hi')
  const res = await app.inject('/')
  t.match(res.headers['content-digest'], /^sha-256=:/, 'the plugin is active, with its own options')
})

test('the digest route option: object, false, or FST_DIGEST_INVALID_ROUTE_OPTION', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(digestFields)
  app.get('/off', { digest: false }, async () => 'hi')
  app.get('/on', { digest: { contentDigest: 'sha-512', reprDigest: true, unencodedDigest: ['sha-512'] } }, async () => 'hi')
  app.route({ method: 'GET', url: '/plain', handler: async () => 'hi' })
  const cases: Array<[unknown, RegExp]> = [
    ['yes', /Invalid digest route option for GET \/bad1: digest: expected an object or false, got "yes"/],
    [true, /digest: expected an object or false, got boolean/],
    [null, /got null/],
    [['sha-256'], /got an array/],
    [{ algorithms: ['sha-256'] }, /algorithms: not a route-level option \(route options: contentDigest, reprDigest, unencodedDigest, verify, maxBufferSize, conditional, noTransform, trailers, legacyDigest, onDigestFields, live, integritySignature\)$/],
    [{ verfy: 'required' }, /for GET \/bad\d+: verfy: unknown option; did you mean "verify"\?$/],
    [{ contentDigests: true }, /contentDigests: unknown option; did you mean "contentDigest"\?$/],
    [{ algorithm: ['sha-256'] }, /algorithm: unknown option \(route options: contentDigest, reprDigest, unencodedDigest, verify, maxBufferSize, conditional, noTransform, trailers, legacyDigest, onDigestFields, live, integritySignature\)$/],
    [{ contentDigest: 'md5' }, /contentDigest: expected true, false, or algorithms among the enabled ones/],
    [{ unencodedDigest: ['sha-256', 'crc32c'] }, /unencodedDigest: expected true, false, or algorithms among the enabled ones \(sha-256, sha-512\), got "crc32c"/],
    [{ unencodedDigests: true }, /unencodedDigests: unknown option; did you mean "unencodedDigest"\?$/],
    [{ verify: 'maybe' }, /verify: expected/],
    [{ maxBufferSize: -5 }, /maxBufferSize: expected/],
    [{ conditional: 'no' }, /conditional: expected a boolean/]
  ]
  let i = 0
  for (const [digest, message] of cases) {
    i++
    t.throws(() => app.get(`/bad${i}`, { digest: digest as never }, async () => 'x'), { code: 'FST_DIGEST_INVALID_ROUTE_OPTION', message }, String(digest))
  }
  t.throws(() => app.route({ method: ['GET', 'POST'], url: '/multi', digest: 1 as never, handler: async () => 'x' }), { message: /for GET,POST \/multi/ })
  const off = await app.inject('/off')
  t.equal(off.headers.vary, undefined, 'digest: false: the plugin does nothing')
  t.equal(off.headers['content-digest'], undefined)
  const on = await app.inject('/on')
  t.match(on.headers['content-digest'], /^sha-512=:/)
  t.match(on.headers['repr-digest'], /^sha-256=:/)
  t.equal(on.headers['unencoded-digest'], on.headers['content-digest'], 'the route\'s Unencoded-Digest: sha-512 of the same uncoded bytes')
  t.equal(on.headers.vary, 'Want-Content-Digest, Want-Repr-Digest, Want-Unencoded-Digest')
  const plain = await app.inject('/plain')
  t.equal(plain.headers['content-digest'], undefined, 'nothing unsolicited by default')
  t.equal(plain.headers['unencoded-digest'], undefined)
  t.equal(plain.headers.vary, 'Want-Content-Digest, Want-Repr-Digest, Want-Unencoded-Digest')
})
