import { generateKeyPairSync } from 'node:crypto'
import { expect, test } from 'tstyche'
import Fastify, { type FastifyPluginCallback } from 'fastify'
import type { FastifyStaticOptions } from '@fastify/static'
import digestFields, {
  fastifyDigestFields,
  computeDigest,
  createDigester,
  errors,
  parseDigestField,
  parseLegacyDigest,
  parseWantField,
  selectAlgorithms,
  serializeDigestField,
  staticHeaders,
  type DigestAlgorithm,
  type DigestOmission,
  type DigestVerification,
  type FastifyDigestFieldsOptions,
  type RouteDigestOptions
} from '..'
import * as ns from '..'
import cjs = require('..')

test('import forms', () => {
  expect(digestFields).type.toBe(fastifyDigestFields)
  expect(ns.default).type.toBe(fastifyDigestFields)
  expect(cjs.fastifyDigestFields).type.toBe(fastifyDigestFields)
  expect(fastifyDigestFields).type.toBeAssignableTo<FastifyPluginCallback<FastifyDigestFieldsOptions>>()
})

test('plugin options', () => {
  const app = Fastify()
  app.register(digestFields)
  app.register(digestFields, {})
  app.register(digestFields, {
    algorithms: ['sha-256', 'sha-512', 'crc32c'],
    contentDigest: true,
    reprDigest: ['sha-256', 'unixsum'],
    verify: 'required',
    strict: true,
    unencodedDigest: true,
    trailers: false,
    maxBufferSize: 65536,
    conditional: false,
    noTransform: false,
    legacyDigest: true,
    fileCacheSize: 50,
    fileHashing: 'background',
    fileSidecars: true,
    liveTypes: ['text/event-stream', 'application/x-ndjson']
  })
  expect(app.register).type.not.toBeCallableWith(digestFields, { liveTypes: 'text/event-stream' })
  expect(app.register).type.not.toBeCallableWith(digestFields, { fileCacheSize: '50' })
  expect(app.register).type.not.toBeCallableWith(digestFields, { fileHashing: 'later' })
  expect(app.register).type.not.toBeCallableWith(digestFields, { fileHashing: true })
  expect(app.register).type.toBeCallableWith(digestFields, { fileSidecars: 'verified' })
  expect(app.register).type.not.toBeCallableWith(digestFields, { fileSidecars: 'sha256' })
  app.register(digestFields, {
    onDigestFields (request, reply, fields) {
      expect(request.url).type.toBe<string>()
      expect(reply.statusCode).type.toBe<number>()
      expect(fields['content-digest']).type.toBe<string | undefined>()
      return { signature: 'sig1=:AA==:' }
    }
  })
  app.register(digestFields, { onDigestFields: async () => undefined })
  app.register(digestFields, { onDigestFields: () => {} })
  app.register(digestFields, { onDigestFields: () => null })
  expect(app.register).type.not.toBeCallableWith(digestFields, { onDigestFields: () => ({ signature: 1 }) })
  expect(app.register).type.not.toBeCallableWith(digestFields, { onDigestFields: 'sign' })
  app.get('/signed', { digest: { onDigestFields: async () => ({ signature: 'sig1=:AA==:' }) } }, async () => 'x')
  app.register(digestFields, { contentDigest: 'sha-512', verify: false })
  app.register(digestFields, { unencodedDigest: 'sha-512' })
  app.register(digestFields, { reprDigest: true, unencodedDigest: ['sha-256', 'sha-512'] })
  expect(app.register).type.not.toBeCallableWith(digestFields, { unencodedDigest: 'md4' })
  expect(app.register).type.not.toBeCallableWith(digestFields, { unencodedDigest: 1 })
  const { privateKey } = generateKeyPairSync('ed25519')
  app.register(digestFields, { integrityKeys: privateKey, integritySignature: true })
  app.register(digestFields, { integrityKeys: [privateKey, '-----BEGIN PRIVATE KEY-----'], integritySignature: { keyid: 'KEY', label: 'sig1' } })
  app.register(digestFields, { integrityKeys: [], integritySignature: 'KEY' })
  expect(app.register).type.not.toBeCallableWith(digestFields, { integrityKeys: Buffer.alloc(32) })
  expect(app.register).type.not.toBeCallableWith(digestFields, { integritySignature: { key: 'KEY' } })
  expect(app.register).type.not.toBeCallableWith(digestFields, { integritySignature: 1 })
  expect(app.register).type.not.toBeCallableWith(digestFields, { algorithms: ['md4'] })
  expect(app.register).type.not.toBeCallableWith(digestFields, { algorithms: 'sha-256' })
  expect(app.register).type.not.toBeCallableWith(digestFields, { contentDigest: 'SHA-256' })
  expect(app.register).type.not.toBeCallableWith(digestFields, { verify: 'always' })
  expect(app.register).type.not.toBeCallableWith(digestFields, { verify: true })
  expect(app.register).type.not.toBeCallableWith(digestFields, { maxBufferSize: '1mb' })
  expect(app.register).type.not.toBeCallableWith(digestFields, { strict: 'yes' })
})

