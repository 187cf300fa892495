// What one response's stages hand each other (kResponseState on the request):
// the plan, and what the representation stage found for the content stage.
import type { DigestParams } from '../../core/digest-params'
import type { CheckedStream, DigestResults, DigestTransform } from '../../core/digest-stream'
import type { FileDigestCache } from '../../core/file-cache'
import type { FileResponse } from './static-files'
import type { OmissionLog, OmissionReason } from './omissions'
import type { Precondition } from '../../core/precondition'
import { uncoded, type ResponsePlan } from '../../core/response-plan'

export type Payload = unknown

export interface ResponseState {
  readonly plan: ResponsePlan
  readonly params: DigestParams
  /** The plan's precondition until it is decided; null once decided early (files). */
  precondition: Precondition | null
  /** The string/Buffer payload seen by the representation stage. */
  reprPayload: string | Buffer | null
  /** The hashing wrapper put around a streamed representation. */
  reprStream: DigestTransform | null
  /** Representation digests known at the representation stage (HEAD of a stream, a file's). */
  repr: DigestResults | null
  /** How many bytes `repr` covers. */
  reprBytes: number
  /** Content-Encoding as the representation stage saw it (compress sets its own later). */
  readonly reprEncoding: unknown
  /** The identity digests are of the uncoded representation (no coding of the route's own, or a pre-compressed file's original): Unencoded-Digest only then. */
  identityUncoded: boolean
  /** The file a @fastify/static response stands for (then `repr` holds its identity digests). */
  readonly file: FileResponse | null
  /** Digests of the whole file as sent, coding included (strict HEAD and 206; what a GET's stream must match). */
  fileCoded: DigestResults | null
  /** A GET's file stream as passed on: checked at its end against the digests sent with it. */
  fileStream: CheckedStream | null
  /** Why digest fields were given up on, if they were (lib/plugin/response/omissions.ts). */
  omitted: OmissionReason | null
  readonly context: ResponseContext
}

/** Where the response stages keep their shared things (one per plugin instance). */
export interface ResponseContext {
  readonly files: FileDigestCache
  readonly omissions: OmissionLog
}

export function newState (
  plan: ResponsePlan, params: DigestParams, context: ResponseContext, reprEncoding: unknown, file: FileResponse | null
): ResponseState {
  return {
    plan,
    params,
    precondition: plan.precondition,
    reprPayload: null,
    reprStream: null,
    repr: null,
    reprBytes: 0,
    reprEncoding,
    identityUncoded: uncoded(reprEncoding),
    file,
    fileCoded: null,
    fileStream: null,
    omitted: plan.omitted,
    context
  }
}
