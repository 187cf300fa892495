'use strict'

// The pack test's CommonJS consumer: require() of the installed tarball.

const assert = require('node:assert/strict')
const Fastify = require('fastify')
const compress = require('@fastify/compress')
const digestFields = require('fastify-digest-fields')
const undici = require('undici')
const client = require('fastify-digest-fields/client')
const { exercise } = require('./exercise.cjs')
const { exerciseClient } = require('./client.cjs')

assert.equal(typeof digestFields, 'function', 'require() gives the plugin')
assert.equal(digestFields.default, digestFields, '.default')
assert.equal(digestFields.fastifyDigestFields, digestFields, '.fastifyDigestFields')
assert.equal(typeof digestFields.computeDigest, 'function', '.computeDigest')
assert.equal(require('fastify-digest-fields/package.json').name, 'fastify-digest-fields')

assert.equal(typeof client.digestInterceptor, 'function', 'fastify-digest-fields/client: .digestInterceptor')

exerciseClient({ Fastify, digestFields, undici, client }).then(() => exercise({ Fastify, compress, digestFields })).then((result) => {
  console.log(JSON.stringify(result))
}, (err) => {
  console.error(err)
  process.exitCode = 1
})