test('the digest route option', () => {
  const app = Fastify()
  const handler = async (): Promise<string> => 'ok'
  app.get('/a', { digest: { contentDigest: 'sha-512' } }, handler)
  app.get('/b', { digest: false }, handler)
  app.post('/c', { digest: { verify: 'required', maxBufferSize: 1 } }, handler)
  app.route({ method: 'GET', url: '/d', digest: { reprDigest: true, conditional: false, noTransform: false }, handler })
  app.route({ method: 'GET', url: '/e', digest: false, handler })
  app.get('/f', { digest: { live: true } }, handler)
  app.get('/g', { digest: { unencodedDigest: 'sha-256' } }, handler)
  app.get('/h', { digest: { unencodedDigest: false } }, handler)
  app.get('/i', { digest: { integritySignature: { label: 'own' } } }, handler)
  app.get('/j', { digest: { integritySignature: false } }, handler)
  expect(app.get).type.not.toBeCallableWith('/x', { digest: { integrityKeys: [] } }, handler)
  expect(app.get).type.not.toBeCallableWith('/x', { digest: { unencodedDigest: 'SHA-256' } }, handler)
  expect(app.get).type.not.toBeCallableWith('/x', { digest: { live: 'yes' } }, handler)
  expect(app.get).type.not.toBeCallableWith('/x', { digest: { liveTypes: ['text/plain'] } }, handler)
  expect(app.get).type.not.toBeCallableWith('/x', { digest: 'yes' }, handler)
  expect(app.get).type.not.toBeCallableWith('/x', { digest: true }, handler)
  expect(app.get).type.not.toBeCallableWith('/x', { digest: { algorithms: ['sha-256'] } }, handler)
  expect(app.get).type.not.toBeCallableWith('/x', { digest: { fileHashing: 'background' } }, handler)
  expect(app.get).type.not.toBeCallableWith('/x', { digest: { contentDigest: 'md4' } }, handler)
  expect(app.route).type.not.toBeCallableWith({ method: 'GET', url: '/x', digest: 'yes', handler })
  expect<RouteDigestOptions>().type.toBeAssignableFrom({ verify: false as const })
})

test('decorators', () => {
  const app = Fastify()
  app.get('/', async (request, reply) => {
    expect(request.digestVerification).type.toBe<DigestVerification | null>()
    expect(reply.setReprDigest({ 'sha-256': Buffer.alloc(32), unixsum: 6405 })).type.toBe<typeof reply>()
    expect(reply.setReprDigest).type.not.toBeCallableWith({ md4: Buffer.alloc(16) })
    expect(reply.setUnencodedDigest({ 'sha-512': Buffer.alloc(64) })).type.toBe<typeof reply>()
    expect(reply.setUnencodedDigest).type.not.toBeCallableWith({ md4: Buffer.alloc(16) })
    return 'ok'
  })
  app.addHook('onResponse', async (_request, reply) => {
    expect(reply.digestsOmitted).type.toBe<DigestOmission | null>()
    expect(reply.digestsOmitted?.reason).type.toBe<'live-stream' | 'over-max-buffer-size' | 'file-not-hashed' | undefined>()
    expect(reply.digestsOmitted?.fields).type.toBe<Array<'Content-Digest' | 'Repr-Digest' | 'Unencoded-Digest' | 'Signature'> | undefined>()
  })
})

test('helpers', () => {
  expect(computeDigest('sha-256', 'x')).type.toBe<Buffer>()
  expect(computeDigest).type.not.toBeCallableWith('md4', 'x')
  expect(createDigester('crc32c').update(Buffer.alloc(1)).digest()).type.toBe<Buffer>()
  expect(parseDigestField('sha-256=:AAAA:')).type.toBe<Map<string, Buffer> | null>()
  expect(parseDigestField('sha-256=:AAAA:', 'Unencoded-Digest')).type.toBe<Map<string, Buffer> | null>()
  expect(parseWantField(['sha-256=1'])).type.toBe<Map<string, number> | null>()
  // A field as fetch's Headers gives it: a string or null.
  expect(parseDigestField(new Headers().get('repr-digest'))).type.toBe<Map<string, Buffer> | null>()
  expect(parseWantField(new Headers().get('want-repr-digest'))).type.toBe<Map<string, number> | null>()
  expect(parseLegacyDigest(new Headers().get('digest'))).type.toBe<Map<string, Buffer> | null>()
  expect(serializeDigestField([['sha-256', Buffer.alloc(32)]], { strict: true })).type.toBe<string>()
  expect(selectAlgorithms({ algorithms: ['sha-256'] })).type.toBe<DigestAlgorithm[]>()
})

test('error codes', () => {
  expect(new errors.FST_DIGEST_MISMATCH().code).type.toBe<'FST_DIGEST_MISMATCH'>()
  expect(errors.FST_DIGEST_INVALID_OPTION('x', 'y').code).type.toBe<'FST_DIGEST_INVALID_OPTION'>()
})

test('staticHeaders fits @fastify/static\'s setHeaders', () => {
  expect(staticHeaders).type.toBeAssignableTo<NonNullable<FastifyStaticOptions['setHeaders']>>()
  expect(staticHeaders).type.not.toBeCallableWith('/path')
})
