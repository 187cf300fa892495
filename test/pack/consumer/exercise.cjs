'use strict'

// Shared by require.cjs and import.mjs in the pack test's throwaway project:
// the installed plugin next to @fastify/compress, one gzipped GET of a JSON
// route, and its digest fields checked against sha-256 computed here with
// node:crypto (never with the plugin's own helpers).

const assert = require('node:assert/strict')
const { createHash } = require('node:crypto')
const { gunzipSync } = require('node:zlib')

// Well over @fastify/compress's 1 KiB threshold, so the response is gzipped.
const data = { items: Array.from({ length: 100 }, (_, id) => ({ id, name: `item ${id}` })) }

function sha256Field (bytes) {
  return `sha-256=:${createHash('sha256').update(bytes).digest('base64')}:`
}

async function exercise ({ Fastify, compress, digestFields }) {
  const app = Fastify()
  try {
    await app.register(compress)
    await app.register(digestFields, { contentDigest: true, reprDigest: true })
    app.get('/items', async () => data)

    const res = await app.inject({ method: 'GET', url: '/items', headers: { 'accept-encoding': 'gzip' } })
    assert.equal(res.statusCode, 200)
    assert.equal(res.headers['content-encoding'], 'gzip')

    const sent = res.rawPayload
    const json = Buffer.from(JSON.stringify(data))
    assert.deepEqual(gunzipSync(sent), json, 'the gzipped bytes decode to the JSON')
    assert.equal(res.headers['content-digest'], sha256Field(sent), 'Content-Digest: sha-256 of the bytes sent')
    assert.equal(res.headers['repr-digest'], sha256Field(json), 'Repr-Digest: sha-256 of the JSON before gzip')
    return { gzipBytes: sent.length, jsonBytes: json.length }
  } finally {
    await app.close()
  }
}

module.exports = { exercise }
