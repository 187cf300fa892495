// The controller the handler above sees when a side decoder runs: two
// parties may pause the response, the handler above (its reader is full)
// and the side decoder (its input queue is full, node:stream's write()
// returned false). The response is resumed only when neither holds it, so
// neither can resume it against the other's wish (undici 7's own
// decompress interceptor wraps its controller for the same reason).
import type { Dispatcher } from 'undici'

type Controller = Dispatcher.DispatchController & { rawHeaders?: unknown, rawTrailers?: unknown }

export class SharedController {
  readonly #real: Controller
  /** Paused by the handler above. */
  #paused = false
  /** Held by the side decoder. */
  #held = false

  constructor (real: Controller) {
    this.#real = real
  }

  get aborted (): boolean { return this.#real.aborted }
  get reason (): Error | null { return this.#real.reason }
  get paused (): boolean { return this.#paused }
  get rawHeaders (): unknown { return this.#real.rawHeaders }
  get rawTrailers (): unknown { return this.#real.rawTrailers }

  abort (reason: Error): void {
    this.#real.abort(reason)
  }

  pause (): void {
    this.#paused = true
    this.#real.pause()
  }

  resume (): void {
    this.#paused = false
    if (!this.#held) this.#real.resume()
  }

  /** The side decoder's queue is full. */
  hold (): void {
    this.#held = true
    this.#real.pause()
  }

  /** The side decoder can take more (or has stopped). */
  release (): void {
    if (!this.#held) return
    this.#held = false
    if (!this.#paused) this.#real.resume()
  }
}
