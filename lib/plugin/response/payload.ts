// A response's payload as the stages take it: a fetch Response or web stream made a Node stream, and a stream hashed
// as it passes.
import { Readable, pipeline } from 'node:stream'
import type { ReadableStream as WebReadableStream } from 'node:stream/web'
import type { FastifyReply } from 'fastify'
import type { DigestAlgorithm } from '../../../types/index'
import { DigestTransform } from '../../core/digest-stream'
import type { Payload } from './field-hook'

/** `stream` piped through a new hasher of `algorithms`, which passes its bytes on. */
export function hashThrough (stream: NodeJS.ReadableStream, algorithms: readonly DigestAlgorithm[]): DigestTransform {
  const hasher = new DigestTransform(algorithms)
  pipeline(stream, hasher, () => {})
  return hasher
}

/**
 * A fetch Response or a web stream as fastify takes it (lib/reply.js send): status and headers on the reply, a Node
 * stream.
 */
export function unwrapPayload (reply: FastifyReply, payload: Payload): Payload {
  if (payload === null || typeof payload !== 'object') return payload
  if (Object.prototype.toString.call(payload) === '[object Response]') {
    const response = payload as Response
    reply.code(response.status)
    for (const [name, value] of response.headers) reply.header(name, value)
    // An onSend hook cannot replace a payload with undefined: an empty body is ''.
    return response.body === null ? '' : Readable.fromWeb(response.body as WebReadableStream)
  }
  const web = typeof (payload as { getReader?: unknown }).getReader === 'function'
  return web ? Readable.fromWeb(payload as WebReadableStream) : payload
}
