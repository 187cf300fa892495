// One response's digests (docs/design.md, "Where the hooks run", "Streams and trailers"): made by the representation
// stage, before @fastify/compress, from the identity representation and the plan; finished by the content stage, after
// it, over the bytes sent: headers, a stream's trailers (RFC 9530 §2, §3), else buffered up to maxBufferSize, else
// omitted. It owns the response's state: the modules it calls return what they find.
import { Readable } from 'node:stream'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { DigestOmission } from '../../../types/index'
import {
  collectUpTo, digestAll, isNodeStream, type CheckedStream, type DigestResults, type DigestTransform
} from '../../core/digest-stream'
import { hashFile, type FileResponse } from '../../core/file-cache'
import { serializeSelected } from '../../core/fields'
import {
  isLiveStream, planDelivery, preconditionFails, sameList, uncoded, union, type Delivery, type FieldPlan,
  type Precondition
} from '../../core/response-plan'
import { getDeclared } from './declared'
import { answerStale, commaSeparatedTrailer, withDeclared, writeFields } from './emit'
import { DigestTrailers, type Compute, type Payload } from './field-hook'
import { reportOmitted, type RouteResponse } from './omissions'
import { hashThrough } from './payload'
import { FileSending, resolveFileResponse } from './static-files'

const PART_CHANGED = 'fastify-digest-fields: file changed while hashing the range, Content-Digest omitted'

/** An early stream error is fastify's to answer (it reads a stream's error state when it takes the stream). */
function heldError (): void {}

/** A HEAD's Content-Length stands for the `bytes` hashed, or for no body in particular (none). */
function sameLength (reply: FastifyReply, bytes: number): boolean {
  const length = reply.getHeader('content-length')
  return length === undefined || Number(length) === bytes
}

export class ResponseDigests {
  /** The precondition until it is decided (once: decidePrecondition()). */
  #precondition: Precondition | null
  /** The representation stage's bytes (but a HEAD's): a string or Buffer payload, '' for none. */
  #reprPayload: string | Buffer | null = null
  /** The hasher put around a streamed representation. */
  #reprStream: DigestTransform | null = null
  /** The identity representation's digests once known: a HEAD's, a file's, or of bytes (identity()). */
  #repr: DigestResults | null = null
  #omitted: DigestOmission['reason'] | null
  /** Content-Encoding as the representation stage saw it (compress sets its own later). */
  readonly #reprEncoding: unknown
  /** The @fastify/static file the response sends. */
  #file: FileSending | null = null

  private constructor (
    readonly fields: FieldPlan, readonly delivery: Delivery, readonly route: RouteResponse, reply: FastifyReply
  ) {
    this.#precondition = delivery.precondition
    this.#reprEncoding = reply.getHeader('content-encoding')
    this.#omitted = delivery.transport === 'none' ? 'live-stream' : null
  }

  /** The representation stage for a string, a Buffer or no payload (synchronous: no promise per response). */
  static ofBytes (reply: FastifyReply, payload: Payload, fields: FieldPlan, route: RouteResponse): ResponseDigests {
    const bytes = typeof payload === 'string' || Buffer.isBuffer(payload)
    const delivery = planDelivery(fields, { kind: 'bytes', status: reply.statusCode })
    const response = new ResponseDigests(fields, delivery, route, reply)
    // No payload: an empty representation, except for a HEAD, whose handler need not produce one. A HEAD's identity
    // digests are none when its Content-Length stands for another body than the one hashed.
    if (!fields.head) response.#reprPayload = bytes ? payload : ''
    else if (bytes && sameLength(reply, Buffer.byteLength(payload))) {
      response.#repr = digestAll(fields.identityNeeded, payload)
    }
    return response
  }

