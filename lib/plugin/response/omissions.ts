// Digest fields a response was meant to carry but cannot (a live stream or
// a stream over maxBufferSize without trailers, a file hashed in the
// background): told on the reply (`reply.digestsOmitted`), and logged at
// warn once per route and reason, with the fix.
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { DigestOmission } from '../../../types/index'

export type OmissionReason = DigestOmission['reason']

function fixOf (reason: OmissionReason, head: boolean, trailers: boolean, signed: boolean): string {
  // A HEAD has no content to carry trailers (RFC 9110 §9.3.2): TE cannot help it.
  if (reason === 'over-max-buffer-size' && head) {
    return 'declare the digest with reply.setReprDigest() when it is known, or raise maxBufferSize (plugin or route option) above the representation\'s size'
  }
  // An SRI signature needs Unencoded-Digest in the header section: trailers cannot help it either.
  if (signed && reason === 'over-max-buffer-size') return 'raise maxBufferSize (plugin or route option) above the response\'s size: a signature covers Unencoded-Digest in the header section'
  if (signed && reason === 'live-stream' && !head) return 'set digest: { live: false } on the route to buffer the stream (up to maxBufferSize): a signature covers Unencoded-Digest in the header section'
  const asTrailers = trailers
    ? 'clients that send "TE: trailers" get them as trailers'
    : 'set the trailers option to true, and clients that send "TE: trailers" get them as trailers'
  if (reason === 'over-max-buffer-size') {
    return `raise maxBufferSize (plugin or route option) above the response's size, or ${asTrailers}`
  }
  if (reason === 'file-not-hashed') {
    return 'later responses carry them once the file is hashed; to wait for the hash instead, set fileHashing: \'wait\', or ship checksum files next to the files (fileSidecars)'
  }
  if (head) {
    return 'declare the digest with reply.setReprDigest() when it is known, or set digest: { live: false } on the route to read the stream (up to maxBufferSize)'
  }
  return `${asTrailers}; or set digest: { live: false } on the route to buffer the stream (up to maxBufferSize) instead`
}

function whyOf (reason: OmissionReason, head: boolean): string {
  if (reason === 'over-max-buffer-size') {
    return head
      ? 'a HEAD hashes at most maxBufferSize bytes of the streamed representation, and it is larger'
      : 'the streamed response is larger than maxBufferSize and goes without trailers'
  }
  if (reason === 'file-not-hashed') return 'the file\'s whole-file digests are not known yet (fileHashing: \'background\' answers without waiting for them)'
  return head
    ? 'the HEAD of a live stream is answered at once, without reading the stream'
    : 'a live stream is never held back for a digest, and it goes without trailers'
}

export class OmissionLog {
  readonly #warned = new Set<string>()

  /**
   * Record on the reply that `fields` were left out for `reason`, and warn
   * once per route and reason. `trailers` is the route's trailers option.
   */
  report (request: FastifyRequest, reply: FastifyReply, reason: OmissionReason, wanted: DigestOmission['fields'], trailers: boolean): void {
    // Those the reply carries neither as a header nor as a trailer.
    const fields = wanted.filter((field) => !reply.hasHeader(field) && !reply.hasTrailer(field))
    if (fields.length === 0) return
    ;(reply as { digestsOmitted: DigestOmission | null }).digestsOmitted = { reason, fields }
    const route = request.is404 ? '(404)' : `${request.method} ${request.routeOptions.url as string}`
    const key = `${reason} ${route}`
    if (this.#warned.has(key)) return
    this.#warned.add(key)
    const head = request.method === 'HEAD'
    request.log.warn(
      { route, reason, fields },
      `fastify-digest-fields: ${fields.join(', ')} not sent on ${route}: ${whyOf(reason, head)}. Fix: ${fixOf(reason, head, trailers, fields.includes('Signature'))} (logged once per route)`
    )
  }
}
