// The undici handler of one request (undici 7's handler API: onRequestStart,
// onResponseStart, onResponseData, onResponseEnd, onResponseError; undici 7's
// Dispatcher.DispatchHandler type). It passes everything through to
// the handler above it, hashes the body as it streams, and holds back the
// end (onResponseEnd) until the check has run: a failed check replaces the
// end with onResponseError, so the caller never sees a clean end of content
// that failed.
import type { Dispatcher } from 'undici'
import type { DigestClientError } from '../../types/client'
import type { ClientParams } from './options'
import { SharedController } from './flow'
import { ResponseCheck, type RequestFacts, type ResponseHeaders } from './response-check'

type Controller = Dispatcher.DispatchController & { rawTrailers?: unknown }
type Handler = Dispatcher.DispatchHandler

/**
 * HTTP/2 trailers. undici 7's HTTP/2 client passes node:http2's trailers
 * object (not the flat [name, value, …] list of HTTP/1.1) to the request's
 * onComplete (undici 7.30.2, lib/dispatcher/client-h2.js:830-836, the
 * stream's 'trailers' listener); the adapter to the new handler API parses
 * it as such a list (lib/handler/unwrap-handler.js:94-97, onComplete, then
 * parseHeaders in lib/core/util.js:436, which loops over `.length`), which
 * yields `{}`: the trailers are lost. The adapter keeps what it was given as
 * `controller.rawTrailers`, so they are read back from there when that is an
 * object and not a list (and passed on to the handler above too).
 */
function trailersOf (controller: Controller, trailers: ResponseHeaders): ResponseHeaders {
  const raw = controller.rawTrailers
  if (Object.keys(trailers).length > 0 || raw === null || typeof raw !== 'object' || Array.isArray(raw)) return trailers
  const out: ResponseHeaders = {}
  for (const [name, value] of Object.entries(raw as Record<string, unknown>)) {
    out[name.toLowerCase()] = Array.isArray(value) ? value.map(String) : String(value)
  }
  return out
}

export class DigestHandler implements Handler {
  readonly #handler: Handler
  readonly #params: ClientParams
  readonly #request: RequestFacts
  #check: ResponseCheck | null = null
  /** The head already failed: the rest of the exchange is not passed on. */
  #failed = false
  /** The controller the handler above gets while a side decoder runs. */
  #shared: SharedController | null = null

  constructor (handler: Handler, params: ClientParams, request: RequestFacts) {
    this.#handler = handler
    this.#params = params
    this.#request = request
  }

  onRequestStart (controller: Controller, context: unknown): void {
    this.#handler.onRequestStart?.(controller, context)
  }

  onRequestUpgrade (controller: Controller, statusCode: number, headers: ResponseHeaders, socket: unknown): void {
    this.#handler.onRequestUpgrade?.(controller, statusCode, headers as never, socket as never)
  }

  onResponseStarted (): void {
    (this.#handler as { onResponseStarted?: () => void }).onResponseStarted?.()
  }

  onResponseStart (controller: Controller, statusCode: number, headers: ResponseHeaders, statusMessage?: string): void {
    const check = new ResponseCheck(this.#params, this.#request, statusCode, headers)
    this.#check = check
    if (check.empty) {
      // No content follows: decided now (synchronously: no side decoder
      // runs for an empty response), and the head itself fails.
      this.#check = null
      let failure: DigestClientError | null = null
      check.finish({}, (err) => { failure = err })
      if (failure !== null) {
        this.#failed = true
        this.#handler.onResponseError?.(controller, failure)
        return
      }
    }
    let above: Controller = controller
    if (check.decodes) {
      const shared = new SharedController(controller)
      check.onRelease(() => shared.release())
      this.#shared = shared
      above = shared as unknown as Controller
    }
    this.#handler.onResponseStart?.(above, statusCode, headers as never, statusMessage)
  }

  onResponseData (controller: Controller, chunk: Buffer): void {
    if (this.#failed) return
    if (this.#check?.update(chunk) === false) (this.#shared as SharedController).hold()
    this.#handler.onResponseData?.(this.#above(controller), chunk)
  }

  #above (controller: Controller): Controller {
    return (this.#shared as unknown as Controller | null) ?? controller
  }

  onResponseEnd (controller: Controller, trailers: ResponseHeaders): void {
    if (this.#failed) return
    const check = this.#check
    const received = trailersOf(controller, trailers)
    const above = this.#above(controller)
    if (check === null) {
      this.#handler.onResponseEnd?.(above, received as never)
      return
    }
    check.finish(received, (err: DigestClientError | null) => {
      if (err === null) {
        this.#handler.onResponseEnd?.(above, received as never)
        return
      }
      // Deferred: undici's fetch misses an error raised in the same tick as
      // the end of a response it read in one go. Raised synchronously here
      // (inside the request's onComplete, undici 7.30.2, lib/core/request.js:333),
      // the read of such a body by fetch() never settles: it hangs (20 of
      // 20 tries, a 5-byte body). A microtask later is enough; a macrotask
      // (setImmediate) leaves fetch's reader every chance to have pulled the
      // data first. request() and stream() are indifferent to the delay.
      setImmediate(() => this.#handler.onResponseError?.(above, err))
    })
  }

  onResponseError (controller: Controller, err: Error): void {
    this.#check?.destroy()
    if (this.#failed) return
    this.#handler.onResponseError?.(this.#above(controller), err)
  }
}
