// The end of the body: the final check of every claim (header fields, and
// trailer fields, RFC 9110 §6.5), run at the end of the source (the tap at
// request.raw) or, when a decoder stands before the parser, at the end of
// the final stream (`tail`); and what the check leaves: the verdict kept
// for preValidation, or raised on the stream the handler reads, and the
// reply that waited for it woken.
import type { FastifyRequest } from 'fastify'
import type { FieldVerification } from '../../../types/index'
import { digestAll, type DigestResults, type EndCheck, type LazyDigestStream } from '../../core/digest-stream'
import { FST_DIGEST_CONTENT_TOO_LARGE, FST_DIGEST_INVALID_ENCODING, FST_DIGEST_MISSING, FST_DIGEST_UNSUPPORTED_ENCODING } from '../../core/errors'
import { readClaims, type Claim } from '../../core/claims'
import { DECODABLE_CODINGS } from '../../core/content-decoding'
import { setVerification } from './digest-verification'
import { blankFailure, check, judge, summarize, NO_DIGESTS, type DigestError, type Failure } from '../../core/judgement'
import type { TapEnd } from '../../core/source-tap'
import { advance, conclude, isSettled, type RequestState } from './phase'

type Release = (err?: Error | null) => void

/** The digests of the decoded content, or why there are none. */
function decodedResults (state: RequestState): DigestResults | Failure {
  const { side, tail, params } = state
  const field = state.decodedFields
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
  return readClaims(trailers, state.params, state.coding)
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
    ? NO_DIGESTS
    : tap.bytes === 0 ? digestAll(state.decodedAlgorithms, Buffer.alloc(0)) : decodedResults(state)
  if (decoded instanceof Map) {
    let claims = state.claims
    try {
      claims = claims.concat(readTrailerClaims(request, state))
    } catch (err) {
      failure = blankFailure(params, err as DigestError)
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
 * preValidation (a parsed body) is kept for it to answer; later (a handler
 * reading the body itself) it is raised on the stream the handler reads.
 */
function finalCheck (request: FastifyRequest, state: RequestState, callback: Release): void {
  if (isSettled(state)) {
    // Judged at the end of the source already (nothing was hashed after it).
    callback()
    return
  }
  const raise = state.phase === 'validated'
  const failure = judgeBody(request, state)
  const waiting = conclude(state, failure)
  if (failure === null || !raise) callback()
  else callback(failure.error)
  waiting?.()
}

/** The end of the bytes as received: the final check, unless `tail` (after a decoder) comes later. */
export function sourceEnded (request: FastifyRequest, state: RequestState, release: Release): void {
  if (state.phase === 'tapping') {
    // The body ended before the route's last preParsing hook ran (an eager
    // reader before it): that hook decides whether `tail` comes.
    state.heldEnd = release
    return
  }
  const tail = state.tail
  if (tail === null) {
    finalCheck(request, state, release)
  } else if (state.tap.bytes === 0 || !state.decodeHere) {
    // Nothing is hashed after request.raw (empty content needs no decoding:
    // every digest is of the empty string): judged now. request.raw ends
    // cleanly, so that the streams after it end too, and a failure reaches
    // the reader through `tail`.
    finalCheck(request, state, (err) => {
      release()
      if (err != null) tail.destroy(err)
    })
  } else {
    release()
  }
}

/**
 * The 415 of digests of the decoded content (a default-mode Repr-Digest, an
 * Unencoded-Digest) whose content codings nothing decodes for the route:
 * they cannot be checked. Names the codings that can be decoded here (RFC
 * 9110 §15.5.16).
 */
export function undecodableFailure (state: RequestState): Failure {
  const error = new FST_DIGEST_UNSUPPORTED_ENCODING(state.decodedFields, state.coding)
  return blankFailure(state.params, error, { 'accept-encoding': DECODABLE_CODINGS.filter((c) => c !== 'x-gzip').join(', ') })
}

/** The route's stream is in place (`routed`): a source end held back meanwhile goes on to its check. */
export function releaseHeldEnd (request: FastifyRequest, state: RequestState): void {
  const heldEnd = state.heldEnd
  if (heldEnd === null) return
  state.heldEnd = null
  sourceEnded(request, state, heldEnd)
}

/**
 * A reply sent before the route's preParsing hooks ran (a route-level
 * onRequest hook after ours answered): no parser and no decoder will read
 * the body, so nothing stands after request.raw. The body is checked as it
 * arrives, but a default-mode Repr-Digest of a coding that is not decoded on
 * the side cannot be checked: that is the verdict at once.
 */
export function routeUnparsed (request: FastifyRequest, state: RequestState): void {
  advance(state, 'routed')
  if (state.decodedAlgorithms.length > 0 && state.side === null) {
    state.tap.stop()
    setVerification(request, { verified: false, reason: 'failed', fields: [] })
    conclude(state, undecodableFailure(state))
    return
  }
  releaseHeldEnd(request, state)
}

/** The rest of the body cannot be checked: the waiting reply gets `error`'s failure. */
export function abandonCheck (request: FastifyRequest, state: RequestState, error: DigestError): void {
  // Over the limit first, then the connection closed: answered already.
  if (isSettled(state)) return
  setVerification(request, { verified: false, reason: 'failed', fields: [] })
  const waiting = conclude(state, blankFailure(state.params, error, { connection: 'close' })) as () => void
  waiting()
}

// The callbacks the streams call at the end are made by these small
// functions, never inside a hook. Measured (docs/benchmarks.md, "Findings",
// scenario 5 with --initial-old-space-size=64): the end-of-body
// check created inside the hook, even one that did nothing and was never
// called, promoted 2.6-3.1 KB per request to the old generation (whole
// in-flight requests with their body chunks) and brought 7-9 mark-compacts
// per 400 requests; the same check made by a small function outside the
// hook: 0.06-0.07 KB and none, as without any check. Why: V8
// allocates a function literal assigned straight to a property in the old
// generation (see source-tap.ts); one returned by a small function is young.

export function onSourceEnd (request: FastifyRequest, state: RequestState): TapEnd {
  return (release) => sourceEnded(request, state, release)
}

export function onTailEnd (request: FastifyRequest, state: RequestState): EndCheck {
  return (callback) => finalCheck(request, state, callback)
}

/**
 * `tail` closed before its end (the decoder failed, or its reader gave up):
 * the decoded digests are missing, so nothing was verified. A reply that
 * waits for the check gets the failure.
 */
export function onTailClose (request: FastifyRequest, state: RequestState): () => void {
  return () => {
    if (isSettled(state)) return
    setVerification(request, { verified: false, reason: 'failed', fields: [] })
    const waiting = conclude(state, null)
    if (waiting === null) return
    state.failure = blankFailure(state.params, new FST_DIGEST_INVALID_ENCODING(state.decodedFields, state.coding))
    waiting()
  }
}
