// The pack test's ES module consumer: import of the installed (CommonJS)
// tarball, default and named exports (named ones through Node's static
// analysis of module.exports).

import assert from 'node:assert/strict'
import Fastify from 'fastify'
import compress from '@fastify/compress'
import digestFields, { computeDigest, fastifyDigestFields } from 'fastify-digest-fields'
import { exercise } from './exercise.cjs'

assert.equal(typeof digestFields, 'function', 'the default import is the plugin')
assert.equal(fastifyDigestFields, digestFields, 'the named fastifyDigestFields is the plugin')
assert.equal(typeof computeDigest, 'function', 'the named computeDigest')

console.log(JSON.stringify(await exercise({ Fastify, compress, digestFields })))
