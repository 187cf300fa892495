// Request verification through fastify.inject: parsed bodies, stream-passing
// parsers, raw-reading routes, policies, legacy Digest, problem details.
import { test } from 'tap'
import { PassThrough, Writable } from 'node:stream'
import { gzipSync } from 'node:zlib'
import { pipeline } from 'node:stream/promises'
import Fastify from 'fastify'
import digestFields = require('../../../lib/index')
import { buildVerifyApp, drain, b64, sf, HELLO, HELLO_SHA256, NEW_TITLE, PROBLEM } from './request-helpers'

const WANT = 'sha-256=10, sha-512=9'

test('a matching Content-Digest is verified before the handler runs', async (t) => {
  const app = await buildVerifyApp(t)
  const res = await app.inject({
    method: 'POST',
    url: '/json',
    headers: { 'content-type': 'application/json', 'content-digest': sf(HELLO) },
    payload: HELLO
  })
  t.equal(res.statusCode, 200)
  t.same(res.json(), {
    body: { hello: 'world' },
    verification: {
      verified: true,
      fields: [{ field: 'Content-Digest', ok: true, results: [{ algorithm: 'sha-256', outcome: 'matched' }] }]
    }
  })
})

test('a mismatched Content-Digest never reaches the handler: 400 problem details', async (t) => {
  const app = await buildVerifyApp(t)
  let called = false
  app.addHook('preHandler', async () => { called = true })
  const provided = sf('something else')
  const res = await app.inject({
    method: 'POST',
    url: '/json',
    headers: { 'content-type': 'application/json', 'content-digest': provided },
    payload: HELLO
  })
  t.equal(res.statusCode, 400)
  t.equal(called, false)
  t.equal(res.headers['content-type'], 'application/problem+json')
  t.equal(res.headers['want-content-digest'], WANT)
  t.equal(res.headers['want-repr-digest'], WANT)
  t.same(res.json(), {
    type: `${PROBLEM}digest-mismatched-values`,
    title: 'Mismatched Digest Values',
    status: 400,
    detail: 'The Content-Digest field does not match the content',
    code: 'FST_DIGEST_MISMATCH',
    mismatched_digests: [{ algorithm: 'sha-256', provided_digest: `:${b64('something else')}:`, header: 'Content-Digest' }]
  })
  // The server's own digest is never disclosed.
  t.notMatch(res.body, b64(HELLO))
})

// draft-ietf-httpapi-digest-fields-problem-types-06, Figures 7 and 8.
test('problem-types draft: mismatched digest values (Figure 8)', async (t) => {
  const app = await buildVerifyApp(t)
  const res = await app.inject({
    method: 'PUT',
    url: '/json',
    headers: { 'content-type': 'application/json', 'repr-digest': HELLO_SHA256 },
    payload: '{"hello": "woXYZ"}\n'
  })
  t.equal(res.statusCode, 400)
  t.equal(res.headers['content-type'], 'application/problem+json')
  const body = res.json()
  t.equal(body.type, 'https://iana.org/assignments/http-problem-types#digest-mismatched-values')
  t.equal(body.title, 'Mismatched Digest Values')
  t.same(body.mismatched_digests, [{
    algorithm: 'sha-256',
    provided_digest: ':RK/0qy18MlBSVnWgjwz6lZEWjP/lF5HF9bvEF8FabDg=:',
    header: 'Repr-Digest'
  }])
  t.notMatch(res.body, b64('{"hello": "woXYZ"}\n'), 'the computed digest is not disclosed')
})

// Figures 5 and 6: a sha-512 value truncated to 32 octets (unpadded base64).
test('problem-types draft: invalid digest values (Figure 6), refused before reading the body', async (t) => {
  const app = await buildVerifyApp(t)
  for (const url of ['/json', '/raw', '/stream']) {
    const res = await app.inject({
      method: url === '/json' ? 'PUT' : 'POST',
      url,
      headers: {
        'content-type': url === '/json' ? 'application/json' : `application/x-${url.slice(1)}`,
        'repr-digest': 'sha-512=:YMAam51Jz/jOATT6/zvHrLVgOYTGFy1d6GJiOHTohq4:'
      },
      payload: HELLO
    })
    t.equal(res.statusCode, 400, url)
    t.same(res.json(), {
      type: 'https://iana.org/assignments/http-problem-types#digest-invalid-values',
      title: 'Invalid Digest Values',
      status: 400,
      detail: 'The Repr-Digest field carries a value that the algorithm cannot produce',
      code: 'FST_DIGEST_INVALID_VALUE',
      invalid_digests: [{ algorithm: 'sha-512', header: 'Repr-Digest', reason: 'digest value is not 64 bytes long' }]
    }, url)
    t.equal(res.headers['want-repr-digest'], WANT, url)
  }
})

