// Where the plugin's hooks go on a route (docs/design.md, "Where the hooks run"): fastify 5.12.8
// lib/route.js runs every onRoute hook in route() (lines 299-302) and reads the hook lists at
// preReady (394-400), so a microtask from our onRoute hook sees them final but for ours.
import type {
  RouteOptions,
  onErrorHookHandler,
  onRequestHookHandler,
  onSendHookHandler,
  preParsingHookHandler,
  preValidationHookHandler
} from 'fastify'

/** The hooks one concern of the plugin puts on a route, first or last of the route's own. */
export interface RouteHooks {
  readonly onRequestFirst?: onRequestHookHandler
  /** After any decoder. */
  readonly preParsingLast?: preParsingHookHandler
  readonly preValidationFirst?: preValidationHookHandler
  readonly onSendFirst?: onSendHookHandler
  /** `before` and `after` the route's other onSend hooks, or `alone` when it has none (one hook does both). */
  readonly onSendAround?: {
    readonly before: onSendHookHandler
    readonly after: onSendHookHandler
    readonly alone: onSendHookHandler
  }
  readonly onErrorLast?: onErrorHookHandler
}

/** What the response and request concerns give the entry's onRoute hook: their hooks for a route, or null. */
export interface RouteHookInstaller<Params> {
  onRoute (routeOptions: RouteOptions, params: Params): RouteHooks | null
}

/** A route-level hook option as a list (fastify accepts one function or a list). */
export function hookList<T> (hooks: T | T[] | undefined): T[] {
  return hooks === undefined ? [] : Array.isArray(hooks) ? hooks : [hooks]
}

/** Puts the hooks of `sets` on the route, in the order of `sets`, once every onRoute hook has run. */
export function placeHooks (routeOptions: RouteOptions, sets: ReadonlyArray<RouteHooks | null>): void {
  const hooks = sets.filter((s): s is RouteHooks => s !== null)
  queueMicrotask(() => {
    const firstRequest = hooks.flatMap((h) => h.onRequestFirst ?? [])
    if (firstRequest.length > 0) routeOptions.onRequest = [...firstRequest, ...hookList(routeOptions.onRequest)]
    const lastParsing = hooks.flatMap((h) => h.preParsingLast ?? [])
    if (lastParsing.length > 0) routeOptions.preParsing = [...hookList(routeOptions.preParsing), ...lastParsing]
    const firstValidation = hooks.flatMap((h) => h.preValidationFirst ?? [])
    if (firstValidation.length > 0) {
      routeOptions.preValidation = [...firstValidation, ...hookList(routeOptions.preValidation)]
    }
    const firstSend = hooks.flatMap((h) => h.onSendFirst ?? [])
    const around = hooks.find((h) => h.onSendAround !== undefined)?.onSendAround
    if (firstSend.length > 0 || around !== undefined) {
      const others = hookList(routeOptions.onSend)
      const middle = around === undefined
        ? others
        : others.length === 0 ? [around.alone] : [around.before, ...others, around.after]
      routeOptions.onSend = [...firstSend, ...middle]
    }
    const lastError = hooks.flatMap((h) => h.onErrorLast ?? [])
    if (lastError.length > 0) routeOptions.onError = [...hookList(routeOptions.onError), ...lastError]
  })
}
