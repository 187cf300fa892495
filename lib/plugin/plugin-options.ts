// Plugin options checked at registration, the `digest` route option when a route is declared,
// by one table of checks; hooks read the frozen params, never re-checked per request.
import type { RegisterOptions, RouteOptions } from 'fastify'
import type {
  DigestAlgorithm, DigestFieldsHook, FastifyDigestFieldsOptions, IntegritySignatureOption, RouteDigestOptions,
  VerifyPolicy
} from '../../types/index'
import { FST_DIGEST_INVALID_OPTION, FST_DIGEST_INVALID_ROUTE_OPTION } from '../core/errors'
import {
  apply, checkAlgorithms, checkBoolean, checkCount, checkOptions, defaultAlgorithms, describe, oneOf, unknownKey,
  type Check, type DigestParams, type Fail, type Table
} from '../core/option-checks'
import { SF_KEY } from '../core/fields'
import {
  heldKeyOf, SRI_ALGORITHMS, unpadded, type HeldKey, type IntegrityKeys, type IntegritySignature
} from '../core/integrity'

/** Unsolicited algorithms: true (the first enabled), false, or enabled ones, kept in server order. */
const checkUnsolicited: Check<readonly DigestAlgorithm[], DigestParams> = (value, name, fail, { algorithms }) => {
  if (value === false) return Object.freeze([])
  if (value === true) return Object.freeze([algorithms[0] as DigestAlgorithm])
  const list: unknown[] = Array.isArray(value) ? value : [value]
  const bad = list.findIndex((key) => !algorithms.includes(key as DigestAlgorithm))
  if (bad !== -1) {
    const expected = `true, false, or algorithms among the enabled ones (${algorithms.join(', ')})`
    throw fail(name, `expected ${expected}, got ${describe(list[bad])}`)
  }
  return Object.freeze(algorithms.filter((a) => list.includes(a)))
}

