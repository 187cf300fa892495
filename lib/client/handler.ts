// The handler of one request (undici's controller API, Dispatcher.DispatchHandler, in 7 and 8):
// everything passes through to the handler above, the end held back until the check has run; a failure replaces it.
import type { Dispatcher } from 'undici'
import type { ClientParams } from './client-options'
import { ResponseCheck, type RequestFields, type ResponseHeaders } from './response-check'

type Controller = Dispatcher.DispatchController
type Handler = Dispatcher.DispatchHandler

/** The controller above while a side decoder runs: resumed only when neither pauses it (as undici's decompress). */
export class SharedController implements Controller {
  #paused = false
  #held = false

  constructor (private readonly real: Controller) {}

  get aborted (): boolean { return this.real.aborted }
  get reason (): Error | null { return this.real.reason }
  get paused (): boolean { return this.#paused }
  get rawHeaders (): Controller['rawHeaders'] { return this.real.rawHeaders }
  get rawTrailers (): Controller['rawTrailers'] { return this.real.rawTrailers }
  abort (reason: Error): void { this.real.abort(reason) }

  pause (): void {
    this.#paused = true
    this.real.pause()
  }

  resume (): void {
    this.#paused = false
    if (!this.#held) this.real.resume()
  }

  /** The side decoder's queue is full; `release` (bound: the decoder's `next`) once it takes more (or has stopped). */
  hold (): void {
    this.#held = true
    this.real.pause()
  }

  readonly release = (): void => {
    if (!this.#held) return
    this.#held = false
    if (!this.#paused) this.real.resume()
  }
}

// HTTP/2 trailers: undici 7.30.2's adapter parses node:http2's trailers object (lib/dispatcher/client-h2.js:830-836)
// as a flat list into `{}` (lib/handler/unwrap-handler.js:94-97), keeping it as `rawTrailers`. Applied only to that
// shape: undici 8 passes the object on (8.13.1 lib/core/request.js:430-432). Removed when the peer range drops 7.
function trailersOf (controller: Controller, trailers: ResponseHeaders): ResponseHeaders {
  const raw = controller.rawTrailers
  if (Object.keys(trailers).length > 0 || raw === null || typeof raw !== 'object' || Array.isArray(raw)) return trailers
  return Object.fromEntries(Object.entries(raw).map(([name, value]) =>
    [name.toLowerCase(), Array.isArray(value) ? value.map(String) : String(value)]))
}

export class DigestHandler implements Handler {
  #check: ResponseCheck | null = null
  #failed: Error | null = null // why the head failed: nothing more is passed on
  #shared: SharedController | null = null // the controller above while a side decoder runs

  constructor (
    private readonly handler: Handler,
    private readonly params: ClientParams,
    private readonly method: string,
    private readonly request: RequestFields
  ) {}

  onRequestStart (controller: Controller, context: unknown): void { this.handler.onRequestStart?.(controller, context) }
  onResponseStarted (): void { (this.handler as { onResponseStarted?: () => void }).onResponseStarted?.() }
  onRequestUpgrade (controller: Controller, statusCode: number, headers: ResponseHeaders, socket: unknown): void {
    this.handler.onRequestUpgrade?.(controller, statusCode, headers as never, socket as never)
  }

  onResponseStart (controller: Controller, statusCode: number, headers: ResponseHeaders, statusMessage?: string): void {
    const check = new ResponseCheck(this.params, this.method, this.request, statusCode, headers)
    // No content follows (nor runs a side decoder): decided now, and the head itself fails.
    if (check.empty) check.finish({}, (err) => { this.#failed = err })
    else this.#check = check
    if (this.#failed !== null) return this.handler.onResponseError?.(controller, this.#failed)
    if (check.decodes) this.#shared = new SharedController(controller)
    this.handler.onResponseStart?.(this.#shared ?? controller, statusCode, headers as never, statusMessage)
  }

  onResponseData (controller: Controller, chunk: Buffer): void {
    if (this.#failed !== null) return
    if (this.#check?.update(chunk, this.#shared?.release ?? null) === false) (this.#shared as SharedController).hold()
    this.handler.onResponseData?.(this.#shared ?? controller, chunk)
  }

  onResponseEnd (controller: Controller, trailers: ResponseHeaders): void {
    if (this.#failed !== null) return
    const received = trailersOf(controller, trailers)
    const above = this.#shared ?? controller
    const end = (err: Error | null): void => {
      if (err === null) return this.handler.onResponseEnd?.(above, received as never)
      // A macrotask later: raised in the tick that ends a body read in one go, the error is missed by fetch(),
      // which hangs (undici 7.30.2 lib/core/request.js:333, 8.13.1 :432).
      setImmediate(() => this.handler.onResponseError?.(above, err))
    }
    if (this.#check === null) end(null)
    else this.#check.finish(received, end)
  }

  onResponseError (controller: Controller, err: Error): void {
    this.#check?.destroy()
    if (this.#failed === null) this.handler.onResponseError?.(this.#shared ?? controller, err)
  }
}
