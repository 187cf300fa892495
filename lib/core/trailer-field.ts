// The response's Trailer field, comma-separated.
//
// Fastify 5 writes the Trailer field itself, after every onSend hook, with
// the declared trailer names joined by spaces (lib/reply.js, onSendEnd:
// `header += ' '; header += trailerName` ... `reply.header('Trailer',
// header.trim())`). RFC 9110 §6.6.2 defines `Trailer = #field-name`, a
// comma-separated list. Until fastify writes it so (test/plugin/response/live-streams.test.ts
// shows fastify's own output and fails once it does), the field is rewritten
// just before the response head goes out: the raw response's writeHead, which
// node calls for the first write of a streamed body, over HTTP/1.1
// (ServerResponse#_implicitHeader) and HTTP/2 (Http2ServerResponse#write/end).
import type { ServerResponse } from 'node:http'
import type { Http2ServerResponse } from 'node:http2'

type RawResponse = ServerResponse | Http2ServerResponse

/**
 * `writeHead` rewriting the Trailer field first. Made by this function, not
 * written as `res.writeHead = function …`: V8 allocates a function literal
 * assigned straight to a property in the old generation (see
 * lib/core/source-tap.ts).
 */
function withTrailerList (writeHead: (...args: unknown[]) => RawResponse): RawResponse['writeHead'] {
  return function writeHeadWithTrailerList (this: RawResponse, ...args: unknown[]) {
    const value = this.getHeader('trailer')
    if (typeof value === 'string') this.setHeader('trailer', value.split(' ').filter((name) => name !== '').join(', '))
    return writeHead.apply(this, args)
  } as RawResponse['writeHead']
}

/** Rewrite the Trailer field of `res` as a comma-separated list when its head is written. */
export function commaSeparatedTrailer (res: RawResponse): void {
  res.writeHead = withTrailerList(res.writeHead as (...args: unknown[]) => RawResponse)
}
