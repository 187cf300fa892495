// Signature-based SRI: the HTTP Message Signature profile of WICG
// signature-based-sri (index.bs, "The SRI HTTP Message Signature Profile"),
// and nothing more of RFC 9421. `<script integrity="ed25519-KEY">` makes a
// browser send `Accept-Signature: sig0=("unencoded-digest";sf);keyid="KEY";
// tag="ed25519-integrity"` (RFC 9421 §5.1); it runs the script only when an
// Ed25519 signature by KEY over the response's Unencoded-Digest verifies.
// The profile: one component, `"unencoded-digest";sf`, in the header
// section, its members sha-256 / sha-512 only; parameters `keyid` (base64 of
// the raw public key) then `tag`; no `alg` (§7.3.6), no `created`/`expires`
// (a cached response would outlive them); the signature base of §2.5.
// Pure: node:crypto and structured-headers, no fastify.
import { createPrivateKey, createPublicKey, KeyObject, sign } from 'node:crypto'
import { parseDictionary } from 'structured-headers'
import type { DigestAlgorithm } from '../../types/index'

const INTEGRITY_TAG = 'ed25519-integrity'

/** The digest algorithms an Unencoded-Digest signed for SRI may carry that the plugin has. */
export const SRI_ALGORITHMS: readonly DigestAlgorithm[] = Object.freeze(['sha-256', 'sha-512'])

/** An Ed25519 private key the plugin signs with, and its keyid. */
export interface HeldKey {
  /** The base64 (with padding) of the raw 32-byte public key. */
  readonly keyid: string
  readonly privateKey: KeyObject
}

/** Held keys by keyid without its base64 padding. */
export type IntegrityKeys = ReadonlyMap<string, HeldKey>

/** One signature to send: the label it goes under, and the key. */
export interface IntegritySignature {
  readonly label: string
  /** The keyid as the request wrote it (with or without padding), or the held key's. */
  readonly keyid: string
  readonly privateKey: KeyObject
}

/** No signature (shared: never mutated). */
export const NO_SIGNATURES: readonly IntegritySignature[] = Object.freeze([])

const SF_KEY = /^[a-z*][a-z0-9_\-.*]*$/

/** Whether `label` can name a member of Signature-Input (an RFC 8941 Dictionary key). */
export function validLabel (label: unknown): label is string {
  return typeof label === 'string' && SF_KEY.test(label)
}

/** Where a keyid is held in IntegrityKeys: without its base64 padding. */
export function unpadded (keyid: string): string {
  let end = keyid.length
  while (end > 0 && keyid.charCodeAt(end - 1) === 0x3d) end--
  return keyid.slice(0, end)
}

/**
 * An option's key as a held key: a private Ed25519 KeyObject, or its PEM.
 * Returns why it is not one instead.
 */
export function heldKeyOf (value: unknown): HeldKey | string {
  let key: KeyObject
  if (value instanceof KeyObject) {
    key = value
  } else if (typeof value === 'string') {
    try {
      key = createPrivateKey(value)
    } catch (err) {
      let isPublic = false
      try {
        isPublic = createPublicKey(value).type === 'public'
      } catch {}
      return isPublic
        ? 'a public key: the Ed25519 private key is needed to sign'
        : `a string that is no PEM private key (${(err as Error).message})`
    }
  } else {
    return `expected Ed25519 private keys (KeyObjects or PEM strings), got ${value === null ? 'null' : typeof value}`
  }
  if (key.type === 'public') return 'a public key: the Ed25519 private key is needed to sign'
  if (key.asymmetricKeyType !== 'ed25519') return `a ${key.asymmetricKeyType ?? key.type} key, not Ed25519`
  // The keyid: the base64 of the raw 32-byte public key.
  const { x } = createPublicKey(key).export({ format: 'jwk' })
  return { keyid: Buffer.from(x as string, 'base64url').toString('base64'), privateKey: key }
}

/** The held key named by `keyid` (padding optional), if any. */
export function findKey (keys: IntegrityKeys, keyid: string): HeldKey | undefined {
  // A browser echoes the keyid as written (padded): compared, not hashed, first.
  for (const held of keys.values()) if (held.keyid === keyid) return held
  return keys.get(unpadded(keyid))
}

/**
 * The algorithms of a signed Unencoded-Digest: those of `selected` that are
 * sha-256 or sha-512, else the first of them enabled.
 */
export function sriAlgorithms (selected: readonly DigestAlgorithm[], enabled: readonly DigestAlgorithm[]): readonly DigestAlgorithm[] {
  const kept = selected.filter((a) => SRI_ALGORITHMS.includes(a))
  if (kept.length === selected.length && kept.length > 0) return selected
  return kept.length > 0 ? kept : enabled.filter((a) => SRI_ALGORITHMS.includes(a)).slice(0, 1)
}

type Parameters = Map<string, unknown>

/** `("unencoded-digest";sf)`: the profile's one component, with `sf` and no other parameter. */
function profileComponents (value: unknown): boolean {
  if (!Array.isArray(value) || value.length !== 1) return false
  const [name, params] = value[0] as [unknown, Parameters]
  return name === 'unencoded-digest' && params.size === 1 && params.get('sf') === true
}

/**
 * The signatures Accept-Signature asks for (RFC 9421 §5.1) that the profile
 * allows and a held key gives: `("unencoded-digest";sf)` with exactly `keyid`
 * and `tag="ed25519-integrity"`; each key once, under the first label asking
 * for it. A field that does not parse asks for nothing (RFC 9651 §4.2).
 */
