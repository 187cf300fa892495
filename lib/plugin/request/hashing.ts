// Where the body is hashed. The first route-level onRequest hook reads the
// claims, refuses what can be refused before reading, and taps the body at
// its source, request.raw (source-tap.ts beside this file: every byte pushed
// into it, whoever reads it), decoding on the side what a default-mode
// Repr-Digest needs decoded (content-decoding.ts). The last route-level
// preParsing hook, after any decoder, puts the final stream (`tail`) before
// the parser when something stands between request.raw and it, and hashes
// there the bytes @fastify/compress decoded.
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Readable } from 'node:stream'
import type { DigestAlgorithm } from '../../../types/index'
import { LazyDigestStream } from '../../core/digest-stream'
import type { DigestParams } from '../options'
import { kRequestState } from '../symbols'
import { sendProblem, type HookDone } from './answers'
import { announcedTrailers, BODYLESS_METHODS, collectAlgorithms, hasContent, readClaims, type Claim } from '../../core/claims'
import { contentCoding, createContentDecoders, DecodingTap } from '../../core/content-decoding'
import { setVerification } from './digest-verification'
import { onSourceEnd, onTailClose, onTailEnd, releaseHeldEnd, undecodableFailure } from './final-check'
import { blankFailure, check, judge, NO_DIGESTS, type DigestError } from '../../core/judgement'
import { SourceTap } from '../../core/source-tap'
import { advance, createState } from './phase'

type ParsingDone = (err: Error | null, stream?: Readable) => void

/**
 * The first route-level onRequest hook: reads the claims, refuses what can
 * be refused before reading, and taps the body at its source
 * (`request.raw`), before any reader, instance-level preParsing hooks
 * included, can start.
 */
export function tapRequest (request: FastifyRequest, reply: FastifyReply, done: HookDone, params: DigestParams): void {
  // Nothing to check (request.digestVerification says why when read).
  if (BODYLESS_METHODS.has(request.method)) {
    done()
    return
  }
  const headers = request.headers
  const coding = contentCoding(headers['content-encoding'])
  let claims: Claim[]
  try {
    claims = readClaims(headers, params, coding)
  } catch (err) {
    sendProblem(reply, blankFailure(params, err as DigestError))
    return
  }

  // Values no algorithm can produce are refused before reading anything
  // (the draft: "the server can skip computing the digest value").
  const invalid = judge(check(claims, params, NO_DIGESTS, NO_DIGESTS), params, false)
  if (invalid !== null) {
    sendProblem(reply, invalid)
    return
  }

  const received = new Set<DigestAlgorithm>()
  const decoded = new Set<DigestAlgorithm>()
  const decodedFields = collectAlgorithms(received, decoded, claims, announcedTrailers(headers.trailer, params), params, coding)

  if (received.size === 0 && decoded.size === 0) {
    const required = params.verify === 'required'
    // Whether there is content is known from the bytes, not from the
    // headers (an HTTP/2 request, or a chunked one, has no Content-Length):
    // only a Content-Length of 0 says "empty" up front. Under `required` an
    // empty body needs no digest; a body of unknown length is counted.
    const empty = headers['content-length'] === '0'
    if (!required || empty || headers['content-length'] !== undefined) {
      const checked = check(claims, params, NO_DIGESTS, NO_DIGESTS)
      const failure = judge(checked, params, required && !empty)
      if (failure !== null) {
        sendProblem(reply, failure)
        return
      }
      setVerification(request, { verified: false, reason: hasContent(headers) ? 'no-digest' : 'no-body', fields: checked.map((c) => c.verification) })
      done()
      return
    }
  }

  let side: DecodingTap | null = null
  const limit = request.routeOptions.bodyLimit as number
  if (decoded.size > 0) {
    // Decode on the side from the first byte on; the route's last
    // preParsing hook drops this when @fastify/compress turns out to decode
    // the content itself.
    const decoders = createContentDecoders(coding as string)
    if (decoders !== null) side = new DecodingTap(decoders, decoded, limit)
  }
  const state = createState(params, claims, coding, decodedFields, [...decoded], side, limit)
  request[kRequestState] = state
  setVerification(request, { verified: false, reason: 'unread', fields: [] })
  state.tap = new SourceTap(request.raw, received, side, onSourceEnd(request, state))
  // A body that had fully arrived before the tap: checked now, before any reader.
  state.tap.checkEnded()
  done()
}

type EncodedLengthStream = Readable & { receivedEncodedLength?: unknown }

/** The last route-level preParsing hook: after any decoder. */
export function placeTail (request: FastifyRequest, reply: FastifyReply, payload: EncodedLengthStream, done: ParsingDone): void {
  const state = request[kRequestState]
  if (state === null) {
    done(null, payload)
    return
  }
  advance(state, 'routed')
  // A stream that reports receivedEncodedLength is a decoder
  // (@fastify/compress's decompressor): it gives us the decoded bytes.
  const decodedUpstream = typeof payload.receivedEncodedLength === 'number'
  const decodeHere = state.decodedAlgorithms.length > 0 && decodedUpstream
  if (state.decodedAlgorithms.length > 0) {
    if (decodedUpstream) {
      state.tap.untapSide()
      state.side = null
    } else if (state.side === null) {
      // Nothing decodes these codings for the route, so the digests of the
      // decoded content cannot be checked: 415, naming the codings we can
      // decode (RFC 9110 §15.5.16).
      state.tap.stop()
      advance(state, 'answered')
      sendProblem(reply, undecodableFailure(state))
      return
    }
  }
  let final: Readable = payload
  if (payload !== request.raw) {
    // Something stands between request.raw and the parser (a decoder such
    // as @fastify/compress's, or another plugin's stream): the final stream
    // is ours again, so that a failure is raised where the reader sees it
    // (an error of request.raw does not cross a pipe(), and compress
    // rewrites it). After a decoder it hashes the decoded bytes, and it
    // forwards receivedEncodedLength for fastify's length checks
    // (lib/content-type-parser.js rawBody).
    const tail = new LazyDigestStream(payload, decodeHere ? state.decodedAlgorithms : [], state.limit)
    if (decodedUpstream) {
      Object.defineProperty(tail, 'receivedEncodedLength', { get: () => payload.receivedEncodedLength })
    }
    tail.endCheck = onTailEnd(request, state)
    if (decodeHere) tail.once('close', onTailClose(request, state))
    state.decodeHere = decodeHere
    state.tail = tail
    final = tail
  }
  releaseHeldEnd(request, state)
  done(null, final)
}
