'use strict'

// Shared by require.cjs and import.mjs: fastify-digest-fields/client's
// interceptor on an undici Agent, against the installed plugin (a verified
// download) and against a node:http server sending a wrong Content-Digest
// (the body fails with FST_DIGEST_RESPONSE_MISMATCH instead of ending).

const assert = require('node:assert/strict')
const { createHash } = require('node:crypto')
const { createServer } = require('node:http')
const { once } = require('node:events')

async function exerciseClient ({ Fastify, digestFields, undici, client }) {
  const dispatcher = new undici.Agent().compose(client.digestInterceptor({ verify: 'required', want: 'sha-256' }))
  const app = Fastify()
  const wrong = createServer((req, res) => {
    res.writeHead(200, { 'content-digest': `sha-256=:${createHash('sha256').update('other').digest('base64')}:` })
    res.end('hello')
  })
  try {
    await app.register(digestFields)
    app.get('/items', async () => ({ items: [1, 2, 3] }))
    app.post('/form', async (request) => request.digestVerification)
    app.addContentTypeParser('multipart/form-data', (_request, payload, done) => { payload.resume(); payload.on('end', () => done(null, null)) })
    const base = await app.listen({ port: 0, host: '127.0.0.1' })
    const good = await undici.request(`${base}/items`, { dispatcher })
    assert.deepEqual(await good.body.json(), { items: [1, 2, 3] })
    assert.match(good.headers['content-digest'], /^sha-256=:/)

    wrong.listen(0, '127.0.0.1')
    await once(wrong, 'listening')
    const bad = await undici.request(`http://127.0.0.1:${wrong.address().port}/`, { dispatcher })
    await assert.rejects(bad.body.text(), { code: 'FST_DIGEST_RESPONSE_MISMATCH', field: 'Content-Digest', algorithm: 'sha-256' })

    const headers = client.digestHeaders('hello')
    assert.equal(headers['content-digest'], `sha-256=:${createHash('sha256').update('hello').digest('base64')}:`)
    const blob = await client.digestBody(new Blob(['hello']))
    assert.equal(blob.headers['content-digest'], headers['content-digest'])

    // A FormData upload through the interceptor: serialized, hashed, verified by the plugin.
    const form = new FormData()
    form.append('file', new Blob(['hello']), 'hello.txt')
    const upload = await undici.request(`${base}/form`, { dispatcher, method: 'POST', body: form, headers: { 'want-content-digest': 'sha-256=10' } })
    assert.equal((await upload.body.json()).verified, true)
    return { clientVerified: true }
  } finally {
    wrong.close()
    await app.close()
    await dispatcher.close()
  }
}

module.exports = { exerciseClient }
