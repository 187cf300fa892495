// Request verification (DESIGN.md §3): Content-Digest, Repr-Digest and the
// legacy Digest of request content, checked as the body streams.
//
// Every hook is route-level, added in onRoute (with a microtask, after every
// onRoute hook's synchronous changes) to the routes that verify and answer a
// method with a body: other routes, GETs above all, pay nothing. In
// lifecycle order:
// * the first route-level preParsing hook (before @fastify/compress's
//   decompressor, which compress unshifts): parses the header fields, refuses
//   what can be refused before reading (malformed field, impossible value
//   length, missing or unsupported digest under `verify: 'required'`), checks
//   empty content at once (digests of the empty string), and otherwise
//   replaces the body stream with a lazy hashing stream over the bytes as
//   received (`head`). A default-mode Repr-Digest of a request with
//   Content-Encoding is hashed over the decoded bytes: `head` feeds a decoder
//   on the side (node:zlib, capped at the route's bodyLimit) from the first
//   byte on. Instance-level preParsing hooks run before it (fastify's order):
//   the README says what that means for a decoder added that way.
// * the last route-level preParsing hook (after any decoder): when compress
//   decodes the content, the side decoder is dropped and the decoded bytes are
//   hashed after compress instead; when nothing can decode the coding, 415.
//   When anything stands after `head`, a second lazy stream (`tail`) becomes
//   the final stream, forwarding `receivedEncodedLength`.
// * the final stream's end: every digest is compared (header fields, and
//   trailer fields; a trailer's algorithms are only known at the end, so
//   every enabled one is hashed when the Trailer header field announces a
//   digest field). `head` never errors when it is not the final stream:
//   compress rewrites errors raised upstream of its decompressor.
// * the first route-level preValidation hook: a parsed body (rawBody parsers)
//   has been read to the end by now, so a failed check is answered here with
//   application/problem+json. When the check has not finished yet, a
//   stream-passing parser is in use (the handler reads later) or the route
//   reads `request.raw`: a failure is then raised as an error of the final
//   stream (the handler sees it instead of a clean end), and the first
//   route-level onSend hook turns fastify's default error body for that
//   error into the problem details (before the response digests are taken).
// GET, HEAD and TRACE bodies are never read by fastify: nothing is checked
// there (a Repr-Digest on them is the conditional of DESIGN.md §2).
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify'
import type { Readable } from 'node:stream'
import type { IncomingHttpHeaders } from 'node:http'
import type { DigestAlgorithm, DigestFieldName, DigestMap, DigestVerification, FieldVerification } from '../types/index'
import { hookList, type DigestParams, type RouteHookInstaller } from './options'
import { kRequestState, kRouteParams, kVerification } from './symbols'
import { parseDigestField, parseLegacyDigest } from './fields'
import { usableAlgorithms, verifyDigests } from './verification'
import { wantAdvertisement } from './negotiation'
import { digestAll, LazyDigestStream, type DigestResults, type EndCheck } from './digest-stream'
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
  FST_DIGEST_UNSUPPORTED_ENCODING
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
  head: LazyDigestStream
  tail: LazyDigestStream | null
  side: DecodingTap | null
  /** The route's bodyLimit, which caps decoding on the side. */
  limit: number
  /** The route-level hook has run (it decides whether `tail` exists). */
  routed: boolean
  /** `head` ended before the route-level hook ran: its end waits for it. */
  headEnd: ((err?: Error | null) => void) | null
  /** preValidation ran: a failure found later must be raised on the stream. */
  validated: boolean
  failure: Failure | null
  /** The error raised on the final stream, until onSend has rewritten its body. */
  raised: Failure | null
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
    // A Repr-Digest on a GET is the conditional of DESIGN.md §2, not a claim about content.
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
    // RFC 3230 Digest: a digest of the body as sent (docs/rfc9530.md §6).
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

function finish (request: FastifyRequest, state: RequestState, callback: (err?: Error | null) => void): void {
  const { params } = state
  let failure: Failure | null = null
  let fields: FieldVerification[] = []
  const decoded = state.decodedAlgorithms.length > 0 ? decodedResults(state) : EMPTY
  if (decoded instanceof Map) {
    let claims = state.claims
    try {
      claims = claims.concat(readTrailerClaims(request, state))
    } catch (err) {
      failure = blankFailure(params, err as Failure['error'])
    }
    if (failure === null) {
      const checked = check(claims, params, state.head.digests as DigestResults, decoded)
      fields = checked.map((c) => c.verification)
      failure = judge(checked, params, params.verify === 'required')
    }
  } else {
    failure = decoded
  }
  if (failure === null) {
    setVerification(request, summarize(fields, 'no-digest'))
    callback()
    return
  }
  state.failure = failure
  setVerification(request, { verified: false, reason: 'failed', fields })
  if (!state.validated) {
    // A parsed body: preValidation runs next and answers.
    callback()
    return
  }
  state.raised = failure
  callback(failure.error)
}

