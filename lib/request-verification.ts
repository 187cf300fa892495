// Request verification (docs/design.md, "Requests"): Content-Digest,
// Repr-Digest and the legacy Digest of request content, checked as the body
// streams, whoever reads it.
//
// Every hook is route-level, added in onRoute (with a microtask, after every
// onRoute hook's synchronous changes) to the routes that verify and answer a
// method with a body: other routes, GETs above all, pay nothing. In
// lifecycle order:
// * the first route-level onRequest hook: parses the header fields, refuses
//   what can be refused before reading (malformed field, impossible value
//   length, missing or unsupported digest under `verify: 'required'`), and
//   taps the body at its source, `request.raw` (source-tap.ts): every byte
//   pushed into it is hashed, whether fastify's parser, a handler reading
//   `request.raw` or @fastify/multipart reads it, over HTTP/1.1 and HTTP/2,
//   with or without a length. "No body" is an empty stream, never a missing
//   Content-Length. The end of the body is held back until it is checked.
//   A default-mode Repr-Digest of a request with Content-Encoding is hashed
//   over the decoded bytes: the tap feeds a decoder on the side (node:zlib,
//   capped at the route's bodyLimit).
// * the last route-level preParsing hook (after any decoder): when
//   @fastify/compress decodes the content, the side decoder is dropped and
//   the decoded bytes are hashed after compress instead (`tail`, then the
//   final stream, whose end is the final check); when nothing can decode
//   the coding, 415.
// * the final check (the end of the source, or of `tail`): every digest is
//   compared (header fields, and trailer fields; a trailer's algorithms are
//   only known at the end, so every enabled one is hashed when the Trailer
//   header field announces a digest field). Before preValidation (a parsed
//   body) a failure is recorded and preValidation answers it with
//   application/problem+json; after it (the handler reads the body) the
//   failure is raised on the stream the handler reads, which then errors
//   instead of ending.
// * the first route-level onSend hook: a reply to a body that failed is
//   the problem (unless the application's error handler answered with an
//   error status); a success sent before the body was read to its end waits
//   while the rest is read and checked (within bodyLimit), except under
//   'if-present' when nobody started reading it (reason 'unread').
// GET, HEAD and TRACE bodies are never read by fastify: nothing is checked
// there (a Repr-Digest on them is the conditional of docs/design.md).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Readable } from 'node:stream'
import type { IncomingHttpHeaders } from 'node:http'
import type { DigestAlgorithm, DigestFieldName, DigestMap, DigestVerification, FieldVerification } from '../types/index'
import type { DigestParams } from './options'
import type { RouteHookInstaller } from './route-hooks'
import { kRequestState, kRouteParams, kVerification } from './symbols'
import { parseDigestField, parseLegacyDigest } from './fields'
import { usableAlgorithms, verifyDigests } from './verification'
import { wantAdvertisement } from './negotiation'
import { digestAll, LazyDigestStream, type DigestResults, type EndCheck } from './digest-stream'
import { SourceTap, type TapEnd } from './source-tap'
import { contentCoding, createContentDecoder, DecodingTap, DECODABLE_CODINGS } from './content-decoding'
import {
  blankProblem,
  collectFailures,
  collectUnsupported,
  invalidValuesProblem,
  mismatchedValuesProblem,
  unsupportedAlgorithmsProblem,
  PROBLEM_CONTENT_TYPE,
  type CheckedField,
  type ProblemDetails
} from './problem'
import {
  FST_DIGEST_CONTENT_TOO_LARGE,
  FST_DIGEST_INVALID_ENCODING,
  FST_DIGEST_INVALID_VALUE,
  FST_DIGEST_MISMATCH,
  FST_DIGEST_MISSING,
  FST_DIGEST_UNSUPPORTED_ALGORITHM,
  FST_DIGEST_UNSUPPORTED_ENCODING,
  FST_DIGEST_UNREAD_TOO_LARGE,
  FST_DIGEST_INCOMPLETE
} from './errors'

