// Request verification: a JSON route and a @fastify/multipart upload whose
// Content-Digest covers the whole multipart body as sent.
// Run (a clone of the repository): npm run build && node examples/upload.mjs
// Installed as a package: node node_modules/fastify-digest-fields/examples/upload.mjs, with the same arguments.
// Needs: npm i fastify-digest-fields @fastify/multipart fastify
//
// With curl: it builds a multipart body itself, so write the body to a file
// first, then send that file with its digest:
//
//   printf -- '--XyZ\r\nContent-Disposition: form-data; name="file"; filename="photo.jpg"\r\nContent-Type: application/octet-stream\r\n\r\n' > body
//   cat photo.jpg >> body
//   printf -- '\r\n--XyZ--\r\n' >> body
//   curl -H 'Content-Type: multipart/form-data; boundary=XyZ' \
//     -H "Content-Digest: sha-256=:$(openssl dgst -sha256 -binary body | base64):" \
//     --data-binary @body http://localhost:3000/upload
import Fastify from 'fastify'
import multipart from '@fastify/multipart'
import digestFields from 'fastify-digest-fields'
import { randomUUID } from 'node:crypto'
import { createWriteStream } from 'node:fs'
import { rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pipeline } from 'node:stream/promises'

const app = Fastify()
await app.register(digestFields)       // verify: 'if-present' by default
await app.register(multipart)

app.post('/upload', { digest: { verify: 'required' } }, async (request, reply) => {
  const file = await request.file()
  if (file === undefined) return reply.code(400).send({ error: 'no file' })
  const saved = join(tmpdir(), `upload-${randomUUID()}.bin`)
  try {
    await pipeline(file.file, createWriteStream(saved)) // rejects on a mismatch
  } catch (err) {
    await rm(saved, { force: true })                     // leaves no partial file
    throw err
  }
  return { saved, verified: request.digestVerification?.verified }
})

app.post('/items', async (request, reply) => {
  // Runs only when the body's digest matched (or it had none).
  const verification = request.digestVerification
  // { verified: true, fields: [{ field: 'Content-Digest', ok: true,
  //   results: [{ algorithm: 'sha-256', outcome: 'matched' }] }] }
  // or { verified: false, reason: 'no-digest' | 'no-body' | 'unread' | 'disabled', fields: [] }
  return reply.code(201).send({ stored: request.body, verification })
})

await app.listen({ port: 3000 })
