// reply.setReprDigest() and reply.setUnencodedDigest(): digests a route already knows, used instead of
// hashing (docs/design.md: "Declared digests" under "Unencoded-Digest", "HEAD and 206").
import type { FastifyReply } from 'fastify'
import type { DeclaredDigests, DigestAlgorithm } from '../../../types/index'
import { ALGORITHMS } from '../../core/algorithms'
import { FST_DIGEST_INVALID_DECLARED_DIGEST } from '../../core/errors'
import { kDeclared } from '../symbols'

type DeclaredMap = Map<DigestAlgorithm, Buffer>
/**
 * A reply's declarations by field; the slot is null until one is made (one read for the usual response's shortcut,
 * hooks.ts).
 */
export interface Declared { repr: DeclaredMap | null, unencoded: DeclaredMap | null }
interface WithDeclared { [kDeclared]: Declared | null }

function toOctets (algorithm: DigestAlgorithm, value: unknown, length: number): Buffer {
  if (typeof value === 'number') {
    // unixsum and unixcksum may be given as their numeric value (RFC 9530 Appendix D).
    const fits = length <= 4 && Number.isInteger(value) && value >= 0 && value < 2 ** (8 * length)
    if (!fits) throw new FST_DIGEST_INVALID_DECLARED_DIGEST(`${algorithm} cannot be the number ${value}`)
    return Buffer.from(value.toString(16).padStart(2 * length, '0'), 'hex')
  }
  if (!(value instanceof Uint8Array)) {
    throw new FST_DIGEST_INVALID_DECLARED_DIGEST(`${algorithm} must be a Buffer of ${length} octets`)
  }
  if (value.byteLength !== length) {
    throw new FST_DIGEST_INVALID_DECLARED_DIGEST(`${algorithm} must be ${length} octets, got ${value.byteLength}`)
  }
  return Buffer.from(value)
}

/** `digests`, checked, added to the reply's declarations for `field` (later declarations win). */
function declare (reply: FastifyReply, field: keyof Declared, digests: DeclaredDigests): FastifyReply {
  if (digests === null || typeof digests !== 'object') {
    throw new FST_DIGEST_INVALID_DECLARED_DIGEST('expected an object of algorithm: digest')
  }
  const declared: DeclaredMap = new Map()
  for (const [name, value] of Object.entries(digests)) {
    const info = ALGORITHMS.get(name as DigestAlgorithm)
    if (info === undefined) throw new FST_DIGEST_INVALID_DECLARED_DIGEST(`unknown algorithm "${name}"`)
    declared.set(info.key, toOctets(info.key, value, info.length))
  }
  // All or nothing: checked before any is kept.
  const slot = (reply as unknown as WithDeclared)[kDeclared] ??= { repr: null, unencoded: null }
  slot[field] = new Map([...(slot[field] ?? []), ...declared])
  return reply
}

export function setReprDigest (this: FastifyReply, digests: DeclaredDigests): FastifyReply {
  return declare(this, 'repr', digests)
}

export function setUnencodedDigest (this: FastifyReply, digests: DeclaredDigests): FastifyReply {
  return declare(this, 'unencoded', digests)
}

export function getDeclared (reply: FastifyReply): Declared | null {
  return (reply as unknown as WithDeclared)[kDeclared]
}