/** A digest claim about the request content: one field, header or trailer. */
interface Claim {
  field: DigestFieldName
  received: DigestMap
  /** Checked over the decoded content (default-mode Repr-Digest with a content coding). */
  decoded: boolean
}

/** A refusal: the error (its statusCode is the status), its problem body, extra headers. */
interface Failure {
  error: Error & { statusCode: number, code: string, headers?: Record<string, string>, problem?: ProblemDetails }
  problem: ProblemDetails
  headers: Record<string, string>
}

interface RequestState {
  params: DigestParams
  claims: Claim[]
  /** The request's content coding (null: none), when Repr-Digest is checked decoded. */
  coding: string | null
  decodedAlgorithms: DigestAlgorithm[]
  /** Hashes the bytes as received, at request.raw. */
  tap: SourceTap
  /** The final stream when something stands between request.raw and the parser. */
  tail: LazyDigestStream | null
  /** `tail` hashes the decoded bytes (after @fastify/compress's decoder). */
  decodeHere: boolean
  side: DecodingTap | null
  /** The route's bodyLimit, which caps decoding on the side. */
  limit: number
  /** The route's last preParsing hook has run (it decides whether `tail` exists). */
  routed: boolean
  /** The source ended before that hook ran: its release waits for it. */
  sourceEnd: ((err?: Error | null) => void) | null
  /** preValidation ran: a failure found later must be raised on the stream. */
  validated: boolean
  /** The final check has run. */
  done: boolean
  failure: Failure | null
  /** The problem has been sent for this request. */
  answered: boolean
  /** An onSend hook waiting for the final check. */
  waiting: (() => void) | null
}

type StateHolder = Record<symbol, RequestState | null>
type VerificationHolder = Record<symbol, DigestVerification | null>
type ParamsHolder = Record<symbol, DigestParams | undefined>

// Methods whose body fastify never reads (it runs the handler straight away).
const BODYLESS = new Set(['GET', 'HEAD', 'TRACE'])
const TRAILER_FIELDS: ReadonlyMap<string, DigestFieldName> = new Map([
  ['content-digest', 'Content-Digest'],
  ['repr-digest', 'Repr-Digest'],
  ['digest', 'Digest']
])
const EMPTY: DigestResults = new Map()

function routeParams (request: FastifyRequest): DigestParams | undefined {
  return (request.routeOptions.config as unknown as ParamsHolder | undefined)?.[kRouteParams]
}

function getState (request: FastifyRequest): RequestState | null {
  return (request as unknown as StateHolder)[kRequestState] as RequestState | null
}

function hasContent (headers: IncomingHttpHeaders): boolean {
  return headers['transfer-encoding'] !== undefined || Number(headers['content-length'] ?? 0) > 0
}

// ---------------------------------------------------------------------------
// Failures

const wantCache = new WeakMap<DigestParams, Record<string, string>>()

/** Want-Content-Digest / Want-Repr-Digest advertising the route's algorithms. */
function wantHeaders (params: DigestParams): Record<string, string> {
  let headers = wantCache.get(params)
  if (headers === undefined) {
    const value = wantAdvertisement(params.algorithms)
    headers = { 'want-content-digest': value, 'want-repr-digest': value }
    wantCache.set(params, headers)
  }
  return headers
}

function makeFailure (
  params: DigestParams,
  error: Failure['error'],
  build: (code: string, detail: string) => ProblemDetails,
  extraHeaders?: Record<string, string>
): Failure {
  const headers = { ...wantHeaders(params), ...extraHeaders }
  const problem = build(error.code, error.message)
  // A custom error handler can send these itself.
  error.headers = headers
  error.problem = problem
  return { error, problem, headers }
}

function fieldList (names: Iterable<string>): string {
  return [...new Set(names)].join(', ')
}

