// What a response's stages hand each other (kResponseState on the request): the plan, the representation as the
// representation stage saw it, the file a @fastify/static response stands for, and the fields given up on
// (`reply.digestsOmitted`, a warning once per route and reason). It imports no other response module: every stage
// imports it.
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { DigestOmission, ResponseDigestField } from '../../../types/index'
import type { CheckedStream, DigestResults, DigestTransform } from '../../core/digest-stream'
import type { FileDigestCache, FileResponse } from '../../core/file-cache'
import type { DigestParams } from '../../core/option-checks'
import { uncoded, type Precondition, type ResponsePlan } from '../../core/response-plan'

export type Payload = unknown
export type Done = (err: Error | null, payload?: Payload) => void
type OmissionReason = DigestOmission['reason']

/**
 * What the response stages share (one per plugin instance): the file cache, the omissions logged (by reason and route).
 */
export interface ResponseContext { readonly files: FileDigestCache, readonly warned: Set<string> }

/** A route's responses: its params, and the plugin instance's context. */
export interface RouteResponse { readonly params: DigestParams, readonly context: ResponseContext }

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

export class ResponseState {
  /** The plan's precondition until it is decided; null once decided early (files). */
  precondition: Precondition | null
  /** The representation stage's payload: the bytes, or the hasher put around the stream. */
  reprPayload: string | Buffer | null = null
  reprStream: DigestTransform | null = null
  /**
   * Representation digests known at the representation stage (HEAD of a stream, a file's), and how many bytes they
   * cover.
   */
  repr: DigestResults | null = null
  reprBytes = 0
  /**
   * The identity digests are of the uncoded representation (no coding of the route's own, or a pre-compressed file's
   * original).
   */
  identityUncoded: boolean
  /** Digests of the whole file as sent, coding included (strict HEAD and 206; what a GET's stream must match). */
  fileCoded: DigestResults | null = null
  /** A GET's file stream as passed on: checked at its end against the digests sent with it. */
  fileStream: CheckedStream | null = null
  /** The content is being read into memory before anything is sent (fields in the header section). */
  collecting = false
  /** The file's check failed while its content was read into memory: answered with a 500 instead. */
  fileFailure: Error | null = null
  omitted: OmissionReason | null
  /** Content-Encoding as the representation stage saw it (compress sets its own later). */
  readonly reprEncoding: unknown
  readonly params: DigestParams
  readonly context: ResponseContext

  // `file`: the file a @fastify/static response stands for (then `repr` holds its identity digests).
  constructor (
    readonly plan: ResponsePlan, route: RouteResponse, reply: FastifyReply, readonly file: FileResponse | null
  ) {
    this.params = route.params
    this.context = route.context
    this.precondition = plan.precondition
    this.reprEncoding = reply.getHeader('content-encoding')
    this.identityUncoded = uncoded(this.reprEncoding)
    this.omitted = plan.omitted
  }

  /**
   * Tell the application, and the log once per route and reason, which wanted fields the reply carries neither as
   * header nor trailer.
   */
  reportOmitted (request: FastifyRequest, reply: FastifyReply): void {
    const reason = this.omitted
    if (reason === null) return
    const lists = [this.plan.content, this.plan.repr, this.plan.unencoded, this.plan.signatures]
    const fields = WANTED.filter((field, i) =>
      (lists[i] as readonly unknown[]).length > 0 && !reply.hasHeader(field) && !reply.hasTrailer(field))
    if (fields.length === 0) return
    ;(reply as { digestsOmitted: DigestOmission | null }).digestsOmitted = { reason, fields }
    const route = request.is404 ? '(404)' : `${request.method} ${request.routeOptions.url as string}`
    const key = `${reason} ${route}`
    if (this.context.warned.has(key)) return
    this.context.warned.add(key)
    const text = OMISSIONS[reason]
    const head = request.method === 'HEAD'
    const asTrailers = this.params.trailers ? AS_TRAILERS : `set the trailers option to true, and ${AS_TRAILERS}`
    const fix = (head ? text.fixHead : fields.includes('Signature') ? text.fixSigned : undefined) ??
      text.fix.replace('$T', asTrailers)
    const why = (head ? text.whyHead : undefined) ?? text.why
    request.log.warn(
      { route, reason, fields },
      `fastify-digest-fields: ${fields.join(', ')} not sent on ${route}: ${why}. Fix: ${fix} (logged once per route)`
    )
  }
}
