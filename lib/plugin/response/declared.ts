// reply.setReprDigest(): digests of the selected representation that the
// route already knows (a stored checksum, a content-addressed file). They are
// used for Repr-Digest, HEAD, 206 and the 406 rule instead of hashing, and
// for Unencoded-Digest unless the route codes its content itself.
// reply.setUnencodedDigest(): the same for the representation with no
// content coding (draft-ietf-httpbis-unencoded-digest), for a route that
// sends coded bytes of its own.
import type { FastifyReply } from 'fastify'
import type { DeclaredDigests, DigestAlgorithm } from '../../../types/index'
import { ALGORITHMS } from '../../core/algorithms'
import { FST_DIGEST_INVALID_DECLARED_DIGEST } from '../../core/errors'
import { kDeclared, kDeclaredUnencoded } from '../symbols'

type DeclaredMap = Map<DigestAlgorithm, Buffer>

function toOctets (algorithm: DigestAlgorithm, value: unknown, length: number): Buffer {
  if (typeof value === 'number') {
    // unixsum and unixcksum may be given as their numeric value (RFC 9530 Appendix D).
    if (length > 4 || !Number.isInteger(value) || value < 0 || value >= 2 ** (8 * length)) {
      throw new FST_DIGEST_INVALID_DECLARED_DIGEST(`${algorithm} cannot be the number ${value}`)
    }
    const buf = Buffer.alloc(length)
    buf.writeUIntBE(value, 0, length)
    return buf
  }
  if (!(value instanceof Uint8Array)) {
    throw new FST_DIGEST_INVALID_DECLARED_DIGEST(`${algorithm} must be a Buffer of ${length} octets`)
  }
  if (value.byteLength !== length) {
    throw new FST_DIGEST_INVALID_DECLARED_DIGEST(`${algorithm} must be ${length} octets, got ${value.byteLength}`)
  }
  return Buffer.from(value)
}

/** Validate a declaration; throws FST_DIGEST_INVALID_DECLARED_DIGEST (a TypeError). */
function normalizeDeclared (digests: DeclaredDigests): DeclaredMap {
  if (digests === null || typeof digests !== 'object') {
    throw new FST_DIGEST_INVALID_DECLARED_DIGEST('expected an object of algorithm: digest')
  }
  const out: DeclaredMap = new Map()
  for (const [key, value] of Object.entries(digests)) {
    const info = ALGORITHMS.get(key as DigestAlgorithm)
    if (info === undefined) throw new FST_DIGEST_INVALID_DECLARED_DIGEST(`unknown algorithm "${key}"`)
    out.set(info.key, toOctets(info.key, value, info.length))
  }
  return out
}

interface WithDeclared { [kDeclared]: DeclaredMap | null, [kDeclaredUnencoded]: DeclaredMap | null }

/** `digests` added to the reply's map under `key` (later declarations win). */
function declare (reply: WithDeclared, key: typeof kDeclared | typeof kDeclaredUnencoded, digests: DeclaredDigests): void {
  const declared = normalizeDeclared(digests)
  const previous = reply[key]
  if (previous === null) reply[key] = declared
  else for (const [k, v] of declared) previous.set(k, v)
}

export function setReprDigest (this: FastifyReply, digests: DeclaredDigests): FastifyReply {
  declare(this as unknown as WithDeclared, kDeclared, digests)
  return this
}

export function setUnencodedDigest (this: FastifyReply, digests: DeclaredDigests): FastifyReply {
  const reply = this as unknown as WithDeclared
  declare(reply, kDeclaredUnencoded, digests)
  // Something is declared: the reply leaves the usual response's shortcut.
  reply[kDeclared] ??= new Map()
  return this
}

/** The Repr-Digest declarations (an empty map when only Unencoded-Digest was declared), or null for none at all. */
export function getDeclared (reply: FastifyReply): DeclaredMap | null {
  return (reply as unknown as WithDeclared)[kDeclared]
}

export function getDeclaredUnencoded (reply: FastifyReply): DeclaredMap | null {
  return (reply as unknown as WithDeclared)[kDeclaredUnencoded]
}