/** The failure of a set of checked fields, or null. `required`: a verified field is needed. */
function judge (checked: CheckedField[], params: DigestParams, required: boolean): Failure | null {
  const { invalid, mismatched } = collectFailures(checked)
  if (invalid.length > 0) {
    const error = new FST_DIGEST_INVALID_VALUE(fieldList(invalid.map((e) => e.header)))
    return makeFailure(params, error, (code, detail) => invalidValuesProblem(invalid, code, detail))
  }
  if (mismatched.length > 0) {
    const error = new FST_DIGEST_MISMATCH(fieldList(mismatched.map((e) => e.header)))
    return makeFailure(params, error, (code, detail) => mismatchedValuesProblem(mismatched, code, detail))
  }
  if (!required || checked.some((c) => c.verification.ok)) return null
  const unsupported = collectUnsupported(checked)
  if (unsupported.length > 0) {
    const error = new FST_DIGEST_UNSUPPORTED_ALGORITHM(fieldList(unsupported.map((e) => e.header)))
    return makeFailure(params, error, (code, detail) => unsupportedAlgorithmsProblem(unsupported, code, detail))
  }
  const error = new FST_DIGEST_MISSING()
  return makeFailure(params, error, (code, detail) => blankProblem(400, code, detail))
}

function blankFailure (params: DigestParams, error: Failure['error'], extraHeaders?: Record<string, string>): Failure {
  return makeFailure(params, error, (code, detail) => blankProblem(error.statusCode, code, detail), extraHeaders)
}

function sendFailure (reply: FastifyReply, failure: Failure): void {
  const state = getState(reply.request)
  if (state !== null) state.answered = true
  reply
    .code(failure.error.statusCode)
    .headers(failure.headers)
    .header('content-type', PROBLEM_CONTENT_TYPE)
    // A Buffer: fastify would append `; charset=utf-8` to a JSON type for a
    // string, and application/problem+json defines no charset parameter.
    .send(Buffer.from(JSON.stringify(failure.problem)))
}

// ---------------------------------------------------------------------------
// Claims and results

function setVerification (request: FastifyRequest, verification: DigestVerification): void {
  (request as unknown as VerificationHolder)[kVerification] = verification
}

/**
 * request.digestVerification where the verifier never runs: routes without
 * digests (null), `verify: false` ('disabled'), and bodyless methods, whose
 * bodies fastify never reads ('no-body' or 'unread'). Worked out when read,
 * so that these requests, most of them GETs, cost nothing here.
 */
function defaultVerification (request: FastifyRequest): DigestVerification | null {
  const params = routeParams(request)
  if (params === undefined) return null
  if (params.verify === false) return { verified: false, reason: 'disabled', fields: [] }
  if (BODYLESS.has(request.method)) {
    // A Repr-Digest on a GET is the conditional of docs/design.md ("The 406 rule"), not a claim about content.
    return { verified: false, reason: hasContent(request.headers) ? 'unread' : 'no-body', fields: [] }
  }
  return null
}

function getVerification (this: FastifyRequest): DigestVerification | null {
  // Kept once worked out: the same object on every read, as if it had been set.
  const holder = this as unknown as VerificationHolder
  return holder[kVerification] ?? (holder[kVerification] = defaultVerification(this))
}

function putVerification (this: FastifyRequest, value: DigestVerification | null): void {
  (this as unknown as VerificationHolder)[kVerification] = value
}

function summarize (fields: FieldVerification[], emptyReason: 'no-digest' | 'no-body'): DigestVerification {
  const verified = fields.some((f) => f.ok)
  return verified ? { verified, fields } : { verified, reason: emptyReason, fields }
}

