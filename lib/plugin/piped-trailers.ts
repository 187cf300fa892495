// Whether the fastify in use writes a piped stream's trailers. fastify 6.0.0-alpha.0 to alpha.4 send them from
// the source's 'end' (6.0.0-alpha.4 lib/reply.js:843, :950-953) while `payload.pipe(res)` ends the response
// (:890) before the trailer callbacks answer (:936): the response announces `Trailer` and carries none. 5.12.8
// has the fix (fastify/fastify#6953: pipe without end, trailers from the eos listener). There, a stream's
// digests go in header fields, as under `trailers: false`.
const LOSES_PIPED_TRAILERS = /^6\.0\.0-alpha\.[0-4]$/

/** `params`, with trailers off when fastify `version` loses a piped stream's trailers. */
export function withPipedTrailers<P extends { readonly trailers: boolean }> (version: string, params: P): P {
  return params.trailers && LOSES_PIPED_TRAILERS.test(version) ? { ...params, trailers: false } : params
}
