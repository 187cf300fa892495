// reply.setReprDigest() and reply.setUnencodedDigest(): digests a route already knows, used instead of
// hashing (docs/design.md: "Declared digests" under "Unencoded-Digest", "HEAD and 206").
import type { FastifyReply } from 'fastify'
import type { DeclaredDigests, DigestAlgorithm } from '../../../types/index'
import { ALGORITHMS } from '../../core/algorithms'
import { FST_DIGEST_INVALID_DECLARED_DIGEST } from '../../core/errors'
import { kDeclared, kDeclaredUnencoded } from '../symbols'

type DeclaredMap = Map<DigestAlgorithm, Buffer>
interface WithDeclared { [kDeclared]: DeclaredMap | null, [kDeclaredUnencoded]: DeclaredMap | null }

function toOctets (algorithm: DigestAlgorithm, value: unknown, length: number): Buffer {
  if (typeof value === 'number') {
    // unixsum and unixcksum may be given as their numeric value (RFC 9530 Appendix D).
    const fits = length <= 4 && Number.isInteger(value) && value >= 0 && value < 2 ** (8 * length)
    if (!fits) throw new FST_DIGEST_INVALID_DECLARED_DIGEST(`${algorithm} cannot be the number ${value}`)
    return Buffer.from(value.toString(16).padStart(2 * length, '0'), 'hex')
  }
  if (!(value instanceof Uint8Array)) throw new FST_DIGEST_INVALID_DECLARED_DIGEST(`${algorithm} must be a Buffer of ${length} octets`)
  if (value.byteLength !== length) throw new FST_DIGEST_INVALID_DECLARED_DIGEST(`${algorithm} must be ${length} octets, got ${value.byteLength}`)
  return Buffer.from(value)
}

/** `digests`, checked, added to the reply's map under `key` (later declarations win). */
function declare (reply: WithDeclared, key: typeof kDeclared | typeof kDeclaredUnencoded, digests: DeclaredDigests): void {
  if (digests === null || typeof digests !== 'object') throw new FST_DIGEST_INVALID_DECLARED_DIGEST('expected an object of algorithm: digest')
  const declared: DeclaredMap = new Map()
  for (const [name, value] of Object.entries(digests)) {
    const info = ALGORITHMS.get(name as DigestAlgorithm)
    if (info === undefined) throw new FST_DIGEST_INVALID_DECLARED_DIGEST(`unknown algorithm "${name}"`)
    declared.set(info.key, toOctets(info.key, value, info.length))
  }
  // All or nothing: checked before any is kept.
  reply[key] = new Map([...(reply[key] ?? []), ...declared])
  // Anything declared takes the reply off the usual response's shortcut (hooks.ts).
  reply[kDeclared] ??= new Map()
}

export function setReprDigest (this: FastifyReply, digests: DeclaredDigests): FastifyReply {
  declare(this as unknown as WithDeclared, kDeclared, digests)
  return this
}

export function setUnencodedDigest (this: FastifyReply, digests: DeclaredDigests): FastifyReply {
  declare(this as unknown as WithDeclared, kDeclaredUnencoded, digests)
  return this
}

/** The Repr-Digest declarations (empty when only Unencoded-Digest was declared), or null for none at all. */
export function getDeclared (reply: FastifyReply): DeclaredMap | null {
  return (reply as unknown as WithDeclared)[kDeclared]
}

export function getDeclaredUnencoded (reply: FastifyReply): DeclaredMap | null {
  return (reply as unknown as WithDeclared)[kDeclaredUnencoded]
}