/** The digest fields of a header or trailer section. Throws FST_DIGEST_INVALID_FIELD. */
function readClaims (
  section: Record<string, string | string[] | undefined>,
  params: DigestParams,
  decodeRepr: boolean
): Claim[] {
  // Reported in this order (the problem-types draft's examples list
  // Repr-Digest first).
  const claims: Claim[] = []
  const repr = parseDigestField(section['repr-digest'], 'Repr-Digest')
  if (repr !== null) claims.push({ field: 'Repr-Digest', received: repr, decoded: decodeRepr })
  const content = parseDigestField(section['content-digest'], 'Content-Digest')
  if (content !== null) claims.push({ field: 'Content-Digest', received: content, decoded: false })
  if (params.legacyDigest) {
    // RFC 3230 Digest: a digest of the body as sent (RFC 3230 §4.3.2).
    const legacy = parseLegacyDigest(section.digest)
    if (legacy !== null) claims.push({ field: 'Digest', received: legacy, decoded: false })
  }
  return claims
}

function check (claims: Claim[], params: DigestParams, received: DigestResults, decoded: DigestResults): CheckedField[] {
  return claims.map((claim) => ({
    received: claim.received,
    verification: verifyDigests(claim.field, claim.received, claim.decoded ? decoded : received, params.algorithms)
  }))
}

/** Digest fields the request announces in its Trailer header field (RFC 9110 §6.6.2). */
function announcedTrailers (value: string | undefined, params: DigestParams): Set<DigestFieldName> {
  const out = new Set<DigestFieldName>()
  if (value === undefined) return out
  for (const name of value.split(',')) {
    const field = TRAILER_FIELDS.get(name.trim().toLowerCase())
    if (field !== undefined && (field !== 'Digest' || params.legacyDigest)) out.add(field)
  }
  return out
}

// ---------------------------------------------------------------------------
// The end of the body

function decodedResults (state: RequestState): DigestResults | Failure {
  const { side, tail, params } = state
  const field = 'Repr-Digest'
  if (side !== null) {
    if (side.failure === 'too-large') {
      return blankFailure(params, new FST_DIGEST_CONTENT_TOO_LARGE(field, String(state.limit)))
    }
    if (side.failure === 'invalid') {
      return blankFailure(params, new FST_DIGEST_INVALID_ENCODING(field, state.coding))
    }
    return side.digests as DigestResults
  }
  // Decoded upstream (@fastify/compress): `tail` hashed the decoded bytes,
  // up to the same cap as decoding on the side.
  if ((tail as LazyDigestStream).overLimit) {
    return blankFailure(params, new FST_DIGEST_CONTENT_TOO_LARGE(field, String(state.limit)))
  }
  return (tail as LazyDigestStream).digests as DigestResults
}

function readTrailerClaims (request: FastifyRequest, state: RequestState): Claim[] {
  const trailers = request.raw.trailers as Record<string, string> | undefined
  if (trailers === undefined) return []
  return readClaims(trailers, state.params, state.coding !== null)
}

/** The failure of the whole body, or null; sets request.digestVerification. */
function judgeBody (request: FastifyRequest, state: RequestState): Failure | null {
  const { params, tap } = state
  if (tap.partial) {
    // Read before the verifier could see it: never verified.
    setVerification(request, { verified: false, reason: 'unread', fields: [] })
    return params.verify === 'required' ? blankFailure(params, new FST_DIGEST_MISSING()) : null
  }
  let failure: Failure | null = null
  let fields: FieldVerification[] = []
  const decoded = state.decodedAlgorithms.length === 0
    ? EMPTY
    : tap.bytes === 0 ? digestAll(state.decodedAlgorithms, Buffer.alloc(0)) : decodedResults(state)
  if (decoded instanceof Map) {
    let claims = state.claims
    try {
      claims = claims.concat(readTrailerClaims(request, state))
    } catch (err) {
      failure = blankFailure(params, err as Failure['error'])
    }
    if (failure === null) {
      const checked = check(claims, params, tap.digests as DigestResults, decoded)
      fields = checked.map((c) => c.verification)
      // Under 'required' an empty body needs no digest.
      failure = judge(checked, params, params.verify === 'required' && tap.bytes > 0)
    }
  } else {
    failure = decoded
  }
  setVerification(request, failure === null
    ? summarize(fields, tap.bytes === 0 ? 'no-body' : 'no-digest')
    : { verified: false, reason: 'failed', fields })
  return failure
}

