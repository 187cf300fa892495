// The pack test's TypeScript consumer (CommonJS): the import forms a
// CommonJS TypeScript project uses, type-checked with usage.mts; never run.

import Fastify = require('fastify')
import digestFields = require('fastify-digest-fields')
import plugin, { fastifyDigestFields, computeDigest, errors, type FastifyDigestFieldsOptions } from 'fastify-digest-fields'

const options: FastifyDigestFieldsOptions = { reprDigest: true }

export async function build () {
  const app = Fastify()
  await app.register(digestFields, options)
  await app.register(plugin, { contentDigest: 'sha-512' })
  await app.register(fastifyDigestFields, { verify: false })
  app.get('/', async (request) => request.digestVerification?.verified ?? false)
  const digest: Buffer = digestFields.computeDigest('sha-256', '')
  const code: string = new errors.FST_DIGEST_MISMATCH().code
  // @ts-expect-error: unknown algorithm
  computeDigest('sha-1', '')
  return { app, digest, code }
}

import client = require('fastify-digest-fields/client')
import { digestInterceptor } from 'fastify-digest-fields/client'

export const interceptor = digestInterceptor({ strict: true })
export const headers = client.digestHeaders('body')
// @ts-expect-error: unknown algorithm
client.digestHeaders('body', 'sha-1')
export const uploaded: Promise<{ 'content-digest': string, 'content-type'?: string }> =
  client.digestBody(new FormData()).then((sent) => sent.headers)