// Figures 1 and 2: md5 digests, in the three fields this plugin checks.
const MD5_REQUEST = {
  method: 'POST' as const,
  url: '/json',
  headers: {
    'content-type': 'application/json',
    accept: 'application/json',
    'repr-digest': 'md5=:Uwq9xB4MJtDTknVOSEE1WA==:',
    'content-digest': 'md5=:Uwq9xB4MJtDTknVOSEE1WA==:',
    'unencoded-digest': 'md5=:Uwq9xB4MJtDTknVOSEE1WA==:'
  },
  payload: NEW_TITLE
}

test('problem-types draft: unsupported algorithms (Figure 2) under verify: required', async (t) => {
  t.equal(b64(NEW_TITLE, 'md5'), 'Uwq9xB4MJtDTknVOSEE1WA==', 'the draft\'s md5 value')
  const app = await buildVerifyApp(t, { verify: 'required' })
  const res = await app.inject(MD5_REQUEST)
  t.equal(res.statusCode, 400)
  t.equal(res.headers['want-repr-digest'], WANT)
  t.equal(res.headers['want-content-digest'], WANT)
  t.same(res.json(), {
    type: 'https://iana.org/assignments/http-problem-types#digest-unsupported-algorithms',
    title: 'Unsupported Hashing Algorithms',
    status: 400,
    detail: 'The Repr-Digest, Unencoded-Digest, Content-Digest field names no algorithm this server accepts',
    code: 'FST_DIGEST_UNSUPPORTED_ALGORITHM',
    unsupported_algorithms: [
      { algorithm: 'md5', header: 'Repr-Digest' },
      { algorithm: 'md5', header: 'Unencoded-Digest' },
      { algorithm: 'md5', header: 'Content-Digest' }
    ]
  })
})

test('unsupported algorithms are ignored under verify: if-present, checked when enabled', async (t) => {
  const lenient = await buildVerifyApp(t)
  const res = await lenient.inject(MD5_REQUEST)
  t.equal(res.statusCode, 200)
  t.same(res.json().verification, {
    verified: false,
    reason: 'no-digest',
    fields: [
      { field: 'Repr-Digest', ok: false, results: [{ algorithm: 'md5', outcome: 'unsupported' }] },
      { field: 'Unencoded-Digest', ok: false, results: [{ algorithm: 'md5', outcome: 'unsupported' }] },
      { field: 'Content-Digest', ok: false, results: [{ algorithm: 'md5', outcome: 'unsupported' }] }
    ]
  })

  const md5 = await buildVerifyApp(t, { algorithms: ['sha-256', 'md5'], verify: 'required' })
  const ok = await md5.inject(MD5_REQUEST)
  t.equal(ok.statusCode, 200)
  t.equal(ok.json().verification.verified, true)
  t.same(ok.json().verification.fields.map((f: { ok: boolean }) => f.ok), [true, true, true])
})

test('an unknown algorithm next to a known one is ignored', async (t) => {
  const app = await buildVerifyApp(t, { verify: 'required' })
  const res = await app.inject({
    method: 'POST',
    url: '/json',
    headers: { 'content-type': 'text/plain', 'content-digest': `foo=:AAAA:, ${sf('abc')}, ${sf('abc', 'sha-512')}` },
    payload: 'abc'
  })
  t.equal(res.statusCode, 200)
  t.same(res.json().verification, {
    verified: true,
    fields: [{
      field: 'Content-Digest',
      ok: true,
      results: [
        { algorithm: 'foo', outcome: 'unsupported' },
        { algorithm: 'sha-256', outcome: 'matched' },
        { algorithm: 'sha-512', outcome: 'matched' }
      ]
    }]
  })

  const bad = await app.inject({
    method: 'POST',
    url: '/json',
    headers: { 'content-type': 'text/plain', 'content-digest': `${sf('abc')}, ${sf('abd', 'sha-512')}` },
    payload: 'abc'
  })
  t.equal(bad.statusCode, 400)
  t.same(bad.json().mismatched_digests, [{ algorithm: 'sha-512', provided_digest: `:${b64('abd', 'sha-512')}:`, header: 'Content-Digest' }])
})

