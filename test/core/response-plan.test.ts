// What a response carries (lib/core/response-plan.ts), as a table: one row per
// case, the request's facts, the route's options and the payload's facts in,
// the plan out. The hooks only execute it; the other response tests show
// they do, over real servers. That the plan imports no fastify is
// test/package/architecture.test.ts's check of the whole core.
import { generateKeyPairSync } from 'node:crypto'
import { setFlagsFromString } from 'node:v8'
import { test } from 'tap'
import type { DigestAlgorithm, FastifyDigestFieldsOptions, RouteDigestOptions } from '../../types/index'
import { normalizeOptions, normalizeRouteOptions } from '../../lib/plugin/plugin-options'
import { PLAN_FIELDS, planDelivery, planFields, union, type Delivery, type FieldPlan, type PayloadFacts, type RequestFacts, type Transport } from '../../lib/core/response-plan'

/** The request's fields, with how they travel for the payload in place of their precondition. */
function planResponse (request: RequestFacts, params: ReturnType<typeof normalizeOptions>, payload: PayloadFacts): (FieldPlan & Delivery) | null {
  const fields = planFields(request, params)
  return fields === null ? null : { ...fields, ...planDelivery(fields, payload) }
}

const A = Buffer.alloc(32, 0xaa)
const B64 = A.toString('base64')

interface Expected {
  content?: DigestAlgorithm[]
  repr?: DigestAlgorithm[]
  unencoded?: DigestAlgorithm[]
  /** The precondition's algorithms, or null. */
  precondition?: DigestAlgorithm[] | null
  preconditionAlgorithm?: DigestAlgorithm
  reprNeeded?: DigestAlgorithm[]
  identityNeeded?: DigestAlgorithm[]
  shared?: DigestAlgorithm[] | null
  transport?: Transport
  partial?: boolean
  head?: boolean
  trailers?: boolean
  strict?: boolean
  fileIdentity?: DigestAlgorithm[]
  coded?: DigestAlgorithm[]
  /** Hashed over a content that is not the identity representation. */
  contentHashed?: DigestAlgorithm[]
  /** The representation's digests are the content's. */
  reprFrom?: 'content' | 'identity' | 'sent'
  /** The SRI signatures' labels. */
  signatures?: string[]
}

interface Row {
  name: string
  plugin?: FastifyDigestFieldsOptions
  route?: RouteDigestOptions
  request?: RequestRow
  payload?: Partial<PayloadFacts>
  /** null: no digest field at all (only Vary). */
  expect: Expected | null
}

const BOTH = { contentDigest: 'sha-256', reprDigest: 'sha-256' } as const
const STRICT = { strict: true, ...BOTH } as const
const TE = { te: 'trailers' }
const STREAM = { kind: 'stream' } as const
const LIVE = { kind: 'live' } as const

const SRI_KEY = generateKeyPairSync('ed25519')
const SRI: FastifyDigestFieldsOptions = { integrityKeys: SRI_KEY.privateKey }
const SRI_KEYID = SRI_KEY.publicKey.export({ format: 'der', type: 'spki' }).subarray(-32).toString('base64')
const ASK = { acceptSignature: `sig0=("unencoded-digest";sf);keyid="${SRI_KEYID}";tag="ed25519-integrity"` }