  /** The representation stage for a stream; resolves to the payload to pass on, and the response. */
  static async ofStream (
    request: FastifyRequest, reply: FastifyReply, payload: NodeJS.ReadableStream, fields: FieldPlan,
    route: RouteResponse
  ): Promise<[Payload, ResponseDigests]> {
    // Held across the awaits below: an early error must not be an uncaught exception.
    payload.on('error', heldError)
    const status = reply.statusCode
    const file = status === 200 || status === 206 ? await resolveFileResponse(request, reply, payload) : null
    // A file is never live: its digests are known before it is sent.
    const { live, liveTypes } = route.params
    const kind = file === null && isLiveStream(live, liveTypes, reply.getHeader('content-type')) ? 'live' : 'stream'
    const response = new ResponseDigests(fields, planDelivery(fields, { kind, status }), route, reply)
    const out = file === null
      ? await response.#streamRepresentation(reply, payload)
      : await response.#fileRepresentation(reply, file, payload)
    return [out, response]
  }

  async #streamRepresentation (reply: FastifyReply, payload: NodeJS.ReadableStream): Promise<Payload> {
    const { fields, delivery: { transport } } = this
    if (transport === 'declared' || (transport === 'none' && !fields.head)) return payload
    if (transport === 'none') {
      ;(payload as Readable).destroy()
      return Readable.from([])
    }
    if (fields.head) {
      // A HEAD has no content to carry trailers: the representation hashed now, up to maxBufferSize. Another length
      // than the Content-Length (read before compress removes it) stands for another body.
      const hasher = hashThrough(payload, fields.identityNeeded)
      const { rest, bytes } = await collectUpTo(hasher, this.route.params.maxBufferSize)
      if (rest !== null) {
        this.#omitted = 'over-max-buffer-size'
        ;(rest as Readable).destroy()
      } else if (sameLength(reply, bytes)) {
        this.#repr = hasher.digests
      }
      return Readable.from([])
    }
    // Nothing hashed over the identity representation (strict mode without Unencoded-Digest): the content stage's
    // hashing serves.
    if (fields.identityNeeded.length === 0) return payload
    // The content algorithms ride along: an unchanged stream is hashed once.
    const algorithms = union(union(fields.identityNeeded, fields.reprNeeded), fields.content)
    return (this.#reprStream = hashThrough(payload, algorithms))
  }