// RFC 9530 Appendix B.4-B.9 requests (with the B.5/B.6 over-padding erratum fixed).
test('RFC 9530 Appendix B requests are accepted', async (t) => {
  const app = await buildVerifyApp(t, { verify: 'required' })
  app.addContentTypeParser('application/merge-patch+json', { parseAs: 'string' }, (_req, body, done) => done(null, body))
  const cases = [
    { name: 'B.4 PUT', method: 'PUT', type: 'application/json', digest: HELLO_SHA256, payload: HELLO, extra: { 'accept-encoding': 'br' } },
    { name: 'B.5 PUT', method: 'PUT', type: 'application/json', digest: HELLO_SHA256, payload: HELLO, extra: { 'content-length': '19', 'accept-encoding': 'br' } },
    { name: 'B.6 PUT', method: 'PUT', type: 'application/json', digest: HELLO_SHA256, payload: HELLO, extra: { 'accept-encoding': 'br' } },
    { name: 'B.7 POST', method: 'POST', type: 'application/json', digest: 'sha-256=:mEkdbO7Srd9LIOegftO0aBX+VPTVz7/CSHes2Z27gc4=:', payload: NEW_TITLE, extra: { accept: 'application/json', 'accept-encoding': 'identity' } },
    { name: 'B.9 PATCH', method: 'PATCH', type: 'application/merge-patch+json', digest: 'sha-256=:mEkdbO7Srd9LIOegftO0aBX+VPTVz7/CSHes2Z27gc4=:', payload: NEW_TITLE, extra: { 'accept-encoding': 'identity' } }
  ] as const
  for (const c of cases) {
    const res = await app.inject({
      method: c.method,
      url: '/json',
      headers: { 'content-type': c.type, 'repr-digest': c.digest, ...c.extra },
      payload: c.payload
    })
    t.equal(res.statusCode, 200, c.name)
    t.same(res.json().verification, {
      verified: true,
      fields: [{ field: 'Repr-Digest', ok: true, results: [{ algorithm: 'sha-256', outcome: 'matched' }] }]
    }, c.name)
  }
})

test('the RFC\'s over-padded base64 (B.5 erratum) is a malformed field', async (t) => {
  const app = await buildVerifyApp(t)
  const res = await app.inject({
    method: 'PUT',
    url: '/json',
    headers: { 'content-type': 'application/json', 'repr-digest': 'sha-256=:RK/0qy18MlBSVnWgjwz6lZEWjP/lF5HF9bvEF8FabDg==:' },
    payload: HELLO
  })
  t.equal(res.statusCode, 400)
  t.equal(res.json().code, 'FST_DIGEST_INVALID_FIELD')
})

// RFC 9530 C.3: Want-Repr-Digest on a GET is a hint; request verification does
// not refuse it. A Repr-Digest naming an algorithm the server lacks, under
// verify: 'required', is refused with the supported algorithms advertised.
test('RFC 9530 C.3: unsupported algorithms', async (t) => {
  const app = await buildVerifyApp(t, { verify: 'required' })
  const get = await app.inject({ url: '/json', headers: { 'want-repr-digest': 'sha=10' } })
  t.equal(get.statusCode, 200)
  t.same(get.json().verification, { verified: false, reason: 'no-body', fields: [] })

  const put = await app.inject({
    method: 'PUT',
    url: '/json',
    headers: { 'content-type': 'application/json', 'repr-digest': sf(HELLO, 'sha') },
    payload: HELLO
  })
  t.equal(put.statusCode, 400)
  t.equal(put.headers['want-repr-digest'], 'sha-256=10, sha-512=9')
  t.same(put.json().unsupported_algorithms, [{ algorithm: 'sha', header: 'Repr-Digest' }])
})

test('malformed digest fields are refused with 400 about:blank, before reading', async (t) => {
  const app = await buildVerifyApp(t)
  const cases = [
    ['content-digest', 'sha-256=abc', /^Malformed Content-Digest field: sha-256 must be a Byte Sequence/],
    ['content-digest', 'SHA-256=:AAAA:', /^Malformed Content-Digest field: /],
    ['repr-digest', 'sha-256=:AAAA', /^Malformed Repr-Digest field: /]
  ] as const
  for (const url of ['/json', '/raw']) {
    for (const [name, value, detail] of cases) {
      const res = await app.inject({
        method: 'POST',
        url,
        headers: { 'content-type': url === '/json' ? 'text/plain' : 'application/x-raw', [name]: value },
        payload: 'abc'
      })
      t.equal(res.statusCode, 400, `${url} ${value}`)
      t.equal(res.headers['content-type'], 'application/problem+json')
      t.equal(res.headers['want-content-digest'], WANT)
      const body = res.json()
      t.equal(body.type, 'about:blank')
      t.equal(body.title, 'Bad Request')
      t.equal(body.status, 400)
      t.equal(body.code, 'FST_DIGEST_INVALID_FIELD')
      t.match(body.detail, detail)
    }
  }
})

test('Content-Digest and Repr-Digest together; a failure names only the failing field', async (t) => {
  const app = await buildVerifyApp(t)
  const ok = await app.inject({
    method: 'POST',
    url: '/json',
    headers: { 'content-type': 'application/json', 'content-digest': sf(HELLO, 'sha-512'), 'repr-digest': sf(HELLO) },
    payload: HELLO
  })
  t.equal(ok.statusCode, 200)
  t.same(ok.json().verification.fields.map((f: { field: string, ok: boolean }) => [f.field, f.ok]), [['Repr-Digest', true], ['Content-Digest', true]])

  const bad = await app.inject({
    method: 'POST',
    url: '/json',
    headers: { 'content-type': 'application/json', 'content-digest': sf(HELLO), 'repr-digest': sf('other') },
    payload: HELLO
  })
  t.equal(bad.statusCode, 400)
  t.equal(bad.json().detail, 'The Repr-Digest field does not match the content')
  t.same(bad.json().mismatched_digests.map((m: { header: string }) => m.header), ['Repr-Digest'])
})

