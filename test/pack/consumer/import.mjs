// The pack test's ES module consumer: import of the installed (CommonJS)
// tarball, default and named exports (named ones through Node's static
// analysis of module.exports).

import assert from 'node:assert/strict'
import Fastify from 'fastify'
import compress from '@fastify/compress'
import digestFields, { computeDigest, fastifyDigestFields } from 'fastify-digest-fields'
import * as undici from 'undici'
import { digestBody, digestHeaders, digestInterceptor, clientErrors } from 'fastify-digest-fields/client'
import { exercise } from './exercise.cjs'
import { exerciseClient } from './client.cjs'

assert.equal(typeof digestFields, 'function', 'the default import is the plugin')
assert.equal(fastifyDigestFields, digestFields, 'the named fastifyDigestFields is the plugin')
assert.equal(typeof computeDigest, 'function', 'the named computeDigest')

assert.equal(typeof digestInterceptor, 'function', 'the named digestInterceptor of fastify-digest-fields/client')
assert.equal(typeof clientErrors.FST_DIGEST_RESPONSE_MISMATCH, 'function', 'the named clientErrors')
await exerciseClient({ Fastify, digestFields, undici, client: { digestInterceptor, digestHeaders, digestBody } })
console.log(JSON.stringify(await exercise({ Fastify, compress, digestFields })))