  /** A file's representation digests, taken before sending; a GET's stream checked against those sent with it. */
  async #fileRepresentation (
    reply: FastifyReply, file: FileResponse, payload: NodeJS.ReadableStream
  ): Promise<Payload> {
    const { params, context } = this.route
    const sending = this.#file = new FileSending(file, context.files, this.fields, params.maxBufferSize)
    const unknown = await sending.hash(this.#reprEncoding)
    this.#repr = sending.identity
    // Being hashed in the background: left out for now.
    if (params.fileHashing === 'background' && unknown) this.#omitted = 'file-not-hashed'
    return file.stream === null ? payload : sending.checked(reply, payload, this.delivery.contentHashed)
  }

  /** Whether the content stage sends the representation stage's bytes, uncoded since: the usual response (hooks.ts). */
  sendsRepresentation (reply: FastifyReply): boolean {
    const sameCoding = reply.getHeader('content-encoding') === this.#reprEncoding
    return !this.delivery.partial && this.#reprPayload !== null && sameCoding
  }

  /** The content stage: the bytes sent, after @fastify/compress; the payload to pass on. */
  content (request: FastifyRequest, reply: FastifyReply, payload: Payload): Payload | Promise<Payload> {
    const { fields } = this
    if (this.delivery.transport === 'declared') {
      // No content: Repr-Digest and Unencoded-Digest only when declared.
      const unencoded = serializeSelected(this.#unencodedDigests(reply, null), fields.unencoded, true)
      const repr = serializeSelected(getDeclared(reply)?.repr ?? null, fields.repr, fields.strict)
      writeFields(reply, null, repr, unencoded)
      return payload
    }
    if (fields.head || !isNodeStream(payload)) return this.#reported(request, reply, this.#buffered(reply, payload))
    return this.#streamed(request, reply, payload).then((out) => this.#reported(request, reply, out))
  }

  #reported (request: FastifyRequest, reply: FastifyReply, payload: Payload): Payload {
    if (this.#omitted !== null) reportOmitted(request, reply, this.#omitted, this.fields, this.route)
    return payload
  }

  /** The content stage for string, Buffer and empty payloads, and for every HEAD. */
  #buffered (reply: FastifyReply, payload: Payload): Payload {
    const { fields, delivery: { partial, contentHashed } } = this
    // A HEAD response has no content (RFC 9530 B.2): its Content-Digest is the empty string's.
    if (fields.head) return this.#emit(reply, payload, digestAll(fields.content, ''), this.#repr)
    const bytes = (payload ?? '') as string | Buffer
    if (bytes === this.#reprPayload || reply.getHeader('content-encoding') === this.#reprEncoding) {
      // The same bytes, or replaced without a coding (the application's onSend hook): one pass for every field.
      const all = partial ? fields.content : union(union(fields.content, fields.reprNeeded), fields.identityNeeded)
      const content = digestAll(all, bytes)
      return this.#emit(reply, payload, content, partial ? null : content)
    }
    const reprPayload = this.#reprPayload
    const identity = !partial && reprPayload !== null && fields.identityNeeded.length > 0
      ? digestAll(fields.identityNeeded, reprPayload)
      : this.#repr
    return this.#emit(reply, payload, digestAll(contentHashed, bytes), identity)
  }

  /** The content stage for streams: trailers when the plan allows them, else buffered up to maxBufferSize. */
  async #streamed (request: FastifyRequest, reply: FastifyReply, payload: NodeJS.ReadableStream): Promise<Payload> {
    const { fields, delivery } = this
    if (delivery.transport === 'none') return payload
    const file = this.#file
    if (file !== null) {
      const out = await this.#fileContent(request, reply, payload)
      if (out !== null) return out
    }
    const reprStream = this.#reprStream
    const hasher = payload === reprStream ? reprStream : hashThrough(payload, delivery.contentHashed)
    // As planned; a file's stream, too, once its precondition was decided before sending (fileContent()).
    if (delivery.transport === 'trailers' || (fields.trailers && this.#precondition === null)) {
      this.#declareTrailers(request, reply, hasher)
      return hasher
    }
    const collected = file === null
      ? await collectUpTo(hasher, this.route.params.maxBufferSize)
      : await file.collect(hasher)
    if (collected === null) return (file as FileSending).failed(request, reply)
    if (collected.chunks === null) {
      this.#omitted = 'over-max-buffer-size'
      // A file's representation digest does not depend on the content.
      return file === null ? collected.rest : this.#emit(reply, collected.rest, null, this.#repr)
    }
    const body = Buffer.concat(collected.chunks)
    reply.header('content-length', body.byteLength)
    return this.#emit(reply, body, hasher.digests, this.#identity())
  }

  /**
   * The identity representation: a file's, a stream hashed as it flowed, or bytes compress turned into a stream (hashed
   * once); of no algorithm when identityNeeded is empty.
   */
  #identity (): DigestResults | null {
    if (this.#file !== null || this.delivery.partial) return this.#repr
    if (this.#reprStream !== null) return this.#reprStream.digests
    return (this.#repr ??= digestAll(this.fields.identityNeeded, this.#reprPayload as string | Buffer))
  }

  /** A stream's digest fields as trailers (a file's representation digests, known before any byte is sent: headers). */
  #declareTrailers (request: FastifyRequest, reply: FastifyReply, hasher: DigestTransform): void {
    const { fields, delivery, route: { params } } = this
    reply.removeHeader('content-length')
    const trailers = new DigestTrailers(request, reply, params.onDigestFields)
    const file = this.#file !== null
    const strict = fields.strict
    const fromContent = delivery.reprFrom === 'content'
    const repr: Compute = (r) => this.#reprOf(r, hasher.digests, fromContent ? null : this.#identity())
    const unencoded: Compute = (r) => this.#unencodedDigests(r, this.#identity())
    trailers.declare('content-digest', fields.content, strict, () => hasher.digests)
    trailers.declare('repr-digest', fields.repr, strict, repr, file && !fromContent)
    trailers.declare('unencoded-digest', fields.unencoded, true, unencoded, file)
    commaSeparatedTrailer(reply)
  }

  // The content stage of a GET for a file: the 406 rule decided before anything is sent (the content digest can still
  // go as a trailer), then the digests read from the file, which its stream must match at its end too; null to hash
  // its stream as any (coded by compress, a part in a trailer or buffer).
  async #fileContent (request: FastifyRequest, reply: FastifyReply, payload: NodeJS.ReadableStream): Promise<Payload> {
    const { fields, delivery } = this
    const sending = this.#file as FileSending
    const { file } = sending
    const stream = sending.stream as CheckedStream
    const fromFile = delivery.reprFrom !== 'content'
    const refused = fromFile ? this.#decidePrecondition(reply, this.#reprOf(reply, null, this.#repr)) : null
    if (refused !== null) {
      stream.destroy()
      ;(payload as Readable).destroy()
      return refused
    }
    if (payload !== stream || (file.range === null && file.stale)) return null
    let content: DigestResults | null = null
    if (file.range === null) {
      content = await sending.wholeContent(delivery.contentHashed)
      if (content === null) return null
    } else if (fields.content.length > 0) {
      if (!sending.readsPart) return null
      // The part's digests, read from the file first; none (logged) when the file changed meanwhile.
      content = await hashFile(file, fields.content, file.range)
      if (content === null) request.log.debug({ path: file.path }, PART_CHANGED)
    }
    if (content !== null) sending.expect(content)
    const out = this.#emit(reply, stream, content, this.#repr)
    if (out !== stream) stream.destroy()
    return out
  }

  // The representation's digests: declared ones, else the whole representation's, from `reprFrom`. 'sent': the
  // identity one or the whole file, unknown when coded after the representation stage (@fastify/compress on an
  // explicit HEAD route).
  #reprOf (reply: FastifyReply, content: DigestResults | null, identity: DigestResults | null): DigestResults | null {
    const { reprFrom } = this.delivery
    let whole = reprFrom === 'content' ? content : identity
    if (reprFrom === 'sent' && reply.getHeader('content-encoding') !== this.#reprEncoding) whole = null
    else if (reprFrom === 'sent' && this.#file !== null) whole = this.#file.coded
    return withDeclared(reply, 'repr', whole, this.fields.reprNeeded)
  }

  /**
   * Unencoded-Digest's: setUnencodedDigest()'s; then, when the route coded nothing itself (never decoded),
   * setReprDigest()'s and `identity`.
   */
  #unencodedDigests (reply: FastifyReply, identity: DigestResults | null): DigestResults | null {
    const algs = this.fields.unencoded
    // The identity digests are of the uncoded representation: no coding of the route's, or a pre-compressed file's.
    const uncodedIdentity = uncoded(this.#reprEncoding) || this.#file?.original === true
    const computed = uncodedIdentity ? withDeclared(reply, 'repr', identity, algs) : null
    return withDeclared(reply, 'unencoded', computed, algs)
  }

  /** The 406 rule, decided once: the 406's content (emit.ts answerStale()), or null. */
  #decidePrecondition (reply: FastifyReply, repr: DigestResults | null): Payload | null {
    const fails = preconditionFails(this.#precondition, reply.statusCode, repr)
    this.#precondition = null
    return fails ? answerStale(reply, this.fields, repr) : null
  }

  /**
   * The digest fields as headers, or a 406: `content` digests the bytes sent, `identity` the representation before
   * content coding.
   */
  #emit (
    reply: FastifyReply, payload: Payload, content: DigestResults | null, identity: DigestResults | null
  ): Payload {
    const { fields } = this
    const strict = fields.strict
    const repr = this.#reprOf(reply, content, identity)
    const refused = this.#decidePrecondition(reply, repr)
    if (refused !== null) return refused
    const contentValue = serializeSelected(content, fields.content, strict)
    const reprValue = repr === content && sameList(fields.repr, fields.content)
      ? contentValue
      : serializeSelected(repr, fields.repr, strict)
    // Unencoded-Digest: Byte Sequences (draft-ietf-httpbis-unencoded-digest §3).
    const unencoded = fields.unencoded.length === 0
      ? null
      : serializeSelected(this.#unencodedDigests(reply, identity), fields.unencoded, true)
    writeFields(reply, contentValue, reprValue, unencoded, fields.signatures)
    return payload
  }
}