test('deprecated algorithms, enabled, including Integer checksums', async (t) => {
  const app = await buildVerifyApp(t, { algorithms: ['sha-256', 'unixsum', 'crc32c'] })
  // RFC 9530 Appendix D: {"hello": "world"} without LF.
  const res = await app.inject({
    method: 'POST',
    url: '/json',
    headers: { 'content-type': 'text/plain', 'content-digest': 'unixsum=6405, crc32c=:Q3lHIA==:' },
    payload: '{"hello": "world"}'
  })
  t.equal(res.statusCode, 200)
  t.equal(res.json().verification.verified, true)
})

// RFC 8941 §3.3.1, §4.2.4: `6405.0` is a Decimal, not the Integer unixsum
// and unixcksum may carry, so the field is malformed: 400 before reading, as
// for any other wrong member type. The RFC 3230 Digest is not a Structured
// Field, but its unixsum is decimal digits: `6405.0` does not decode and the
// member is ignored, like any other member that does not decode.
test('Integer checksums written as Decimals: malformed Content-Digest / Repr-Digest, ignored Digest member', async (t) => {
  const app = await buildVerifyApp(t, { algorithms: ['sha-256', 'unixsum', 'unixcksum'], legacyDigest: true })
  // RFC 9530 Appendix D: {"hello": "world"} without LF: unixsum 6405, unixcksum 4013623040.
  const payload = '{"hello": "world"}'
  const post = (headers: Record<string, string>) =>
    app.inject({ method: 'POST', url: '/json', headers: { 'content-type': 'text/plain', ...headers }, payload })
  for (const [name, integer, decimal] of [
    ['content-digest', 'unixsum=6405', 'unixsum=6405.0'],
    ['repr-digest', 'unixsum=6405', 'unixsum=6405.000'],
    ['content-digest', 'unixcksum=4013623040', 'unixcksum=4013623040.0'],
    ['content-digest', 'unixsum=6405, unixcksum=4013623040', 'unixsum=6405, unixcksum=4013623040.0']
  ] as const) {
    const ok = await post({ [name]: integer })
    t.equal(ok.statusCode, 200, `${name}: ${integer}`)
    t.equal(ok.json().verification.verified, true, `${name}: ${integer} verifies`)
    const res = await post({ [name]: decimal })
    t.equal(res.statusCode, 400, `${name}: ${decimal}`)
    t.equal(res.headers['content-type'], 'application/problem+json')
    t.equal(res.json().code, 'FST_DIGEST_INVALID_FIELD')
    t.match(res.json().detail, /^Malformed (Content|Repr)-Digest field: unixc?k?sum must be a Byte Sequence or an Integer$/, decimal)
  }

  const legacy = await post({ digest: 'UNIXsum=6405' })
  t.same(legacy.json().verification.fields, [{ field: 'Digest', ok: true, results: [{ algorithm: 'unixsum', outcome: 'matched' }] }], 'Digest: UNIXsum=6405 verifies')
  const fraction = await post({ digest: 'UNIXsum=6405.0' })
  t.equal(fraction.statusCode, 200)
  t.same(fraction.json().verification, { verified: false, reason: 'no-digest', fields: [] }, 'Digest: UNIXsum=6405.0 is ignored')
  const mixed = await post({ digest: `UNIXsum=6405.0, SHA-256=${b64(payload)}` })
  t.same(mixed.json().verification.fields, [{ field: 'Digest', ok: true, results: [{ algorithm: 'sha-256', outcome: 'matched' }] }], 'the other members still count')

  const required = await buildVerifyApp(t, { algorithms: ['sha-256', 'unixsum'], legacyDigest: true, verify: 'required' })
  const missing = await required.inject({ method: 'POST', url: '/json', headers: { 'content-type': 'text/plain', digest: 'UNIXsum=6405.0' }, payload })
  t.equal(missing.statusCode, 400)
  t.equal(missing.json().code, 'FST_DIGEST_MISSING', 'verify: required: an ignored member is no digest')
})

test('empty content: digests are of the empty string, checked without reading', async (t) => {
  const app = await buildVerifyApp(t)
  const empty = sf('')
  for (const [method, headers] of [
    ['POST', { 'content-type': 'text/plain', 'content-length': '0' }],
    ['POST', {}],
    ['DELETE', {}]
  ] as const) {
    const res = await app.inject({ method, url: '/json', headers: { ...headers, 'content-digest': empty, 'repr-digest': empty } })
    t.equal(res.statusCode, 200, method)
    t.same(res.json().verification, {
      verified: true,
      fields: [
        { field: 'Repr-Digest', ok: true, results: [{ algorithm: 'sha-256', outcome: 'matched' }] },
        { field: 'Content-Digest', ok: true, results: [{ algorithm: 'sha-256', outcome: 'matched' }] }
      ]
    }, method)
  }
  const bad = await app.inject({ method: 'DELETE', url: '/json', headers: { 'content-digest': sf('x') } })
  t.equal(bad.statusCode, 400)
  t.equal(bad.json().code, 'FST_DIGEST_MISMATCH')

  const none = await app.inject({ method: 'DELETE', url: '/json' })
  t.same(none.json().verification, { verified: false, reason: 'no-body', fields: [] })
})

