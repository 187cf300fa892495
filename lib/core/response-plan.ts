// What a response carries, decided in one place (docs/design.md, "Two
// digests per response", "Default mode and strict mode", "Unencoded-Digest", "Negotiation",
// "The 406 rule", "HEAD and 206", "Streams and trailers", "Live streams").
//
// Pure: facts in, a plan out; no fastify, no I/O. The hooks gather the facts
// and execute the plan. It is made in two steps because the facts come in
// two steps: the request's (planFields: which fields, which algorithms,
// which precondition), known before the payload is looked at, then the
// payload's (planDelivery: headers, trailers, a buffer or nothing, and why).
// planResponse() is both at once.
//
// Strict mode versus the default mode is decided here and nowhere else: the
// rest reads the plan (`mode`, `contentHashed`, `reprOfContent`).
import type { DigestAlgorithm, DigestOmission, WantMap } from '../../types/index'
import type { DigestParams } from './digest-params'
import { fieldWriter, parseWantField, writtenAlike, type FieldWriter } from './fields'
import { selectAlgorithms } from './negotiation'
import { preconditionAlgorithm, preconditionOf, type Precondition } from './precondition'
import { NO_SIGNATURES, requestedSignatures, signaturesFor, sriAlgorithms, type IntegrityKeys, type IntegritySignature } from './integrity'

/** No algorithm (shared: never mutated). */
export const NONE: readonly DigestAlgorithm[] = []

/**
 * The algorithms of `a` (a list without repeats), then those of `b` not
 * already listed. Runs for every response, usually with `b` empty or adding
 * nothing: `a` itself is then returned, without allocating.
 */
export function union (a: readonly DigestAlgorithm[], b: readonly DigestAlgorithm[]): readonly DigestAlgorithm[] {
  let out: DigestAlgorithm[] | null = null
  for (let i = 0; i < b.length; i++) {
    const algorithm = b[i] as DigestAlgorithm
    if (!(out ?? a).includes(algorithm)) (out ??= [...a]).push(algorithm)
  }
  return out ?? a
}

export function sameList (a: readonly DigestAlgorithm[], b: readonly DigestAlgorithm[]): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

/**
 * The algorithms of the one value Content-Digest and Repr-Digest both carry
 * when they ask for the same set (or one asks for none), else null.
 */
export function oneValue (contentAlgs: readonly DigestAlgorithm[], reprAlgs: readonly DigestAlgorithm[]): readonly DigestAlgorithm[] | null {
  if (contentAlgs.length === 0) return reprAlgs
  return reprAlgs.length === 0 || sameList(contentAlgs, reprAlgs) ? contentAlgs : null
}

/**
 * The algorithms of the one value Content-Digest, Repr-Digest and
 * Unencoded-Digest carry when a full response's unchanged, uncoded bytes are
 * only sent (nothing compares them, the fields ask for the same set or none),
 * else null. Unencoded-Digest is always written as Byte Sequences, so it
 * shares the value only when the fields are written alike.
 */
function sharedAlgorithms (
  content: readonly DigestAlgorithm[], repr: readonly DigestAlgorithm[], unencoded: readonly DigestAlgorithm[], strict: boolean
): readonly DigestAlgorithm[] | null {
  const algs = oneValue(content, repr)
  if (algs === null || unencoded.length === 0) return algs
  const all = oneValue(algs, unencoded)
  return all !== null && (strict || writtenAlike(all)) ? all : null
}

/**
 * Whether a Content-Encoding value applies no content coding (absent, or
 * only `identity`, RFC 9110 §8.4.1): the bytes are then the unencoded
 * representation.
 */
export function uncoded (encoding: unknown): boolean {
  if (encoding === undefined) return true
  // Several field lines (an array) read as one list: String() joins them with commas.
  for (const coding of String(encoding).split(',')) {
    const name = coding.trim().toLowerCase()
    if (name !== '' && name !== 'identity') return false
  }
  return true
}

/**
 * Unencoded-Digest's algorithms. Only Want-Unencoded-Digest counts (RFC 9530
 * §4, which the draft's §4 applies): its highest-weighted candidate, else the
 * unsolicited algorithms it did not refuse (weight 0), else, when it refused
 * every one of them, the first enabled algorithm it did not refuse.
 */
