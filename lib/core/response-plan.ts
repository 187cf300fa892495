// What a response carries, and in which mode (docs/design.md, "Two digests per response" to "Live streams"), and the
// 406 rule. Pure: the request's facts (planFields), then the payload's (planDelivery).
import type { DigestAlgorithm, WantMap } from '../../types/index'
import type { DigestParams } from './option-checks'
import { FST_DIGEST_STALE_REPRESENTATION } from './errors'
import { parseDigestField, parseWantField, writtenAlike } from './fields'
import { blankProblem } from './problem'
import { digestsEqual } from './compare'
import { selectAlgorithms } from './negotiation'
import { NO_SIGNATURES, requestedSignatures, signaturesFor, sriAlgorithms, type IntegritySignature } from './integrity'

export const NONE: readonly DigestAlgorithm[] = []

/** `a`, then the algorithms of `b` not in it; `a` itself when `b` adds nothing (no allocation). */
export function union (a: readonly DigestAlgorithm[], b: readonly DigestAlgorithm[]): readonly DigestAlgorithm[] {
  let out: DigestAlgorithm[] | null = null
  for (const algorithm of b) if (!(out ?? a).includes(algorithm)) (out ??= [...a]).push(algorithm)
  return out ?? a
}

export function sameList (a: readonly DigestAlgorithm[], b: readonly DigestAlgorithm[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i])
}

// The one value of every field when the bytes sent are the uncoded representation: one set of
// algorithms, written alike (Unencoded-Digest: Byte Sequences, draft-ietf-httpbis-unencoded-digest §3).
function sharedAlgorithms (
  content: readonly DigestAlgorithm[],
  repr: readonly DigestAlgorithm[],
  unencoded: readonly DigestAlgorithm[],
  strict: boolean
): readonly DigestAlgorithm[] | null {
  const algs = content.length > 0 ? content : repr
  if (repr.length > 0 && !sameList(algs, repr)) return null
  if (unencoded.length === 0) return algs
  if (algs.length > 0 && !sameList(algs, unencoded)) return null
  return strict || writtenAlike(unencoded) ? unencoded : null
}

/** A Content-Encoding that applies no coding (absent, or only `identity`, RFC 9110 §8.4.1). */
export function uncoded (encoding: unknown): boolean {
  // Several field lines (an array) read as one list: String() joins them with commas.
  if (encoding === undefined) return true
  return String(encoding).split(',').every((c) => ['', 'identity'].includes(c.trim().toLowerCase()))
}

/** A status whose response has no content (RFC 9110 §15.2, §15.3.5, §15.4.5). */
export function noContentStatus (status: number): boolean {
  return status < 200 || status === 204 || status === 304
}

// The 406 rule (docs/design.md): a GET or HEAD whose Repr-Digest names another representation
// than the current one gets 406 with the current Repr-Digest (the plugin's own: RFC 9530 leaves it open).
const stale = new FST_DIGEST_STALE_REPRESENTATION()
/** The 406's content: RFC 9457 problem details, `about:blank` as the plugin's other problems (problem.ts). */
export const STALE_PROBLEM: Buffer = Buffer.from(JSON.stringify(blankProblem(406, stale.code, stale.message)))

/** The request's Repr-Digest members for the enabled algorithms. */
export type Precondition = ReadonlyMap<DigestAlgorithm, Buffer>

/** The precondition of a GET or HEAD, or null (none, none usable, or unparseable). */
function preconditionOf (
  method: string, header: string | string[] | undefined, algorithms: readonly DigestAlgorithm[]
): Precondition | null {
  if (header === undefined || (method !== 'GET' && method !== 'HEAD')) return null
  let received
  try {
    received = parseDigestField(header, 'Repr-Digest')
  } catch {
    return null // unparseable: ignored (RFC 8941 §4.2)
  }
  if (received === null) return null
  const out = new Map<DigestAlgorithm, Buffer>()
  for (const a of algorithms) {
    const v = received.get(a)
    if (v !== undefined) out.set(a, v)
  }
  return out.size > 0 ? out : null
}

// Whether a response whose representation has the digests `repr` fails: a member names another
// value. Only a 2xx stands for the current representation; a member whose digest is unknown decides nothing.
export function preconditionFails (
  precondition: Precondition | null, status: number, repr: ReadonlyMap<DigestAlgorithm, Buffer> | null
): boolean {
  if (precondition === null || repr === null || status < 200 || status > 299) return false
  for (const [a, expected] of precondition) {
    const actual = repr.get(a)
    if (actual === undefined) return false
    if (!digestsEqual(actual, expected)) return true
  }
  return false
}