/**
 * The final check, at the end of the final stream. A failure found before
 * preValidation (a parsed body) is answered there; later (a handler reading
 * the body itself) it is raised on the stream the handler reads.
 */
function finish (request: FastifyRequest, state: RequestState, callback: (err?: Error | null) => void): void {
  if (state.done) {
    // Judged at the end of the source already (nothing was hashed after it).
    callback()
    return
  }
  const failure = judgeBody(request, state)
  state.done = true
  state.failure = failure
  const waiting = state.waiting
  state.waiting = null
  if (failure === null || !state.validated) callback()
  else callback(failure.error)
  waiting?.()
}

/** The end of the bytes as received: the final check, unless `tail` (after a decoder) comes later. */
function endSource (request: FastifyRequest, state: RequestState, release: (err?: Error | null) => void): void {
  if (!state.routed) {
    // The body ended before the route's last preParsing hook ran (an eager
    // reader before it): that hook decides whether `tail` comes.
    state.sourceEnd = release
    return
  }
  const tail = state.tail
  if (tail === null) {
    finish(request, state, release)
  } else if (state.tap.bytes === 0 || !state.decodeHere) {
    // Nothing is hashed after request.raw (empty content needs no decoding:
    // every digest is of the empty string): judged now. request.raw ends
    // cleanly, so that the streams after it end too, and a failure reaches
    // the reader through `tail`.
    finish(request, state, (err) => {
      release()
      if (err != null) tail.destroy(err)
    })
  } else {
    release()
  }
}

// ---------------------------------------------------------------------------
// Hooks

type ParsingDone = (err: Error | null, stream?: Readable) => void
type HookDone = (err?: Error) => void

// The end-of-body checks are built by these small functions, not inside the
// hooks. Measured (docs/benchmarks.md, "Findings", session 5): the same
// closure created inside the hook made in-flight requests survive scavenges
// and be promoted to the old generation with their body chunks.

function sourceEndCheck (request: FastifyRequest, state: RequestState): TapEnd {
  return (release) => endSource(request, state, release)
}

function tailEndCheck (request: FastifyRequest, state: RequestState): EndCheck {
  return (callback) => finish(request, state, callback)
}

/**
 * `tail` closed before its end (the decoder failed, or its reader gave up):
 * the decoded digests are missing, so nothing was verified. A reply that
 * waits for the check gets the failure.
 */
function tailClosed (request: FastifyRequest, state: RequestState): () => void {
  return () => {
    if (state.done) return
    state.done = true
    setVerification(request, { verified: false, reason: 'failed', fields: [] })
    const waiting = state.waiting
    if (waiting === null) return
    state.waiting = null
    state.failure = blankFailure(state.params, new FST_DIGEST_INVALID_ENCODING('Repr-Digest', state.coding))
    waiting()
  }
}

/**
 * The first route-level onRequest hook: reads the claims, refuses what can
 * be refused before reading, and taps the body at its source
 * (`request.raw`), before any reader, instance-level preParsing hooks
 * included, can start.
 */