function unencodedAlgorithms (want: WantMap | null, params: DigestParams): readonly DigestAlgorithm[] {
  return want === null
    ? params.unencodedDigest
    : selectAlgorithms({ algorithms: params.algorithms, want, unsolicited: params.unencodedDigest })
}

/** A status whose response has no content (RFC 9110 §15.2, §15.3.5, §15.4.5). */
export function noContentStatus (status: number): boolean {
  return status < 200 || status === 204 || status === 304
}

/** What the request says (header values as fastify parsed them). */
export interface RequestFacts {
  readonly method: string
  readonly wantContentDigest: string | string[] | undefined
  readonly wantReprDigest: string | string[] | undefined
  readonly wantUnencodedDigest: string | string[] | undefined
  /** The request's Repr-Digest: on a GET or HEAD, a precondition (the 406 rule). */
  readonly reprDigest: string | string[] | undefined
  readonly te: string | string[] | undefined
  readonly httpVersion: string
  /** What signatures the client asks for (RFC 9421 §5.1; signature-based SRI). */
  readonly acceptSignature: string | string[] | undefined
}

/**
 * How the representation relates to the content (RFC 9530 §3; docs/design.md,
 * "Default mode and strict mode").
 */
export interface Mode {
  /** Strict: the representation is the content as sent, coding included (and its digests are serialized as RFC 9530 says for every algorithm). */
  readonly strict: boolean
  /**
   * Whether a full response's identity representation (before content
   * coding) is hashed (`identityNeeded`): it is the Repr-Digest and the
   * Unencoded-Digest in the default mode, only the Unencoded-Digest in
   * strict mode.
   */
  readonly identity: boolean
  /** Algorithms hashed over the identity file of a @fastify/static response. */
  readonly fileIdentity: readonly DigestAlgorithm[]
  /** Algorithms of the representation hashed with the content of a full response (strict mode: they are one). */
  readonly coded: readonly DigestAlgorithm[]
}

/** The fields a response carries, from the request and the route alone. */
export interface FieldPlan {
  /** Content-Digest's algorithms (empty: no field). */
  readonly content: readonly DigestAlgorithm[]
  /** Repr-Digest's algorithms (empty: no field). */
  readonly repr: readonly DigestAlgorithm[]
  /** Unencoded-Digest's algorithms (empty: no field). */
  readonly unencoded: readonly DigestAlgorithm[]
  /** The precondition to evaluate (the 406 rule), enabled members only. */
  readonly precondition: Precondition | null
  /** The algorithm of a 406 response's Repr-Digest. */
  readonly preconditionAlgorithm: DigestAlgorithm
  /** Algorithms computed over the representation: Repr-Digest's and the precondition's. */
  readonly reprNeeded: readonly DigestAlgorithm[]
  /**
   * Algorithms computed over the identity representation (before content
   * coding): Unencoded-Digest's, and Repr-Digest's and the precondition's
   * except for a strict-mode full response (whose representation is its
   * coded content).
   */
  readonly identityNeeded: readonly DigestAlgorithm[]
  /** Both fields' one value when the bytes sent are the representation (sharedAlgorithms), unless something is declared. */
  readonly shared: readonly DigestAlgorithm[] | null
  readonly mode: Mode
  readonly head: boolean
  /** The client accepts trailers and the route sends them (RFC 9110 §6.5, §10.1.4); never with a signature. */
  readonly trailers: boolean
  /** SRI signatures over Unencoded-Digest (lib/core/integrity.ts); empty: none. */
  readonly signatures: readonly IntegritySignature[]
}

/** What the payload is, as the representation stage sees it. */
export interface PayloadFacts {
  /** A string or Buffer, no payload at all, or a stream. */
  readonly kind: 'bytes' | 'none' | 'stream'
  /** A stream consumed as it arrives (lib/core/live-streams.ts). */
  readonly live: boolean
  readonly status: number
}

/**
 * How the digests travel:
 * * 'headers': a string, a Buffer or no payload, hashed before it is sent;
 * * 'trailers': a stream hashed as it flows (RFC 9530 §2, §3);
 * * 'buffer': a stream held back up to maxBufferSize, then as headers (or
 *   omitted, 'over-max-buffer-size'); a HEAD's stream is read, not sent;
 * * 'declared': no content (1xx, 204, 304): only a declared Repr-Digest;
 * * 'none': left out, for `omitted`.
 */
