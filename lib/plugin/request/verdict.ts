// A request's verdict: the body judged from its digests (trailers included), or the request abandoned with nothing
// verified; either ends the verification once ('judged') and wakes a waiting reply (docs/design.md, "Request
// verification").
import type { FastifyRequest } from 'fastify'
import type { FieldVerification } from '../../../types/index'
import { readClaims, type Claim } from '../../core/claims'
import { DECODABLE_CODINGS, decodeWhole, decodingOrder } from '../../core/content-decoding'
import type { BodyStream } from '../../core/body-stream'
import { digestTexts } from '../../core/algorithms'
import { textsOf, type Texts } from '../../core/compare'
import type { DigestResults, EndCheck, MultiDigester } from '../../core/digest-stream'
import {
  FST_DIGEST_CONTENT_TOO_LARGE, FST_DIGEST_INCOMPLETE, FST_DIGEST_INVALID_ENCODING, FST_DIGEST_TRAILER_UNANNOUNCED,
  FST_DIGEST_UNREAD_TOO_LARGE, FST_DIGEST_UNSUPPORTED_ENCODING
} from '../../core/errors'
import {
  blankFailure, check, fieldList, judge as judgeClaims, NO_DIGESTS, type DigestError, type Failure
} from '../../core/problem'
import { kVerification } from '../symbols'
import type { Verification } from './verification-state'

// After a body left unread the connection closes; not named on HTTP/2, which forbids connection-specific fields (RFC
// 9113 §8.2.2).
const CLOSE = Object.freeze({ connection: 'close' })
export const closeFor = (request: FastifyRequest): typeof CLOSE | undefined =>
  request.raw.httpVersionMajor === 2 ? undefined : CLOSE

/**
 * The 415 of digests of decoded content whose codings nothing decodes, naming those decoded here (RFC 9110 §15.5.16).
 */
export function undecodable (state: Verification): Failure {
  const error = new FST_DIGEST_UNSUPPORTED_ENCODING(state.wanted.decodedFields, state.coding)
  const accepted = DECODABLE_CODINGS.filter((c) => c !== 'x-gzip').join(', ')
  return blankFailure(state.params, error, { 'accept-encoding': accepted })
}

/** The digests of the decoded content, as base64 text. Throws why there are none. */
function decodedDigests (request: FastifyRequest, state: Verification): Texts {
  const { decoded, decodedFields } = state.wanted
  if (decoded.size === 0) return NO_DIGESTS
  if (state.bytes === 0) return digestTexts(decoded, Buffer.alloc(0))
  let failure: 'too-large' | 'invalid' | null
  if (state.tap === null && state.keeper !== null) {
    // A kept body decoded whole (its codings' decodingOrder(), as the side decoder's), capped at the route's bodyLimit.
    const order = decodingOrder(state.coding as string) as string[]
    const bytes = state.keeper.whole(unreadKept(request, state))
    try {
      return digestTexts(decoded, decodeWhole(order, bytes, state.limit, false))
    } catch (err) {
      failure = (err as { code?: unknown }).code === 'ERR_BUFFER_TOO_LARGE' ? 'too-large' : 'invalid'
    }
  } else {
    const decoder = state.side ?? state.last as BodyStream
    failure = decoder.failure
    if (failure === null) return textsOf(decoder.digests as DigestResults)
  }
  if (failure === 'too-large') throw new FST_DIGEST_CONTENT_TOO_LARGE(decodedFields, String(state.limit))
  throw new FST_DIGEST_INVALID_ENCODING(decodedFields, state.coding)
}

// A trailer digest in an enabled algorithm that nothing hashed (its field not announced in the Trailer field, RFC 9110
// §6.6.2, and not named in the header section) cannot be checked: refused, never passed as unchecked.
function refuseUnhashed (claims: readonly Claim[], state: Verification): void {
  const { received, decoded } = state.wanted
  const unhashed = claims.filter((claim) => state.params.algorithms.some((algorithm) =>
    claim.received.has(algorithm) && !(claim.decoded ? decoded : received).has(algorithm)))
  if (unhashed.length === 0) return
  const names = fieldList(unhashed.map((claim) => claim.field))
  throw new FST_DIGEST_TRAILER_UNANNOUNCED(names, names)
}