const TABLE: Row[] = [
  // Default mode, nothing configured, nothing asked: only Vary.
  { name: 'defaults, no Want-*', expect: null },
  { name: 'defaults, a HEAD', request: { method: 'HEAD' }, expect: null },
  { name: 'defaults, a stream', payload: STREAM, expect: null },
  // Unsolicited configuration.
  {
    name: 'unsolicited both: one shared value, headers, identity hashed',
    plugin: BOTH,
    expect: {
      content: ['sha-256'],
      repr: ['sha-256'],
      unencoded: [],
      precondition: null,
      reprNeeded: ['sha-256'],
      shared: ['sha-256'],
      transport: 'headers',
      partial: false,
      head: false,
      trailers: false,
      strict: false,
      identityNeeded: ['sha-256'],
      fileIdentity: ['sha-256'],
      coded: [],
      contentHashed: ['sha-256'],
      reprFrom: 'identity'
    }
  },
  { name: 'unsolicited Content-Digest only', plugin: { contentDigest: true }, expect: { content: ['sha-256'], repr: [], shared: ['sha-256'], reprNeeded: [] } },
  { name: 'unsolicited Repr-Digest only', plugin: { reprDigest: 'sha-512' }, expect: { content: [], repr: ['sha-512'], shared: ['sha-512'] } },
  { name: 'unsolicited, different sets: no shared value', plugin: { contentDigest: 'sha-256', reprDigest: 'sha-512' }, expect: { content: ['sha-256'], repr: ['sha-512'], shared: null } },
  { name: 'unsolicited on the plugin, off on the route', plugin: BOTH, route: { contentDigest: false, reprDigest: false }, expect: null },
  { name: 'unsolicited on the route only', route: { reprDigest: true }, expect: { content: [], repr: ['sha-256'] } },
  // Want-* weights (RFC 9530 §4).
  { name: 'Want-Repr-Digest picks the highest weight', request: { wantReprDigest: 'sha-256=1, sha-512=5' }, expect: { content: [], repr: ['sha-512'] } },
  { name: 'Want-Content-Digest alone', request: { wantContentDigest: 'sha-256=3' }, expect: { content: ['sha-256'], repr: [] } },
  { name: 'Want-* weight 0 refuses the unsolicited algorithm: the next enabled one, in the field without a Want-* too', plugin: BOTH, request: { wantReprDigest: 'sha-256=0' }, expect: { content: ['sha-512'], repr: ['sha-512'] } },
  { name: 'Want-* weight 0 on both: the next enabled one in both', plugin: BOTH, request: { wantContentDigest: 'sha-256=0', wantReprDigest: 'sha-256=0' }, expect: { content: ['sha-512'], repr: ['sha-512'], shared: ['sha-512'] } },
  { name: 'Want-* weight 0 for every enabled algorithm: nothing', plugin: BOTH, request: { wantContentDigest: 'sha-256=0, sha-512=0', wantReprDigest: 'sha-512=0, sha-256=0' }, expect: null },
  { name: 'Want-* weight 0 and nothing unsolicited: nothing', request: { wantContentDigest: 'sha-256=0' }, expect: null },
  { name: 'Want-Content-Digest picks for Repr-Digest too when it has no Want-* of its own (exchange 1)', plugin: BOTH, request: { wantContentDigest: 'sha-512=2' }, expect: { content: ['sha-512'], repr: ['sha-512'], shared: ['sha-512'] } },
  { name: 'Want-Repr-Digest picks for Content-Digest too when it has no Want-* of its own (exchange 5)', plugin: BOTH, request: { wantReprDigest: 'sha-512=10' }, expect: { content: ['sha-512'], repr: ['sha-512'], shared: ['sha-512'] } },
  { name: 'each field follows its own Want-* when both are sent', plugin: BOTH, request: { wantContentDigest: 'sha-512=2', wantReprDigest: 'sha-256=1' }, expect: { content: ['sha-512'], repr: ['sha-256'], shared: null } },
  { name: 'an invalid Want-* is none: the field follows the other field\'s', plugin: BOTH, request: { wantContentDigest: 'sha-512=11', wantReprDigest: 'sha-512=1' }, expect: { content: ['sha-512'], repr: ['sha-512'] } },
  { name: 'the other field\'s Want-* makes no field appear that is not sent unsolicited', request: { wantReprDigest: 'sha-512=10' }, expect: { content: [], repr: ['sha-512'] } },
  { name: 'Want-* for an algorithm not enabled', request: { wantReprDigest: 'md5=9' }, expect: null },
  { name: 'Want-* unparseable: ignored', plugin: BOTH, request: { wantReprDigest: '(((' }, expect: { content: ['sha-256'], repr: ['sha-256'] } },
  // HEAD, 206, no content.
  { name: 'HEAD: headers, no content', plugin: BOTH, request: { method: 'HEAD' }, expect: { head: true, transport: 'headers', partial: false } },
  { name: 'HEAD of a stream: read first (buffer), never trailers', plugin: BOTH, request: { method: 'HEAD', ...TE }, payload: STREAM, expect: { head: true, trailers: true, transport: 'buffer' } },
  { name: '206 of bytes', plugin: BOTH, payload: { status: 206 }, expect: { partial: true, transport: 'headers' } },
  { name: '206 of a stream with TE: trailers', plugin: BOTH, request: TE, payload: { ...STREAM, status: 206 }, expect: { partial: true, transport: 'trailers' } },
  { name: '204: only a declared Repr-Digest', plugin: BOTH, payload: { status: 204 }, expect: { transport: 'declared', partial: false } },
  { name: '304 of a stream: only a declared Repr-Digest', plugin: BOTH, request: TE, payload: { ...STREAM, status: 304 }, expect: { transport: 'declared' } },
  { name: '1xx: only a declared Repr-Digest', plugin: BOTH, payload: { status: 103 }, expect: { transport: 'declared' } },
  // Streams and trailers (RFC 9530 §2, §3; RFC 9110 §10.1.4).
  { name: 'a stream without TE: buffered', plugin: BOTH, payload: STREAM, expect: { trailers: false, transport: 'buffer' } },
  { name: 'a stream with TE: trailers', plugin: BOTH, request: TE, payload: STREAM, expect: { trailers: true, transport: 'trailers' } },
  { name: 'TE with parameters and other members', plugin: BOTH, request: { te: 'gzip;q=0.5, trailers' }, payload: STREAM, expect: { trailers: true, transport: 'trailers' } },
  { name: 'TE without trailers', plugin: BOTH, request: { te: 'gzip' }, payload: STREAM, expect: { trailers: false, transport: 'buffer' } },
  { name: 'TE as a list of values (not one string)', plugin: BOTH, request: { te: ['trailers'] }, payload: STREAM, expect: { trailers: false } },
  { name: 'trailers disabled on the plugin', plugin: { ...BOTH, trailers: false }, request: TE, payload: STREAM, expect: { trailers: false, transport: 'buffer' } },
  { name: 'trailers disabled on the route', plugin: BOTH, route: { trailers: false }, request: TE, payload: STREAM, expect: { trailers: false, transport: 'buffer' } },
  { name: 'HTTP/1.0 never gets trailers', plugin: BOTH, request: { ...TE, httpVersion: '1.0' }, payload: STREAM, expect: { trailers: false, transport: 'buffer' } },
  { name: 'HTTP/2 gets trailers', plugin: BOTH, request: { ...TE, httpVersion: '2.0' }, payload: STREAM, expect: { trailers: true, transport: 'trailers' } },
  // Live streams.
  { name: 'a live stream with TE: trailers', plugin: BOTH, request: TE, payload: LIVE, expect: { transport: 'trailers' } },
  { name: 'a live stream without TE: omitted', plugin: BOTH, payload: LIVE, expect: { transport: 'none' } },
  { name: 'HEAD of a live stream, even with TE: omitted', plugin: BOTH, request: { method: 'HEAD', ...TE }, payload: LIVE, expect: { transport: 'none' } },
  { name: 'a live stream with a precondition: not evaluated, trailers', plugin: BOTH, request: { reprDigest: `sha-256=:${B64}:`, ...TE }, payload: LIVE, expect: { precondition: null, transport: 'trailers' } },
  { name: 'HEAD of a live stream with a precondition: kept (declared digests decide)', plugin: BOTH, request: { method: 'HEAD', reprDigest: `sha-256=:${B64}:` }, payload: LIVE, expect: { precondition: ['sha-256'], transport: 'none' } },
  // The 406 precondition.
  {
    name: 'precondition alone: Repr-Digest computed for it, no field unsolicited',
    request: { reprDigest: `sha-512=:${Buffer.alloc(64).toString('base64')}:` },
    expect: { content: [], repr: [], precondition: ['sha-512'], preconditionAlgorithm: 'sha-256', reprNeeded: ['sha-512', 'sha-256'], shared: null }
  },
  { name: 'precondition on HEAD', request: { method: 'HEAD', reprDigest: `sha-256=:${B64}:` }, expect: { precondition: ['sha-256'], head: true } },
  { name: 'precondition holds a stream back even with TE', plugin: BOTH, request: { reprDigest: `sha-256=:${B64}:`, ...TE }, payload: STREAM, expect: { precondition: ['sha-256'], transport: 'buffer', shared: null } },
  { name: 'precondition on a POST: none', plugin: BOTH, request: { method: 'POST', reprDigest: `sha-256=:${B64}:` }, expect: { precondition: null } },
  { name: 'precondition unparseable: ignored', plugin: BOTH, request: { reprDigest: 'sha-256=not a byte sequence' }, expect: { precondition: null, shared: ['sha-256'] } },
  { name: 'precondition unparseable, nothing else: nothing', request: { reprDigest: '(((' }, expect: null },
  { name: 'precondition of algorithms not enabled: none', request: { reprDigest: `md5=:${Buffer.alloc(16).toString('base64')}:` }, expect: null },
  { name: 'precondition with conditional off on the route', route: { conditional: false }, request: { reprDigest: `sha-256=:${B64}:` }, expect: null },
  { name: 'precondition with conditional off on the plugin', plugin: { conditional: false }, request: { reprDigest: `sha-256=:${B64}:` }, expect: null },
  { name: 'the 406\'s algorithm without sha-256: the server\'s first', plugin: { algorithms: ['sha-512'] }, request: { reprDigest: `sha-512=:${Buffer.alloc(64).toString('base64')}:` }, expect: { preconditionAlgorithm: 'sha-512', reprNeeded: ['sha-512'] } },
  // Strict mode (RFC 9530 §3: the representation includes its content coding).
  { name: 'strict: the representation is the coded content', plugin: STRICT, expect: { strict: true, identityNeeded: [], fileIdentity: [], coded: ['sha-256'], unencoded: [], shared: ['sha-256'], reprFrom: 'content' } },
  { name: 'strict HEAD: the representation is not the (absent) content', plugin: STRICT, request: { method: 'HEAD' }, expect: { head: true, reprFrom: 'sent', contentHashed: ['sha-256'] } },
  { name: 'strict with a precondition: coded includes its algorithms', plugin: STRICT, request: { reprDigest: `sha-512=:${Buffer.alloc(64).toString('base64')}:` }, expect: { coded: ['sha-256', 'sha-512'], reprNeeded: ['sha-256', 'sha-512'] } },
  { name: 'strict, a wanted Repr-Digest: hashed with the content', plugin: { strict: true }, request: { wantContentDigest: 'sha-256=1', wantReprDigest: 'sha-512=1' }, expect: { contentHashed: ['sha-256', 'sha-512'] } },
  { name: 'strict 206: the content is only the part', plugin: { strict: true }, request: { wantContentDigest: 'sha-256=1', wantReprDigest: 'sha-512=1' }, payload: { status: 206 }, expect: { partial: true, contentHashed: ['sha-256'], reprFrom: 'sent' } },
  // The one value every field of the usual response shares (lib/plugin/response/hooks.ts), or none.
  { name: 'unixsum Repr-Digest and Unencoded-Digest: written unlike, no shared value', plugin: { algorithms: ['unixsum'], reprDigest: true, unencodedDigest: true }, expect: { shared: null } },
  { name: 'strict unixsum: Byte Sequences, one value', plugin: { strict: true, algorithms: ['unixsum'], unencodedDigest: true }, expect: { shared: ['unixsum'] } },
  { name: 'Unencoded-Digest of another algorithm: no shared value', plugin: { reprDigest: 'sha-256', unencodedDigest: 'sha-512' }, expect: { shared: null } },
  { name: 'all three fields alike: one value', plugin: { ...BOTH, unencodedDigest: true }, expect: { shared: ['sha-256'] } },
  { name: 'different sets: no shared value', plugin: { contentDigest: 'sha-256', reprDigest: 'sha-512' }, expect: { shared: null } },
  { name: 'signed unasked: a sha-2 Unencoded-Digest, one value', plugin: { integrityKeys: SRI_KEY.privateKey, integritySignature: true, algorithms: ['md5', 'sha-512'], unencodedDigest: 'md5' }, expect: { unencoded: ['sha-512'], shared: ['sha-512'], signatures: ['sig0'] } },
  { name: 'keys, not asked: nothing signed', plugin: { integrityKeys: SRI_KEY.privateKey, reprDigest: 'sha-256' }, expect: { unencoded: [], shared: ['sha-256'], signatures: [] } },
  { name: 'keys, asked: Unencoded-Digest too, one value', plugin: { integrityKeys: SRI_KEY.privateKey, reprDigest: 'sha-256' }, request: ASK, expect: { unencoded: ['sha-256'], shared: ['sha-256'], signatures: ['sig0'] } },
  { name: 'md5 Repr-Digest, asked: sha-256 Unencoded-Digest, no shared value', plugin: { integrityKeys: SRI_KEY.privateKey, algorithms: ['md5', 'sha-256'], reprDigest: 'md5' }, request: ASK, expect: { unencoded: ['sha-256'], shared: null } },
  { name: 'default mode: the content hashed for Content-Digest only', request: { wantContentDigest: 'sha-256=1', wantReprDigest: 'sha-512=1' }, expect: { coded: [], contentHashed: ['sha-256'] } },
  {
    name: 'strict with unencodedDigest: Unencoded-Digest of the identity, one value while nothing codes the bytes',
    plugin: { ...STRICT, unencodedDigest: true },
    expect: { strict: true, fileIdentity: ['sha-256'], coded: ['sha-256'], unencoded: ['sha-256'], identityNeeded: ['sha-256'], shared: ['sha-256'] }
  },
  { name: 'strict, unencodedDigest alone: sent alone', plugin: { strict: true, unencodedDigest: true }, expect: { content: [], repr: [], unencoded: ['sha-256'], identityNeeded: ['sha-256'], fileIdentity: ['sha-256'], coded: [], shared: ['sha-256'] } },
  { name: 'strict, unencodedDigest with another Repr-Digest: the identity hashed for it only', plugin: { strict: true, reprDigest: 'sha-256', unencodedDigest: 'sha-512' }, expect: { repr: ['sha-256'], unencoded: ['sha-512'], identityNeeded: ['sha-512'], fileIdentity: ['sha-512'], coded: ['sha-256'], shared: null } },
  { name: 'strict HEAD: the identity hashed for both', plugin: { strict: true, reprDigest: 'sha-256', unencodedDigest: 'sha-512' }, request: { method: 'HEAD' }, expect: { identityNeeded: ['sha-256', 'sha-512'] } },
  { name: 'strict: Unencoded-Digest unixsum shares the (Byte Sequence) value', plugin: { strict: true, algorithms: ['unixsum'], reprDigest: true, unencodedDigest: true }, expect: { shared: ['unixsum'] } },
  // Unencoded-Digest (draft-ietf-httpbis-unencoded-digest) in the default mode: the identity representation's digests.
  { name: 'unencodedDigest alone', plugin: { unencodedDigest: true }, expect: { content: [], repr: [], unencoded: ['sha-256'], reprNeeded: [], identityNeeded: ['sha-256'], fileIdentity: ['sha-256'], shared: ['sha-256'] } },
  { name: 'Repr-Digest and Unencoded-Digest: one value', plugin: { reprDigest: true, unencodedDigest: true }, expect: { repr: ['sha-256'], unencoded: ['sha-256'], identityNeeded: ['sha-256'], shared: ['sha-256'] } },
  { name: 'all three fields: one value', plugin: { ...BOTH, unencodedDigest: 'sha-256' }, expect: { shared: ['sha-256'] } },
  { name: 'Unencoded-Digest with other algorithms: no shared value, both hashed over the identity', plugin: { reprDigest: 'sha-256', unencodedDigest: ['sha-256', 'sha-512'] }, expect: { unencoded: ['sha-256', 'sha-512'], identityNeeded: ['sha-256', 'sha-512'], shared: null } },
  { name: 'Unencoded-Digest unixsum is written unlike Repr-Digest\'s: no shared value', plugin: { algorithms: ['unixsum'], reprDigest: true, unencodedDigest: true }, expect: { shared: null } },
  { name: 'unencodedDigest on the route only', route: { unencodedDigest: 'sha-512' }, expect: { unencoded: ['sha-512'] } },
  { name: 'unencodedDigest off on the route', plugin: { unencodedDigest: true }, route: { unencodedDigest: false }, expect: null },
  { name: 'Want-Unencoded-Digest alone', request: { wantUnencodedDigest: 'sha-256=1, sha-512=4' }, expect: { content: [], repr: [], unencoded: ['sha-512'] } },
  { name: 'Want-Unencoded-Digest replaces the unsolicited algorithm', plugin: { unencodedDigest: true }, request: { wantUnencodedDigest: 'sha-512=1' }, expect: { unencoded: ['sha-512'] } },
  { name: 'Want-Unencoded-Digest weight 0: the unsolicited field falls back to another enabled algorithm', plugin: { unencodedDigest: true }, request: { wantUnencodedDigest: 'sha-256=0' }, expect: { unencoded: ['sha-512'] } },
  { name: 'Want-Unencoded-Digest weight 0 for one of two: the other kept', plugin: { unencodedDigest: ['sha-256', 'sha-512'] }, request: { wantUnencodedDigest: 'sha-512=0' }, expect: { unencoded: ['sha-256'] } },
  { name: 'Want-Unencoded-Digest refusing every algorithm: none', plugin: { unencodedDigest: true }, request: { wantUnencodedDigest: 'sha-256=0, sha-512=0' }, expect: null },
  { name: 'Want-Unencoded-Digest weight 0, nothing unsolicited: none', request: { wantUnencodedDigest: 'sha-256=0' }, expect: null },
  { name: 'Want-Unencoded-Digest steers no other field', plugin: BOTH, request: { wantUnencodedDigest: 'sha-512=9' }, expect: { content: ['sha-256'], repr: ['sha-256'], unencoded: ['sha-512'], shared: null } },
  { name: 'the other fields\' Want-* steer no Unencoded-Digest', plugin: { unencodedDigest: true }, request: { wantContentDigest: 'sha-512=9', wantReprDigest: 'sha-512=9' }, expect: { content: ['sha-512'], repr: ['sha-512'], unencoded: ['sha-256'] } },
  { name: 'Want-Unencoded-Digest unparseable: ignored', plugin: { unencodedDigest: true }, request: { wantUnencodedDigest: 'sha-256=11' }, expect: { unencoded: ['sha-256'] } },
  { name: 'Want-Unencoded-Digest for an algorithm not enabled', request: { wantUnencodedDigest: 'md5=9' }, expect: null },
  { name: 'HEAD with Unencoded-Digest: the identity hashed', plugin: { unencodedDigest: true }, request: { method: 'HEAD' }, expect: { head: true, identityNeeded: ['sha-256'] } },
  { name: '204 with Unencoded-Digest: only a declared one', plugin: { unencodedDigest: true }, payload: { status: 204 }, expect: { transport: 'declared' } },
  { name: 'a stream with Unencoded-Digest and TE: trailers', plugin: { unencodedDigest: true }, request: TE, payload: STREAM, expect: { transport: 'trailers' } },
  { name: 'precondition with Unencoded-Digest: its algorithms hashed over the identity too', plugin: { unencodedDigest: 'sha-512' }, request: { reprDigest: `sha-256=:${B64}:` }, expect: { reprNeeded: ['sha-256'], identityNeeded: ['sha-256', 'sha-512'], shared: null } },
  { name: 'strict live stream without TE: omitted as in the default mode', plugin: STRICT, payload: LIVE, expect: { strict: true, transport: 'none' } },
  { name: 'SRI: Accept-Signature for a held key: Unencoded-Digest sha-256', plugin: SRI, request: ASK, expect: { content: [], repr: [], unencoded: ['sha-256'], signatures: ['sig0'], transport: 'headers' } },
  { name: 'SRI: a stream is buffered, not sent with trailers', plugin: SRI, request: { ...ASK, ...TE }, payload: STREAM, expect: { trailers: false, transport: 'buffer', signatures: ['sig0'] } },
  { name: 'SRI: Want-Unencoded-Digest md5 becomes sha-256', plugin: { ...SRI, algorithms: ['md5', 'sha-256'] }, request: { ...ASK, wantUnencodedDigest: 'md5=10' }, expect: { unencoded: ['sha-256'] } },
  { name: 'SRI: no Accept-Signature, nothing configured: no fields', plugin: SRI, expect: null },
  { name: 'SRI: a live stream: omitted', plugin: SRI, request: ASK, payload: LIVE, expect: { transport: 'none', signatures: ['sig0'] } },
  { name: 'SRI: unsolicited on the route', plugin: SRI, route: { integritySignature: { label: 'own' } }, expect: { unencoded: ['sha-256'], signatures: ['own'] } }
]