export type Transport = 'headers' | 'trailers' | 'buffer' | 'declared' | 'none'

export interface ResponsePlan extends FieldPlan {
  readonly transport: Transport
  /** Why wanted fields are left out, when it is known before sending. */
  readonly omitted: DigestOmission['reason'] | null
  /** A 206: the part's Content-Digest, the whole representation's Repr-Digest (RFC 9530 §3, B.3). */
  readonly partial: boolean
  /**
   * Algorithms hashed over the content when it is not the identity
   * representation: Content-Digest's, and in strict mode a full response's
   * representation ones (the representation is the content as sent).
   */
  readonly contentHashed: readonly DigestAlgorithm[]
  /**
   * The representation's digests are the content's: strict mode, a full
   * response (not a HEAD, not a 206). Otherwise they do not depend on the
   * content sent, so a file's are known before sending.
   */
  readonly reprOfContent: boolean
}

// RFC 9110 §10.1.4: TE's list, "trailers" among its members.
const TE_TRAILERS = /(?:^|,)\s*trailers\s*(?:[,;]|$)/i

/**
 * Fastify sends trailers to anyone (and forces chunked on HTTP/1.0): they are
 * only used when the client said it accepts them (RFC 9110 §10.1.4).
 */
function trailersAllowed (request: RequestFacts, params: DigestParams): boolean {
  if (!params.trailers || request.httpVersion === '1.0') return false
  return typeof request.te === 'string' && TE_TRAILERS.test(request.te)
}

function modeOf (strict: boolean, unencoded: readonly DigestAlgorithm[], reprNeeded: readonly DigestAlgorithm[], identityNeeded: readonly DigestAlgorithm[]): Mode {
  if (!strict) return { strict: false, identity: true, fileIdentity: identityNeeded, coded: NONE }
  return { strict: true, identity: unencoded.length > 0, fileIdentity: unencoded, coded: reprNeeded }
}

/**
 * The fields for this request on this route, or null when it carries none
 * (only Vary is added).
 */
export function planFields (request: RequestFacts, params: DigestParams): FieldPlan | null {
  const wantContent = parseWantField(request.wantContentDigest)
  const wantRepr = parseWantField(request.wantReprDigest)
  // Each field follows its own Want-* only (RFC 9530 §4). Without one,
  // selection gives the unsolicited algorithms as configured (validated as
  // enabled ones, in server order): skip it, as most requests carry none.
  const content = wantContent === null
    ? params.contentDigest
    : selectAlgorithms({ algorithms: params.algorithms, want: wantContent, unsolicited: params.contentDigest })
  const repr = wantRepr === null
    ? params.reprDigest
    : selectAlgorithms({ algorithms: params.algorithms, want: wantRepr, unsolicited: params.reprDigest })
  const signatures = params.integrityKeys.size === 0
    ? NO_SIGNATURES
    : signaturesFor(requestedSignatures(request.acceptSignature, params.integrityKeys), params.integritySignature)
  // A signed Unencoded-Digest carries sha-256 / sha-512 only, and always (WICG signature-based-sri).
  const wanted = unencodedAlgorithms(parseWantField(request.wantUnencodedDigest), params)
  const unencoded = signatures.length === 0 ? wanted : sriAlgorithms(wanted, params.algorithms)
  const precondition = params.conditional ? preconditionOf(request.method, request.reprDigest, params.algorithms) : null
  if (content.length === 0 && repr.length === 0 && unencoded.length === 0 && precondition === null) return null
  const algorithm = preconditionAlgorithm(params.algorithms)
  const reprNeeded = union(repr, precondition === null ? NONE : [...precondition.keys(), algorithm])
  const head = request.method === 'HEAD'
  const strict = params.strict
  const identityNeeded = strict && !head ? unencoded : union(reprNeeded, unencoded)
  return {
    content,
    repr,
    unencoded,
    precondition,
    preconditionAlgorithm: algorithm,
    reprNeeded,
    identityNeeded,
    shared: precondition === null ? sharedAlgorithms(content, repr, unencoded, strict) : null,
    mode: modeOf(strict, unencoded, reprNeeded, identityNeeded),
    head,
    // The signature covers Unencoded-Digest in the header section: a stream is buffered instead.
    trailers: signatures.length === 0 && trailersAllowed(request, params),
    signatures
  }
}