test('verify: required refuses content without a usable digest', async (t) => {
  const app = await buildVerifyApp(t, { verify: 'required' })
  for (const url of ['/json', '/raw', '/stream']) {
    const res = await app.inject({
      method: 'POST',
      url,
      headers: { 'content-type': url === '/json' ? 'text/plain' : `application/x-${url.slice(1)}` },
      payload: 'abc'
    })
    t.equal(res.statusCode, 400, url)
    t.equal(res.headers['content-type'], 'application/problem+json')
    t.equal(res.headers['want-content-digest'], WANT)
    t.equal(res.headers['want-repr-digest'], WANT)
    t.same(res.json(), {
      type: 'about:blank',
      title: 'Bad Request',
      status: 400,
      detail: 'This route requires a Content-Digest or Repr-Digest for the request content',
      code: 'FST_DIGEST_MISSING'
    }, url)
  }
  // No content, nothing to protect.
  const empty = await app.inject({ method: 'POST', url: '/json' })
  t.equal(empty.statusCode, 200)
  t.same(empty.json().verification, { verified: false, reason: 'no-body', fields: [] })
  const get = await app.inject({ url: '/json' })
  t.equal(get.statusCode, 200)
})

test('verify per route: required on one route, false on another, off with digest: false', async (t) => {
  const app = await buildVerifyApp(t)
  const report = async (request: { body: unknown, digestVerification: unknown }) => ({ verification: request.digestVerification })
  app.post('/required', { digest: { verify: 'required' } }, report)
  app.post('/unchecked', { digest: { verify: false } }, report)
  app.post('/off', { digest: false }, report)
  const plain = { 'content-type': 'text/plain' }

  t.equal((await app.inject({ method: 'POST', url: '/required', headers: plain, payload: 'abc' })).statusCode, 400)
  t.equal((await app.inject({ method: 'POST', url: '/required', headers: { ...plain, 'content-digest': sf('abc') }, payload: 'abc' })).statusCode, 200)
  const lenient = await app.inject({ method: 'POST', url: '/json', headers: plain, payload: 'abc' })
  t.equal(lenient.statusCode, 200)
  t.same(lenient.json().verification, { verified: false, reason: 'no-digest', fields: [] })

  const wrong = { ...plain, 'content-digest': sf('xyz') }
  const unchecked = await app.inject({ method: 'POST', url: '/unchecked', headers: wrong, payload: 'abc' })
  t.equal(unchecked.statusCode, 200)
  t.same(unchecked.json().verification, { verified: false, reason: 'disabled', fields: [] })
  const off = await app.inject({ method: 'POST', url: '/off', headers: wrong, payload: 'abc' })
  t.equal(off.statusCode, 200)
  t.same(off.json().verification, null)
  t.equal((await app.inject({ method: 'POST', url: '/json', headers: wrong, payload: 'abc' })).statusCode, 400)
})

test('request.digestVerification before the body is looked at, and when the application sets it', async (t) => {
  const app = await buildVerifyApp(t)
  const early: unknown[] = []
  app.post('/early', {
    onRequest: (request, _reply, done) => {
      early.push(request.digestVerification)
      done()
    }
  }, async (request) => request.digestVerification)
  const mine = { verified: true, fields: [] }
  app.get('/assigned', {
    onRequest: (request, _reply, done) => {
      request.digestVerification = mine
      done()
    }
  }, async (request) => request.digestVerification)
  app.get('/plain', async (request) => request.digestVerification)
  app.get('/twice', async (request) => {
    const first = request.digestVerification
    return { same: first === request.digestVerification }
  })

  const res = await app.inject({ method: 'POST', url: '/early', headers: { 'content-type': 'text/plain', 'content-digest': sf('abc') }, payload: 'abc' })
  t.same(early, [{ verified: false, reason: 'unread', fields: [] }], 'unread until the body has been checked')
  t.same(res.json(), { verified: true, fields: [{ field: 'Content-Digest', ok: true, results: [{ algorithm: 'sha-256', outcome: 'matched' }] }] })
  t.same((await app.inject({ method: 'GET', url: '/assigned' })).json(), mine, 'an assigned value is kept')
  t.same((await app.inject({ method: 'GET', url: '/plain' })).json(), { verified: false, reason: 'no-body', fields: [] })
  t.same((await app.inject({ method: 'GET', url: '/twice' })).json(), { same: true }, 'one object, however often read')
})