// The claims of the header section and of the trailer section (RFC 9110 §6.5), the latter checked as refuseUnhashed()
// says. node:http and node:http2 keep an empty rawTrailers list without one (lib/_http_incoming.js,
// lib/internal/http2/compat.js), where reading `trailers` would build an object; light-my-request has neither.
function claimsOf (request: FastifyRequest, state: Verification): readonly Claim[] {
  const raw = request.raw as { rawTrailers?: unknown[], trailers?: Record<string, string> }
  if (raw.rawTrailers?.length === 0 || raw.trailers === undefined) return state.claims
  const claims = readClaims(raw.trailers, state.params, state.coding)
  refuseUnhashed(claims, state)
  return state.claims.concat(claims)
}

// Behind another stream, what it left unread of request.raw is not what was parsed: left out of a kept body, as a head
// stream (which hashes what that stream reads) would.
const unreadKept = (request: FastifyRequest, state: Verification): number =>
  state.last === null ? 0 : request.raw.readableLength

/** The digests of the bytes received, as base64 text: the tap's, the keeper's or the head stream's. */
function receivedDigests (request: FastifyRequest, state: Verification): Texts {
  // More bytes than the Content-Length (light-my-request may push them; node's parsers do not) were not all kept:
  // fails closed.
  if (state.keeper?.chunks === null) throw new FST_DIGEST_INCOMPLETE()
  if (state.tap !== null) return textsOf(state.tap.digests as DigestResults)
  if (state.keeper !== null) {
    const received = state.wanted.received
    return received.size === 0 ? NO_DIGESTS : digestTexts(received, state.keeper.whole(unreadKept(request, state)))
  }
  const head = state.head as BodyStream
  head.digests ??= (head.hasher as MultiDigester).digest()
  return textsOf(head.digests)
}

/** The failure of the whole body, or null; sets request.digestVerification. */
function judgeBody (request: FastifyRequest, state: Verification): Failure | null {
  const { params } = state
  const bytes = state.bytes
  let fields: FieldVerification[] = []
  let failure: Failure | null
  try {
    const received = receivedDigests(request, state)
    if (state.tap?.failure === 'too-large') {
      const names = fieldList(state.claims.map((c) => c.field)) || 'Content-Digest'
      throw Object.assign(new FST_DIGEST_UNREAD_TOO_LARGE(names, String(state.limit)), { headers: closeFor(request) })
    }
    const decoded = decodedDigests(request, state)
    const claims = claimsOf(request, state)
    fields = check(claims, params, received, decoded)
    // Under 'required' an empty body needs no digest.
    failure = judgeClaims(claims, fields, params, params.verify === 'required' && bytes > 0)
  } catch (err) {
    failure = blankFailure(params, err as DigestError, (err as DigestError).headers)
  }
  if (failure !== null) request[kVerification] = { verified: false, reason: 'failed', fields }
  else if (fields.some((f) => f.ok)) request[kVerification] = { verified: true, fields }
  else request[kVerification] = { verified: false, reason: bytes === 0 ? 'no-body' : 'no-digest', fields }
  return failure
}

/** 'judged' with `failure`; `release` ends the stream, or fails it while 'reading'; then a waiting reply goes on. */
function conclude (state: Verification, failure: Failure | null, release?: Parameters<EndCheck>[0]): void {
  const reading = state.phase === 'reading'
  state.phase = 'judged'
  state.failure = failure
  release?.(failure !== null && reading ? failure : null)
  state.onJudged?.()
}

/** The verdict of the body, at the end of the bytes hashed; `release` as in conclude(). Judged once. */
export function judge (request: FastifyRequest, state: Verification, release?: Parameters<EndCheck>[0]): void {
  if (state.phase === 'judged') return release?.()
  conclude(state, judgeBody(request, state), release)
}

/** Nothing verified (the body cut off, or not decodable): `failure` answers a waiting reply (null: none to answer). */
export function abandon (request: FastifyRequest, state: Verification, failure: Failure | null): void {
  if (state.phase === 'judged') return
  request[kVerification] = { verified: false, reason: 'failed', fields: [] }
  conclude(state, failure)
}

/** The end check of a request's last stream or tap: the verdict. */
export function checkAtEnd (request: FastifyRequest, state: Verification): EndCheck {
  return (release) => judge(request, state, release)
}

/** Empty content needs no decoding (every digest is of the empty string): judged at the end of the bytes received. */
export function onHeadEnd (request: FastifyRequest, state: Verification): EndCheck {
  return (callback) => {
    if (state.bytes > 0) return callback()
    judge(request, state, (err) => {
      callback()
      if (err != null) state.last?.destroy(err)
    })
  }
}
