// Options are validated and normalized once, at registration (plugin options)
// or at route declaration (the `digest` route option). Nothing is re-checked
// per request: hooks read the frozen params built here.
import type { RegisterOptions } from 'fastify'
import type {
  DigestAlgorithm,
  DigestFieldsHook,
  FastifyDigestFieldsOptions,
  IntegritySignatureOption,
  RouteDigestOptions,
  UnsolicitedDigest,
  VerifyPolicy
} from '../../types/index'
import { FST_DIGEST_INVALID_OPTION, FST_DIGEST_INVALID_ROUTE_OPTION } from '../core/errors'
import { nearestKey } from '../core/nearest-key'
import { checkAlgorithms, describe, type Fail } from '../core/option-checks'
import type { DigestParams } from '../core/digest-params'
import { findKey, heldKeyOf, SRI_ALGORITHMS, unpadded, validLabel, type HeldKey, type IntegrityKeys, type IntegritySignature } from '../core/integrity'

export type { DigestParams } from '../core/digest-params'

export const defaultMaxBufferSize = 1024 * 1024
export const defaultFileCacheSize = 1000
/** Streams that are consumed as they arrive: events, JSON lines, a camera's frames. */
export const defaultLiveTypes: readonly string[] = Object.freeze([
  'text/event-stream',
  'application/x-ndjson',
  'application/jsonl',
  'application/json-seq',
  'multipart/x-mixed-replace'
])

const verifyPolicies: readonly unknown[] = ['if-present', 'required', false]

// The plugin options, in one place: every key of FastifyDigestFieldsOptions
// (the contract normalizeOptions() reads its options through), and no other
// key: a Record of them fails to compile when types/index.d.ts gains or loses
// an option and this list does not follow.
const pluginOptionKeys: Readonly<Record<keyof FastifyDigestFieldsOptions, true>> = {
  algorithms: true,
  contentDigest: true,
  reprDigest: true,
  verify: true,
  strict: true,
  unencodedDigest: true,
  trailers: true,
  maxBufferSize: true,
  liveTypes: true,
  conditional: true,
  legacyDigest: true,
  fileCacheSize: true,
  fileHashing: true,
  fileSidecars: true,
  integrityKeys: true,
  integritySignature: true,
  onDigestFields: true
}
const pluginKeys: readonly string[] = Object.keys(pluginOptionKeys)

// fastify passes its own register options (prefix, logLevel, logSerializers)
// to every plugin, fastify-plugin wrapped or not, along with the plugin's
// (fastify docs/Reference/Plugins.md, "Plugin Options"; fastify types/register.d.ts
// RegisterOptions): accepted, and ignored.
const registerKeys = ['prefix', 'logLevel', 'logSerializers'] as const satisfies ReadonlyArray<keyof RegisterOptions>

const acceptedPluginKeys: ReadonlySet<string> = new Set<string>([...pluginKeys, ...registerKeys])

// The route-level subset, every key of RouteDigestOptions (same check).
const routeOptionKeys: Readonly<Record<keyof RouteDigestOptions, true>> = {
  contentDigest: true,
  reprDigest: true,
  unencodedDigest: true,
  verify: true,
  maxBufferSize: true,
  conditional: true,
  trailers: true,
  legacyDigest: true,
  onDigestFields: true,
  live: true,
  integritySignature: true
}
const routeKeys: ReadonlySet<string> = new Set(Object.keys(routeOptionKeys))

function checkBoolean (value: unknown, name: string, fallback: boolean, fail: Fail): boolean {
  if (value === undefined) return fallback
  if (typeof value !== 'boolean') throw fail(name, `expected a boolean, got ${describe(value)}`)
  return value
}

function checkUnsolicited (
  value: unknown, name: string, enabled: readonly DigestAlgorithm[], fallback: readonly DigestAlgorithm[], fail: Fail
): readonly DigestAlgorithm[] {
  if (value === undefined) return fallback
  if (value === false) return Object.freeze([])
  if (value === true) return Object.freeze([enabled[0] as DigestAlgorithm])
  const list: unknown[] = typeof value === 'string' ? [value] : Array.isArray(value) ? value : [value]
  const out: DigestAlgorithm[] = []
  for (const key of list) {
    if (typeof key !== 'string' || !enabled.includes(key as DigestAlgorithm)) {
      throw fail(name, `expected true, false, or algorithms among the enabled ones (${enabled.join(', ')}), got ${describe(key)}`)
    }
    if (!out.includes(key as DigestAlgorithm)) out.push(key as DigestAlgorithm)
  }
  // Keep the server's preference order whatever order the option lists.
  return Object.freeze(enabled.filter((a) => out.includes(a)))
}

function checkVerify (value: unknown, fallback: VerifyPolicy, fail: Fail): VerifyPolicy {
  if (value === undefined) return fallback
  if (!verifyPolicies.includes(value)) {
    throw fail('verify', `expected 'if-present', 'required' or false, got ${describe(value)}`)
  }
  return value as VerifyPolicy
}

