// Signature-based SRI (WICG signature-based-sri, "The SRI HTTP Message Signature Profile"), nothing more of
// RFC 9421: Ed25519 over `"unencoded-digest";sf`, `keyid` then `tag`, no `alg` (§7.3.6), no `created`/`expires`.
import { createPrivateKey, createPublicKey, KeyObject, sign } from 'node:crypto'
import { parseDictionary } from 'structured-headers'
import type { DigestAlgorithm } from '../../types/index'

/** The digest algorithms an Unencoded-Digest signed for SRI may carry that the plugin has. */
export const SRI_ALGORITHMS: readonly DigestAlgorithm[] = Object.freeze(['sha-256', 'sha-512'])

export interface HeldKey {
  /** The base64 of the raw 32-byte public key: padded when held, as the request wrote it in a signature. */
  readonly keyid: string
  readonly privateKey: KeyObject
}

/** Held keys by keyid without its base64 padding. */
export type IntegrityKeys = ReadonlyMap<string, HeldKey>

export interface IntegritySignature extends HeldKey {
  readonly label: string
}

export const NO_SIGNATURES: readonly IntegritySignature[] = Object.freeze([])

/** Where a keyid is held in IntegrityKeys: without its base64 padding. */
export function unpadded (keyid: string): string {
  let end = keyid.length
  while (end > 0 && keyid.charCodeAt(end - 1) === 0x3d) end--
  return keyid.slice(0, end)
}

/** An option's key as a held key (a private Ed25519 KeyObject, or its PEM), or why it is not one. */
export function heldKeyOf (value: unknown): HeldKey | string {
  if (!(value instanceof KeyObject) && typeof value !== 'string') {
    return `expected Ed25519 private keys (KeyObjects or PEM strings), got ${value === null ? 'null' : typeof value}`
  }
  let key: KeyObject
  try {
    key = typeof value === 'string' ? createPrivateKey(value) : value
  } catch (err) {
    try {
      key = createPublicKey(value)
    } catch {
      return `a string that is no PEM private key (${(err as Error).message})`
    }
  }
  if (key.type === 'public') return 'a public key: the Ed25519 private key is needed to sign'
  if (key.asymmetricKeyType !== 'ed25519') return `a ${key.asymmetricKeyType ?? key.type} key, not Ed25519`
  const { x } = createPublicKey(key).export({ format: 'jwk' })
  return { keyid: Buffer.from(x as string, 'base64url').toString('base64'), privateKey: key }
}

/**
 * The algorithms of a signed Unencoded-Digest: those of `selected` that are sha-256 or sha-512, else the first of them
 * enabled.
 */
export function sriAlgorithms (
  selected: readonly DigestAlgorithm[], enabled: readonly DigestAlgorithm[]
): readonly DigestAlgorithm[] {
  const kept = selected.filter((a) => SRI_ALGORITHMS.includes(a))
  if (kept.length === selected.length && kept.length > 0) return selected
  return kept.length > 0 ? kept : enabled.filter((a) => SRI_ALGORITHMS.includes(a)).slice(0, 1)
}

// The members of Accept-Signature (RFC 9421 §5.1) exactly the profile's with a held key; each key once, under
// the first label. A field that does not parse asks for nothing (RFC 9651 §4.2).
export function requestedSignatures (
  value: string | string[] | undefined, keys: IntegrityKeys
): readonly IntegritySignature[] {
  if (value === undefined || keys.size === 0) return NO_SIGNATURES
  let dictionary: ReturnType<typeof parseDictionary>
  try {
    dictionary = parseDictionary(Array.isArray(value) ? value.join(', ') : value)
  } catch {
    return NO_SIGNATURES
  }
  const out: IntegritySignature[] = []
  for (const [label, [components, params]] of dictionary) {
    const single = Array.isArray(components) && components.length === 1
    const [name, componentParams] = (single ? components[0] : []) as [unknown, Map<string, unknown>?]
    const keyid = params.get('keyid')
    if (
      name !== 'unencoded-digest' || componentParams?.size !== 1 || componentParams.get('sf') !== true ||
      params.size !== 2 || params.get('tag') !== 'ed25519-integrity' || typeof keyid !== 'string'
    ) continue
    const held = keys.get(unpadded(keyid))
    if (held === undefined || out.some((s) => s.privateKey === held.privateKey)) continue
    out.push({ label, keyid, privateKey: held.privateKey })
  }
  return out
}

/**
 * The signatures a response carries: those asked for, then the route's unsolicited one unless its key or label is
 * taken.
 */
export function signaturesFor (
  requested: readonly IntegritySignature[], unsolicited: IntegritySignature | null
): readonly IntegritySignature[] {
  const taken = unsolicited === null ||
    requested.some((s) => s.privateKey === unsolicited.privateKey || s.label === unsolicited.label)
  return taken ? requested : [...requested, unsolicited]
}

// Ed25519 is deterministic (RFC 8032 §5.1.6): signatures kept by Unencoded-Digest value, with the key and parameters,
// SIGNATURE_CACHE_SIZE of them, the oldest out first; a value from its second signing on (a response differing every
// time would only fill the heap): each `seen` slot holds the fingerprint of the last value signed there (a collision
// signs once more).
export const SIGNATURE_CACHE_SIZE = 1024
const cache = new Map<string, { readonly privateKey: KeyObject, readonly params: string, readonly value: string }>()
const SEEN_SLOTS = 4096
const seen = new Int32Array(SEEN_SLOTS)

/**
 * 32 bits of the first digest of an Unencoded-Digest value: its base64 after `sha-256=:` or `sha-512=:` (past the end:
 * 0).
 */
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
  // The signature base (RFC 9421 §2.5): the plugin's value is already its RFC 8941 serialization (§2.1.1).
  const base = `"unencoded-digest";sf: ${unencoded}\n"@signature-params": ${params}`
  const value = sign(null, Buffer.from(base, 'latin1'), privateKey).toString('base64')
  if (!again) {
    seen[slot] = print
    return value
  }
  if (hit === undefined && cache.size >= SIGNATURE_CACHE_SIZE) cache.delete(cache.keys().next().value as string)
  cache.set(unencoded, { privateKey, params, value })
  return value
}

/** The Signature-Input and Signature field values for `signatures` over the Unencoded-Digest value `unencoded`. */
export function signatureFields (
  signatures: readonly IntegritySignature[], unencoded: string
): { input: string, signature: string } {
  let input = ''
  let signature = ''
  for (const s of signatures) {
    // The member's value, also the `@signature-params` line's.
    const params = `("unencoded-digest";sf);keyid="${s.keyid}";tag="ed25519-integrity"`
    const separator = input === '' ? '' : ', '
    input += `${separator}${s.label}=${params}`
    signature += `${separator}${s.label}=:${signed(unencoded, params, s.privateKey)}:`
  }
  return { input, signature }
}