// ---------------------------------------------------------------------------
// Hooks

type ParsingDone = (err: Error | null, stream?: Readable) => void

// The end-of-body checks are built by these small functions, not inside the
// hooks. Measured (BENCHMARKS.md, "Findings", session 5): the same closure
// created inside onPreParsing made the in-flight requests survive scavenges
// and be promoted to the old generation with their body chunks, ≈3 KB per
// request and 7–9 mark-compacts per 400 requests of 1 MiB (≈1.5 M
// instructions per request of garbage collection); built here, none. Why V8
// treats the two closures differently was not worked out.

/** The head stream's end check: at once when routed, else when onRoutePreParsing runs. */
function headEndCheck (request: FastifyRequest, state: RequestState): EndCheck {
  return (callback) => {
    if (!state.routed) state.headEnd = callback
    else endHead(request, state, callback)
  }
}

/** The tail stream's end check: the final one. */
function tailEndCheck (request: FastifyRequest, state: RequestState): EndCheck {
  return (callback) => finish(request, state, callback)
}

function onPreParsing (request: FastifyRequest, reply: FastifyReply, payload: Readable, done: ParsingDone, params: DigestParams): void {
  // Nothing to check (request.digestVerification says why: defaultVerification).
  if (BODYLESS.has(request.method)) {
    done(null, payload)
    return
  }
  const headers = request.headers
  const content = hasContent(headers)

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

  if (!content) {
    // No content: every digest is of the empty string (RFC 9530 §3), decoded or not.
    const empty = claims.length === 0 ? EMPTY : digestAll(params.algorithms, Buffer.alloc(0))
    const checked = check(claims, params, empty, empty)
    const failure = judge(checked, params, false)
    if (failure !== null) {
      sendFailure(reply, failure)
      return
    }
    setVerification(request, summarize(checked.map((c) => c.verification), 'no-body'))
    done(null, payload)
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
    const checked = check(claims, params, EMPTY, EMPTY)
    const failure = judge(checked, params, params.verify === 'required')
    if (failure !== null) {
      sendFailure(reply, failure)
      return
    }
    setVerification(request, { verified: false, reason: 'no-digest', fields: checked.map((c) => c.verification) })
    done(null, payload)
    return
  }

  const head = new LazyDigestStream(payload, received)
  const state: RequestState = {
    params,
    claims,
    coding,
    decodedAlgorithms: [...decoded],
    head,
    tail: null,
    side: null,
    limit: request.routeOptions.bodyLimit as number,
    routed: false,
    headEnd: null,
    validated: false,
    failure: null,
    raised: null
  }
  if (decoded.size > 0) {
    // Decode on the side from the first byte on; the route-level hook drops
    // this when @fastify/compress turns out to decode the content itself.
    const decoder = createContentDecoder(coding as string)
    if (decoder !== null) {
      state.side = new DecodingTap(decoder, decoded, state.limit)
      head.tap(state.side)
    }
  }
  head.endCheck = headEndCheck(request, state)
  ;(request as unknown as StateHolder)[kRequestState] = state
  setVerification(request, { verified: false, reason: 'unread', fields: [] })
  done(null, head)
}

type EncodedLengthStream = Readable & { receivedEncodedLength?: unknown }