/** A row's request: its method and HTTP version, and its fields by name. */
interface RequestRow {
  method?: string
  httpVersion?: string
  wantContentDigest?: string
  wantReprDigest?: string
  wantUnencodedDigest?: string
  reprDigest?: string
  te?: string | string[]
  acceptSignature?: string
}

const FIELD_NAMES: Record<string, string> = {
  wantContentDigest: 'want-content-digest',
  wantReprDigest: 'want-repr-digest',
  wantUnencodedDigest: 'want-unencoded-digest',
  reprDigest: 'repr-digest',
  te: 'te',
  acceptSignature: 'accept-signature'
}

function factsOf ({ method = 'GET', httpVersion = '1.1', ...fields }: RequestRow = {}): RequestFacts {
  return { method, httpVersion, headers: Object.fromEntries(Object.entries(fields).map(([k, v]) => [FIELD_NAMES[k] as string, v])) }
}

/** The plan's parts a row names. */
function project (plan: FieldPlan & Delivery, expected: Expected): Expected {
  const all: Required<Expected> = {
    content: [...plan.content],
    repr: [...plan.repr],
    unencoded: [...plan.unencoded],
    precondition: plan.precondition === null ? null : [...plan.precondition.keys()],
    preconditionAlgorithm: plan.preconditionAlgorithm,
    reprNeeded: [...plan.reprNeeded],
    identityNeeded: [...plan.identityNeeded],
    shared: plan.shared === null ? null : [...plan.shared],
    transport: plan.transport,
    partial: plan.partial,
    head: plan.head,
    trailers: plan.trailers,
    strict: plan.strict,
    fileIdentity: [...plan.fileIdentity],
    coded: [...plan.coded],
    contentHashed: [...plan.contentHashed],
    reprFrom: plan.reprFrom,
    signatures: plan.signatures.map((s) => s.label)
  }
  return Object.fromEntries(Object.keys(expected).map((key) => [key, all[key as keyof Expected]]))
}