test('verify: false globally checks nothing; a route can turn it on', async (t) => {
  const app = await buildVerifyApp(t, { verify: false })
  app.post('/checked', { digest: { verify: 'if-present' } }, async (request) => request.digestVerification)
  const wrong = { 'content-type': 'text/plain', 'content-digest': sf('xyz') }
  const res = await app.inject({ method: 'POST', url: '/json', headers: wrong, payload: 'abc' })
  t.equal(res.statusCode, 200)
  t.same(res.json().verification, { verified: false, reason: 'disabled', fields: [] })
  t.equal((await app.inject({ method: 'POST', url: '/checked', headers: wrong, payload: 'abc' })).statusCode, 400)
})

test('legacyDigest: RFC 3230 Digest over the bytes as received', async (t) => {
  const body = '{"type":"Create"}'
  const app = await buildVerifyApp(t, { legacyDigest: true })
  for (const value of [`SHA-256=${b64(body)}`, `sha-256=${b64(body)}`, `UNKNOWN=abc, SHA-512=${b64(body, 'sha-512')}`]) {
    const res = await app.inject({ method: 'POST', url: '/json', headers: { 'content-type': 'application/json', digest: value }, payload: body })
    t.equal(res.statusCode, 200, value)
    t.equal(res.json().verification.verified, true, value)
    t.equal(res.json().verification.fields[0].field, 'Digest', value)
  }
  const bad = await app.inject({ method: 'POST', url: '/json', headers: { 'content-type': 'application/json', digest: `SHA-256=${b64('other')}` }, payload: body })
  t.equal(bad.statusCode, 400)
  t.same(bad.json().mismatched_digests, [{ algorithm: 'sha-256', provided_digest: `:${b64('other')}:`, header: 'Digest' }])
  const short = await app.inject({ method: 'POST', url: '/json', headers: { 'content-type': 'application/json', digest: 'SHA-256=AAAA' }, payload: body })
  t.equal(short.statusCode, 400)
  t.same(short.json().invalid_digests, [{ algorithm: 'sha-256', header: 'Digest', reason: 'digest value is not 32 bytes long' }])
  const unknown = await app.inject({ method: 'POST', url: '/json', headers: { 'content-type': 'application/json', digest: 'UNKNOWN=abc' }, payload: body })
  t.same(unknown.json().verification, { verified: false, reason: 'no-digest', fields: [] })

  const off = await buildVerifyApp(t)
  off.post('/inbox', { digest: { legacyDigest: true, verify: 'required' } }, async (request) => request.digestVerification)
  const ignored = await off.inject({ method: 'POST', url: '/json', headers: { 'content-type': 'application/json', digest: `SHA-256=${b64('other')}` }, payload: body })
  t.equal(ignored.statusCode, 200, 'Digest is ignored without legacyDigest')
  const inbox = await off.inject({ method: 'POST', url: '/inbox', headers: { 'content-type': 'application/json', digest: `SHA-256=${b64(body)}` }, payload: body })
  t.equal(inbox.statusCode, 200, 'a legacy Digest satisfies verify: required')
  t.equal(inbox.json().fields[0].field, 'Digest')
})

test('stream-passing parser: a corrupt body errors the handler\'s stream, the response says so', async (t) => {
  const app = await buildVerifyApp(t)
  const seen: string[] = []
  app.addContentTypeParser('application/x-sink', (_req, payload, done) => done(null, payload))
  app.post('/sink', async (request) => {
    try {
      await pipeline(request.body as NodeJS.ReadableStream, new Writable({ write (_c, _e, cb) { cb() } }))
      seen.push('clean end')
    } catch (err) {
      seen.push(`error ${(err as { code: string }).code}`)
      throw err
    }
    return request.digestVerification
  })
  const big = Buffer.alloc(200_000, 'a')
  const ok = await app.inject({ method: 'POST', url: '/sink', headers: { 'content-type': 'application/x-sink', 'content-digest': sf(big) }, payload: big })
  t.equal(ok.statusCode, 200)
  t.equal(ok.json().verified, true)

  const corrupt = Buffer.from(big)
  corrupt[100_000] = 0x62
  const res = await app.inject({ method: 'POST', url: '/sink', headers: { 'content-type': 'application/x-sink', 'content-digest': sf(big) }, payload: corrupt })
  t.same(seen, ['clean end', 'error FST_DIGEST_MISMATCH'])
  t.equal(res.statusCode, 400)
  t.equal(res.headers['content-type'], 'application/problem+json')
  t.equal(res.headers['want-content-digest'], WANT)
  t.same(res.json(), {
    type: `${PROBLEM}digest-mismatched-values`,
    title: 'Mismatched Digest Values',
    status: 400,
    detail: 'The Content-Digest field does not match the content',
    code: 'FST_DIGEST_MISMATCH',
    mismatched_digests: [{ algorithm: 'sha-256', provided_digest: `:${b64(big)}:`, header: 'Content-Digest' }]
  })
})

