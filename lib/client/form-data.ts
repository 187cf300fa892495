// A FormData body as the bytes sent. undici serializes it as it writes the request (7.30.2
// lib/dispatcher/client-h1.js:1167-1177), too late to hash: here instead (RFC 7578, as the HTML
// Standard encodes forms), into a Blob that references files rather than copying them.
import { randomBytes } from 'node:crypto'

/** A FormData (the global one or undici's), by the brand undici checks (lib/core/util.js isFormDataLike). */
export function isFormData (body: unknown): body is FormData {
  return body !== null && typeof body === 'object' &&
    (body as { [Symbol.toStringTag]?: unknown })[Symbol.toStringTag] === 'FormData' && typeof (body as FormData).entries === 'function'
}

const escapeName = (name: string): string => name.replace(/\n/g, '%0A').replace(/\r/g, '%0D').replace(/"/g, '%22')
const crlf = (text: string): string => text.replace(/\r\n|\r|\n/g, '\r\n')

/** A Blob whose `type` is the Content-Type to send; null for an entry neither string nor Blob (a look-alike's). */
export function formDataBlob (form: FormData): Blob | null {
  const boundary = `----fastify-digest-fields-${randomBytes(16).toString('hex')}`
  const parts: Array<string | Blob> = []
  for (const [name, value] of form.entries() as Iterable<[string, unknown]>) {
    const head = `--${boundary}\r\nContent-Disposition: form-data; name="${escapeName(crlf(name))}"`
    if (typeof value === 'string') {
      parts.push(`${head}\r\n\r\n${crlf(value)}\r\n`)
    } else if (value instanceof Blob) {
      // FormData.append makes a Blob a File named "blob" (XHR §4.4.2, "create an entry").
      const filename = typeof (value as File).name === 'string' ? (value as File).name : 'blob'
      parts.push(`${head}; filename="${escapeName(filename)}"\r\nContent-Type: ${value.type === '' ? 'application/octet-stream' : value.type}\r\n\r\n`, value, '\r\n')
    } else {
      return null
    }
  }
  parts.push(`--${boundary}--\r\n`)
  return new Blob(parts, { type: `multipart/form-data; boundary=${boundary}` })
}