test('the response plan, row by row', async (t) => {
  for (const row of TABLE) {
    const global = normalizeOptions(row.plugin)
    const params = normalizeRouteOptions(global, { method: 'GET', url: '/', digest: row.route } as never) ?? global
    const payload: PayloadFacts = { kind: 'bytes', status: 200, ...row.payload }
    const plan = planResponse(factsOf(row.request), params, payload)
    if (row.expect === null) {
      t.equal(plan, null, row.name)
    } else if (plan === null) {
      t.fail(`${row.name}: no plan`)
    } else {
      t.same(project(plan, row.expect), row.expect, row.name)
    }
  }
})

test('union: the first list itself when the second adds nothing (no allocation)', async (t) => {
  const a: DigestAlgorithm[] = ['sha-256']
  t.equal(union(a, []), a)
  t.equal(union(a, ['sha-256']), a)
  t.same(union(a, ['sha-512', 'sha-256']), ['sha-256', 'sha-512'])
  t.same(a, ['sha-256'], 'never mutated')
})

test('plans of two responses share hidden classes', async (t) => {
  // A plan made with fresh hidden classes each time (Node 20's V8 gives an
  // object spread's copy one, and each property added to it another) makes
  // every response build classes at run time, and every read of a plan miss
  // its inline caches.
  setFlagsFromString('--allow-natives-syntax')
  // eslint-disable-next-line no-new-func
  const sameClass = new Function('a', 'b', 'return %HaveSameMap(a, b)') as (a: unknown, b: unknown) => boolean
  const params = normalizeOptions(BOTH)
  const payload: PayloadFacts = { kind: 'bytes', status: 200 }
  const [one, two] = [planFields(factsOf(), params), planFields(factsOf(), params)] as [FieldPlan, FieldPlan]
  t.equal(sameClass(one, two), true, 'the fields')
  t.equal(sameClass(planDelivery(one, payload), planDelivery(two, { ...payload, kind: 'stream' })), true, 'their delivery')
})

// The usual-plan cache (lib/plugin/response/hooks.ts) checks the fields of PLAN_FIELDS: planFields reads those and no
// other, whatever the options (here all of them on, on a GET and a HEAD).
test('planFields reads the request fields PLAN_FIELDS declares, and no other', async (t) => {
  const key = generateKeyPairSync('ed25519')
  const params = normalizeOptions({
    contentDigest: true, reprDigest: true, unencodedDigest: true, trailers: true, integrityKeys: key.privateKey
  })
  const values: Record<string, string> = {
    'want-content-digest': 'sha-512=5',
    'want-repr-digest': 'sha-512=5',
    'want-unencoded-digest': 'sha-512=5',
    'repr-digest': `sha-256=:${Buffer.alloc(32).toString('base64')}:`,
    te: 'trailers',
    'accept-signature': 'sig0=("unencoded-digest";sf);keyid="x";tag="ed25519-integrity"'
  }
  const read = new Set<string | symbol>()
  const headers = new Proxy(values, { get (target, name) { read.add(name); return target[name as string] } })
  for (const method of ['GET', 'HEAD']) planFields({ method, httpVersion: '1.1', headers }, params)
  t.same([...read].sort(), [...PLAN_FIELDS].sort())
})
