// The fields a response gives up on (docs/design.md, "Streams and trailers"): `reply.digestsOmitted`, and a warning
// once per route and reason, with its why and its fix.
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { DigestOmission, ResponseDigestField } from '../../../types/index'
import type { FieldPlan } from '../../core/response-plan'
import type { FileDigestCache } from '../../core/file-cache'
import type { DigestParams } from '../../core/option-checks'

type OmissionReason = DigestOmission['reason']

/** A route's responses: its params; what those of the plugin instance share: the file cache, the omissions logged. */
export interface RouteResponse {
  readonly params: DigestParams
  readonly context: { readonly files: FileDigestCache, readonly warned: Set<string> }
}

const WANTED: ReadonlyArray<ResponseDigestField | 'Signature'> = [
  'Content-Digest', 'Repr-Digest', 'Unencoded-Digest', 'Signature'
]
const AS_TRAILERS = 'clients that send "TE: trailers" get them as trailers'
const RAISE = 'raise maxBufferSize (plugin or route option) above the'
const SIGNED = 'a signature covers Unencoded-Digest in the header section'
const DECLARE = 'declare the digest with reply.setReprDigest() when it is known, or'
const BUFFER = 'set digest: { live: false } on the route to buffer the stream (up to maxBufferSize)'

// The warning's why and fix, by reason: of a GET (`$T`: how to get trailers), a signed GET (the signature covers a
// header), a HEAD (no content to carry trailers, RFC 9110 §9.3.2); the GET's when the same.
type Omission = Record<'why' | 'fix', string> & Partial<Record<'whyHead' | 'fixSigned' | 'fixHead', string>>
const OMISSIONS: Record<OmissionReason, Omission> = {
  'over-max-buffer-size': {
    why: 'the streamed response is larger than maxBufferSize and goes without trailers',
    whyHead: 'a HEAD hashes at most maxBufferSize bytes of the streamed representation, and it is larger',
    fix: `${RAISE} response's size, or $T`,
    fixSigned: `${RAISE} response's size: ${SIGNED}`,
    fixHead: `${DECLARE} ${RAISE} representation's size`
  },
  'live-stream': {
    why: 'a live stream is never held back for a digest, and it goes without trailers',
    whyHead: 'the HEAD of a live stream is answered at once, without reading the stream',
    fix: `$T; or ${BUFFER} instead`,
    fixSigned: `${BUFFER}: ${SIGNED}`,
    fixHead: `${DECLARE} set digest: { live: false } on the route to read the stream (up to maxBufferSize)`
  },
  'file-not-hashed': {
    why: 'the file\'s whole-file digests are not known yet (fileHashing: \'background\' answers without waiting for ' +
      'them)',
    fix: 'later responses carry them once the file is hashed; to wait for the hash instead, set fileHashing: ' +
      '\'wait\', or ship checksum files next to the files (fileSidecars)'
  }
}

/**
 * Tell the application, and the log once per route and reason, which planned fields the reply carries neither as
 * header nor trailer.
 */
export function reportOmitted (
  request: FastifyRequest, reply: FastifyReply, reason: OmissionReason, fields: FieldPlan, log: RouteResponse
): void {
  const lists = [fields.content, fields.repr, fields.unencoded, fields.signatures]
  const names = WANTED.filter((field, i) =>
    (lists[i] as readonly unknown[]).length > 0 && !reply.hasHeader(field) && !reply.hasTrailer(field))
  if (names.length === 0) return
  ;(reply as { digestsOmitted: DigestOmission | null }).digestsOmitted = { reason, fields: names }
  const route = request.is404 ? '(404)' : `${request.method} ${request.routeOptions.url as string}`
  const key = `${reason} ${route}`
  if (log.context.warned.has(key)) return
  log.context.warned.add(key)
  const text = OMISSIONS[reason]
  const head = request.method === 'HEAD'
  const asTrailers = log.params.trailers ? AS_TRAILERS : `set the trailers option to true, and ${AS_TRAILERS}`
  const fix = (head ? text.fixHead : names.includes('Signature') ? text.fixSigned : undefined) ??
    text.fix.replace('$T', asTrailers)
  const why = (head ? text.whyHead : undefined) ?? text.why
  request.log.warn(
    { route, reason, fields: names },
    `fastify-digest-fields: ${names.join(', ')} not sent on ${route}: ${why}. Fix: ${fix} (logged once per route)`
  )
}
