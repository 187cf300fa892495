// What one response's stages hand each other (kResponseState on the request):
// the plan, what the representation stage found, and the digest fields given
// up on (a live stream or a stream over maxBufferSize without trailers, a file
// hashed in the background): told on the reply (`reply.digestsOmitted`) and
// logged at warn once per route and reason, with the fix.
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { DigestOmission, ResponseDigestField } from '../../../types/index'
import type { DigestParams } from '../../core/option-checks'
import type { CheckedStream, DigestResults, DigestTransform } from '../../core/digest-stream'
import type { FileDigestCache } from '../../core/file-cache'
import type { FileResponse } from './static-files'
import type { Precondition } from '../../core/precondition'
import { uncoded, type ResponsePlan } from '../../core/response-plan'

export type Payload = unknown
type OmissionReason = DigestOmission['reason']

/** Where the response stages keep their shared things (one per plugin instance). */
export interface ResponseContext {
  readonly files: FileDigestCache
  /** The omissions already logged, by reason and route. */
  readonly warned: Set<string>
}

const WANTED: ReadonlyArray<ResponseDigestField | 'Signature'> = ['Content-Digest', 'Repr-Digest', 'Unencoded-Digest', 'Signature']
const AS_TRAILERS = 'clients that send "TE: trailers" get them as trailers'
const RAISE = 'raise maxBufferSize (plugin or route option) above the'
const SIGNED = 'a signature covers Unencoded-Digest in the header section'

function fixOf (reason: OmissionReason, head: boolean, trailers: boolean, signed: boolean): string {
  const asTrailers = trailers ? AS_TRAILERS : `set the trailers option to true, and ${AS_TRAILERS}`
  if (reason === 'file-not-hashed') {
    return 'later responses carry them once the file is hashed; to wait for the hash instead, set fileHashing: \'wait\', or ship checksum files next to the files (fileSidecars)'
  }
  // A HEAD has no content to carry trailers (RFC 9110 §9.3.2), nor a signed response (it covers a header).
  if (reason === 'over-max-buffer-size') {
    if (head) return `declare the digest with reply.setReprDigest() when it is known, or ${RAISE} representation's size`
    return signed ? `${RAISE} response's size: ${SIGNED}` : `${RAISE} response's size, or ${asTrailers}`
  }
  if (head) {
    return 'declare the digest with reply.setReprDigest() when it is known, or set digest: { live: false } on the route to read the stream (up to maxBufferSize)'
  }
  return signed
    ? `set digest: { live: false } on the route to buffer the stream (up to maxBufferSize): ${SIGNED}`
    : `${asTrailers}; or set digest: { live: false } on the route to buffer the stream (up to maxBufferSize) instead`
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

export class ResponseState {
  /** The plan's precondition until it is decided; null once decided early (files). */
  precondition: Precondition | null
  /** The string/Buffer payload seen by the representation stage. */
  reprPayload: string | Buffer | null = null
  /** The hashing wrapper put around a streamed representation. */
  reprStream: DigestTransform | null = null
  /** Representation digests known at the representation stage (HEAD of a stream, a file's), and how many bytes they cover. */
  repr: DigestResults | null = null
  reprBytes = 0
  /** The identity digests are of the uncoded representation (no coding of the route's own, or a pre-compressed file's original). */
  identityUncoded: boolean
  /** Digests of the whole file as sent, coding included (strict HEAD and 206; what a GET's stream must match). */
  fileCoded: DigestResults | null = null
  /** A GET's file stream as passed on: checked at its end against the digests sent with it. */
  fileStream: CheckedStream | null = null
  omitted: OmissionReason | null

  constructor (
    readonly plan: ResponsePlan,
    readonly params: DigestParams,
    readonly context: ResponseContext,
    /** Content-Encoding as the representation stage saw it (compress sets its own later). */
    readonly reprEncoding: unknown,
    /** The file a @fastify/static response stands for (then `repr` holds its identity digests). */
    readonly file: FileResponse | null
  ) {
    this.precondition = plan.precondition
    this.identityUncoded = uncoded(reprEncoding)
    this.omitted = plan.omitted
  }

  /** Tell the application, and the log once per route and reason, which wanted fields the reply carries neither as header nor trailer. */
  reportOmitted (request: FastifyRequest, reply: FastifyReply): void {
    const reason = this.omitted
    if (reason === null) return
    const { content, repr, unencoded, signatures } = this.plan
    const lists = [content, repr, unencoded, signatures]
    const fields = WANTED.filter((field, i) => (lists[i] as readonly unknown[]).length > 0 && !reply.hasHeader(field) && !reply.hasTrailer(field))
    if (fields.length === 0) return
    ;(reply as { digestsOmitted: DigestOmission | null }).digestsOmitted = { reason, fields }
    const route = request.is404 ? '(404)' : `${request.method} ${request.routeOptions.url as string}`
    const key = `${reason} ${route}`
    if (this.context.warned.has(key)) return
    this.context.warned.add(key)
    const head = request.method === 'HEAD'
    const fix = fixOf(reason, head, this.params.trailers, fields.includes('Signature'))
    request.log.warn(
      { route, reason, fields },
      `fastify-digest-fields: ${fields.join(', ')} not sent on ${route}: ${whyOf(reason, head)}. Fix: ${fix} (logged once per route)`
    )
  }
}