// Whether a streamed response is live (consumed as it arrives, never held back): the route's `live`,
// else its media type in `liveTypes`: a type, a `type/*` range, or `*/*` (RFC 9110 §12.5.1).
export function isLiveStream (live: boolean | null, liveTypes: ReadonlySet<string>, contentType: unknown): boolean {
  if (live !== null) return live
  if (liveTypes.size === 0) return false
  const value = Array.isArray(contentType) ? contentType[0] : contentType
  // The media type, lowercase, without parameters (RFC 9110 §8.3.1).
  const type = typeof value === 'string' ? (value.split(';', 1)[0] as string).trim().toLowerCase() : ''
  if (liveTypes.has(type) || liveTypes.has('*/*')) return true
  const slash = type.indexOf('/')
  return slash > 0 && liveTypes.has(`${type.slice(0, slash)}/*`)
}

/** The request's header fields planFields() reads, and only these: the usual-plan cache checks each (hooks.ts). */
export const PLAN_FIELDS = [
  'want-content-digest', 'want-repr-digest', 'want-unencoded-digest', 'repr-digest', 'te', 'accept-signature'
] as const

export interface RequestFacts {
  readonly method: string
  readonly httpVersion: string
  /** A field not in PLAN_FIELDS cannot be read (a type error). */
  readonly headers: Readonly<Partial<Record<typeof PLAN_FIELDS[number], string | string[]>>>
}

/** The fields a response carries, from the request and the route alone: each field's algorithms (empty: no field). */
export interface FieldPlan {
  readonly content: readonly DigestAlgorithm[]
  readonly repr: readonly DigestAlgorithm[]
  readonly unencoded: readonly DigestAlgorithm[]
  /** The 406 rule's precondition (enabled members), and the algorithm of a 406's Repr-Digest. */
  readonly precondition: Precondition | null
  readonly preconditionAlgorithm: DigestAlgorithm
  /** Hashed over the representation (Repr-Digest's, the precondition's), and over the identity one. */
  readonly reprNeeded: readonly DigestAlgorithm[]
  readonly identityNeeded: readonly DigestAlgorithm[]
  /** The one value of every field when the bytes sent are the uncoded representation (sharedAlgorithms). */
  readonly shared: readonly DigestAlgorithm[] | null
  /**
   * The representation is the content as sent, coding included; every digest a Byte Sequence (RFC 9530 §3;
   * docs/design.md, "Default mode and strict mode").
   */
  readonly strict: boolean
  /** Hashed over a @fastify/static response's identity file. */
  readonly fileIdentity: readonly DigestAlgorithm[]
  /** Representation algorithms hashed with a full response's content (strict: they are one). */
  readonly coded: readonly DigestAlgorithm[]
  readonly head: boolean
  /** The client accepts trailers and the route sends them (RFC 9110 §6.5, §10.1.4); never with a signature. */
  readonly trailers: boolean
  /** SRI signatures over Unencoded-Digest (lib/core/integrity.ts). */
  readonly signatures: readonly IntegritySignature[]
}

/** A string, a Buffer or no payload; a stream; a live stream (isLiveStream). */
export interface PayloadFacts {
  readonly kind: 'bytes' | 'stream' | 'live'
  readonly status: number
}

/**
 * headers (bytes hashed first), trailers (RFC 9530 §2), buffer (up to maxBufferSize), declared (no content), none
 * (a live stream's fields omitted).
 */
export type Transport = 'headers' | 'trailers' | 'buffer' | 'declared' | 'none'

/** How a response's planned fields travel, once its payload is known (planDelivery). */
export interface Delivery {
  readonly transport: Transport
  /** The plan's precondition, but for a live stream's GET, which decides none. */
  readonly precondition: Precondition | null
  /** A 206: the part's Content-Digest, the whole representation's Repr-Digest (RFC 9530 §3, B.3). */
  readonly partial: boolean
  /** Hashed over the content: Content-Digest's, and a strict full response's representation ones. */
  readonly contentHashed: readonly DigestAlgorithm[]
  /**
   * The representation's digests: the content's (strict, full), the identity one's (default), as sent (strict HEAD,
   * 206).
   */
  readonly reprFrom: 'content' | 'identity' | 'sent'
}

// RFC 9110 §10.1.4: TE's list, "trailers" among its members.
const TE_TRAILERS = /(?:^|,)\s*trailers\s*(?:[,;]|$)/i

/** Fastify sends trailers to anyone, even forcing chunked on HTTP/1.0: only when the client accepts them. */
function trailersAllowed (request: RequestFacts, params: DigestParams): boolean {
  const te = request.headers.te
  return params.trailers && request.httpVersion !== '1.0' && typeof te === 'string' && TE_TRAILERS.test(te)
}