test('stream-passing parser: the handler sees the result after reading', async (t) => {
  const app = await buildVerifyApp(t)
  const res = await app.inject({ method: 'POST', url: '/stream', headers: { 'content-type': 'application/x-stream', 'repr-digest': sf('abc') }, payload: 'abc' })
  t.equal(res.statusCode, 200)
  t.same(res.json(), { bytes: 3, verification: { verified: true, fields: [{ field: 'Repr-Digest', ok: true, results: [{ algorithm: 'sha-256', outcome: 'matched' }] }] } })
  const bad = await app.inject({ method: 'POST', url: '/stream', headers: { 'content-type': 'application/x-stream', 'repr-digest': sf('abd') }, payload: 'abc' })
  t.equal(bad.statusCode, 400)
  t.equal(bad.json().code, 'FST_DIGEST_MISMATCH')
})

test('a custom error handler keeps its own body and gets the problem on the error', async (t) => {
  const app = await buildVerifyApp(t)
  app.setErrorHandler(async (err: Error & { problem?: { type: string }, statusCode?: number }, _request, reply) => {
    reply.code(err.statusCode ?? 500)
    return { custom: true, type: err.problem?.type }
  })
  app.addContentTypeParser('application/x-custom', (_req, payload, done) => done(null, payload))
  app.post('/custom', async (request) => {
    await drain(request.body)
    return 'read'
  })
  const res = await app.inject({ method: 'POST', url: '/custom', headers: { 'content-type': 'application/x-custom', 'content-digest': sf('abd') }, payload: 'abc' })
  t.equal(res.statusCode, 400)
  t.match(res.headers['content-type'], /^application\/json/)
  t.same(res.json(), { custom: true, type: `${PROBLEM}digest-mismatched-values` })

  const text = await buildVerifyApp(t)
  // A Buffer body: an error handler's answer, whatever its payload type.
  text.setErrorHandler(async (_err, _request, reply) => reply.code(400).type('text/plain').send(Buffer.from('no good')))
  text.addContentTypeParser('application/x-custom', (_req, payload, done) => done(null, payload))
  text.post('/custom', async (request) => {
    await drain(request.body)
    return 'read'
  })
  const plain = await text.inject({ method: 'POST', url: '/custom', headers: { 'content-type': 'application/x-custom', 'content-digest': sf('abd') }, payload: 'abc' })
  t.equal(plain.statusCode, 400)
  t.equal(plain.body, 'no good')
})

test('a route reading request.raw completes without hanging, and its body is verified', async (t) => {
  const app = await buildVerifyApp(t)
  const big = Buffer.alloc(1024 * 1024, 'z')
  const res = await app.inject({ method: 'POST', url: '/raw', headers: { 'content-type': 'application/x-raw', 'content-digest': sf(big) }, payload: big })
  t.equal(res.statusCode, 200)
  t.same(res.json(), { bytes: big.length, verification: { verified: true, fields: [{ field: 'Content-Digest', ok: true, results: [{ algorithm: 'sha-256', outcome: 'matched' }] }] } })
  const bad = await app.inject({ method: 'POST', url: '/raw', headers: { 'content-type': 'application/x-raw', 'content-digest': sf('other') }, payload: big })
  t.equal(bad.statusCode, 400)
  t.equal(bad.json().code, 'FST_DIGEST_MISMATCH')
})

test('a route-level preParsing hook that wraps the body: checked over the bytes as received, after it', async (t) => {
  // Not a decoder (no receivedEncodedLength): a byte counter of the application's.
  let counted = 0
  const app = await buildVerifyApp(t, {}, {}, undefined, async (app) => {
    app.post('/counted', {
      preParsing: async (_request, _reply, payload) => {
        const counter = new PassThrough()
        counter.on('data', (chunk: Buffer) => { counted += chunk.length })
        payload.pipe(counter)
        return counter
      }
    }, async (request) => ({ body: request.body, verification: request.digestVerification }))
  })
  const ok = await app.inject({ method: 'POST', url: '/counted', headers: { 'content-type': 'text/plain', 'content-digest': sf(HELLO) }, payload: HELLO })
  t.equal(ok.statusCode, 200)
  t.equal(ok.json().body, HELLO)
  t.equal(ok.json().verification.verified, true)
  t.equal(counted, Buffer.byteLength(HELLO))
  const bad = await app.inject({ method: 'POST', url: '/counted', headers: { 'content-type': 'text/plain', 'content-digest': sf('other') }, payload: HELLO })
  t.equal(bad.statusCode, 400)
  t.equal(bad.json().code, 'FST_DIGEST_MISMATCH')
})