export function requestedSignatures (value: string | string[] | undefined, keys: IntegrityKeys): readonly IntegritySignature[] {
  if (value === undefined || keys.size === 0) return NO_SIGNATURES
  if (typeof value === 'string') {
    const quick = browserRequest(value, keys)
    if (quick !== undefined) return quick
  }
  let dictionary: ReturnType<typeof parseDictionary>
  try {
    dictionary = parseDictionary(Array.isArray(value) ? value.join(', ') : value)
  } catch {
    return NO_SIGNATURES
  }
  const out: IntegritySignature[] = []
  for (const [label, [components, params]] of dictionary) {
    if (!profileComponents(components) || params.size !== 2 || params.get('tag') !== INTEGRITY_TAG) continue
    const keyid = params.get('keyid')
    const held = typeof keyid === 'string' ? findKey(keys, keyid) : undefined
    if (held === undefined || out.some((s) => s.privateKey === held.privateKey)) continue
    out.push({ label, keyid: keyid as string, privateKey: held.privateKey })
  }
  return out
}

const MEMBER_START = '=("unencoded-digest";sf);keyid="'
const MEMBER_END = `";tag="${INTEGRITY_TAG}"`

/**
 * requestedSignatures() of the one member a browser sends,
 * `LABEL=("unencoded-digest";sf);keyid="KEY";tag="ed25519-integrity"`, read
 * without the Dictionary parser: undefined for any other text (then parsed).
 * A KEY without `"` or `\` makes it that one member, whatever the label.
 */
function browserRequest (value: string, keys: IntegrityKeys): readonly IntegritySignature[] | undefined {
  const eq = value.indexOf('=')
  if (eq < 1 || !value.startsWith(MEMBER_START, eq) || !value.endsWith(MEMBER_END)) return undefined
  const keyid = value.slice(eq + MEMBER_START.length, value.length - MEMBER_END.length)
  const label = value.slice(0, eq)
  if (keyid.includes('"') || keyid.includes('\\') || !validLabel(label)) return undefined
  const held = findKey(keys, keyid)
  return held === undefined ? NO_SIGNATURES : [{ label, keyid, privateKey: held.privateKey }]
}

/**
 * The signatures a response carries: those asked for, then the route's
 * unsolicited one unless its key or its label is already used by them.
 */
export function signaturesFor (
  requested: readonly IntegritySignature[], unsolicited: IntegritySignature | null
): readonly IntegritySignature[] {
  if (unsolicited === null) return requested
  if (requested.length === 0) return [unsolicited]
  for (const s of requested) if (s.privateKey === unsolicited.privateKey || s.label === unsolicited.label) return requested
  return [...requested, unsolicited]
}

/** How many signatures `signed` keeps (the oldest out first). */
export const SIGNATURE_CACHE_SIZE = 1024

// Ed25519 signatures are deterministic (RFC 8032 §5.1.6): the same resource
// sent again is not signed again. Kept by Unencoded-Digest value, with the
// key and `@signature-params` it was made with.
interface Kept { readonly privateKey: KeyObject, readonly params: string, readonly value: string }
const cache = new Map<string, Kept>()
// The values in the order kept, a ring: the oldest goes out in constant time.
const kept: string[] = []
let oldest = 0

// A value is kept from its second signing on: a response that differs every
// time (a counter, a nonce) is never looked up again, and keeping it would
// only make the garbage collector copy and promote a thousand entries. Each
// slot holds the fingerprint of the last value signed there, in a typed
// array (no object per value). A collision only signs once more.
const SEEN_SLOTS = 4096
const seen = new Int32Array(SEEN_SLOTS)

/** 32 bits of the first digest of an Unencoded-Digest value: its base64 after `sha-256=:` or `sha-512=:` (past the end: 0). */
function fingerprint (unencoded: string): number {
  let h = 0
  for (let i = 9; i < 17; i++) h = (Math.imul(h, 31) + unencoded.charCodeAt(i)) | 0
  return h
}

/** The base64 Ed25519 signature by `privateKey` of the signature base of `unencoded` and `params`. */
export function signed (unencoded: string, params: string, privateKey: KeyObject): string {
  const print = fingerprint(unencoded)
  const slot = print & (SEEN_SLOTS - 1)
  const again = seen[slot] === print
  const hit = again ? cache.get(unencoded) : undefined
  if (hit !== undefined && hit.privateKey === privateKey && hit.params === params) return hit.value
  // The signature base (RFC 9421 §2.5): the value as the plugin writes it is its RFC 8941 serialization (§2.1.1).
  const base = `"unencoded-digest";sf: ${unencoded}\n"@signature-params": ${params}`
  const value = sign(null, Buffer.from(base, 'latin1'), privateKey).toString('base64')
  if (!again) {
    seen[slot] = print
    return value
  }
  if (hit === undefined) {
    const out = kept[oldest]
    if (out !== undefined) cache.delete(out)
    kept[oldest] = unencoded
    oldest = (oldest + 1) % SIGNATURE_CACHE_SIZE
  }
  // Another key or keyid for the same value takes its place.
  cache.set(unencoded, { privateKey, params, value })
  return value
}

/** The Signature-Input and Signature field values for `signatures` over the Unencoded-Digest value `unencoded`. */
export function signatureFields (signatures: readonly IntegritySignature[], unencoded: string): { input: string, signature: string } {
  let input = ''
  let signature = ''
  for (const s of signatures) {
    // The Signature-Input member's value, the `@signature-params` line's.
    const params = `("unencoded-digest";sf);keyid="${s.keyid}${MEMBER_END}`
    const value = signed(unencoded, params, s.privateKey)
    if (input !== '') {
      input += ', '
      signature += ', '
    }
    input += `${s.label}=${params}`
    signature += `${s.label}=:${value}:`
  }
  return { input, signature }
}