function onRoutePreParsing (request: FastifyRequest, reply: FastifyReply, payload: EncodedLengthStream, done: ParsingDone): void {
  const state = getState(request)
  if (state === null) {
    done(null, payload)
    return
  }
  state.routed = true
  // A stream after `head` that reports receivedEncodedLength is a decoder
  // (@fastify/compress's decompressor): it gives us the decoded bytes.
  const decodedUpstream = payload !== state.head && typeof payload.receivedEncodedLength === 'number'
  if (state.decodedAlgorithms.length > 0) {
    if (decodedUpstream) {
      state.head.untap()
      state.side = null
    } else if (state.side === null) {
      // Nothing decodes this coding for the route, so its Repr-Digest cannot
      // be checked: 415, naming the codings we can decode (RFC 9110 §15.5.16).
      const error = new FST_DIGEST_UNSUPPORTED_ENCODING('Repr-Digest', state.coding)
      sendFailure(reply, blankFailure(state.params, error, { 'accept-encoding': DECODABLE_CODINGS.filter((c) => c !== 'x-gzip').join(', ') }))
      return
    }
  }
  let final: Readable = payload
  if (payload !== state.head) {
    // Something stands after `head` (compress's decompressor): the final
    // stream is ours again, so that a failure can be raised where the
    // consumer sees it. It forwards receivedEncodedLength for fastify's
    // length checks.
    const tail = decodedUpstream
      ? new LazyDigestStream(payload, state.decodedAlgorithms, state.limit)
      : new LazyDigestStream(payload, [])
    if (payload.receivedEncodedLength !== undefined) {
      Object.defineProperty(tail, 'receivedEncodedLength', { get: () => payload.receivedEncodedLength })
    }
    tail.endCheck = tailEndCheck(request, state)
    state.tail = tail
    final = tail
  }
  const headEnd = state.headEnd
  if (headEnd !== null) {
    // An eager stream after `head` read it to the end before this hook ran.
    state.headEnd = null
    endHead(request, state, headEnd)
  }
  done(null, final)
}

/** The end of `head`: the final check when it is the final stream. */
function endHead (request: FastifyRequest, state: RequestState, callback: (err?: Error | null) => void): void {
  if (state.tail === null) finish(request, state, callback)
  else callback()
}

function onPreValidation (request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void): void {
  const state = getState(request)
  if (state === null) {
    done()
    return
  }
  state.validated = true
  if (state.failure !== null) {
    sendFailure(reply, state.failure)
    return
  }
  done()
}

/** Whether `payload` is fastify's default error body for `error`. */
function isDefaultErrorBody (payload: string, error: Failure['error']): boolean {
  try {
    const body = JSON.parse(payload) as { code?: unknown, message?: unknown }
    return body.code === error.code && body.message === error.message
  } catch {
    return false
  }
}

function onSend (request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: Error | null, payload?: unknown) => void): void {
  const state = getState(request)
  const raised = state?.raised ?? null
  if (raised === null || typeof payload !== 'string' || !isDefaultErrorBody(payload, raised.error)) {
    done(null, payload)
    return
  }
  ;(state as RequestState).raised = null
  reply.headers(raised.headers).header('content-type', PROBLEM_CONTENT_TYPE).removeHeader('content-length')
  done(null, JSON.stringify(raised.problem))
}

export function installRequestVerification (fastify: FastifyInstance, _params: DigestParams): RouteHookInstaller {
  fastify.decorateRequest(kRequestState as unknown as string, null)
  fastify.decorateRequest(kVerification as unknown as string, null)
  fastify.decorateRequest('digestVerification', { getter: getVerification, setter: putVerification })
  return {
    onRoute (routeOptions: RouteOptions, params: DigestParams): void {
      if (params.verify === false) return
      // A route that only answers bodyless methods never reads a body: no
      // hook at all (its request.digestVerification is worked out when
      // read: defaultVerification). Other routes get route-level hooks only,
      // so that the routes without verification pay nothing.
      const methods = Array.isArray(routeOptions.method) ? routeOptions.method : [routeOptions.method]
      if (methods.every((m) => BODYLESS.has(m.toUpperCase()))) return
      function digestVerifyHead (this: unknown, request: FastifyRequest, reply: FastifyReply, payload: Readable, done: ParsingDone): void {
        onPreParsing(request, reply, payload, done, params)
      }
      // Queued so it lands after every onRoute hook's synchronous changes:
      // @fastify/compress unshifts its decompressor, in either registration
      // order (docs/fastify-behaviour.md §2.5). The head hook goes first (the
      // bytes as received), the route-level one last (after any decoder);
      // the preValidation answer and the error-body rewrite come before any
      // other route-level hook.
      queueMicrotask(() => {
        routeOptions.preParsing = [digestVerifyHead, ...hookList(routeOptions.preParsing), onRoutePreParsing] as RouteOptions['preParsing']
        routeOptions.preValidation = [onPreValidation, ...hookList(routeOptions.preValidation)] as RouteOptions['preValidation']
        routeOptions.onSend = [onSend, ...hookList(routeOptions.onSend)] as RouteOptions['onSend']
      })
    }
  }
}