test('GET and HEAD: bodies are never read, Repr-Digest is not a content claim', async (t) => {
  // conditional: false, so that the 406 rule of the response side stays out of this.
  const app = await buildVerifyApp(t, { verify: 'required', conditional: false })
  const get = await app.inject({ url: '/json', headers: { 'repr-digest': sf('anything'), 'content-digest': sf('x') } })
  t.equal(get.statusCode, 200)
  t.same(get.json().verification, { verified: false, reason: 'no-body', fields: [] })
  const withBody = await app.inject({ url: '/json', headers: { 'content-type': 'text/plain' }, payload: 'abc' })
  t.equal(withBody.statusCode, 200)
  t.same(withBody.json().verification, { verified: false, reason: 'unread', fields: [] })
  const head = await app.inject({ method: 'HEAD', url: '/json', headers: { 'repr-digest': sf('anything') } })
  t.equal(head.statusCode, 200)
  // A route that also answers a body method carries the verifier's hooks: a GET there is let through the same way.
  const mixed = await buildVerifyApp(t, { verify: 'required', conditional: false }, {}, undefined, async (app) => {
    app.route({ method: ['GET', 'POST'], url: '/both', handler: async (request) => ({ verification: request.digestVerification }) })
  })
  const both = await mixed.inject({ url: '/both', headers: { 'content-type': 'text/plain', 'content-digest': sf('x') }, payload: 'abc' })
  t.equal(both.statusCode, 200)
  t.same(both.json().verification, { verified: false, reason: 'unread', fields: [] })
  const posted = await mixed.inject({ method: 'POST', url: '/both', headers: { 'content-type': 'text/plain', 'content-digest': sf('x') }, payload: 'abc' })
  t.equal(posted.statusCode, 400)
})

test('routes the plugin does not cover and 404s are left alone', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  app.post('/early', async (request) => ({ verification: request.digestVerification ?? 'none' }))
  await app.register(digestFields, { verify: 'required' })
  const res = await app.inject({ method: 'POST', url: '/early', headers: { 'content-type': 'text/plain', 'content-digest': sf('x') }, payload: 'abc' })
  t.equal(res.statusCode, 200)
  t.same(res.json(), { verification: 'none' })
  const missing = await app.inject({ method: 'POST', url: '/nowhere', headers: { 'content-type': 'text/plain', 'content-digest': sf('x') }, payload: 'abc' })
  t.equal(missing.statusCode, 404)
})

test('a digest failure is not confused with other errors of the route', async (t) => {
  const app = await buildVerifyApp(t)
  app.addContentTypeParser('application/x-fails', (_req, payload, done) => done(null, payload))
  app.post('/fails', async (request) => {
    await drain(request.body)
    throw Object.assign(new Error('route failure'), { statusCode: 422 })
  })
  const res = await app.inject({ method: 'POST', url: '/fails', headers: { 'content-type': 'application/x-fails', 'content-digest': sf('abc') }, payload: 'abc' })
  t.equal(res.statusCode, 422)
  t.match(res.headers['content-type'], /^application\/json/)
  t.equal(res.json().message, 'route failure')
})

test('bodyLimit still applies to verified bodies', async (t) => {
  const app = await buildVerifyApp(t, {}, { bodyLimit: 100 })
  const big = Buffer.alloc(1000, 'a')
  const res = await app.inject({ method: 'POST', url: '/json', headers: { 'content-type': 'application/octet-stream', 'content-digest': sf(big) }, payload: big })
  t.equal(res.statusCode, 413)
})

test('route-level preParsing hooks and other plugins\' streams around the verifier', async (t) => {
  const seen: string[] = []
  const app = await buildVerifyApp(t, {}, {}, undefined, async (app) => {
    // An instance-level stream registered after the plugin stands between
    // the verifier's two streams; it is not a decoder (no receivedEncodedLength).
    app.addHook('preParsing', async (request, _reply, payload) => {
      if (request.headers['x-wrap'] === undefined) return payload
      const wrapped = new PassThrough()
      payload.pipe(wrapped)
      return wrapped
    })
  })
  app.post('/one', { preParsing: async (_request, _reply, payload) => { seen.push('one'); return payload } }, async (request) => request.digestVerification)
  app.post('/many', { preParsing: [async (_request, _reply, payload) => { seen.push('many'); return payload }] }, async (request) => request.digestVerification)
  for (const url of ['/one', '/many']) {
    const res = await app.inject({ method: 'POST', url, headers: { 'content-type': 'text/plain', 'content-digest': sf('abc') }, payload: 'abc' })
    t.equal(res.statusCode, 200, url)
    t.equal(res.json().verified, true, url)
  }
  t.same(seen, ['one', 'many'])

  const gz = gzipSync('abc')
  const wrapped = await app.inject({
    method: 'POST',
    url: '/json',
    headers: { 'x-wrap': '1', 'content-type': 'application/octet-stream', 'content-encoding': 'gzip', 'repr-digest': sf('abc'), 'content-digest': sf(gz) },
    payload: gz
  })
  t.equal(wrapped.statusCode, 200)
  t.equal(wrapped.json().verification.verified, true)
  const bad = await app.inject({
    method: 'POST',
    url: '/stream',
    headers: { 'x-wrap': '1', 'content-type': 'application/x-stream', 'content-digest': sf('abd') },
    payload: 'abc'
  })
  t.equal(bad.statusCode, 400)
  t.equal(bad.json().code, 'FST_DIGEST_MISMATCH')
})
