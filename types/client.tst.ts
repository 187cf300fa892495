import { expect, test } from 'tstyche'
import { Agent, FormData as UndiciFormData, fetch as undiciFetch, type Dispatcher } from 'undici'
import {
  clientErrors,
  digestBody,
  digestHeaders,
  digestInterceptor,
  type DigestedBody,
  type DigestibleBody,
  type DigestClientError,
  type DigestClientErrorCode,
  type DigestInterceptorOptions,
  type SerializedForm
} from './client'
import * as ns from './client'

test('digestInterceptor', () => {
  expect(digestInterceptor()).type.toBe<Dispatcher.DispatcherComposeInterceptor>()
  expect(new Agent().compose(digestInterceptor({ verify: 'required' }))).type.toBe<Dispatcher.ComposedDispatcher>()
  expect(ns.digestInterceptor).type.toBe(digestInterceptor)
})

test('options', () => {
  expect<DigestInterceptorOptions>().type.toBeAssignableFrom({
    algorithms: ['sha-256', 'crc32c'] as const,
    verify: 'if-present' as const,
    strict: true,
    want: { content: 'sha-256' as const, repr: ['sha-512', 'sha-256'] as const },
    maxDecodedSize: 1024
  })
  expect<DigestInterceptorOptions>().type.toBeAssignableFrom({ want: 'sha-512' as const })
  expect<DigestInterceptorOptions>().type.toBeAssignableFrom({ want: ['md5'] as const })
  expect(digestInterceptor).type.not.toBeCallableWith({ verify: false })
  expect(digestInterceptor).type.not.toBeCallableWith({ algorithms: ['sha-1'] })
  expect(digestInterceptor).type.not.toBeCallableWith({ want: { body: 'sha-256' } })
  expect(digestInterceptor).type.not.toBeCallableWith({ strict: 'yes' })
  expect<DigestInterceptorOptions>().type.toBeAssignableFrom({ acceptReencoded: true })
  expect<DigestInterceptorOptions>().type.toBeAssignableFrom({ acceptReencoded: (err: DigestClientError) => { console.log(err.matched) } })
  expect(digestInterceptor).type.not.toBeCallableWith({ acceptReencoded: 'yes' })
  expect(digestInterceptor).type.not.toBeCallableWith({ acceptReencoded: (err: string) => err })
})

test('digestHeaders', () => {
  expect(digestHeaders('body')).type.toBe<{ 'content-digest': string }>()
  expect(digestHeaders(new Uint8Array(1), ['sha-256', 'unixsum'])).type.toBe<{ 'content-digest': string }>()
  expect(digestHeaders(new ArrayBuffer(1), 'sha-512')).type.toBe<{ 'content-digest': string }>()
  expect(digestHeaders).type.not.toBeCallableWith({})
  expect(digestHeaders).type.not.toBeCallableWith('body', 'sha-1')
  expect(digestHeaders('body', undefined, { unencoded: true })).type.toBe<{ 'content-digest': string, 'unencoded-digest': string }>()
  expect(digestHeaders('body', 'sha-512', { unencoded: Math.random() > 0.5 })).type.toBe<{ 'content-digest': string, 'unencoded-digest'?: string }>()
  expect(digestHeaders).type.not.toBeCallableWith('body', 'sha-256', { unencoded: 'yes' })
  expect(digestHeaders).type.not.toBeCallableWith('body', 'sha-256', { content: true })
})

test('digestBody', () => {
  expect(digestBody(new FormData())).type.toBe<Promise<DigestedBody<SerializedForm>>>()
  expect(digestBody(new UndiciFormData())).type.toBe<Promise<DigestedBody<SerializedForm>>>()
  expect(digestBody(new Blob(['x']), ['sha-512', 'sha-256'])).type.toBe<Promise<DigestedBody<Blob>>>()
  expect(digestBody(new Uint8Array(1), 'sha-256')).type.toBe<Promise<DigestedBody<Uint8Array<ArrayBuffer>>>>()
  expect(digestBody(new ArrayBuffer(1))).type.toBe<Promise<DigestedBody<ArrayBuffer>>>()
  expect<DigestedBody['headers']['content-type']>().type.toBe<string | undefined>()
  expect<DigestedBody['body']>().type.toBe<DigestibleBody | Blob>()
  expect(digestBody).type.not.toBeCallableWith({})
  expect(digestBody).type.not.toBeCallableWith('body', 'sha-1')
  expect(digestBody(new Blob(['x']), 'sha-256', { unencoded: true })).type.toBe<Promise<DigestedBody<Blob>>>()
  expect<DigestedBody['headers']['unencoded-digest']>().type.toBe<string | undefined>()
  expect(digestBody).type.not.toBeCallableWith('body', 'sha-256', { unencoded: 1 })
})

// fetch takes the body and headers digestBody() gives, the global fetch and
// undici's (their Blob and BufferSource types differ; with the DOM lib the
// global one is the DOM's, which test/package/readme-types.test.ts checks).
test('digestBody: its body and headers fit fetch', async () => {
  for (const { body, headers } of [
    await digestBody(new FormData()),
    await digestBody(new UndiciFormData()),
    await digestBody(new Blob(['x'])),
    await digestBody(new Uint8Array(1)),
    await digestBody('text'),
    await digestBody('text', 'sha-256', { unencoded: true })
  ]) {
    expect(fetch).type.toBeCallableWith('http://localhost/', { method: 'POST', headers, body })
    expect(undiciFetch).type.toBeCallableWith('http://localhost/', { method: 'POST', headers, body })
  }
})

test('DigestAlgorithm: one union for both entries', () => {
  expect<import('./client').DigestAlgorithm>().type.toBe<import('./index').DigestAlgorithm>()
  expect<import('./client').DigestAlgorithm>().type.toBe<'sha-256' | 'sha-512' | 'md5' | 'sha' | 'unixsum' | 'unixcksum' | 'adler' | 'crc32c'>()
})

test('errors', () => {
  expect<DigestClientError['code']>().type.toBe<DigestClientErrorCode>()
  expect<DigestClientError['field']>().type.toBe<string>()
  expect<DigestClientError['algorithm']>().type.toBe<string | null>()
  expect(new clientErrors.FST_DIGEST_RESPONSE_MISMATCH().code).type.toBe<'FST_DIGEST_RESPONSE_MISMATCH'>()
  expect(new clientErrors.FST_DIGEST_RESPONSE_UNCHECKED().code).type.toBe<'FST_DIGEST_RESPONSE_UNCHECKED'>()
  expect(new clientErrors.FST_DIGEST_RESPONSE_REENCODED().code).type.toBe<'FST_DIGEST_RESPONSE_REENCODED'>()
  expect<DigestClientError['matched']>().type.toBe<readonly string[] | undefined>()
  expect(clientErrors).type.not.toHaveProperty('FST_DIGEST_INVALID_OPTION')
})