function onRequest (request: FastifyRequest, reply: FastifyReply, done: HookDone, params: DigestParams): void {
  // Nothing to check (request.digestVerification says why: defaultVerification).
  if (BODYLESS.has(request.method)) {
    done()
    return
  }
  const headers = request.headers
  const coding = params.strict ? null : contentCoding(headers['content-encoding'])
  let claims: Claim[]
  try {
    claims = readClaims(headers, params, coding !== null)
  } catch (err) {
    sendFailure(reply, blankFailure(params, err as Failure['error']))
    return
  }

  // Values no algorithm can produce are refused before reading anything
  // (the draft: "the server can skip computing the digest value").
  const invalid = judge(check(claims, params, EMPTY, EMPTY), params, false)
  if (invalid !== null) {
    sendFailure(reply, invalid)
    return
  }

  const announced = announcedTrailers(headers.trailer, params)
  const received = new Set<DigestAlgorithm>()
  const decoded = new Set<DigestAlgorithm>()
  for (const claim of claims) {
    for (const algorithm of usableAlgorithms(claim.received, params.algorithms)) {
      (claim.decoded ? decoded : received).add(algorithm)
    }
  }
  for (const field of announced) {
    // A trailer's algorithms are unknown until the end: hash every enabled one.
    const target = field === 'Repr-Digest' && coding !== null ? decoded : received
    for (const algorithm of params.algorithms) target.add(algorithm)
  }

  if (received.size === 0 && decoded.size === 0) {
    const required = params.verify === 'required'
    // Whether there is content is known from the bytes, not from the
    // headers (an HTTP/2 request, or a chunked one, has no Content-Length):
    // only a Content-Length of 0 says "empty" up front. Under `required` an
    // empty body needs no digest; a body of unknown length is counted.
    const empty = headers['content-length'] === '0'
    if (!required || empty || headers['content-length'] !== undefined) {
      const checked = check(claims, params, EMPTY, EMPTY)
      const failure = judge(checked, params, required && !empty)
      if (failure !== null) {
        sendFailure(reply, failure)
        return
      }
      setVerification(request, { verified: false, reason: hasContent(headers) ? 'no-digest' : 'no-body', fields: checked.map((c) => c.verification) })
      done()
      return
    }
  }

  let side: DecodingTap | null = null
  const limit = request.routeOptions.bodyLimit as number
  if (decoded.size > 0) {
    // Decode on the side from the first byte on; the route's last
    // preParsing hook drops this when @fastify/compress turns out to decode
    // the content itself.
    const decoder = createContentDecoder(coding as string)
    if (decoder !== null) side = new DecodingTap(decoder, decoded, limit)
  }
  const state: RequestState = {
    params,
    claims,
    coding,
    decodedAlgorithms: [...decoded],
    tap: null as unknown as SourceTap,
    tail: null,
    decodeHere: false,
    side,
    limit,
    routed: false,
    sourceEnd: null,
    validated: false,
    done: false,
    failure: null,
    answered: false,
    waiting: null
  }
  ;(request as unknown as StateHolder)[kRequestState] = state
  setVerification(request, { verified: false, reason: 'unread', fields: [] })
  state.tap = new SourceTap(request.raw, received, side, sourceEndCheck(request, state))
  // A body that had fully arrived before the tap: checked now, before any reader.
  state.tap.checkEnded()
  done()
}

type EncodedLengthStream = Readable & { receivedEncodedLength?: unknown }

