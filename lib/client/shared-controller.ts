// The controller the handler above sees while a side decoder runs: both may pause
// the response, and it resumes only when neither holds it (undici 7's decompress
// interceptor wraps its controller for the same reason).
import type { Dispatcher } from 'undici'

type Controller = Dispatcher.DispatchController & { rawHeaders?: unknown, rawTrailers?: unknown }

export class SharedController {
  readonly #real: Controller
  #paused = false
  #held = false

  constructor (real: Controller) { this.#real = real }

  get aborted (): boolean { return this.#real.aborted }
  get reason (): Error | null { return this.#real.reason }
  get paused (): boolean { return this.#paused }
  get rawHeaders (): unknown { return this.#real.rawHeaders }
  get rawTrailers (): unknown { return this.#real.rawTrailers }
  abort (reason: Error): void { this.#real.abort(reason) }

  pause (): void {
    this.#paused = true
    this.#real.pause()
  }

  resume (): void {
    this.#paused = false
    if (!this.#held) this.#real.resume()
  }

  /** The side decoder's queue is full; then it takes more (or has stopped). */
  hold (): void {
    this.#held = true
    this.#real.pause()
  }

  release (): void {
    if (!this.#held) return
    this.#held = false
    if (!this.#paused) this.#real.resume()
  }
}