function checkSize (value: unknown, fallback: number, fail: Fail, name = 'maxBufferSize', unit = 'bytes'): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw fail(name, `expected a non-negative integer number of ${unit}, got ${describe(value)}`)
  }
  return value
}

// RFC 9110 §12.5.1: media-range = "*/*" / ( type "/*" ) / ( type "/" subtype ),
// type and subtype tokens (§5.6.2, §8.3.1). A "*" anywhere else, though a
// token character, reads as a wildcard that would never match: refused.
const MEDIA_RANGE = /^(?:\*\/\*|[!#$%&'+.^_`|~0-9a-z-]+\/(?:\*|[!#$%&'+.^_`|~0-9a-z-]+))$/

function checkLiveTypes (value: unknown, fail: Fail): ReadonlySet<string> {
  const list = value === undefined ? defaultLiveTypes : value
  if (!Array.isArray(list)) throw fail('liveTypes', `expected an array of media types, got ${describe(list)}`)
  const out = new Set<string>()
  for (const type of list) {
    const normalized = typeof type === 'string' ? type.trim().toLowerCase() : ''
    if (!MEDIA_RANGE.test(normalized)) {
      throw fail('liveTypes', `expected media types or ranges such as "text/event-stream" or "text/*" (no parameters), got ${describe(type)}`)
    }
    out.add(normalized)
  }
  return out
}

const NO_KEYS: IntegrityKeys = new Map()

/** `integrityKeys`: Ed25519 private keys (KeyObjects or PEM), one or a list, by keyid. */
function checkIntegrityKeys (value: unknown, algorithms: readonly DigestAlgorithm[], fail: Fail): IntegrityKeys {
  if (value === undefined) return NO_KEYS
  const keys = new Map<string, HeldKey>()
  for (const item of Array.isArray(value) ? value : [value]) {
    const held = heldKeyOf(item)
    if (typeof held === 'string') throw fail('integrityKeys', held)
    const id = unpadded(held.keyid)
    if (keys.has(id)) throw fail('integrityKeys', `the key ${held.keyid} is listed twice`)
    keys.set(id, held)
  }
  // An Unencoded-Digest signed for SRI carries sha-256 or sha-512 only (WICG signature-based-sri, "valid for SRI").
  if (keys.size > 0 && !algorithms.some((a) => SRI_ALGORITHMS.includes(a))) {
    throw fail('integrityKeys', 'needs sha-256 or sha-512 among the enabled algorithms: the signed Unencoded-Digest carries them')
  }
  return keys
}

/**
 * `integritySignature`: sign without being asked, with the first held key
 * (`true`), the key of a keyid, or `{ keyid, label }` (label default `sig0`).
 */
function checkIntegritySignature (
  value: unknown, keys: IntegrityKeys, fallback: IntegritySignature | null, fail: Fail
): IntegritySignature | null {
  if (value === undefined) return fallback
  if (value === false) return null
  const option = (typeof value === 'object' && value !== null && !Array.isArray(value) ? value : { keyid: value }) as IntegritySignatureOption
  for (const key of Object.keys(option)) {
    if (key !== 'keyid' && key !== 'label') throw fail('integritySignature', `unknown key ${describe(key)} (keys: keyid, label)`)
  }
  const label = option.label ?? 'sig0'
  if (!validLabel(label)) throw fail('integritySignature', `the label must be a Dictionary key such as "sig0", got ${describe(label)}`)
  const keyid: unknown = option.keyid ?? true
  if (keys.size === 0) throw fail('integritySignature', 'needs a key: set integrityKeys')
  let held: HeldKey | undefined
  if (keyid === true) held = keys.values().next().value
  else if (typeof keyid === 'string') held = findKey(keys, keyid)
  if (held === undefined) {
    throw fail('integritySignature', `expected true, false, the keyid of a key of integrityKeys (${[...keys.values()].map((k) => k.keyid).join(', ')}) or { keyid, label }, got ${describe(keyid)}`)
  }
  return Object.freeze({ label, keyid: held.keyid, privateKey: held.privateKey })
}

function checkHook (value: unknown, fallback: DigestFieldsHook | null, fail: Fail): DigestFieldsHook | null {
  if (value === undefined) return fallback
  if (typeof value !== 'function') throw fail('onDigestFields', `expected a function, got ${describe(value)}`)
  return value as DigestFieldsHook
}

const pluginFail: Fail = (name, reason) => new FST_DIGEST_INVALID_OPTION(name, reason)

/** Why `key` is not an option: the nearest of `valid` when it looks like a typo of one. */
function unknownKey (key: string, valid: Iterable<string>, kind: string): string {
  const nearest = nearestKey(key, valid)
  return nearest === undefined
    ? `unknown option (${kind}: ${[...valid].join(', ')})`
    : `unknown option; did you mean ${JSON.stringify(nearest)}?`
}

/**
 * Validate the plugin options; throws FST_DIGEST_INVALID_OPTION naming the
 * option, also for a key that is no option (a typo would otherwise leave the
 * default in place unnoticed).
 */
export function normalizeOptions (opts: FastifyDigestFieldsOptions = {}): DigestParams {
  if (opts === null || typeof opts !== 'object') {
    throw pluginFail('options', `expected an object, got ${describe(opts)}`)
  }
  for (const key of Object.keys(opts)) {
    if (!acceptedPluginKeys.has(key)) throw pluginFail(key, unknownKey(key, pluginKeys, 'options'))
  }
  const algorithms = checkAlgorithms(opts.algorithms, pluginFail)
  const fileCacheSize = checkSize(opts.fileCacheSize, defaultFileCacheSize, pluginFail, 'fileCacheSize', 'files')
  const fileHashing = opts.fileHashing === undefined ? 'wait' : opts.fileHashing
  if (fileHashing !== 'wait' && fileHashing !== 'background') {
    throw pluginFail('fileHashing', `expected 'wait' or 'background', got ${describe(fileHashing)}`)
  }
  const fileSidecars = checkBoolean(opts.fileSidecars, 'fileSidecars', false, pluginFail)
  // Digests hashed in the background, and sidecars (each checked by a
  // background pass), are only of use to later requests through the cache.
  if (fileCacheSize === 0 && (fileHashing === 'background' || fileSidecars)) {
    throw pluginFail(fileSidecars ? 'fileSidecars' : 'fileHashing', 'needs the file cache (fileCacheSize above 0): what is hashed in the background is kept there')
  }
  const integrityKeys = checkIntegrityKeys(opts.integrityKeys, algorithms, pluginFail)
  return Object.freeze({
    algorithms,
    contentDigest: checkUnsolicited(opts.contentDigest, 'contentDigest', algorithms, [], pluginFail),
    reprDigest: checkUnsolicited(opts.reprDigest, 'reprDigest', algorithms, [], pluginFail),
    unencodedDigest: checkUnsolicited(opts.unencodedDigest, 'unencodedDigest', algorithms, [], pluginFail),
    verify: checkVerify(opts.verify, 'if-present', pluginFail),
    strict: checkBoolean(opts.strict, 'strict', false, pluginFail),
    trailers: checkBoolean(opts.trailers, 'trailers', true, pluginFail),
    maxBufferSize: checkSize(opts.maxBufferSize, defaultMaxBufferSize, pluginFail),
    liveTypes: checkLiveTypes(opts.liveTypes, pluginFail),
    live: null,
    conditional: checkBoolean(opts.conditional, 'conditional', true, pluginFail),
    legacyDigest: checkBoolean(opts.legacyDigest, 'legacyDigest', false, pluginFail),
    fileCacheSize,
    fileHashing,
    fileSidecars,
    integrityKeys,
    integritySignature: checkIntegritySignature(opts.integritySignature, integrityKeys, null, pluginFail),
    onDigestFields: checkHook(opts.onDigestFields, null, pluginFail)
  })
}

/**
 * The `digest` route option: `undefined` keeps the plugin's params, `false`
 * turns the plugin off for the route (returns null), an object overrides the
 * route-level subset. Anything else throws FST_DIGEST_INVALID_ROUTE_OPTION.
 */
export function normalizeRouteOptions (
  global: DigestParams, value: unknown, method: string, url: string
): DigestParams | null {
  if (value === undefined) return global
  if (value === false) return null
  const fail: Fail = (name, reason) => new FST_DIGEST_INVALID_ROUTE_OPTION(method, url, `${name}: ${reason}`)
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw fail('digest', `expected an object or false, got ${describe(value)}`)
  }
  const opts = value as RouteDigestOptions
  for (const key of Object.keys(opts)) {
    if (routeKeys.has(key)) continue
    throw fail(key, pluginKeys.includes(key)
      ? `not a route-level option (route options: ${[...routeKeys].join(', ')})`
      : unknownKey(key, routeKeys, 'route options'))
  }
  return Object.freeze({
    ...global,
    contentDigest: checkUnsolicited(opts.contentDigest as UnsolicitedDigest | undefined, 'contentDigest', global.algorithms, global.contentDigest, fail),
    reprDigest: checkUnsolicited(opts.reprDigest as UnsolicitedDigest | undefined, 'reprDigest', global.algorithms, global.reprDigest, fail),
    unencodedDigest: checkUnsolicited(opts.unencodedDigest as UnsolicitedDigest | undefined, 'unencodedDigest', global.algorithms, global.unencodedDigest, fail),
    verify: checkVerify(opts.verify, global.verify, fail),
    trailers: checkBoolean(opts.trailers, 'trailers', global.trailers, fail),
    maxBufferSize: checkSize(opts.maxBufferSize, global.maxBufferSize, fail),
    live: opts.live === undefined ? null : checkBoolean(opts.live, 'live', false, fail),
    conditional: checkBoolean(opts.conditional, 'conditional', global.conditional, fail),
    legacyDigest: checkBoolean(opts.legacyDigest, 'legacyDigest', global.legacyDigest, fail),
    integritySignature: checkIntegritySignature(opts.integritySignature, global.integrityKeys, global.integritySignature, fail),
    onDigestFields: checkHook(opts.onDigestFields, global.onDigestFields, fail)
  })
}
