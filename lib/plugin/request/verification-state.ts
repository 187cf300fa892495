// A request's verification as one state: its phase, what it claims, where its body is hashed, and its verdict
// (docs/design.md, "Request verification"; the hooks that move it are in body-check.ts).
import type { FastifyRequest } from 'fastify'
import type { DigestVerification } from '../../../types/index'
import type { BodyStream } from '../../core/body-stream'
import type { ChunkKeeper } from '../../core/chunk-keeper'
import type { Claim, Wanted } from '../../core/claims'
import { createContentDecoders, DecodingTap } from '../../core/content-decoding'
import type { MultiDigester } from '../../core/digest-stream'
import type { DigestParams } from '../../core/option-checks'
import type { Failure } from '../../core/problem'
import type { SourceTap } from '../../core/source-tap'
import { kRequestState, kVerification } from '../symbols'

declare module 'fastify' {
  interface FastifyRequest {
    [kRequestState]: Verification | null
    /** request.digestVerification as set (null: worked out when read). */
    [kVerification]: DigestVerification | null
  }
}

// Where a verification stands. 'claimed': onRequest read the claims, nothing is hashed yet; 'parsing': preParsing
// placed the streams, which the parser reads (a failure found at their end is answered by preValidation); 'reading':
// preValidation ran, or a success waits in onSend (a failure found now errors the stream being read); 'judged': the
// verdict is in `failure`.
export class Verification {
  phase: 'claimed' | 'parsing' | 'reading' | 'judged' = 'claimed'
  /** A small body of known length: its chunks kept at request.raw, hashed once at the end (or handed to `tap`). */
  keeper: ChunkKeeper | null = null
  /** Set by preParsing: `head` hashes the bytes received until `tap` does instead (null: `keeper` keeps them). */
  head: BodyStream | null = null
  /** Set by preParsing: what the parser reads (`head` without a decoder or another stream between). */
  last: BodyStream | null = null
  /** request.raw hashed instead, for a body still unread at preValidation or at a waiting reply. */
  tap: SourceTap | null = null
  /** The side decoder of the decoded digests (null: none needed, none available, or a decoder before the last). */
  side: DecodingTap | null = null
  /** The verdict, once 'judged' (null: none to answer). */
  failure: Failure | null = null
  /** A reply waiting for the verdict. */
  onJudged: (() => void) | null = null

  /** `limit`: the route's bodyLimit, which caps decoding and what a waiting reply reads. */
  constructor (
    readonly params: DigestParams, readonly claims: Claim[], readonly coding: string | null,
    readonly wanted: Wanted, readonly limit: number
  ) {}

  /** Makes the side decoder, for bytes hashed as they come (a kept body is decoded whole instead, verdict.ts). */
  openSide (): void {
    const decoders = this.wanted.decoded.size > 0 ? createContentDecoders(this.coding as string) : null
    if (decoders !== null) this.side = new DecodingTap(decoders, this.wanted.decoded, this.limit)
  }

  /** How many bytes were received: the tap's count, the keeper's, or the head stream's. */
  get bytes (): number {
    if (this.tap !== null) return this.tap.hasher.bytes
    return this.keeper?.bytes ?? ((this.head as BodyStream).hasher as MultiDigester).bytes
  }
}

/** For a request not tapped yet: unread, nothing between request.raw and the parser (or no preParsing stream). */
export function unreadRaw (request: FastifyRequest, state: Verification): boolean {
  const head = state.head
  if (state.last === null) return true
  return state.last === head && head.origin === request.raw && !head.started
}
