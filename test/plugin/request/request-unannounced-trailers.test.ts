// A digest in a request trailer section that the Trailer field did not
// announce (RFC 9110 §6.6.2): nothing hashed the content for it, so it is
// refused with FST_DIGEST_TRAILER_UNANNOUNCED, which says how to fix it;
// never passed unchecked, never a 2xx for a wrong one. Over real HTTP/1.1
// (chunked) and HTTP/2 (with and without content-length) servers, for a
// parsed body and a raw reader, on 'if-present' and 'required' routes.
import { test } from 'tap'
import type { FastifyDigestFieldsOptions } from '../../../types/index'
import { sf, HELLO } from './request-helpers'
import { assertProblem, json, pieces, serve, type Reply, type TapTest, type Upload } from './upload-helpers'

const BODY = Buffer.from(HELLO.repeat(40))
const VERIFIED = { verified: true, fields: [{ field: 'Content-Digest', ok: true, results: [{ algorithm: 'sha-256', outcome: 'matched' }] }] }

type Transport = 'h1-chunked' | 'h2' | 'h2-length'

async function client (t: TapTest, transport: Transport, opts: FastifyDigestFieldsOptions): Promise<(upload: Upload) => Promise<Reply>> {
  const served = await serve(t, transport === 'h1-chunked' ? 'h1' : 'h2', opts)
  const framing: Record<string, string> = transport === 'h1-chunked'
    ? { 'transfer-encoding': 'chunked' }
    : transport === 'h2-length' ? { 'content-length': String(BODY.length) } : {}
  return (upload) => served.send({ ...upload, headers: { ...framing, ...upload.headers } })
}

for (const transport of ['h1-chunked', 'h2', 'h2-length'] as const) {
  for (const verify of ['if-present', 'required'] as const) {
    test(`${transport}, verify '${verify}': a digest trailer not announced in Trailer is refused, saying so`, async (t) => {
      const send = await client(t, transport, { verify })
      for (const path of ['/json', '/stream']) {
        const type = path === '/json' ? 'application/octet-stream' : 'application/x-stream'
        for (const [what, value] of [['a wrong one', sf('not the body')], ['a right one', sf(BODY)]] as const) {
          const res = await send({ path, headers: { 'content-type': type }, body: pieces(BODY, 3), trailers: { 'content-digest': value } })
          assertProblem(t, res, 'FST_DIGEST_TRAILER_UNANNOUNCED', 400, `${path}, ${what}`)
          t.match(json(res).detail, /The Content-Digest trailer field arrived without being announced in the Trailer field.*announce it \(Trailer: Content-Digest\)/, `${path}, ${what}: says how to fix it`)
        }
        // Announced: hashed as it arrives, and checked.
        const announced = await send({ path, headers: { 'content-type': type, trailer: 'content-digest' }, body: pieces(BODY, 3), trailers: { 'content-digest': sf(BODY) } })
        t.equal(announced.status, 200, `${path}: announced`)
        t.same(json(announced).verification, VERIFIED, `${path}: announced, verified`)
        // A trailer in an algorithm the header section named was hashed: checked, announced or not.
        const named = await send({ path, headers: { 'content-type': type, 'content-digest': sf(BODY) }, body: pieces(BODY, 3), trailers: { 'content-digest': sf('not the body') } })
        assertProblem(t, named, 'FST_DIGEST_MISMATCH', 400, `${path}: a header and a wrong unannounced trailer in one algorithm`)
      }
      // No digest anywhere: as before.
      const none = await send({ path: '/json', headers: { 'content-type': 'application/octet-stream' }, body: pieces(BODY, 3) })
      if (verify === 'if-present') {
        t.equal(none.status, 200)
        t.same(json(none).verification, { verified: false, reason: 'no-digest', fields: [] })
      } else {
        assertProblem(t, none, 'FST_DIGEST_MISSING', 400, 'required, none sent')
      }
      // A trailer in an algorithm not enabled is ignored, as in a header (RFC 9530 §2).
      const other = await send({ path: '/json', headers: { 'content-type': 'application/octet-stream' }, body: pieces(BODY, 3), trailers: { 'content-digest': 'md5=:AAAAAAAAAAAAAAAAAAAAAA==:' } })
      if (verify === 'if-present') t.equal(other.status, 200, 'an algorithm not enabled: ignored')
      else assertProblem(t, other, 'FST_DIGEST_UNSUPPORTED_ALGORITHM', 400, 'required: no usable digest')
    })
  }
}
