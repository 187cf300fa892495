'use strict'

// The bodies of the load run, the same in the server and the client.

/** A 16 KiB JSON document, compressible like real data. */
function documentText () {
  const items = []
  for (let i = 0; items.length === 0 || JSON.stringify({ items }).length < 16 * 1024; i++) {
    items.push({ id: i, name: `item ${i}`, tags: ['alpha', 'beta', String(i % 7)], price: (i * 37) % 1000 / 10 })
  }
  return JSON.stringify({ items })
}

/** An upload of `size` bytes (a JSON-ish text; the route takes it as octets). */
function uploadBody (size) {
  const unit = '{"event":"sample","value":12345,"note":"load test upload"}\n'
  return Buffer.from(unit.repeat(Math.ceil(size / unit.length)).slice(0, size))
}

module.exports = { documentText, uploadBody }