/** The last route-level preParsing hook: after any decoder. */
function onRoutePreParsing (request: FastifyRequest, reply: FastifyReply, payload: EncodedLengthStream, done: ParsingDone): void {
  const state = getState(request)
  if (state === null) {
    done(null, payload)
    return
  }
  state.routed = true
  // A stream that reports receivedEncodedLength is a decoder
  // (@fastify/compress's decompressor): it gives us the decoded bytes.
  const decodedUpstream = typeof payload.receivedEncodedLength === 'number'
  const decodeHere = state.decodedAlgorithms.length > 0 && decodedUpstream
  if (state.decodedAlgorithms.length > 0) {
    if (decodedUpstream) {
      state.tap.untapSide()
      state.side = null
    } else if (state.side === null) {
      // Nothing decodes this coding for the route, so its Repr-Digest cannot
      // be checked: 415, naming the codings we can decode (RFC 9110 §15.5.16).
      state.tap.stop()
      const error = new FST_DIGEST_UNSUPPORTED_ENCODING('Repr-Digest', state.coding)
      sendFailure(reply, blankFailure(state.params, error, { 'accept-encoding': DECODABLE_CODINGS.filter((c) => c !== 'x-gzip').join(', ') }))
      return
    }
  }
  let final: Readable = payload
  if (payload !== request.raw) {
    // Something stands between request.raw and the parser (a decoder such
    // as @fastify/compress's, or another plugin's stream): the final stream
    // is ours again, so that a failure is raised where the reader sees it
    // (an error of request.raw does not cross a pipe(), and compress
    // rewrites it). After a decoder it hashes the decoded bytes, and it
    // forwards receivedEncodedLength for fastify's length checks
    // (lib/content-type-parser.js rawBody).
    const tail = new LazyDigestStream(payload, decodeHere ? state.decodedAlgorithms : [], state.limit)
    if (decodedUpstream) {
      Object.defineProperty(tail, 'receivedEncodedLength', { get: () => payload.receivedEncodedLength })
    }
    tail.endCheck = tailEndCheck(request, state)
    if (decodeHere) tail.once('close', tailClosed(request, state))
    state.decodeHere = decodeHere
    state.tail = tail
    final = tail
  }
  const sourceEnd = state.sourceEnd
  if (sourceEnd !== null) {
    state.sourceEnd = null
    endSource(request, state, sourceEnd)
  }
  done(null, final)
}

function onPreValidation (request: FastifyRequest, reply: FastifyReply, done: HookDone): void {
  const state = getState(request)
  if (state === null) {
    done()
    return
  }
  state.validated = true
  if (!state.done && parsesNothing(request.headers)) {
    // fastify runs the handler at once for a request it takes to have no
    // body (no Content-Type, no Content-Length or 0, no Transfer-Encoding:
    // lib/handle-request.js:55-65), whatever arrives over HTTP/2 or from a
    // Readable injected: see whether anything does before the handler runs.
    // An empty body is judged now; content is left to its reader (or to the
    // reply check).
    state.tap.awaitData(() => answerValidation(reply, state, done))
    request.raw.read(0)
    return
  }
  answerValidation(reply, state, done)
}

function answerValidation (reply: FastifyReply, state: RequestState, done: HookDone): void {
  if (state.failure !== null) {
    sendFailure(reply, state.failure)
    return
  }
  done()
}

/** No Content-Type, and no content by the length fields (fastify then parses nothing). */
function parsesNothing (headers: IncomingHttpHeaders): boolean {
  return headers['content-type'] === undefined && !hasContent(headers)
}

/**
 * Whether `payload` is fastify's default error body (its default error
 * handler's serialization: statusCode, code, error, message), e.g. for the
 * digest error a handler rethrew, or for @fastify/compress's rewrite of it
 * when its decoder stood between the body and the handler.
 */
function isDefaultErrorBody (payload: unknown, statusCode: number): boolean {
  if (typeof payload !== 'string') return false
  try {
    const body = JSON.parse(payload) as { statusCode?: unknown, error?: unknown, message?: unknown }
    return body.statusCode === statusCode && typeof body.error === 'string' && typeof body.message === 'string'
  } catch {
    return false
  }
}

type SendDone = (err: Error | null, payload?: unknown) => void

/** The reply to a request whose body failed: the problem, unless the application answered the error itself. */
function answerFailure (reply: FastifyReply, state: RequestState, failure: Failure, payload: unknown, done: SendDone): void {
  if (reply.statusCode >= 400 && !isDefaultErrorBody(payload, reply.statusCode)) {
    // An error handler of the application's answered (with an error status).
    done(null, payload)
    return
  }
  state.answered = true
  // Whatever the handler meant to send (a success for a body that failed,
  // or fastify's default error body), the answer is the problem.
  if (isStream(payload)) (payload as Readable).destroy()
  reply.code(failure.error.statusCode).headers(failure.headers).header('content-type', PROBLEM_CONTENT_TYPE).removeHeader('content-length')
  done(null, JSON.stringify(failure.problem))
}

