// Uploads with undici: the interceptor adds the Content-Digest of a FormData
// or Blob body (serialized and hashed as a stream, never held in memory);
// with fetch, digestBody() does it first. FormData is undici's: undici's
// request is typed for no other, undici 8's request refuses any other, and on
// Node.js 20 undici 7 cannot itself send Node's global FormData (the
// interceptor serializes either).
// Run against examples/upload.mjs: node examples/undici-upload.mjs http://localhost:3000 photo.jpg
// Installed as a package: node node_modules/fastify-digest-fields/examples/undici-upload.mjs, with the same arguments.
// Needs: npm i fastify-digest-fields undici
import { openAsBlob } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { Agent, FormData, fetch, request } from 'undici'
import { digestBody, digestInterceptor } from 'fastify-digest-fields/client'

const base = process.argv[2] ?? process.env.BASE_URL ?? 'http://localhost:3000'
const file = process.argv[3] ?? fileURLToPath(import.meta.url)

const dispatcher = new Agent().compose(digestInterceptor())

// undici.request, stream or dispatch: a FormData gets its Content-Digest.
const form = new FormData()
form.append('file', await openAsBlob(file, { type: 'image/jpeg' }), 'photo.jpg')
const res = await request(`${base}/upload`, { dispatcher, method: 'POST', body: form })
console.log(res.statusCode, JSON.stringify(await res.body.json()))

// fetch hands the dispatcher every body as a stream: digest it first.
const { body, headers } = await digestBody(form)   // headers: content-digest, content-type
const sent = await fetch(`${base}/upload`, { dispatcher, method: 'POST', headers, body })
console.log(sent.status, JSON.stringify(await sent.json()))
