// The per-request state of request verification, kept on the request under
// kRequestState (null where nothing is checked), and the one field that says
// where the request stands: `phase`. Only advance() changes it, along these
// moves (NEXT below); any other is ignored:
//
//   tapping ── the route's last preParsing hook, or a reply sent before
//              the preParsing hooks ran (they never will) ──▶ routed
//   routed ─── preValidation, or a reply that waits for the body ──▶ validated
//   routed or validated ── the final check (the end of the body), or the
//              decoded stream closed before its end ──▶ checked
//   tapping, routed or validated ── a waiting reply gave up (the rest over
//              the body limit, the client gone) ──▶ checked
//   routed, validated or checked ── the problem details sent ──▶ answered
//
// `tapping`: the tap at request.raw hashes; whether a stream after a decoder
// (`tail`) comes is not known yet, so an end of the source waits in
// `heldEnd`. `routed`: a failure found now is kept for preValidation to
// answer. `validated`: the handler (or a waiting reply) reads the body, so a
// failure found now is raised on the stream it reads. `checked`: `failure`
// is the verdict. `answered`: nothing more is sent for this request.
// Ignored move: preValidation after the final check (a parsed body).
import type { DigestAlgorithm } from '../../../types/index'
import type { LazyDigestStream } from '../../core/digest-stream'
import type { DigestParams } from '../options'
import { kRequestState } from '../symbols'
import type { Claim } from '../../core/claims'
import type { DecodingTap } from '../../core/content-decoding'
import type { Failure } from '../../core/judgement'
import type { SourceTap } from '../../core/source-tap'

declare module 'fastify' {
  interface FastifyRequest {
    /** Request verification's state (decorated null: nothing is checked). */
    [kRequestState]: RequestState | null
  }
}

export type Phase = 'tapping' | 'routed' | 'validated' | 'checked' | 'answered'

const NEXT: Readonly<Record<Phase, readonly Phase[]>> = {
  tapping: ['routed', 'checked'],
  routed: ['validated', 'checked', 'answered'],
  validated: ['checked', 'answered'],
  checked: ['answered'],
  answered: []
}

export interface RequestState {
  phase: Phase
  params: DigestParams
  claims: Claim[]
  /** The request's content codings as contentCoding() gives them (null: none). */
  coding: string | null
  /** The fields checked over the decoded content, for error messages. */
  decodedFields: string
  decodedAlgorithms: DigestAlgorithm[]
  /** Hashes the bytes as received, at request.raw. */
  tap: SourceTap
  /** The final stream when something stands between request.raw and the parser. */
  tail: LazyDigestStream | null
  /** `tail` hashes the decoded bytes (after @fastify/compress's decoder). */
  decodeHere: boolean
  side: DecodingTap | null
  /** The route's bodyLimit, which caps decoding on the side. */
  limit: number
  /** `tapping` only: the source's end, released once the route's last preParsing hook has run. */
  heldEnd: ((err?: Error | null) => void) | null
  /** `checked` on: the verdict (null: passed). */
  failure: Failure | null
  /** A reply waiting for the final check. */
  waitingReply: (() => void) | null
}

/** A request's state, in phase `tapping`; `tap` is set by the caller, whose tap calls back with this state. */
export function createState (
  params: DigestParams,
  claims: Claim[],
  coding: string | null,
  decodedFields: string,
  decodedAlgorithms: DigestAlgorithm[],
  side: DecodingTap | null,
  limit: number
): RequestState {
  return {
    phase: 'tapping',
    params,
    claims,
    coding,
    decodedFields,
    decodedAlgorithms,
    tap: null as unknown as SourceTap,
    tail: null,
    decodeHere: false,
    side,
    limit,
    heldEnd: null,
    failure: null,
    waitingReply: null
  }
}

/** Moves the request to `phase` where NEXT allows it; otherwise it stays where it is. */
export function advance (state: RequestState, phase: Phase): void {
  if (NEXT[state.phase].includes(phase)) state.phase = phase
}

/** Checked or answered: nothing more is checked for this request. */
export function isSettled (state: RequestState): boolean {
  return state.phase === 'checked' || state.phase === 'answered'
}

/** The verdict: the request is `checked`; returns the reply that waited for it, if any (to be woken). */
export function conclude (state: RequestState, failure: Failure | null): (() => void) | null {
  advance(state, 'checked')
  state.failure = failure
  const waiting = state.waitingReply
  state.waitingReply = null
  return waiting
}