/** The rest of the body cannot be checked: the waiting reply gets the failure. */
function failBeforeEnd (request: FastifyRequest, state: RequestState, error: Failure['error']): void {
  // Over the limit first, then the connection closed: answered already.
  if (state.done) return
  setVerification(request, { verified: false, reason: 'failed', fields: [] })
  state.done = true
  state.failure = blankFailure(state.params, error, { connection: 'close' })
  const waiting = state.waiting as () => void
  state.waiting = null
  waiting()
}

function isStream (payload: unknown): boolean {
  // Object(): no own branch for null and undefined.
  return typeof (Object(payload) as Partial<Readable>).pipe === 'function'
}

/**
 * The first route-level onSend hook (before the response digests). A
 * success for a body that is still arriving waits for its end and its
 * check; a body that failed gets the problem instead of the reply.
 */
function onSend (request: FastifyRequest, reply: FastifyReply, payload: unknown, done: SendDone): void {
  const state = getState(request)
  if (state === null || state.answered) {
    done(null, payload)
    return
  }
  if (state.done) {
    if (state.failure === null) done(null, payload)
    else answerFailure(reply, state, state.failure, payload, done)
    return
  }
  if (reply.statusCode >= 400 || isStream(payload)) {
    // An error answer claims nothing about the body. A stream may be fed by
    // the body itself (an echo): it cannot wait for the end, and a failure
    // still reaches it through the body stream it reads.
    if (reply.statusCode >= 400) state.tap.stop()
    done(null, payload)
    return
  }
  // Read the rest (within the route's bodyLimit) and check it before the
  // answer goes out: never a success for a body that was not checked.
  state.validated = true
  state.waiting = () => onSend(request, reply, payload, done)
  state.tap.limitRest(state.limit, () => {
    const fields = fieldList(state.claims.map((c) => c.field)) || 'Content-Digest'
    failBeforeEnd(request, state, new FST_DIGEST_UNREAD_TOO_LARGE(fields, String(state.limit)))
  }, () => {
    failBeforeEnd(request, state, new FST_DIGEST_INCOMPLETE())
  })
  if (state.tail !== null) state.tail.resume()
  if (request.raw.readableFlowing !== true) request.raw.resume()
}

export function installRequestVerification (fastify: FastifyInstance): RouteHookInstaller<DigestParams> {
  fastify.decorateRequest(kRequestState as unknown as string, null)
  fastify.decorateRequest(kVerification as unknown as string, null)
  fastify.decorateRequest('digestVerification', { getter: getVerification, setter: putVerification })
  return {
    onRoute (routeOptions, params) {
      if (params.verify === false) return null
      // A route that only answers bodyless methods never reads a body: no
      // hook at all (its request.digestVerification is worked out when
      // read: defaultVerification). Other routes get route-level hooks only,
      // so that the routes without verification pay nothing.
      const methods = Array.isArray(routeOptions.method) ? routeOptions.method : [routeOptions.method]
      if (methods.every((m) => BODYLESS.has(m.toUpperCase()))) return null
      function digestVerifyRequest (this: unknown, request: FastifyRequest, reply: FastifyReply, done: HookDone): void {
        onRequest(request, reply, done, params)
      }
      // The tap is placed by the first route-level onRequest hook, the
      // decoded bytes are taken after the last route-level preParsing hook
      // (after any decoder: @fastify/compress adds its decompressor from
      // onRoute); the preValidation answer and the reply check come before
      // any other route-level hook of theirs (lib/route-hooks.ts).
      return {
        onRequestFirst: digestVerifyRequest,
        preParsingLast: onRoutePreParsing,
        preValidationFirst: onPreValidation,
        onSendFirst: onSend
      }
    }
  }
}
