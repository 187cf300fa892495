// An undici interceptor that signs each request (RFC 9421) with
// http-message-signatures: @method, @target-uri and, when the request has
// one, Content-Digest, with created, expires, keyid and alg.
//
// The order: compose() wraps in the order given, so the interceptor listed
// last runs first on the way out. List this one before digestInterceptor(),
// which then adds Content-Digest (after hashing a Blob or FormData) before
// this one signs:
//
//   new Agent().compose(signingInterceptor(key), digestInterceptor())
//
// Listed the other way round, the request is signed before it has a
// Content-Digest, and a server that requires a signed one refuses it.
// Needs: npm i fastify-digest-fields http-message-signatures
import { httpbis } from 'http-message-signatures'

/** Request headers as undici's dispatch options carry them (a flat array, pairs, or an object) as an object. */
function headerObject (headers) {
  const out = {}
  const add = (name, value) => {
    if (value == null) return
    const key = name.toLowerCase()
    const values = [out[key] ?? [], value].flat().map(String)
    out[key] = values.length === 1 ? values[0] : values
  }
  if (Array.isArray(headers)) {
    for (let i = 0; i + 1 < headers.length; i += 2) add(String(headers[i]), headers[i + 1])
  } else if (headers != null && typeof headers[Symbol.iterator] === 'function') {
    for (const [name, value] of headers) add(name, value)
  } else {
    for (const [name, value] of Object.entries(headers ?? {})) add(name, value)
  }
  return out
}

/** `key`: a SigningKey, e.g. createSigner(privateKeyPem, 'rsa-v1_5-sha256', keyid). */
export function signingInterceptor (key) {
  return (dispatch) => function signingDispatch (opts, handler) {
    const headers = headerObject(opts.headers)
    const fields = ['@method', '@target-uri']
    if ('content-digest' in headers) fields.push('content-digest')
    const message = { method: (opts.method ?? 'GET').toUpperCase(), url: new URL(opts.path, opts.origin), headers }
    // Signing is asynchronous: the request goes on once signed, and a
    // failure fails it, as digestInterceptor() does while it hashes a Blob.
    httpbis.signMessage({ key, fields }, message).then((signed) => {
      dispatch({ ...opts, headers: signed.headers }, handler)
    }).catch((err) => handler.onResponseError?.(null, err))
    return true
  }
}