// A field's algorithms: by its valid Want-* (RFC 9530 §4); without one, by `other` (the other field's) when it is sent
// unsolicited, so that a PUT with Want-Repr-Digest gets Content-Digest and Repr-Digest in the algorithm asked
// (docs/design.md, "Negotiation", and its exchanges 1 and 5); else the configured ones.
function selected (
  own: WantMap | null, other: WantMap | null, unsolicited: readonly DigestAlgorithm[], params: DigestParams
): readonly DigestAlgorithm[] {
  const want = own ?? (unsolicited.length > 0 ? other : null)
  return want === null ? unsolicited : selectAlgorithms({ algorithms: params.algorithms, want, unsolicited })
}

/** A route's unsolicited Unencoded-Digest algorithms when signed, worked out once per route. */
const SIGNED_UNENCODED = new WeakMap<DigestParams, readonly DigestAlgorithm[]>()

function signedUnencoded (params: DigestParams): readonly DigestAlgorithm[] {
  let algs = SIGNED_UNENCODED.get(params)
  if (algs === undefined) SIGNED_UNENCODED.set(params, algs = sriAlgorithms(params.unencodedDigest, params.algorithms))
  return algs
}

/** The fields for this request on this route, or null when it carries none (only Vary is added). */
export function planFields (request: RequestFacts, params: DigestParams): FieldPlan | null {
  const h = request.headers
  const wantContent = parseWantField(h['want-content-digest'])
  const wantRepr = parseWantField(h['want-repr-digest'])
  const content = selected(wantContent, wantRepr, params.contentDigest, params)
  const repr = selected(wantRepr, wantContent, params.reprDigest, params)
  const signatures = params.integrityKeys.size === 0
    ? NO_SIGNATURES
    : signaturesFor(requestedSignatures(h['accept-signature'], params.integrityKeys), params.integritySignature)
  // A signed Unencoded-Digest carries sha-256 / sha-512 only, and always (WICG signature-based-sri).
  const wanted = selected(parseWantField(h['want-unencoded-digest']), null, params.unencodedDigest, params)
  const unencoded = signatures.length === 0
    ? wanted
    : wanted === params.unencodedDigest ? signedUnencoded(params) : sriAlgorithms(wanted, params.algorithms)
  const precondition = params.conditional ? preconditionOf(request.method, h['repr-digest'], params.algorithms) : null
  if (content.length === 0 && repr.length === 0 && unencoded.length === 0 && precondition === null) return null
  // The 406's Repr-Digest: sha-256, else the server's first.
  const preconditionAlgorithm = params.algorithms.includes('sha-256')
    ? 'sha-256'
    : params.algorithms[0] as DigestAlgorithm
  const reprNeeded = union(repr, precondition === null ? NONE : [...precondition.keys(), preconditionAlgorithm])
  const head = request.method === 'HEAD'
  const strict = params.strict
  const identityNeeded = strict && !head ? unencoded : union(reprNeeded, unencoded)
  const shared = precondition === null ? sharedAlgorithms(content, repr, unencoded, strict) : null
  // The signature covers Unencoded-Digest in the header section: a stream is buffered instead.
  const trailers = signatures.length === 0 && trailersAllowed(request, params)
  return {
    content,
    repr,
    unencoded,
    precondition,
    preconditionAlgorithm,
    reprNeeded,
    identityNeeded,
    shared,
    strict,
    fileIdentity: strict ? unencoded : identityNeeded,
    coded: strict ? reprNeeded : NONE,
    head,
    trailers,
    signatures
  }
}

/** How the planned fields travel for a payload. */
function transportOf (fields: FieldPlan, payload: PayloadFacts): Transport {
  if (noContentStatus(payload.status)) return 'declared'
  if (payload.kind === 'bytes') return 'headers'
  // A live stream is never held back; its HEAD is answered without reading it (fastify lib/reply.js sendStream
  // destroys it).
  if (payload.kind === 'live') return !fields.head && fields.trailers ? 'trailers' : 'none'
  // A HEAD has no content to carry trailers; a precondition is decided before sending: buffered.
  return !fields.head && fields.trailers && fields.precondition === null ? 'trailers' : 'buffer'
}

/** How the planned fields travel for this payload. */
export function planDelivery (fields: FieldPlan, payload: PayloadFacts): Delivery {
  const partial = payload.status === 206
  const transport = transportOf(fields, payload)
  // A live stream's GET precondition is not decided.
  const live = transport !== 'declared' && payload.kind === 'live'
  return {
    transport,
    precondition: live && !fields.head ? null : fields.precondition,
    partial,
    contentHashed: union(fields.content, partial ? NONE : fields.coded),
    reprFrom: !fields.strict ? 'identity' : !partial && !fields.head ? 'content' : 'sent'
  }
}