/** How the planned fields travel for this payload. */
export function planDelivery (fields: FieldPlan, payload: PayloadFacts): ResponsePlan {
  const partial = payload.status === 206
  let transport: Transport = 'headers'
  let omitted: DigestOmission['reason'] | null = null
  let precondition = fields.precondition
  if (noContentStatus(payload.status)) {
    // No content: no Content-Digest; Repr-Digest only when the route declared it.
    transport = 'declared'
  } else if (payload.kind === 'stream' && payload.live) {
    // A live stream is never held back. Its HEAD is answered at once, without
    // reading it (fastify destroys a streamed payload the response did not
    // finish reading, too: lib/reply.js sendStream). A Repr-Digest
    // precondition cannot be evaluated before the stream is sent, so it is
    // not (the 406 rule is the plugin's own, not RFC 9530's: README
    // "Conditional GET"); the digests go as trailers, or not at all.
    if (!fields.head) precondition = null
    transport = !fields.head && fields.trailers ? 'trailers' : 'none'
    if (transport === 'none') omitted = 'live-stream'
  } else if (payload.kind === 'stream') {
    // A HEAD has no content to carry trailers: its stream is read first. A
    // precondition must be decided before anything is sent: buffered.
    transport = !fields.head && fields.trailers && precondition === null ? 'trailers' : 'buffer'
  }
  const contentHashed = union(fields.content, partial ? NONE : fields.mode.coded)
  const reprOfContent = fields.mode.strict && !partial && !fields.head
  // Every member named, no spread: Node 20's V8 gives a spread's copy a new
  // hidden class, and each property added to it another, on every call.
  const { content, repr, unencoded, preconditionAlgorithm, reprNeeded, identityNeeded, shared, mode, head, trailers, signatures } = fields
  return { content, repr, unencoded, precondition, preconditionAlgorithm, reprNeeded, identityNeeded, shared, mode, head, trailers, signatures, transport, omitted, partial, contentHashed, reprOfContent }
}

/** The whole plan: what a response to `request` with `payload` carries on a route with `params`. */
export function planResponse (request: RequestFacts, params: DigestParams, payload: PayloadFacts): ResponsePlan | null {
  const fields = planFields(request, params)
  return fields === null ? null : planDelivery(fields, payload)
}

/**
 * A route's unsolicited fields, worked out once per route: what a usual
 * response (a string or Buffer, no Want-* field, no precondition, nothing
 * declared) carries, every field as one value written in one step. Null when
 * the route's options rule that out: different unsolicited sets for the
 * fields, or an Unencoded-Digest written unlike the others.
 */
export interface Unsolicited {
  /** The route's `conditional` option: a GET's Repr-Digest is then a precondition. */
  readonly conditional: boolean
  readonly write: FieldWriter | null
  readonly content: boolean
  readonly repr: boolean
  /** Unencoded-Digest too: the value stands for it only when the reply sets no Content-Encoding. */
  readonly unencoded: boolean
  /** The route's unsolicited SRI signature over the value (empty: none). */
  readonly signatures: readonly IntegritySignature[]
  /** The plugin's SRI keys (empty: none), which a request's Accept-Signature may ask for. */
  readonly keys: IntegrityKeys
  /**
   * The fields of a usual response signed on request, when the route signs
   * nothing unasked (its Unencoded-Digest is then sha-2 only, and always
   * there); null when they share no value, or there are no keys.
   */
  readonly signed: Unsolicited | null
}

function usualFields (params: DigestParams, signing: boolean): Unsolicited | null {
  const { contentDigest, reprDigest, integritySignature, integrityKeys } = params
  const unencodedDigest = signing ? sriAlgorithms(params.unencodedDigest, params.algorithms) : params.unencodedDigest
  const algs = sharedAlgorithms(contentDigest, reprDigest, unencodedDigest, params.strict)
  if (algs === null) return null
  return {
    conditional: params.conditional,
    write: fieldWriter(algs, params.strict),
    content: contentDigest.length > 0,
    repr: reprDigest.length > 0,
    unencoded: unencodedDigest.length > 0,
    signatures: integritySignature === null ? NO_SIGNATURES : [integritySignature],
    keys: integrityKeys,
    signed: signing || integrityKeys.size === 0 ? null : usualFields(params, true)
  }
}

export function unsolicitedOf (params: DigestParams): Unsolicited | null {
  return usualFields(params, params.integritySignature !== null)
}
