// The pack test's TypeScript consumer (ES module): type-checked with
// `tsc --noEmit`, strict, against the installed tarball under node16 and
// bundler resolution (tsconfig.node16.json, tsconfig.bundler.json); never run.
// Each @ts-expect-error line must stay an error, so types that resolve to
// `any` fail the check too.

import Fastify from 'fastify'
import compress from '@fastify/compress'
import digestFields, {
  computeDigest,
  type DigestOmission,
  type DigestVerification,
  type FastifyDigestFieldsOptions,
  type RouteDigestOptions
} from 'fastify-digest-fields'

const options: FastifyDigestFieldsOptions = {
  algorithms: ['sha-256', 'sha-512'],
  contentDigest: true,
  reprDigest: 'sha-256',
  verify: 'if-present',
  liveTypes: ['text/event-stream']
}
const reportDigest: RouteDigestOptions = { reprDigest: ['sha-512'], maxBufferSize: 65536, live: false }

export async function build () {
  const app = Fastify()
  await app.register(compress)
  await app.register(digestFields, options)

  app.get('/report', { digest: reportDigest }, async (_request, reply) => {
    const stored: Buffer = computeDigest('sha-256', '{"ok":true}')
    reply.setReprDigest({ 'sha-256': stored, unixsum: 6405 }).header('cache-control', 'no-store')
    return { ok: true }
  })

  app.post('/upload', { digest: { verify: 'required' } }, async (request) => {
    const verification: DigestVerification | null = request.digestVerification
    if (verification === null) return { verified: false, fields: [] }
    return { verified: verification.verified, reason: verification.reason, fields: verification.fields.map((f) => f.field) }
  })

  app.route({ method: 'GET', url: '/health', digest: false, handler: async () => 'ok' })

  app.addHook('onResponse', async (request, reply) => {
    const omitted: DigestOmission | null = reply.digestsOmitted
    if (omitted !== null) request.log.warn({ reason: omitted.reason, fields: omitted.fields }, 'digests omitted')
  })

  // @ts-expect-error: 'sha-1' is no algorithm of the registry
  await app.register(digestFields, { algorithms: ['sha-1'] })
  // @ts-expect-error: verify takes 'if-present' | 'required' | false
  app.post('/strict', { digest: { verify: true } }, async () => 'x')
  // @ts-expect-error: live is a boolean
  app.get('/ticks', { digest: { live: 'yes' } }, async () => 'x')
  // @ts-expect-error: digestsOmitted is read-only
  app.get('/omitted', async (_request, reply) => { reply.digestsOmitted = null })
  // @ts-expect-error: declared digests are octets or numbers
  app.get('/declared', async (_request, reply) => reply.setReprDigest({ 'sha-256': 'not octets' }))

  return app
}

// fastify-digest-fields/client, with undici.
import { Agent } from 'undici'
import { digestBody, digestHeaders, digestInterceptor, type DigestClientError, type DigestedBody, type DigestInterceptorOptions } from 'fastify-digest-fields/client'

const clientOptions: DigestInterceptorOptions = { algorithms: ['sha-512'], verify: 'required', want: { repr: 'sha-512' } }
export const dispatcher = new Agent().compose(digestInterceptor(clientOptions))
export const uploadHeaders: { 'content-digest': string } = digestHeaders(new Uint8Array([1, 2, 3]), 'sha-256')
export const formUpload: Promise<DigestedBody> = digestBody(new FormData(), ['sha-512'])
export function describeFailure (err: DigestClientError): string {
  return `${err.code} ${err.field} ${err.algorithm ?? 'none'}`
}
// @ts-expect-error: verify takes 'if-present' | 'required'
digestInterceptor({ verify: false })