// RFC 9110 §12.5.1: media-range = "*/*" / ( type "/*" ) / ( type "/" subtype ),
// of tokens (§5.6.2). A "*" anywhere else would never match: refused.
const MEDIA_RANGE = /^(?:\*\/\*|[!#$%&'+.^_`|~0-9a-z-]+\/(?:\*|[!#$%&'+.^_`|~0-9a-z-]+))$/

const checkLiveTypes: Check<ReadonlySet<string>> = (value, name, fail) => {
  if (!Array.isArray(value)) throw fail(name, `expected an array of media types, got ${describe(value)}`)
  return new Set(value.map((type: unknown) => {
    const normalized = typeof type === 'string' ? type.trim().toLowerCase() : ''
    if (!MEDIA_RANGE.test(normalized)) {
      const expected = 'media types or ranges such as "text/event-stream" or "text/*" (no parameters)'
      throw fail(name, `expected ${expected}, got ${describe(type)}`)
    }
    return normalized
  }))
}

/** `integrityKeys`: Ed25519 private keys (KeyObjects or PEM), one or a list, by keyid. */
const checkIntegrityKeys: Check<IntegrityKeys, DigestParams> = (value, name, fail, { algorithms }) => {
  const keys = new Map<string, HeldKey>()
  // An empty list would hold no key and never sign: refused rather than silently inert.
  if (Array.isArray(value) && value.length === 0) {
    throw fail(name, 'expected a key or a non-empty list of keys, got an empty list')
  }
  for (const item of Array.isArray(value) ? value : [value]) {
    const held = heldKeyOf(item)
    if (typeof held === 'string') throw fail(name, held)
    if (keys.has(unpadded(held.keyid))) throw fail(name, `the key ${held.keyid} is listed twice`)
    keys.set(unpadded(held.keyid), held)
  }
  // An Unencoded-Digest signed for SRI carries sha-256 or sha-512 only (WICG signature-based-sri, "valid for SRI").
  if (!algorithms.some((a) => SRI_ALGORITHMS.includes(a))) {
    throw fail(name, 'needs sha-256 or sha-512 among the enabled algorithms: the signed Unencoded-Digest carries them')
  }
  return keys
}

/**
 * `integritySignature`: false, the first held key (`true`), the key of a keyid, or `{ keyid, label }` (label `sig0`).
 */
const checkIntegritySignature: Check<IntegritySignature | null, DigestParams> = (value, name, fail, params) => {
  if (value === false) return null
  const keys = params.integrityKeys
  const given = typeof value === 'object' && value !== null && !Array.isArray(value)
  const option = (given ? value : { keyid: value }) as IntegritySignatureOption
  const unknown = Object.keys(option).find((key) => key !== 'keyid' && key !== 'label')
  if (unknown !== undefined) throw fail(name, `unknown key ${describe(unknown)} (keys: keyid, label)`)
  const label = option.label ?? 'sig0'
  if (typeof label !== 'string' || !SF_KEY.test(label)) {
    throw fail(name, `the label must be a Dictionary key such as "sig0", got ${describe(label)}`)
  }
  const keyid: unknown = option.keyid ?? true
  if (keys.size === 0) throw fail(name, 'needs a key: set integrityKeys')
  const held = keyid === true
    ? keys.values().next().value
    : typeof keyid === 'string' ? keys.get(unpadded(keyid)) : undefined
  if (held === undefined) {
    const keyids = [...keys.values()].map((k) => k.keyid).join(', ')
    throw fail(name, `expected true, false, the keyid of a key of integrityKeys (${keyids}) or { keyid, label }, ` +
      `got ${describe(keyid)}`)
  }
  return Object.freeze({ ...held, label })
}

const checkHook: Check<DigestFieldsHook> = (value, name, fail) => {
  if (typeof value !== 'function') throw fail(name, `expected a function, got ${describe(value)}`)
  return value as DigestFieldsHook
}

const pluginOptions: Table<FastifyDigestFieldsOptions, DigestParams> = {
  algorithms: [checkAlgorithms, defaultAlgorithms],
  contentDigest: [checkUnsolicited, []],
  reprDigest: [checkUnsolicited, []],
  verify: [oneOf<VerifyPolicy>('if-present', 'required', false), 'if-present'],
  strict: [checkBoolean, false],
  unencodedDigest: [checkUnsolicited, []],
  trailers: [checkBoolean, true],
  maxBufferSize: [checkCount('bytes'), 1024 * 1024],
  // Streams that are consumed as they arrive: events, JSON lines, a camera's frames.
  liveTypes: [checkLiveTypes, new Set(['text/event-stream', 'application/x-ndjson', 'application/jsonl',
    'application/json-seq', 'multipart/x-mixed-replace'])],
  conditional: [checkBoolean, true],
  noTransform: [checkBoolean, true],
  legacyDigest: [checkBoolean, false],
  fileCacheSize: [checkCount('files'), 1000],
  fileHashing: [oneOf<'wait' | 'background'>('wait', 'background'), 'wait'],
  fileSidecars: [oneOf<boolean | 'verified'>(true, false, 'verified'), false],
  integrityKeys: [checkIntegrityKeys, new Map()],
  integritySignature: [checkIntegritySignature, null],
  onDigestFields: [checkHook, null]
}

// The `digest` route option: plugin options checked as there, and `live`.
const routeKeys: ReadonlyArray<keyof RouteDigestOptions> = ['contentDigest', 'reprDigest', 'unencodedDigest', 'verify',
  'maxBufferSize', 'conditional', 'noTransform', 'trailers', 'legacyDigest', 'onDigestFields', 'live',
  'integritySignature']
const routeOptions = Object.fromEntries(routeKeys.map((key) =>
  [key, key === 'live' ? [checkBoolean] : pluginOptions[key]]))

// fastify passes its register options to every plugin (fastify docs/Reference/Plugins.md, "Plugin Options"): ignored.
const registerKeys: ReadonlyArray<keyof RegisterOptions> = ['prefix', 'logLevel', 'logSerializers']

const pluginFail: Fail = (name, reason) => new FST_DIGEST_INVALID_OPTION(name, reason)

/** Validate the plugin options; throws FST_DIGEST_INVALID_OPTION naming the option, or a key that is none. */
export function normalizeOptions (opts: FastifyDigestFieldsOptions = {}): DigestParams {
  const params = checkOptions<DigestParams>(opts, pluginOptions, pluginFail, { live: null }, registerKeys)
  // What is hashed in the background, and sidecars (each checked in the background), is kept in the file cache.
  if (params.fileCacheSize === 0 && (params.fileHashing === 'background' || params.fileSidecars !== false)) {
    const name = params.fileSidecars !== false ? 'fileSidecars' : 'fileHashing'
    throw pluginFail(name, 'needs the file cache (fileCacheSize above 0): ' +
      'what is hashed in the background is kept there')
  }
  return params
}

/**
 * The `digest` route option: undefined keeps the plugin's params, false turns it off (null), an object overrides them.
 */
export function normalizeRouteOptions (
  global: DigestParams, { digest: value, method, url }: RouteOptions
): DigestParams | null {
  if (value === undefined) return global
  if (value === false) return null
  const fail: Fail = (name, reason) =>
    new FST_DIGEST_INVALID_ROUTE_OPTION(Array.isArray(method) ? method.join(',') : method, url, `${name}: ${reason}`)
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw fail('digest', `expected an object or false, got ${describe(value)}`)
  }
  const unknown = Object.keys(value).find((key) => !routeKeys.includes(key as never))
  if (unknown !== undefined) {
    throw fail(unknown, Object.hasOwn(pluginOptions, unknown)
      ? `not a route-level option (route options: ${routeKeys.join(', ')})`
      : unknownKey(unknown, routeKeys, 'route options'))
  }
  return apply(global, value, routeOptions, fail)
}
